// The ONNX library's own tools behind small wrappers: its version converter (any default-domain
// opset from 7 up, If/Loop/Scan subgraphs included), its shape inference (with data propagation)
// and its checker. ptqkit does not re-implement any of them; these wrappers only turn the
// library's exceptions into ptqkit::Error messages that name the model and what to do, and keep
// the large weights out of the library's copies (see WeightStash).
// All functions are thread-compatible: they touch only the model they are given.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace ptqkit::onnxio {

// Raises the default-domain opset to `target` with the ONNX version converter; does nothing when
// the model is already at `target` or newer. A model with GroupNormalization goes to at least 21,
// its per-group scale and bias widened to per channel (group_norm_upgrade.h). Everything outside
// the graph and the opset imports (metadata, functions, doc strings, producer) is kept as it was.
// Returns the opset the model had.
// REQUIRES: CheckModel passed. Throws ptqkit::Error naming the op the converter could not convert.
int64_t UpgradeOpset(onnx::ModelProto* model, int64_t target);

// Runs the library's shape inference with data propagation and returns a copy of the model with
// the inferred value_info, for reading types and shapes only: its large initializers carry no
// bytes (WeightStash). `model` is unchanged when this returns. Ops the library does not know
// (other domains) are not fatal: what could be inferred is returned.
onnx::ModelProto InferShapes(onnx::ModelProto* model);

// The library's checker on a model ptqkit is about to write. `what` names it in the error.
// Throws ptqkit::Error: a model that fails the checker is a ptqkit bug, never written.
// The checker insists that main-graph inputs and outputs declare a shape, which the ONNX spec
// leaves optional and exporters sometimes omit; ptqkit copies those declarations from the user's
// model, so they are given an empty shape for the check only. `model` is unchanged on return.
void CheckOutputModel(onnx::ModelProto* model, const std::string& what);

}  // namespace ptqkit::onnxio
