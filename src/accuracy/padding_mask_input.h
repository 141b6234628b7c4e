// Which input marks padding for the comparisons (the loss report, the accuracy budget, the
// sensitivity scan's probes; sensitivity/padding_mask.h applies it).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace ptqkit::accuracy {

// From --eval_mask_input `option`: "none" -> "" (every position counts); another name -> that
// name; "" (the default) -> "attention_mask" when `graph` has an integer or bool input of that
// name of rank 2 (the name Hugging Face token models' exports give their padding mask), else "".
// Why by default: padded positions carry values no task reads, and quantization moves them far
// more than the real ones (all-MiniLM-L6 INT8: cosine 0.79 over every position, 0.995 over real
// tokens), so a report over all of them calls a good model lost.
std::string PaddingMaskInput(const onnx::GraphProto& graph, const std::string& option);

}  // namespace ptqkit::accuracy
