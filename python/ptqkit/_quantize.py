"""ptqkit.quantize(): ModelOpt's modelopt.onnx.quantization.quantize() call shape on ptqkit's
C++ Quantize(). Its keywords, defaults and documentation come from the option table
(src/options/quantize_option_table.cc) that also makes `ptqkit quantize`'s flags: each keyword the
caller passes is written as the text the CLI would read and parsed by the same C++ code, so the
two front ends take the same values and give the same errors.
"""
from __future__ import annotations

import inspect
import os
import tempfile
from collections.abc import Mapping

from ptqkit import _calibration, _option_table, _ptqkit

# Keywords only Python has: they take Python objects, which no command line can carry.
_PYTHON_OBJECTS = {
    "calibration_data": "a path (.npy / .npz / folder, as --calibration_data_path), a numpy array (single-input "
                        "model, samples on axis 0), a mapping {input name: array} (also np.load's NpzFile), or a "
                        "sequence of per-sample mappings; None = seeded synthetic data (with a warning)",
    "calibration_data_reader": "an ONNX Runtime CalibrationDataReader (get_next() returns {input: batch} until "
                               "None), as ModelOpt takes it; its batches are joined along each input's batch axis",
    "accuracy_eval": "with accuracy_budget: a callable scoring a model path on your own test set (higher is "
                     "better); the budget is then the largest allowed drop from the FP32 model's score",
}
_TABLE = _option_table.specs("quantize")
_BY_NAME = _option_table.by_name(_TABLE)


# Options whose CLI value is a file of entries, which Python (as ModelOpt's) takes as a list.
_LIST_IN_A_FILE = {"autotune_node_filter_list"}


def _list_file(entries, name: str, folder: str) -> str:
    path = os.path.join(folder, name + ".txt")
    with open(path, "w", encoding="utf-8") as f:
        for entry in entries:
            if not isinstance(entry, str) or "\n" in entry:
                raise TypeError(f"{name}: expected a list of strings without line breaks, got {entry!r}")
            f.write(entry + "\n")
    return path


def _reader_arrays(reader, batch_axes) -> dict:
    """The batches of an ONNX Runtime CalibrationDataReader, joined per input."""
    import numpy as np

    batches: dict[str, list] = {}
    while (batch := reader.get_next()) is not None:
        if not isinstance(batch, Mapping):
            raise TypeError(f"calibration_data_reader.get_next() returned {type(batch).__name__}, expected a dict")
        for key, array in batch.items():
            batches.setdefault(str(key), []).append(np.asarray(array))
    if not batches:
        raise _ptqkit.Error("calibration_data_reader gave no batches")
    return {k: np.concatenate(v, axis=batch_axes.get(k, 0)) if v[0].ndim else np.stack(v) for k, v in batches.items()}


def quantize(onnx_path, quantize_mode: str = "int8", calibration_data=None, **options) -> dict:
    """Quantizes the FP32 model at `onnx_path` and writes the Q/DQ model to `output_path`
    (default: <stem>.quant.onnx beside the input). The input files are never modified; the output
    is written atomically. Keywords: those of `ptqkit quantize` (see the signature, `python -m
    ptqkit quantize --help` and the README's table), plus calibration_data, calibration_data_reader
    and accuracy_eval.

    Returns the run's report, the --report_json document: output_path, quantized_by_op_type,
    left_in_float [(node, reason)], qdq_pairs, num_calibration_samples, batch_size,
    calibration/total seconds, ..., "loss" (quantized vs FP32 on held-out calibration samples) and
    "accuracy_budget". Raises ptqkit.Error (a ValueError) with the library's message; nothing is
    written then.
    """
    scratch = tempfile.TemporaryDirectory(prefix="ptqkit-")
    with scratch:
        return _quantize(onnx_path, quantize_mode, calibration_data, options, scratch.name)


def _quantize(onnx_path, quantize_mode, calibration_data, options, scratch) -> dict:
    given: dict[str, list[str]] = {}
    python_objects = {"calibration_data": calibration_data}
    for key, value in options.items():
        if key in _PYTHON_OBJECTS:
            python_objects[key] = value
            continue
        spec = _BY_NAME.get(key)
        if spec is None:
            raise TypeError(f"quantize() got an unexpected keyword argument {key!r}")
        if value is None:
            continue
        if spec["name"] in _LIST_IN_A_FILE and not isinstance(value, (str, os.PathLike)):
            value = _list_file(value, spec["name"], scratch)
        given[spec["name"]] = _option_table.as_text(spec, value)
    given["onnx_path"] = _option_table.as_text(_BY_NAME["onnx_path"], onnx_path)
    given["quantize_mode"] = _option_table.as_text(_BY_NAME["quantize_mode"], quantize_mode)

    batch_axes = _option_table.batch_axes(given)
    data = python_objects["calibration_data"]
    reader = python_objects.get("calibration_data_reader")
    if reader is not None:
        if data is not None:
            raise _ptqkit.Error("give calibration_data or calibration_data_reader, not both")
        data = _reader_arrays(reader, batch_axes)
    path = options.get("calibration_data_path")
    resolved = _calibration.resolve(data, path, onnx_path, batch_axes)
    if resolved.path:
        given["calibration_data_path"] = [resolved.path]
    accuracy_eval = python_objects.get("accuracy_eval")
    scorer = None if accuracy_eval is None else (lambda model_path: float(accuracy_eval(model_path)))
    return _ptqkit.quantize(given, resolved.arrays, scorer)


def _signature() -> inspect.Signature:
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    leading = [inspect.Parameter("onnx_path", positional),
               inspect.Parameter("quantize_mode", positional, default="int8"),
               inspect.Parameter("calibration_data", positional, default=None)]
    params = _option_table.keywords(_TABLE, leading)
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None) for name in _PYTHON_OBJECTS
               if name not in {p.name for p in params}]
    return inspect.Signature(params, return_annotation=dict)


quantize.__signature__ = _signature()
quantize.__doc__ += "\n    Keywords:\n" + "\n".join(
    f"      {spec['name']}: {spec['help']}" + (f" (not taken: {spec['refusal']})" if spec["refusal"] else "")
    for spec in _TABLE) + "\n" + "\n".join(f"      {k}: {v}" for k, v in _PYTHON_OBJECTS.items())
