// The .npy header: the magic string, format version and the Python-dict text that says what the
// array is ({'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), }). This file only turns
// header bytes into an NpyHeader and back; it does no I/O, so the .npy file reader and the .npz
// member reader share it.
//
// Versions 1.0, 2.0 and 3.0 are read (2.0 widens the length field to 4 bytes, 3.0 allows UTF-8 in
// the dict, which we never need to interpret). Only little-endian (or byte-sized) plain numeric
// dtypes that map to an ONNX type are accepted; C order only.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptqkit/tensor.h"

namespace ptqkit::data {

struct NpyHeader {
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;
  // Bytes from the start of the .npy stream to the first data byte (magic + version + length +
  // dict).
  int64_t header_bytes = 0;

  int64_t NumElements() const;
  // Bytes the array data occupies: NumElements() * element size.
  int64_t DataBytes() const;
};

// The preamble (magic, version, header length) is at most this many bytes.
inline constexpr size_t kNpyPreambleBytes = 12;

// Returns the total header size (preamble + dict) announced by `preamble`, the first
// min(kNpyPreambleBytes, stream size) bytes of the stream. `source` names the file (or archive
// member) in error messages. Throws ptqkit::Error for a missing magic string or unknown version.
int64_t NpyHeaderSize(std::string_view preamble, const std::string& source);

// Parses the complete header. REQUIRES: header.size() == NpyHeaderSize(header.substr(0, 12)).
// Throws ptqkit::Error naming `source` for malformed text, unsupported dtypes and Fortran order.
NpyHeader ParseNpyHeader(std::string_view header, const std::string& source);

// numpy's descr for `dtype` ("<f4", "|u1", ...). Throws ptqkit::Error (kUnsupported) for types
// numpy has no plain spelling for (bfloat16, fp8, int4, string).
std::string NpyDescr(DataType dtype);

// Encodes a header for a C-order array. `version` 1 or 2; 0 picks 1 unless the dict is too long for
// its 2-byte length field. The result is padded so the data starts at a multiple of 64 bytes, as
// numpy does. REQUIRES: every dim >= 0.
std::string EncodeNpyHeader(DataType dtype, const std::vector<int64_t>& shape, int version = 0);

}  // namespace ptqkit::data
