// Reading and writing single arrays in numpy's .npy format (versions 1-3 read, 1-2 written).
// OpenNpy maps a file to a lazy ArraySource: only the header is read up front, rows are read
// from disk when asked for. ReadNpy/DecodeNpy load a whole array; WriteNpy/EncodeNpy produce files
// that numpy.load reads back unchanged (the tests and the Python binding use them for fixtures).
// Free functions; thread-safe as long as callers do not write a file another thread reads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "data/array_source.h"
#include "ptqkit/tensor.h"

namespace ptqkit::data {

// Opens `path` lazily. Throws ptqkit::Error naming the file when it is missing, its header is
// corrupt or unsupported, or its data is shorter than the header says. A scalar is read as one value
// (a fixed input).
std::shared_ptr<const ArraySource> OpenNpy(const std::string& path);

// The whole array in `path` (scalars allowed). Same errors as OpenNpy.
HostTensor ReadNpy(const std::string& path);

// The array in an in-memory .npy image; `source` names it in errors (e.g. "a.npz:x").
HostTensor DecodeNpy(std::string_view bytes, const std::string& source);

// The .npy image of `tensor`: header (version 1 unless the header needs version 2, or `version`
// forces 1 or 2) followed by the raw little-endian data.
// REQUIRES: tensor.bytes.size() matches its shape and dtype.
std::string EncodeNpy(const HostTensor& tensor, int version = 0);

// Writes EncodeNpy(tensor, version) to `path`, replacing it. Throws ptqkit::Error (kIo) when the
// file cannot be written, (kUnsupported) for dtypes numpy cannot spell.
void WriteNpy(const std::string& path, const HostTensor& tensor, int version = 0);

}  // namespace ptqkit::data
