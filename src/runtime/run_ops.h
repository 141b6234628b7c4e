// The operators ptqkit adds to models it runs itself and never writes (quant/rewrite/weight_qdq_fold.h
// FakeQuantizeWeight): registered on every InferenceSession, implemented on the CPU provider.
#pragma once

namespace Ort {
struct SessionOptions;
}

namespace ptqkit {

// Makes the run-only operators available to sessions made with `options`.
void AddRunOps(Ort::SessionOptions* options);

}  // namespace ptqkit
