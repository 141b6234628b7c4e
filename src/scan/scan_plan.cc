#include "scan/scan_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "base/log.h"
#include "base/progress.h"
#include "scan/probe_cut.h"
#include "scan/settling.h"

namespace ptqkit {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int64_t BatchesFor(int64_t samples, int64_t batch_size) {
  return std::max<int64_t>(1, (samples + batch_size - 1) / batch_size);
}

// Bytes per batch of `tensors` plus what every pass keeps (graph inputs and outputs).
size_t BytesOf(const std::set<std::string>& tensors, const std::map<std::string, size_t>& bytes, size_t always) {
  size_t total = always;
  for (const auto& t : tensors) {
    auto it = bytes.find(t);
    if (it != bytes.end()) total += it->second;
  }
  return total;
}

// The probes `which` (in graph order), each group's cut activations within the plan's budget per
// batch (a probe over it alone is a group of its own); then each group's passes sized to the limit,
// or whole-model probes where one batch does not fit.
std::vector<ProbeGroup> GroupProbes(const std::vector<Probe>& probes, const std::vector<size_t>& which,
                                    const ScanPlan& plan) {
  const std::map<std::string, size_t>& bytes = plan.tensor_bytes;
  const size_t always = plan.always_bytes, budget = plan.group_budget;
  std::vector<ProbeGroup> groups(1);
  size_t group_bytes = always;  // of groups.back(), kept as tensors join it
  for (size_t i : which) {
    const auto& boundary = probes[i].cut.boundary;
    std::set<std::string> added;  // the tensors this probe would add to the group
    for (const auto& t : boundary)
      if (!groups.back().boundaries.count(t)) added.insert(t);
    if (group_bytes + BytesOf(added, bytes, 0) > budget && !groups.back().probes.empty()) {
      groups.emplace_back();
      group_bytes = always;
      added = {boundary.begin(), boundary.end()};
    }
    group_bytes += BytesOf(added, bytes, 0);
    groups.back().boundaries.insert(added.begin(), added.end());
    groups.back().probes.push_back(i);
  }
  for (auto& g : groups) {
    const size_t need = std::max<size_t>(1, BytesOf(g.boundaries, bytes, always));
    if (need > plan.limit) {
      log::Info("sensitivity: one batch of the FP32 activations {} probe(s) read needs {} MiB, more than "
                "--activation_cache_limit_mb {}; they run the whole model",
                g.probes.size(), need >> 20, plan.limit >> 20);
      g.keep_boundaries = false;
      g.boundaries.clear();
      g.batches_per_pass = plan.batches_per_chunk;
    } else {
      g.batches_per_pass = std::min<int64_t>(plan.batches_per_chunk, static_cast<int64_t>(plan.limit / need));
    }
  }
  return groups;
}

}  // namespace

ScanPlan PlanScan(const SensitivityOptions& o, const ReferenceSource& source, const GraphIndex& index,
                  const EvalBatches& eval, std::vector<Probe>* probes) {
  ScanPlan plan;
  ProbeGroup all;
  for (size_t i = 0; i < probes->size(); ++i) {
    Probe& p = (*probes)[i];
    all.probes.push_back(i);
    if (p.plan.tensors.empty()) continue;
    p.cut = ComputeProbeCut(index, p.plan);
    all.boundaries.insert(p.cut.boundary.begin(), p.cut.boundary.end());
  }
  int64_t want = o.stop_when_settled ? BatchesFor(kSettleChunkSamples, eval.batch_size) : eval.count;
  if (o.probe_chunk_samples > 0) want = std::min(want, BatchesFor(o.probe_chunk_samples, eval.batch_size));
  plan.batches_per_chunk = std::max<int64_t>(1, std::min(eval.count, want));
  plan.chunks = std::max<int64_t>(1, (eval.count + plan.batches_per_chunk - 1) / plan.batches_per_chunk);
  all.batches_per_pass = plan.batches_per_chunk;
  const size_t limit = static_cast<size_t>(o.activation_cache_limit_mb) << 20;
  if (limit == 0 || eval.count == 0) {
    if (limit == 0) log::Info("sensitivity: activation cache limit is 0; probes run the whole model");
    all.keep_boundaries = false;
    plan.groups.push_back(std::move(all));
    return plan;
  }
  // One batch with every cut activation: what each tensor costs.
  const Reference one = RunReference(*source.model, *source.set, eval, all.boundaries, true, source.runtime, 0, 1,
                                     source.mask_input);
  std::map<std::string, size_t> bytes;
  size_t always = 0;
  for (const auto& [name, t] : one.batches.at(0)) {
    if (all.boundaries.count(name)) bytes[name] = t.bytes.size();
    else always += t.bytes.size();
  }
  const size_t per_batch = std::max<size_t>(1, BytesOf(all.boundaries, bytes, always));
  const int64_t grouped_chunk = std::min(plan.batches_per_chunk, BatchesFor(kMinGroupedChunkSamples, eval.batch_size));
  plan.tensor_bytes = std::move(bytes);
  plan.always_bytes = always;
  plan.limit = limit;
  plan.group_budget = limit / static_cast<size_t>(grouped_chunk);
  if (per_batch * static_cast<size_t>(grouped_chunk) <= limit) {
    all.batches_per_pass = std::min<int64_t>(plan.batches_per_chunk, static_cast<int64_t>(limit / per_batch));
    plan.groups.push_back(std::move(all));
  } else {
    plan.grouped = true;
    plan.groups = GroupProbes(*probes, all.probes, plan);
    log::Info("sensitivity: the probes' FP32 activations take {} MiB per batch; {} groups of probes, each with its "
              "own FP32 pass per chunk",
              per_batch >> 20, plan.groups.size());
  }
  if (plan.chunks > 1 || plan.groups.size() > 1 || plan.groups[0].batches_per_pass < plan.batches_per_chunk) {
    log::Info("sensitivity: {} samples in {} chunk(s) of up to {}; FP32 activations cached one pass at a time",
              eval.samples, plan.chunks, std::min(eval.samples, plan.batches_per_chunk * eval.batch_size));
  }
  return plan;
}

double RunScanPlan(const SensitivityOptions& o, const ReferenceSource& source, const EvalBatches& eval,
                   const ScanPlan& plan, const std::vector<size_t>& owned, const std::vector<Probe>& probes,
                   ProbeSessions* sessions, SensitivityResult* result) {
  const std::set<size_t> mine(owned.begin(), owned.end());
  std::map<size_t, int64_t> samples_seen;
  const auto estimate = [&](size_t i) {
    TargetEstimate e;
    const sensitivity::ScoreAccumulator* acc = sessions->Accumulated(i);
    e.mean = acc ? acc->Score() : 0.0;
    const double half = acc ? kIntervalZ * acc->StandardError() : 0.0;
    e.low = e.mean - half;
    e.high = e.mean + half;
    e.samples = samples_seen[i];
    e.active = sessions->Active(i);
    return e;
  };
  const auto record = [&](size_t i, const std::string& why) {
    const TargetEstimate e = estimate(i);
    result->sampling[probes[i].target] = {e.samples, e.low, e.high, why};
  };
  double reference_s = 0.0;
  progress::Stage stage("probing", "probe runs", plan.chunks * static_cast<int64_t>(owned.size()));
  int64_t runs = 0, skipped = 0;
  for (int64_t c = 0; c < plan.chunks; ++c) {
    int64_t active = 0;
    for (size_t i : owned) active += sessions->Active(i) ? 1 : 0;
    if (active == 0) break;  // every target settled (or none to probe): the other samples are not needed
    const int64_t chunk_end = std::min(eval.count, (c + 1) * plan.batches_per_chunk);
    std::vector<ProbeGroup> regrouped;
    if (plan.grouped && c > 0) {
      std::vector<size_t> still;
      for (size_t i : owned)
        if (sessions->Active(i)) still.push_back(i);
      regrouped = GroupProbes(probes, still, plan);
    }
    for (const ProbeGroup& group : regrouped.empty() ? plan.groups : regrouped) {
      std::vector<size_t> todo;
      for (size_t i : group.probes)
        if (mine.count(i) && sessions->Active(i)) todo.push_back(i);
      if (todo.empty()) continue;
      for (int64_t first = c * plan.batches_per_chunk; first < chunk_end; first += group.batches_per_pass) {
        const int64_t end = std::min(chunk_end, first + group.batches_per_pass);
        const int64_t first_sample = first * eval.batch_size;
        const int64_t end_sample = std::min(eval.samples, end * eval.batch_size);
        const auto ref_start = Clock::now();
        const Reference reference = RunReference(*source.model, *source.set, eval, group.boundaries,
                                                 group.keep_boundaries, source.runtime, first, end, source.mask_input);
        reference_s += Since(ref_start);
        sessions->SetReference(&reference);
        for (size_t i : todo) {
          if (!sessions->Active(i)) continue;  // failed on an earlier pass of this chunk
          sessions->Evaluate(i);
          samples_seen[i] += end_sample - first_sample;
          if (end == chunk_end) ++runs;
          stage.Set(runs + skipped, fmt::format("samples {}-{} of {}, {} of {} targets sampling", first_sample,
                                                end_sample - 1, eval.samples, active, owned.size()));
        }
        sessions->Flush();
      }
    }
    if (o.stop_when_settled && c + 1 < plan.chunks) {
      std::vector<TargetEstimate> estimates;
      for (size_t i : owned) estimates.push_back(estimate(i));
      const std::vector<std::string> settled = SettledTargets(estimates);
      for (size_t k = 0; k < owned.size(); ++k) {
        if (settled[k].empty() || !sessions->Active(owned[k])) continue;
        record(owned[k], settled[k]);
        sessions->Finish(owned[k]);
        skipped += plan.chunks - 1 - c;
      }
    }
  }
  for (size_t i : owned) {
    if (!sessions->Active(i)) continue;
    if (o.stop_when_settled) record(i, "all samples");
    sessions->Finish(i);
  }
  // Targets whose change reaches no graph output scored 0 without a sample: say so, so that every
  // scored target has its sampling entry.
  for (size_t i : owned) {
    const std::string& target = probes[i].target;
    if (o.stop_when_settled && result->scores.count(target) && !result->sampling.count(target) &&
        !sessions->Accumulated(i)) {
      result->sampling[target] = {0, 0.0, 0.0, "unreached"};
    }
  }
  return reference_s;
}

}  // namespace ptqkit
