// libFuzzer harness: model bytes -> LoadModel (protobuf parse, external data references resolved in
// the scratch folder), the model checks, node naming, the cycle check and the input specs. Every
// rejection must be a ptqkit::Error; anything else (a crash, another exception, a sanitizer
// report) is a finding.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "onnx/graph_cycles.h"
#include "onnx/model_io.h"
#include "onnx/model_prep.h"
#include "runtime/model_inputs.h"
#include "ptqkit/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ptqkit::fuzz::WriteScratch(data, size, ".onnx");
  try {
    onnx::ModelProto model = ptqkit::onnxio::LoadModel(path);
    ptqkit::onnxio::CheckModel(model, path);
    ptqkit::onnxio::AssignNodeNames(model.mutable_graph());
    ptqkit::onnxio::CheckAcyclic(model.graph(), path);
    (void)ptqkit::ModelInputSpecs(model.graph());
  } catch (const ptqkit::Error&) {
  }
  return 0;
}
