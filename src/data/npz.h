// Reading and writing numpy .npz archives: a zip file whose members "<name>.npy" are .npy images.
//
// OpenNpz keeps uncompressed members (np.savez, the default) on disk: it finds where each
// member's array data starts inside the zip file and returns a FileArraySource over that byte
// range, so rows are read straight from the archive batch by batch. Deflated members
// (np.savez_compressed) cannot be read at an offset, so they are inflated into memory once and
// checked against their CRC. Lazy reads of stored members skip the CRC: checking it would mean
// reading the whole member.
// Free functions; thread-safe as long as callers do not write a file another thread reads.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "data/array_source.h"
#include "ptqkit/tensor.h"

namespace ptqkit::data {

// Archive key -> array source, keys sorted. Keys are member names without ".npy" (as np.load
// shows them). Throws ptqkit::Error naming the archive (and member) when the file is missing or not
// a zip, a member is not an .npy, is encrypted, uses another compression method, is corrupt or
// truncated, holds a scalar, or the archive has no arrays.
std::map<std::string, std::shared_ptr<const ArraySource>> OpenNpz(const std::string& path);

// Every array in the archive, loaded. Same errors as OpenNpz, except that scalars are allowed.
std::map<std::string, HostTensor> ReadNpz(const std::string& path);

enum class NpzCompression {
  kStored,    // as np.savez; readable lazily
  kDeflated,  // as np.savez_compressed
};

// Writes `arrays` as members "<key>.npy", replacing `path`. Throws ptqkit::Error (kIo) when the
// file cannot be written. REQUIRES: keys non-empty; each tensor's bytes match its shape and dtype.
void WriteNpz(const std::string& path, const std::map<std::string, HostTensor>& arrays,
              NpzCompression compression = NpzCompression::kStored);

}  // namespace ptqkit::data
