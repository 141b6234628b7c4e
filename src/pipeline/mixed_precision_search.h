// --mixed_precision int4,int8 --accuracy_budget X: which MatMul/Gemm weights the int4 mode stores
// as INT8 instead (the Q/DQ writer, quant/rewrite/qdq_rewrite.h, writes both). When the run's starting point (every
// weight INT4 but those of --int8_nodes) misses the budget, each other weight is ranked by what its
// INT8 copy alone recovers: one candidate per weight, all else INT4, scored on the held-out
// samples. The cut through that ranking is then bisected (accuracy/accuracy_budget.h) for the
// fewest INT8 weights within the budget. Every weight is quantized once per format (the rewrite's
// cache); each candidate is a copy of the FP32 model, rewritten and scored.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

#include "onnx/graph_index.h"
#include "pipeline/candidate_models.h"
#include "ptqkit/quantize.h"
#include "quant/placement/placement.h"
#include "quant/rewrite/qdq_rewrite.h"

namespace ptqkit {

// `fp32` is the model before the rewrite, `plan` its weight-only placement (indices into fp32's
// graph), `rewrite` the run's rewrite options with blocked.high_format set, blocked.high_weights the
// fixed INT8 weights and a cache. Returns every INT8 weight (the fixed ones included); fills
// report->accuracy_budget with the added weights' nodes, most recovering first.
std::set<std::string> SearchInt8Weights(const QuantizeOptions& o, const onnx::ModelProto& fp32, const Placement& plan,
                                        const RewriteOptions& rewrite, CandidateScorer& score,
                                        QuantizeReport* report);

}  // namespace ptqkit
