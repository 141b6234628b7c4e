"""Python values -> the C++ option fields, shared by quantize() and sensitivity.score()."""
from __future__ import annotations

import os
from collections.abc import Mapping

from ptqkit import _ptqkit


def names(value, option: str) -> list[str]:
    """A list option (op types, node selectors, providers, plugins); one string is one name."""
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    try:
        return [os.fspath(v) for v in value]
    except TypeError:
        raise TypeError(f"{option}: expected a list of strings, got {value!r}") from None


def path(value) -> str:
    """An optional file option; None = not given (the CLI's empty string)."""
    return "" if value is None else os.fsdecode(os.fspath(value))


def shapes(value) -> dict[str, list[int]]:
    """calibration_shapes: the CLI's text ("in:8x3x224x224,mask:8x128") or {input: shape}."""
    if value is None:
        return {}
    if isinstance(value, str):
        return _ptqkit.parse_shape_list(value)
    if isinstance(value, Mapping):
        return {str(k): [int(d) for d in v] for k, v in value.items()}
    raise TypeError(f"calibration_shapes: expected 'name:AxBxC,...' or a dict, got {value!r}")


def batch_axes(value) -> dict[str, int]:
    """calibration_batch_axis: the CLI's text ("state:1,h:1") or {input: axis}."""
    if value is None:
        return {}
    if isinstance(value, str):
        return _ptqkit.parse_batch_axis_list(value)
    if isinstance(value, Mapping):
        return {str(k): int(v) for k, v in value.items()}
    raise TypeError(f"calibration_batch_axis: expected 'name:axis,...' or a dict, got {value!r}")


def count(value, default: int = 0) -> int:
    """An integer option whose CLI default is "not given" (0 in the C++ struct)."""
    return default if value is None else int(value)
