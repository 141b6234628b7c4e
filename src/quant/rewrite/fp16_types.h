// Element types for the FP16/BF16 conversion (fp16_conversion.h), apart from the rewrite: which
// ops have a low-precision definition, which of their slots keep float32 whatever the op's type,
// and the element type of every tensor as the ONNX library's shape inference gives it.
// Pure functions and constant tables; thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace ptqkit {

// Default-domain op types converted to `type` (FLOAT16 or BFLOAT16); everything else stays float32.
const std::set<std::string>& LowPrecisionOpTypes(int32_t type);

// Inputs typed separately from the op's main type that must stay float32 in `low`.
bool InputStaysFloat(const std::string& op, int slot, int32_t low);
// Outputs that keep float32 (LayerNormalization's Mean and InvStdDev: its stash type).
bool OutputStaysFloat(const std::string& op, int slot);
// Inputs that accept every type (Cast, Shape, Size input 0).
bool AnyTypeInput(const std::string& op, int slot);

// Where an op's output type comes from: its inputs' type, or an attribute the conversion rewrites.
enum class OutputTypeSource { kInputs, kToAttribute, kValueAttribute };
OutputTypeSource OutputTypeOf(const std::string& op);

// Element type of every tensor of the top-level graph, from the ONNX library's shape inference
// (declared inputs, initializers, inferred value_info and outputs). A tensor the library cannot
// type (an op of another domain) is absent, and the nodes touching it stay float32.
std::map<std::string, int32_t> InferElemTypes(onnx::ModelProto* model);

}  // namespace ptqkit
