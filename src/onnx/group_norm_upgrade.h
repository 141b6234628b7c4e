// GroupNormalization changed meaning at opset 21: its scale and bias went from one value per group
// ([G]) to one per channel ([C]), and opset 18's version is deprecated (the checker refuses a model
// that still has it). The ONNX version converter (1.23) relabels the node and leaves its inputs
// per group, which gives a model that does not run. Before the converter crosses opset 21,
// UpgradeOpset widens each constant per-group scale and bias to per channel (value g repeated for
// the C/G channels of group g): the same normalization in opset 21's terms.
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit::onnxio {

// True when the main graph has a default-domain GroupNormalization.
bool HasGroupNormalization(const onnx::GraphProto& graph);

// Rewrites the scale and bias of every main-graph GroupNormalization from [G] to [C] values (new
// initializers; an old one goes unless another node still reads it). Leaves a scale or bias that
// already has C values as it is. Throws ptqkit::Error naming the node when its scale or bias is not an initializer
// of float values or its input's channel count is unknown.
void WidenGroupNormalizationParameters(onnx::ModelProto* model);

}  // namespace ptqkit::onnxio
