"""ptqkit.quantize(): ModelOpt's modelopt.onnx.quantization.quantize() call shape on ptqkit's
C++ Quantize(). Parameter names and defaults are those of `ptqkit quantize` (src/cli/
quantize_command.cc); options the CLI leaves unset are None here (calibration_method too:
the library picks the mode's default, mse for int8/fp8, as the CLI does).
"""
from __future__ import annotations

import logging

from ptqkit import _calibration, _options, _ptqkit

logger = logging.getLogger("ptqkit")


def quantize(
    onnx_path,
    quantize_mode: str = "int8",
    calibration_data=None,
    *,
    calibration_method: str | None = None,
    calibration_eps=("cpu",),
    calibration_shapes=None,
    op_types_to_quantize=None,
    op_types_to_exclude=None,
    nodes_to_quantize=None,
    nodes_to_exclude=None,
    dq_only: bool = False,
    target_runtime: str = "trt",
    reduce_range: bool = False,
    bias_correction: bool = True,
    smoothquant_alpha: float = 0.7,
    block_size: int = 128,
    use_zero_point: bool = False,
    awqclip_alpha_step: float = 0.05,
    awqclip_alpha_min: float = 0.5,
    high_precision_dtype: str = "fp32",
    output_path=None,
    use_external_data_format: bool = False,
    log_level: str = "INFO",
    trt_plugins=None,
    calibration_data_path=None,
    percentile: float = 99.999,
    calibration_batch_size=None,
    calibration_batch_axis=None,
    intra_op_num_threads=None,
    num_synthetic_samples: int = 32,
    op_types_to_exclude_fp16=None,
    direct_io_types: bool = False,
    save_calibration_cache=None,
    calibration_cache=None,
    log_file=None,
    eval_samples: int = 16,
    report_json=None,
    report_html=None,
    accuracy_budget=None,
    accuracy_budget_metric: str = "cos",
    accuracy_eval=None,
) -> dict:
    """Quantizes the FP32 model at `onnx_path` and writes the Q/DQ model to `output_path`
    (default: <stem>.quant.onnx beside the input). The input files are never modified; the output
    is written atomically.

    calibration_data: a path (.npy / .npz / folder, as --calibration_data_path), a numpy array
    (single-input model, samples on axis 0), a mapping {input name: array} (also np.load's
    NpzFile), or a sequence of per-sample mappings; None = seeded synthetic data (with a warning).
    calibration_shapes: "in:8x3x224x224,..." or {input: [8, 3, 224, 224]}.
    calibration_batch_axis: "state:1" or {input: axis}: the axis an input's samples lie along
    (default: inferred when the input has exactly one dynamic dim, else 0; scalars fed whole).
    accuracy_budget: keep in float the fewest nodes (ranked by a node sensitivity scan) that bring
    the divergence from FP32 on held-out calibration samples (accuracy_budget_metric: cos, kl_div,
    mse or top1) within this; with accuracy_eval(model_path) -> score (higher is better, e.g. your
    test-set accuracy), the budget is instead the largest allowed drop from the FP32 model's score.
    Other options: see `python -m ptqkit --help`.

    Returns the run's report: output_path, quantized_by_op_type, left_in_float [(node, reason)],
    qdq_pairs, num_calibration_samples, batch_size, calibration/total seconds, ..., and "loss": the
    quantized vs FP32 comparison on held-out calibration samples (per output cosine_mean,
    top1_agreement, ...; culprits; warning), the same as --report_json's "loss".
    Raises ptqkit.Error (a ValueError) with the library's message; nothing is written then.
    """
    data = _calibration.resolve(calibration_data, calibration_data_path, onnx_path,
                                _options.batch_axes(calibration_batch_axis))
    o = _ptqkit.QuantizeOptions()
    o.onnx_path = _options.path(onnx_path)
    o.output_path = _options.path(output_path)
    o.quantize_mode = quantize_mode
    o.calibration_data_path = data.path
    if calibration_method is not None:  # None: the library's default for the mode (mse for int8/fp8)
        o.calibration_method = calibration_method
    o.percentile = float(percentile)
    o.calibration_shapes = _options.shapes(calibration_shapes)
    o.calibration_batch_size = _options.count(calibration_batch_size)
    o.calibration_batch_axis = _options.batch_axes(calibration_batch_axis)
    o.calibration_eps = _options.names(calibration_eps, "calibration_eps")
    o.trt_plugins = _options.names(trt_plugins, "trt_plugins")
    o.intra_op_num_threads = _options.count(intra_op_num_threads)
    o.num_synthetic_samples = int(num_synthetic_samples)
    o.op_types_to_quantize = _options.names(op_types_to_quantize, "op_types_to_quantize")
    o.op_types_to_exclude = _options.names(op_types_to_exclude, "op_types_to_exclude")
    o.nodes_to_quantize = _options.names(nodes_to_quantize, "nodes_to_quantize")
    o.nodes_to_exclude = _options.names(nodes_to_exclude, "nodes_to_exclude")
    o.dq_only = bool(dq_only)
    o.target_runtime = target_runtime
    o.reduce_range = bool(reduce_range)
    o.bias_correction = bool(bias_correction)
    o.smoothquant_alpha = float(smoothquant_alpha)
    _set_int4(o, block_size=int(block_size), use_zero_point=bool(use_zero_point),
              awqclip_alpha_step=float(awqclip_alpha_step), awqclip_alpha_min=float(awqclip_alpha_min))
    o.high_precision_dtype = high_precision_dtype
    o.op_types_to_exclude_fp16 = _options.names(op_types_to_exclude_fp16, "op_types_to_exclude_fp16")
    o.direct_io_types = bool(direct_io_types)
    o.use_external_data_format = bool(use_external_data_format)
    o.eval_samples = int(eval_samples)
    o.report_json = _options.path(report_json)
    o.report_html = _options.path(report_html)
    if accuracy_budget is not None:  # None: no budget search
        o.accuracy_budget = float(accuracy_budget)
    o.accuracy_budget_metric = accuracy_budget_metric
    if accuracy_eval is not None:  # scores a model path on the caller's test set, higher is better
        o.accuracy_eval = lambda path: float(accuracy_eval(path))
    o.save_calibration_cache = _options.path(save_calibration_cache)
    o.calibration_cache = _options.path(calibration_cache)

    report = _ptqkit.quantize(o, data.arrays, log_level, _options.path(log_file))
    _log_summary(report)
    return report


_INT4_DEFAULTS = {"block_size": 128, "use_zero_point": False, "awqclip_alpha_step": 0.05,
                  "awqclip_alpha_min": 0.5}


def _set_int4(o, **values) -> None:
    """The int4 options, on a library built with the int4 mode; on one without it they may only
    keep their defaults (which then mean nothing)."""
    for name, value in values.items():
        if hasattr(o, name):
            setattr(o, name, value)
        elif value != _INT4_DEFAULTS[name]:
            raise _ptqkit.Error(f"{name}: this ptqkit build has no int4 mode")


def _log_summary(r: dict) -> None:
    """The CLI's end-of-run summary, through logging (INFO) instead of stdout."""
    if not logger.isEnabledFor(logging.INFO):
        return
    lines = [f"Wrote {r['output_path']}"]
    total = sum(r["quantized_by_op_type"].values())
    lines.append(f"quantized nodes: {total} ({r['qdq_pairs']} Q/DQ pairs)")
    lines += [f"  {op:<24} {n}" for op, n in r["quantized_by_op_type"].items()]
    if r.get("bias_corrected_convs", 0) or r.get("smoothed_matmul_inputs", 0):
        lines.append(f"weights edited: {r['bias_corrected_convs']} Conv bias(es) corrected, "
                     f"{r['smoothed_matmul_inputs']} MatMul input(s) smoothed (bias_correction=False, "
                     "smoothquant_alpha=0 turn them off)")
    lines.append(f"left in float: {len(r['left_in_float'])}")
    width = max((len(node) for node, _ in r["left_in_float"]), default=0)
    lines += [f"  {node:<{width}}  {why}" for node, why in r["left_in_float"]]
    lines.append(f"total: {r['total_seconds']:.3f} s")
    logger.info("\n".join(lines))
