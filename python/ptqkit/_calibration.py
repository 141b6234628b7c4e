"""calibration_data as the Python API accepts it -> what the C++ library takes: a path, or
{input name: array with the samples on axis 0} ("" binds to the only input).

Accepted: None (synthetic data), a path (.npy / .npz / folder, read by the library exactly as
the CLI reads --calibration_data_path), a numpy array (single-input model), a mapping of arrays
(a dict or np.load's NpzFile), or a sequence of per-sample mappings (or arrays) that are joined
along axis 0.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from ptqkit import _ptqkit


class CalibrationInput:
    """What one call hands to the extension."""

    def __init__(self, path: str = "", arrays: dict | None = None, label: str = "(synthetic)"):
        self.path = path
        self.arrays = arrays
        self.label = label  # how reports name the data


def resolve(calibration_data, calibration_data_path, onnx_path, batch_axes=None) -> CalibrationInput:
    if calibration_data is not None and calibration_data_path is not None:
        raise TypeError("give calibration_data or calibration_data_path, not both")
    if calibration_data_path is not None:
        calibration_data = calibration_data_path
    if calibration_data is None:
        return CalibrationInput()
    if isinstance(calibration_data, (str, bytes, os.PathLike)):
        path = os.fsdecode(os.fspath(calibration_data))
        return CalibrationInput(path=path, label=path)
    return CalibrationInput(arrays=_arrays(calibration_data, onnx_path, batch_axes or {}),
                            label="(in-memory arrays)")


def _arrays(data, onnx_path, batch_axes) -> dict:
    if isinstance(data, np.ndarray):
        pickled = _pickled_dict(data)
        return _arrays(pickled, onnx_path, batch_axes) if pickled is not None else {"": data}
    if isinstance(data, Mapping):  # dict, NpzFile
        arrays = {str(name): np.asarray(data[name]) for name in data.keys()}
        if len(arrays) == 1:
            pickled = _pickled_dict(next(iter(arrays.values())))
            if pickled is not None:
                return _arrays(pickled, onnx_path, batch_axes)
        return arrays
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _join_samples(list(data), onnx_path, batch_axes)
    raise TypeError(
        "calibration_data must be a path, a numpy array, a mapping {input name: array} or a "
        f"sequence of per-sample mappings, not {type(data).__name__}")


def _pickled_dict(array: np.ndarray):
    """np.savez("calib.npz", {"input": x}), as ModelOpt's documentation writes it, stores the dict
    as a 0-d object array "arr_0"; np.load(..., allow_pickle=True) gives it back. None otherwise."""
    if array.dtype == object and array.ndim == 0 and isinstance(array.item(), Mapping):
        return array.item()
    return None


def _join_samples(samples: list, onnx_path, batch_axes) -> dict:
    if not samples:
        raise _ptqkit.Error("calibration_data: the sequence of samples is empty")
    if all(isinstance(s, np.ndarray) for s in samples):
        samples = [{"": s} for s in samples]
    if not all(isinstance(s, Mapping) for s in samples):
        raise TypeError("calibration_data: a sequence must hold only mappings {input name: array} "
                        "or only numpy arrays")
    names = list(samples[0].keys())
    for i, sample in enumerate(samples):
        if set(sample.keys()) != set(names):
            raise _ptqkit.Error(
                f"calibration_data[{i}] has inputs {sorted(map(str, sample.keys()))}, "
                f"but calibration_data[0] has {sorted(map(str, names))}")
    ranks = _ptqkit.model_input_ranks(os.fspath(onnx_path))
    if "" in names and len(ranks) == 1:
        ranks = {"": next(iter(ranks.values()))}
    joined = {}
    for name in names:
        parts = [np.asarray(s[name]) for s in samples]
        if ranks.get(str(name)) == 0:
            # A scalar input (a sample rate): one value for every sample, fed with every batch.
            if any(not np.array_equal(p, parts[0]) for p in parts):
                raise _ptqkit.Error(f"calibration_data['{name}']: the model input is a scalar, fed "
                                    "unchanged with every batch, but the samples give different values")
            joined[str(name)] = parts[0]
            continue
        axis = int(batch_axes.get(str(name), 0))  # calibration_batch_axis, e.g. a state [L, B, H]
        ndims = {p.ndim for p in parts}
        # A part with the model input's full rank already has a batch axis (a feed for one
        # session run): concatenate. Otherwise each part is one sample: stack.
        if len(ndims) == 1 and ranks.get(str(name)) == ndims.pop():
            joined[str(name)] = np.concatenate(parts, axis=axis)
        else:
            try:
                joined[str(name)] = np.stack(parts, axis=axis)
            except ValueError as e:
                raise _ptqkit.Error(f"calibration_data['{name}']: samples do not stack: {e}") from None
    return joined
