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

import inspect
import json
import logging
from collections.abc import Mapping

from ptqkit import _calibration, _option_table, _options, _ptqkit

logger = logging.getLogger("ptqkit")

__all__ = ["score", "suggest_exclusion", "summarize_exclusion"]


_TABLE = _option_table.specs("sensitivity")
_BY_NAME = _option_table.by_name(_TABLE)


def score(onnx_path, calibration_data=None, *args, **options) -> dict:
    """Scores each op type (granularity="op_type") or node ("node") by how much quantizing it
    alone changes the model's outputs (metric kl_div | mse | cos; higher = more sensitive).

    Keywords: the options of `ptqkit sensitivity` (see the signature, `python -m
    ptqkit.sensitivity --help` and the README), from the same option table: the data,
    calibration and runtime ones are quantize's, with the same names, values and errors.
    calibration_data: as for ptqkit.quantize() (path, array, mapping, sequence of per-sample
    mappings); None = synthetic inputs (scores are then directional only).
    output_json / report: also write the scores file / HTML report there (nothing is written by
    default; `python -m ptqkit.sensitivity` writes <model>.sensitivity.json like the CLI).
    calibration_cache: a calibration table (`ptqkit calibrate --for_sensitivity`) to take the
    ranges from instead of calibrating; a table of another model is refused.

    Returns {"scores": {target: score}, "failed": [{"target", "reason"}], "non_finite":
    [{"target", "reason"}] (probes whose outputs turned NaN/Inf; their score is the largest finite
    double, 1.7976931348623157e+308), "num_non_finite", "calibration_source",
    "num_calibration_samples", "metric", "granularity", "target_precision", "timings",
    "onnx_path", "ptqkit_version", and with stop_when_settled (the default) "sampling": {target:
    {"samples", "low", "high", "settled"}}}. Raises ptqkit.Error.
    """
    _option_table.take_scan_positional(args, options)  # granularity, metric, ... (ModelOpt's order)
    given = _option_table.given_text("score", _BY_NAME, options)
    given["onnx_path"] = _option_table.as_text(_BY_NAME["onnx_path"], onnx_path)
    data = _calibration.resolve(calibration_data, options.get("calibration_data_path"), onnx_path,
                                _option_table.batch_axes(given))
    if data.path:
        given["calibration_data_path"] = [data.path]
    return json.loads(_ptqkit.score(given, data.arrays, data.label))


def _signature() -> inspect.Signature:
    return inspect.Signature(_option_table.keywords(_TABLE, _option_table.scan_parameters(_BY_NAME)),
                             return_annotation=dict)


score.__signature__ = _signature()


def suggest_exclusion(scores: Mapping, *args, blocks=None, **options) -> list[str]:
    """The targets to keep in high precision, in rank order: pass them to ptqkit.quantize() as
    nodes_to_exclude (node scores) or op_types_to_exclude (op-type scores).

    Coverage mode (default): the top of the ranking while the cumulative score stays <=
    coverage x total. Threshold mode (threshold set; coverage ignored): every target scoring
    above threshold. max_nodes caps the count; targets scoring <= min_score_floor are never
    excluded. blocks = {group: [regex, ...]} (first match wins, in the dict's order) ranks whole
    groups scored by block_agg (sum | max | mean) and returns their members. A near tie at the
    cut (first left out >= near_tie_ratio x last excluded) is logged as a warning; None silences.
    The keywords and their defaults are the picker's option table (`ptqkit exclude` takes the same).
    """
    bound = _PICKER_SIGNATURE.bind(scores, *args, blocks=blocks, **options)
    given = {name: "none" if value is None else str(value)
             for name, value in bound.arguments.items() if name in _PICKER_NAMES}
    o = _ptqkit.picker_options(given)
    o.blocks = _blocks(blocks)
    pick = _ptqkit.suggest_exclusion(_scores(scores), o)
    for warning in pick["warnings"]:
        logger.warning("%s", warning)
    return pick["excluded"]


def _picker_default(text: str):
    """A picker option's default as Python shows it: None, a number, or a word."""
    if text == "none":
        return None
    try:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        return text


def _picker_signature() -> inspect.Signature:
    # coverage and threshold may be positional (ModelOpt's order); the rest are keywords.
    positional = ("coverage", "threshold")
    params = [inspect.Parameter("scores", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Mapping)]
    keywords = [inspect.Parameter("blocks", inspect.Parameter.KEYWORD_ONLY, default=None)]
    for row in _ptqkit.picker_option_table():
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if row["name"] in positional else inspect.Parameter.KEYWORD_ONLY
        p = inspect.Parameter(row["name"], kind, default=_picker_default(row["default"]))
        (params if kind == inspect.Parameter.POSITIONAL_OR_KEYWORD else keywords).append(p)
    return inspect.Signature(params + keywords, return_annotation=list)


_PICKER_SIGNATURE = _picker_signature()
_PICKER_NAMES = set(_PICKER_SIGNATURE.parameters) - {"scores", "blocks"}
suggest_exclusion.__signature__ = _PICKER_SIGNATURE


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
