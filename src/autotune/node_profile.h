// Per-node kernel times of a model from ONNX Runtime's profiler: autotune's per-region timing on
// the CPU backend. The model runs at ONNX Runtime's basic optimization level, which keeps every
// node under its own name (the extended levels fuse nodes and rename them), so the times map
// onto the graph's nodes and the regions built from them.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "ptqkit/calibration.h"

namespace ptqkit::autotune {

// Node name -> median kernel time in milliseconds over runs + 1 profiled runs.
// `work_dir` receives the trace file, which is deleted. Throws ptqkit::Error (kRuntime).
std::map<std::string, double> ProfileNodeTimes(const onnx::ModelProto& model, const Batch& feeds, int runs, int threads,
                                               const std::string& work_dir);

// Reads ONNX Runtime's Chrome-trace JSON: the "Node" events named "<node>_kernel_time", median
// per node over the runs it holds.
std::map<std::string, double> ParseNodeTimes(const std::string& trace_json);

}  // namespace ptqkit::autotune
