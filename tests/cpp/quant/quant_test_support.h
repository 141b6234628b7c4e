// Small helpers the quant tests share: seeded normal values and initializer lookup.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ptqkit {

// n values drawn from N(0, sd²) with a fixed seed.
inline std::vector<float> Normal(size_t n, uint64_t seed, float sd = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// The initializer `name` of the main graph, or nullptr.
inline const onnx::TensorProto* Init(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

}  // namespace ptqkit
