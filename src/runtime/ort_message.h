// ONNX Runtime's exception texts carry its build's internals: the source file and line
// ("/onnxruntime_src/onnxruntime/core/graph/graph.cc:1234") and the C++ signature of the function
// that failed ("onnxruntime::common::Status onnxruntime::Graph::...(...) const", or just "Compute"
// after a bare "matmul_helper.h:59"). Users need the sentence after them. StripOrtInternals removes both and keeps everything else.
// Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ptqkit {

std::string StripOrtInternals(std::string_view message);

}  // namespace ptqkit
