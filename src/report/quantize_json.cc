#include "report/quantize_json.h"

namespace ptqkit {
namespace {

template <typename T>
nlohmann::ordered_json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

nlohmann::ordered_json LossReportToJson(const LossReport& loss) {
  nlohmann::ordered_json j;
  j["evaluated"] = loss.evaluated;
  j["not_evaluated_because"] = loss.not_evaluated_because;
  j["samples"] = loss.samples;
  j["held_out"] = loss.held_out;
  j["sample_indices"] = loss.sample_indices;
  j["synthetic"] = loss.synthetic;
  j["ort_level"] = loss.ort_level;
  j["mask_input"] = loss.mask_input;
  j["outputs"] = nlohmann::ordered_json::array();
  for (const OutputLoss& o : loss.outputs) {
    nlohmann::ordered_json e;
    e["output"] = o.output;
    e["samples"] = o.samples;
    e["is_float"] = o.is_float;
    e["rank"] = o.rank;
    e["cosine_mean"] = o.cosine_mean;
    e["cosine_min"] = o.cosine_min;
    e["relative_rmse"] = o.relative_rmse;
    e["max_abs_diff"] = o.max_abs_diff;
    e["top1_agreement"] = OrNull(o.top1_agreement);
    e["exact_match"] = OrNull(o.exact_match);
    e["non_finite"] = o.non_finite;
    j["outputs"].push_back(e);
  }
  j["culprits"] = nlohmann::ordered_json::array();
  for (const TensorClipping& c : loss.culprits) {
    j["culprits"].push_back({{"tensor", c.tensor},
                             {"relative_error", c.relative_error},
                             {"clipped_fraction", c.clipped_fraction},
                             {"amax", c.amax},
                             {"absmax", c.absmax}});
  }
  j["warning"] = loss.warning;
  j["seconds"] = loss.seconds;
  return j;
}

nlohmann::ordered_json AccuracyBudgetToJson(const AccuracyBudgetReport& b) {
  nlohmann::ordered_json j;
  j["used"] = b.used;
  j["kept_as"] = b.kept_as;
  j["metric"] = b.metric;
  j["budget"] = b.budget;
  j["met"] = b.met;
  j["ranked_nodes"] = b.ranked_nodes;
  j["excluded_nodes"] = b.excluded_nodes;
  j["curve"] = nlohmann::ordered_json::array();
  for (const auto& [k, d] : b.curve) j["curve"].push_back({{"excluded", k}, {"divergence", d}});
  j["evaluations"] = b.evaluations;
  return j;
}

nlohmann::ordered_json QuantizeReportToJson(const QuantizeReport& r) {
  nlohmann::ordered_json j;
  j["output_path"] = r.output_path;
  j["original_opset"] = r.original_opset;
  j["output_opset"] = r.output_opset;
  j["quantized_by_op_type"] = r.quantized_by_op_type;
  j["left_in_float"] = nlohmann::ordered_json::array();
  for (const auto& [node, why] : r.left_in_float) j["left_in_float"].push_back({{"node", node}, {"reason", why}});
  j["qdq_pairs"] = r.qdq_pairs;
  j["runtime_form"] = {{"name", r.runtime_form},
                       {"dynamic_matmuls", r.dynamic_matmuls},
                       {"int8_embeddings", r.int8_embeddings},
                       {"integer_kernel", r.integer_kernel},
                       {"without_integer_kernel", r.without_integer_kernel}};
  j["bias_corrected_convs"] = r.bias_corrected_convs;
  j["smoothed_matmul_inputs"] = r.smoothed_matmul_inputs;
  j["smoothing_muls_inserted"] = r.smoothing_muls_inserted;
  j["equalized_depthwise_convs"] = r.equalized_depthwise_convs;
  j["ort_fp16_bias_overflows"] = r.ort_fp16_bias_overflows;
  {
    const WeightRoundingReport& w = r.weight_rounding;
    nlohmann::ordered_json not_rounded = nlohmann::ordered_json::array();
    for (const auto& [weight, why] : w.not_rounded) not_rounded.push_back({{"weight", weight}, {"reason", why}});
    j["weight_rounding"] = {{"method", w.method},           {"considered", w.considered},
                            {"rounded", w.rounded},         {"not_rounded", not_rounded},
                            {"mean_error_ratio", w.mean_error_ratio},
                            {"conv_biases_corrected", w.conv_biases_corrected},
                            {"forward_passes", w.forward_passes}, {"seconds", w.seconds}};
  }
  j["canonical"] = {{"folded_batchnorms", r.folded_batchnorms},
                    {"folded_channel_affines", r.folded_channel_affines},
                    {"fused_activations", r.fused_activations},
                    {"folded_pads", r.folded_pads},
                    {"max_abs_diff", r.canonical_max_abs_diff},
                    {"checked_samples", r.canonical_checked_samples}};
  j["calibration_method"] = r.calibration_method;
  j["num_calibration_samples"] = r.num_calibration_samples;
  j["batch_size"] = r.batch_size;
  j["synthetic_data"] = r.synthetic_data;
  j["calibration_from_cache"] = r.calibration_from_cache;
  j["calibration_seconds"] = r.calibration_seconds;
  j["total_seconds"] = r.total_seconds;
  j["execution_providers"] = r.execution_providers;
  j["loss"] = LossReportToJson(r.loss);
  j["accuracy_budget"] = AccuracyBudgetToJson(r.accuracy_budget);
  j["weight_precision"] = nlohmann::ordered_json::object();  // weight-only modes: node -> format
  for (const auto& [node, format] : r.weight_precision) j["weight_precision"][node] = format;
  j["node_formats"] = nlohmann::ordered_json::array();  // --mixed_precision int8,fp8, most sensitive first
  for (const auto& f : r.node_formats) {
    j["node_formats"].push_back(
        {{"node", f.node}, {"format", f.format}, {"int8_score", f.int8_score}, {"fp8_score", f.fp8_score}});
  }
  j["format_candidates"] = nlohmann::ordered_json::object();  // --mixed_precision: candidate -> divergence
  for (const auto& [candidate, d] : r.format_candidates) j["format_candidates"][candidate] = d;
  j["dynamic_block_activations"] = r.dynamic_block_activations;
  j["autotune"] = AutotuneReportToJson(r.autotune);
  return j;
}

}  // namespace ptqkit
