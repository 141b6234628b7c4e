// CostModelBackend: a deterministic latency model — each node costs a fixed time in float and
// another when its inputs are dequantized (it runs in the quantized form), and each
// QuantizeLinear / DequantizeLinear node costs `qdq_ms`. A pure C++ model of latency for tests
// and what-if studies in which the best placement is known by construction; never a stand-in for
// timing a real runtime.
#pragma once

#include <map>
#include <string>

#include "autotune/latency_backend.h"

namespace ptqkit::autotune {

struct NodeCost {
  double float_ms = 0.0;
  double quantized_ms = 0.0;
};

class CostModelBackend : public LatencyBackend {
 public:
  CostModelBackend(std::map<std::string, NodeCost> costs, double qdq_ms) : costs_(std::move(costs)), qdq_ms_(qdq_ms) {}
  std::string name() const override { return "cost_model"; }
  // Every "run" gives the same time: median = p10 = p90, MAD 0.
  LatencySummary Measure(const onnx::ModelProto& model) override;
  int measurements() const { return measurements_; }

 private:
  std::map<std::string, NodeCost> costs_;
  double qdq_ms_;
  int measurements_ = 0;
};

}  // namespace ptqkit::autotune
