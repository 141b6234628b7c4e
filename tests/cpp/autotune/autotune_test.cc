// The autotune stage: regions and groups on a small residual CNN, the placement search on a cost
// model whose best placement is known by construction (including the accuracy limit, the state
// file and the pattern cache), latency summaries, the option checks and the GPU backends' refusal
// on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "autotune/cost_model_backend.h"
#include "autotune/gpu_probe.h"
#include "autotune/latency_backend.h"
#include "autotune/node_profile.h"
#include "autotune/placement_search.h"
#include "autotune/presets.h"
#include "autotune/regions.h"
#include "autotune/search_state.h"
#include "onnx/graph_builder.h"
#include "onnx/onnx_library.h"
#include "ptqkit/error.h"
#include "quant/rewrite/model_placement.h"

namespace ptqkit::autotune {
namespace {
namespace fs = std::filesystem;

// x -> c1 -> r1 -> c2 -> r2 -> c3 -> add(+r1) -> c4 (1x1) -> r4 -> y. c1 and c2 are the same block;
// c3's tail is the residual Add, whose skip input the rules quantize; c4 is a block of its own.
onnx::ModelProto ResidualCnn() {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8});
  for (const char* w : {"w1", "w2", "w3"}) b.Weight(w, {16, 16, 3, 3});
  b.Weight("w4", {16, 16, 1, 1});
  const std::map<std::string, std::vector<int64_t>> conv = {{"kernel_shape", {3, 3}}, {"pads", {1, 1, 1, 1}}};
  b.Node("Conv", {"x", "w1"}, {"a1"}, "c1", conv).Node("Relu", {"a1"}, {"b1"}, "r1");
  b.Node("Conv", {"b1", "w2"}, {"a2"}, "c2", conv).Node("Relu", {"a2"}, {"b2"}, "r2");
  b.Node("Conv", {"b2", "w3"}, {"a3"}, "c3", conv).Node("Add", {"a3", "b1"}, {"s"}, "add");
  b.Node("Conv", {"s", "w4"}, {"a4"}, "c4", {{"kernel_shape", {1, 1}}}).Node("Relu", {"a4"}, {"y"}, "r4").Output("y");
  return b.Build(17);
}

std::vector<std::string> QuantizedNodes(onnx::ModelProto model) {
  ModelPlacement plan(&model, PlacementOptions{});
  std::vector<std::string> names;
  for (const auto& [node, op] : plan.QuantizedNodes()) names.push_back(node);
  return names;
}

const RegionGroup& GroupWith(const std::vector<RegionGroup>& groups, const std::string& node) {
  for (const auto& g : groups) {
    for (const auto& r : g.regions) {
      if (std::find(r.quantized_nodes.begin(), r.quantized_nodes.end(), node) != r.quantized_nodes.end()) return g;
    }
  }
  throw std::runtime_error("no group has " + node);
}

TEST(Regions, RepeatedBlocksShareAGroupAndTheResidualAddJoinsItsConv) {
  onnx::ModelProto model = ResidualCnn();
  const std::vector<std::string> quantized = QuantizedNodes(model);
  ASSERT_EQ(std::set<std::string>(quantized.begin(), quantized.end()),
            (std::set<std::string>{"c1", "c2", "c3", "add", "c4"}));
  const auto groups = GroupRegions(BuildRegions(onnxio::InferShapes(&model), quantized));
  ASSERT_EQ(groups.size(), 3u);
  const RegionGroup& block = GroupWith(groups, "c1");
  EXPECT_EQ(block.regions.size(), 2u);  // c1 and c2: same op types, attributes and shapes
  EXPECT_EQ(&block, &GroupWith(groups, "c2"));
  EXPECT_EQ(block.schemes, (std::vector<Scheme>{Scheme::kQuantize, Scheme::kFloat}));
  const RegionGroup& residual = GroupWith(groups, "c3");
  EXPECT_EQ(residual.regions.at(0).quantized_nodes, (std::vector<std::string>{"c3", "add"}));
  EXPECT_EQ(residual.schemes, (std::vector<Scheme>{Scheme::kQuantize, Scheme::kFloat, Scheme::kCoreOnly}));
  EXPECT_EQ(NodesInFloat(residual, Scheme::kCoreOnly), std::vector<std::string>{"add"});
  EXPECT_EQ(NodesInFloat(residual, Scheme::kFloat), (std::vector<std::string>{"c3", "add"}));
  // Costs: 16x8x8 outputs x 16x3x3 MACs per Conv, so the two-region group costs the most.
  EXPECT_EQ(groups.front().signature, block.signature);
  EXPECT_DOUBLE_EQ(block.cost, 2 * (16 * 8 * 8 * 16 * 9.0 + 16 * 8 * 8));
}

// The candidates of a search: the rules' placement minus `in_float`, with unit ranges (the cost
// model only reads which nodes have dequantized inputs).
onnx::ModelProto Candidate(const onnx::ModelProto& fp32, const std::vector<std::string>& in_float) {
  onnx::ModelProto m = fp32;
  PlacementOptions po;
  po.nodes_to_exclude = in_float;
  std::set<std::string> matched;
  po.matched_selectors = &matched;
  ModelPlacement plan(&m, po);
  std::map<std::string, float> amax;
  for (const auto& t : plan.ActivationTensors()) amax[t] = 1.0f;
  plan.Rewrite(plan.Ranges(amax), RewriteOptions{});
  return m;
}

struct CostSearch {
  onnx::ModelProto fp32 = ResidualCnn();
  std::vector<RegionGroup> groups;
  // Quantized Convs are fast except c4; the quantized residual Add is slow: the best placement
  // keeps c4 and the Add in float, by construction.
  CostModelBackend backend{{{"c1", {4.0, 1.0}},
                            {"c2", {4.0, 1.0}},
                            {"c3", {4.0, 1.0}},
                            {"add", {0.1, 3.0}},
                            {"c4", {1.0, 5.0}}},
                           0.05};
  std::function<double(const std::vector<std::string>&)> divergence = [](const std::vector<std::string>& f) {
    return 0.1 - 0.01 * static_cast<double>(f.size());
  };

  CostSearch() {
    onnx::ModelProto shaped = fp32;
    groups = GroupRegions(BuildRegions(onnxio::InferShapes(&shaped), QuantizedNodes(fp32)));
  }

  SearchResult Run(const SearchSettings& settings, SearchState* state) {
    Evaluation ev;
    ev.fp32_latency = [&] { return backend.Measure(fp32); };
    ev.latency = [&](const std::vector<std::string>& f) { return backend.Measure(Candidate(fp32, f)); };
    ev.divergence = divergence;
    return SearchPlacement(groups, settings, ev, state);
  }
};

TEST(PlacementSearch, FindsTheFastestPlacementKnownByConstruction) {
  CostSearch s;
  SearchState state("", "test");
  const SearchResult r = s.Run(SearchSettings{}, &state);
  EXPECT_EQ(r.in_float, (std::vector<std::string>{"add", "c4"}));
  // FP32 = 4+4+4+0.1+1; every Q/DQ node costs 0.05 (Relus cost nothing here).
  EXPECT_NEAR(r.fp32.median_ms, 13.1, 1e-9);
  EXPECT_LT(r.best.median_ms, r.default_placement.median_ms);
  EXPECT_LT(r.best.median_ms, r.fp32.median_ms);
  EXPECT_EQ(r.timed, s.backend.measurements());
  // fp32 + default + (block: float) + (residual: float, core_only) + (c4: float), and each of the
  // two changes kept timed again back to back with its incumbent (2 x 2)
  EXPECT_EQ(r.timed, 10);
}

TEST(PlacementSearch, ACandidateOverTheAccuracyLimitIsNotKept) {
  CostSearch s;
  // Keeping the Add in float costs accuracy here; without a budget the limit is the default's.
  s.divergence = [](const std::vector<std::string>& f) {
    return std::find(f.begin(), f.end(), "add") != f.end() ? 0.5 : 0.1;
  };
  SearchState state("", "test");
  SearchResult r = s.Run(SearchSettings{}, &state);
  EXPECT_EQ(r.in_float, std::vector<std::string>{"c4"});
  EXPECT_DOUBLE_EQ(r.limit, 0.1 * 1.1 + 1e-6);  // the default's divergence + 10% (+ 1e-6)
  // A budget that allows it: the Add goes to float again.
  SearchSettings loose;
  loose.budget = 0.6;
  SearchState fresh("", "test");
  EXPECT_EQ(s.Run(loose, &fresh).in_float, (std::vector<std::string>{"add", "c4"}));
}

TEST(PlacementSearch, StateFileResumesWithoutTimingAgain) {
  const fs::path dir = fs::path(PTQKIT_TEST_TMPDIR) / "autotune_state";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "state.json").string();
  CostSearch first;
  SearchState s1(path, "fingerprint-1");
  const SearchResult a = first.Run(SearchSettings{}, &s1);
  s1.PutNodeMs({{"c1", 1.5}, {"add", 0.25}});  // the profile that ordered the groups
  ASSERT_TRUE(fs::exists(path));
  CostSearch second;
  SearchState s2(path, "fingerprint-1");
  EXPECT_EQ(s2.loaded_candidates(), a.timed);
  EXPECT_EQ(s2.node_ms(), (std::map<std::string, double>{{"add", 0.25}, {"c1", 1.5}}));
  const SearchResult b = second.Run(SearchSettings{}, &s2);
  EXPECT_EQ(b.in_float, a.in_float);
  EXPECT_EQ(b.timed, 0);
  EXPECT_EQ(second.backend.measurements(), 0);
  EXPECT_EQ(b.from_state, a.timed);
  // Another fingerprint (another model or settings) does not reuse the timings.
  CostSearch third;
  SearchState s3(path, "fingerprint-2");
  EXPECT_EQ(s3.loaded_candidates(), 0);
  EXPECT_EQ(third.Run(SearchSettings{}, &s3).timed, a.timed);
}

TEST(PlacementSearch, SchemesPerRegionAndMaxGroupsLimitTheSearch) {
  CostSearch s;
  SearchSettings settings;
  settings.schemes_per_region = 2;  // the rules' scheme and the next one: float (core_only not tried)
  settings.max_groups = 2;          // the two most costly groups: the c1/c2 block and the residual c3
  SearchState state("", "test");
  const SearchResult r = s.Run(settings, &state);
  EXPECT_EQ(r.in_float, std::vector<std::string>{});  // float loses in both groups; c4 not searched
  EXPECT_EQ(r.timed, 4);  // fp32, default, block float, residual float
}

TEST(PlacementSearch, MarginalChangesAreTriedTogether) {
  // Every node costs the same in float and quantized: only the Q/DQ nodes (0.05 ms each) make the
  // difference, so each group alone saves less than the 1% margin, all together more.
  CostSearch s;
  s.backend = CostModelBackend({{"c1", {10, 10}}, {"c2", {10, 10}}, {"c3", {10, 10}}, {"add", {1, 1}}, {"c4", {10, 10}}},
                               0.05);
  SearchState state("", "test");
  const SearchResult r = s.Run(SearchSettings{}, &state);
  EXPECT_EQ(r.in_float, (std::vector<std::string>{"add", "c1", "c2", "c3", "c4"}));
  EXPECT_DOUBLE_EQ(r.best.median_ms, r.fp32.median_ms);
  // fp32, default, block float, residual float and core_only, c4 float, then those three
  // together, confirmed back to back with the incumbent (2)
  EXPECT_EQ(r.timed, 9);
  for (const auto& g : s.groups) {
    const double alone = 0.05 * 2 * static_cast<double>(g.regions.size());  // at least one Q/DQ pair less
    EXPECT_LT(alone, 0.01 * r.default_placement.median_ms) << g.signature;
  }
}

TEST(PlacementSearch, PatternCacheWarmStartIsCheckedAndReused) {
  const fs::path dir = fs::path(PTQKIT_TEST_TMPDIR) / "autotune_patterns";
  fs::remove_all(dir);
  fs::create_directories(dir);
  CostSearch s;
  std::map<std::string, std::string> decisions;
  for (const auto& g : s.groups) decisions[g.signature] = "quantize";
  decisions[GroupWith(s.groups, "c4").signature] = "float";
  const std::string path = (dir / "patterns.json").string();
  SavePatternCache(path, decisions);
  SearchSettings settings;
  for (const auto& [sig, scheme] : LoadPatternCache(path)) settings.warm_start[sig] = ParseScheme(scheme);
  SearchState state("", "test");
  const SearchResult r = s.Run(settings, &state);
  EXPECT_EQ(r.in_float, (std::vector<std::string>{"add", "c4"}));
  const auto& c4 = GroupWith(s.groups, "c4");
  const size_t index = static_cast<size_t>(&c4 - s.groups.data());
  EXPECT_EQ(r.why[index], "from the pattern cache");
}

TEST(Regions, MeasuredCostsReplaceTheEstimateWhenTheProfileNamesTheNodes) {
  onnx::ModelProto model = ResidualCnn();
  std::vector<Region> regions = BuildRegions(onnxio::InferShapes(&model), QuantizedNodes(model));
  // ONNX Runtime's trace: times in microseconds; other categories and event names are ignored.
  const std::string trace = R"([
    {"cat": "Session", "name": "model_run", "dur": 9000},
    {"cat": "Node", "name": "c1_kernel_time", "dur": 1000}, {"cat": "Node", "name": "c1_kernel_time", "dur": 3000},
    {"cat": "Node", "name": "r1_kernel_time", "dur": 200}, {"cat": "Node", "name": "c2_kernel_time", "dur": 4000},
    {"cat": "Node", "name": "r2_kernel_time", "dur": 200}, {"cat": "Node", "name": "c3_kernel_time", "dur": 4000},
    {"cat": "Node", "name": "add_kernel_time", "dur": 400}, {"cat": "Node", "name": "c4_kernel_time", "dur": 800},
    {"cat": "Node", "name": "r4_kernel_time", "dur": 200}, {"cat": "Node", "name": "c1_fence_before", "dur": 5}])";
  const auto ms = ParseNodeTimes(trace);
  EXPECT_DOUBLE_EQ(ms.at("c1"), 2.0);  // the median of its two runs
  EXPECT_DOUBLE_EQ(ms.at("add"), 0.4);
  EXPECT_EQ(ms.count("c1_fence_before"), 0u);
  ASSERT_TRUE(UseMeasuredCosts(ms, &regions));
  std::map<std::string, double> cost;
  for (const Region& r : regions) cost[r.core] = r.cost;
  EXPECT_DOUBLE_EQ(cost.at("c1"), 2.2);  // c1 + r1
  EXPECT_DOUBLE_EQ(cost.at("c3"), 4.4);  // c3 + add
  EXPECT_DOUBLE_EQ(cost.at("c4"), 1.0);  // c4 + r4
  // A profile that names almost none of the nodes (a fused graph) leaves the estimates alone.
  std::vector<Region> estimated = BuildRegions(onnxio::InferShapes(&model), QuantizedNodes(model));
  const double before = estimated.front().cost;
  EXPECT_FALSE(UseMeasuredCosts({{"c1", 1.0}}, &estimated));
  EXPECT_DOUBLE_EQ(estimated.front().cost, before);
}

TEST(Latency, SummaryHasMedianPercentilesAndMad) {
  const LatencySummary s = Summarize({5, 1, 4, 2, 3, 10, 6, 7, 8, 9});
  EXPECT_DOUBLE_EQ(s.median_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.p10_ms, 1);
  EXPECT_DOUBLE_EQ(s.p90_ms, 9);
  EXPECT_DOUBLE_EQ(s.mad_ms, 2.5);
  EXPECT_EQ(s.runs, 10);
  EXPECT_THROW(Summarize({}), Error);
}

TEST(Latency, GpuBackendsNameWhatIsMissingAndNeverFallBack) {
  const GpuProbe probe = ProbeGpu();
  for (const char* backend : {"ort_cuda", "ort_trt", "tensorrt"}) {
    const std::string missing = MissingForBackend(probe, backend);
    BackendRequest r;
    r.backend = backend;
    if (missing.empty()) {
      EXPECT_NO_THROW(MakeLatencyBackend(r)) << backend;  // a GPU machine with the runtime installed
      continue;
    }
    try {
      MakeLatencyBackend(r);
      ADD_FAILURE() << backend << " started without a GPU";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("no GPU / TensorRT found"), std::string::npos) << what;
      EXPECT_NE(what.find(backend), std::string::npos) << what;
      EXPECT_NE(what.find("scripts/setup --gpu"), std::string::npos) << what;
    }
  }
}

TEST(Latency, MissingPiecesAreNamedOneByOne) {
  GpuProbe none;
  const std::string trt = MissingForBackend(none, "tensorrt");
  EXPECT_NE(trt.find("no GPU / TensorRT found for the tensorrt latency backend"), std::string::npos) << trt;
  EXPECT_NE(trt.find("no NVIDIA GPU device"), std::string::npos) << trt;
  EXPECT_NE(trt.find("no CUDA driver"), std::string::npos) << trt;
  EXPECT_NE(trt.find("no trtexec"), std::string::npos) << trt;
  EXPECT_NE(MissingForBackend(none, "ort_trt").find("without the TensorRT execution provider"), std::string::npos);
  EXPECT_NE(MissingForBackend(none, "ort_cuda").find("without the CUDA execution provider"), std::string::npos);
  GpuProbe all{true, true, true, true, "/usr/bin/trtexec"};
  for (const char* b : {"ort_cuda", "ort_trt", "tensorrt"}) EXPECT_EQ(MissingForBackend(all, b), "") << b;
  GpuProbe no_device = all;
  no_device.nvidia_device = false;
  EXPECT_NE(MissingForBackend(no_device, "ort_cuda").find("no NVIDIA GPU device"), std::string::npos);
}

TEST(Presets, ModesSetRunsAndExplicitValuesWin) {
  AutotuneOptions o;
  o.mode = "quick";
  Settings q = ResolveSettings(o);
  EXPECT_EQ(q.schemes_per_region, 2);
  EXPECT_EQ(q.timing_runs, 10);
  o.mode = "extensive";
  o.timing_runs = 7;
  o.warmup_runs = 0;
  Settings e = ResolveSettings(o);
  EXPECT_EQ(e.timing_runs, 7);
  EXPECT_EQ(e.warmup_runs, 0);
  EXPECT_EQ(e.max_groups, -1);
  o.use_trtexec = true;
  EXPECT_EQ(ResolveSettings(o).backend, "tensorrt");
}

void ExpectRefused(const AutotuneOptions& o, const std::string& mode, const std::string& words) {
  try {
    CheckAutotuneOptions(o, mode);
    ADD_FAILURE() << "accepted; expected an error with: " << words;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Presets, OptionsWithoutMeaningAreRefusedWithAReason) {
  AutotuneOptions o;
  o.mode = "fast";
  ExpectRefused(o, "int8", "unknown --autotune mode 'fast'");
  o.mode = "quick";
  ExpectRefused(o, "fp8", "ONNX Runtime's CPU provider has no FP8 kernels");
  ExpectRefused(o, "int4", "int4 is weight-only");
  AutotuneOptions t = o;
  t.trtexec_args = "--fp16";
  ExpectRefused(t, "int8", "--autotune_trtexec_args applies only with --autotune_use_trtexec");
  t = o;
  t.timing_cache = "cache.bin";
  ExpectRefused(t, "int8", "TensorRT timing cache");
  t = o;
  t.qdq_baseline = "q.onnx";
  ExpectRefused(t, "int8", "--autotune_qdq_baseline is not supported");
  t = o;
  t.backend = "cuda";
  ExpectRefused(t, "int8", "unknown --autotune_backend 'cuda'");
  AutotuneOptions off;  // no mode: nothing is checked, autotune is off
  off.backend = "anything";
  EXPECT_NO_THROW(CheckAutotuneOptions(off, "int8"));
}

}  // namespace
}  // namespace ptqkit::autotune
