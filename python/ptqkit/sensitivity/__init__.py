"""ptqkit.sensitivity: ModelOpt's modelopt.onnx.quantization.sensitivity API on ptqkit's C++
sensitivity scan and exclusion picker.

    result = score(onnx_path="model.onnx", calibration_data="calib.npz", granularity="node")
    excluded = suggest_exclusion(result["scores"], coverage=0.90)
    print(summarize_exclusion(result["scores"], excluded))
    ptqkit.quantize(onnx_path="model.onnx", calibration_data="calib.npz", nodes_to_exclude=excluded)

score() returns the content of the scores file `ptqkit sensitivity` writes (the same JSON,
parsed). The picker's warnings (near ties, unknown names, ...) go to the "ptqkit" logger.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from ptqkit import _calibration, _options, _ptqkit

logger = logging.getLogger("ptqkit")

__all__ = ["score", "suggest_exclusion", "summarize_exclusion"]


def score(
    onnx_path,
    calibration_data=None,
    granularity: str = "op_type",
    metric: str = "kl_div",
    target_precision: str = "int8",
    calibration_method: str = "mse",
    op_types_scope=None,
    *,
    calibration_data_path=None,
    percentile: float = 99.999,
    num_calib_samples: int = 100,
    calibration_shapes=None,
    calibration_batch_size=None,
    calibration_batch_axis=None,
    calibration_eps=("cpu",),
    trt_plugins=None,
    intra_op_num_threads=None,
    activation_cache_limit_mb: int = 2048,
    calibration_cache=None,
    output_json=None,
    report=None,
    log_level: str = "INFO",
    log_file=None,
) -> dict:
    """Scores each op type (granularity="op_type") or node ("node") by how much quantizing it
    alone changes the model's outputs (metric kl_div | mse | cos; higher = more sensitive).

    calibration_data: as for ptqkit.quantize() (path, array, mapping, sequence of per-sample
    mappings); None = synthetic inputs (scores are then directional only).
    output_json / report: also write the scores file / HTML report there (nothing is written by
    default; `python -m ptqkit.sensitivity` writes <model>.sensitivity.json like the CLI).

    activation_cache_limit_mb: FP32 activations cached for probe sub-graphs; above it every probe
    runs the whole model (same scores, slower); 0 = always whole-model probes.

    calibration_cache: a calibration table (`ptqkit calibrate --for_sensitivity`) to take the
    ranges from instead of calibrating; a table of another model is refused.

    Returns {"scores": {target: score}, "failed": [{"target", "reason"}], "non_finite":
    [{"target", "reason"}] (probes whose outputs turned NaN/Inf; their score is the largest finite
    double, 1.7976931348623157e+308), "num_non_finite", "calibration_source",
    "num_calibration_samples", "metric", "granularity", "target_precision", "timings",
    "onnx_path", "ptqkit_version"}. Raises ptqkit.Error.
    """
    data = _calibration.resolve(calibration_data, calibration_data_path, onnx_path,
                                _options.batch_axes(calibration_batch_axis))
    o = _ptqkit.SensitivityOptions()
    o.onnx_path = _options.path(onnx_path)
    o.calibration_data_path = data.path
    o.granularity = granularity
    o.metric = metric
    o.target_precision = target_precision
    o.calibration_method = calibration_method
    o.percentile = float(percentile)
    o.op_types_scope = _options.names(op_types_scope, "op_types_scope")
    o.num_calib_samples = int(num_calib_samples)
    o.calibration_shapes = _options.shapes(calibration_shapes)
    o.calibration_batch_size = _options.count(calibration_batch_size)
    o.calibration_batch_axis = _options.batch_axes(calibration_batch_axis)
    o.calibration_eps = _options.names(calibration_eps, "calibration_eps")
    o.trt_plugins = _options.names(trt_plugins, "trt_plugins")
    o.intra_op_num_threads = _options.count(intra_op_num_threads)
    o.activation_cache_limit_mb = int(activation_cache_limit_mb)
    o.calibration_cache = _options.path(calibration_cache)
    text = _ptqkit.score(o, data.arrays, _options.path(output_json), _options.path(report), data.label,
                         log_level, _options.path(log_file))
    return json.loads(text)


def suggest_exclusion(
    scores: Mapping,
    coverage: float = 0.90,
    threshold: float | None = None,
    *,
    blocks=None,
    block_agg: str = "sum",
    max_nodes: int | None = None,
    min_score_floor: float = 0.0,
    near_tie_ratio: float | None = 0.99,
) -> list[str]:
    """The targets to keep in high precision, in rank order: pass them to ptqkit.quantize() as
    nodes_to_exclude (node scores) or op_types_to_exclude (op-type scores).

    Coverage mode (default): the top of the ranking while the cumulative score stays <=
    coverage x total. Threshold mode (threshold set; coverage ignored): every target scoring
    above threshold. max_nodes caps the count; targets scoring <= min_score_floor are never
    excluded. blocks = {group: [regex, ...]} (first match wins, in the dict's order) ranks whole
    groups scored by block_agg (sum | max | mean) and returns their members. A near tie at the
    cut (first left out >= near_tie_ratio x last excluded) is logged as a warning; None silences.
    """
    o = _ptqkit.PickerOptions()
    o.coverage = float(coverage)
    o.threshold = None if threshold is None else float(threshold)
    o.max_nodes = None if max_nodes is None else int(max_nodes)
    o.min_score_floor = float(min_score_floor)
    o.near_tie_ratio = None if near_tie_ratio is None else float(near_tie_ratio)
    o.blocks = _blocks(blocks)
    o.block_agg = block_agg
    pick = _ptqkit.suggest_exclusion(_scores(scores), o)
    for warning in pick["warnings"]:
        logger.warning("%s", warning)
    return pick["excluded"]


def summarize_exclusion(scores: Mapping, excluded) -> dict:
    """What an exclusion list covers: {"coverage_pct", "num_excluded",
    "num_previously_quantized", "num_remaining_quantized", "excluded_mass", "total_mass"}.
    Names that are not scored, or repeat, are not counted (logged as warnings)."""
    summary = _ptqkit.summarize_exclusion(_scores(scores), _options.names(excluded, "excluded"))
    for warning in summary.pop("warnings"):
        logger.warning("%s", warning)
    return summary


def _scores(scores) -> dict[str, float]:
    if not isinstance(scores, Mapping):
        raise TypeError(f"scores must be a mapping {{target: score}} (result['scores']), not {type(scores).__name__}")
    return {str(k): float(v) for k, v in scores.items()}


def _blocks(blocks) -> list[tuple[str, list[str]]]:
    """{group: regex or [regex, ...]} (or a sequence of such pairs), keeping the order."""
    if blocks is None:
        return []
    items = blocks.items() if isinstance(blocks, Mapping) else blocks
    out = []
    for group, patterns in items:
        out.append((str(group), _options.names(patterns, f"blocks[{group!r}]")))
    return out
