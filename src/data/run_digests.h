// Content digests that shard fingerprints are built from (scan/fingerprint.h): a shard on another
// machine may see another copy of the model or data under another path, so parts are matched by
// content, never by path.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "ptqkit/calibration.h"

namespace ptqkit {

// The model file's bytes plus every initializer's raw data as loaded (which covers weights kept
// in external data files). Throws ptqkit::Error (kIo) naming the file if it cannot be read.
std::string ModelDigest(const std::string& path, const onnx::ModelProto& loaded);

// Every sample of a validated set: per input (sorted by name) its dtype, shape and bytes, read in
// fixed batches so that the digest does not depend on the user's batch size or on the format
// (.npy, .npz, folder, in-memory) the same values came in. Reads the whole set once.
std::string DataDigest(const CalibrationSet& set);

// The digest of a file's bytes. Throws ptqkit::Error (kIo) naming it.
std::string FileDigest(const std::string& path);

}  // namespace ptqkit
