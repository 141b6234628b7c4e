"""The C++ option table (src/options/) as Python keywords, shared by ptqkit.quantize(),
ptqkit.sensitivity.score() and ptqkit.distributed.score(): which keywords a function takes, their
defaults, and each value written as the text the CLI would read, so that the C++ parser gives
Python the CLI's meaning and errors.
"""
from __future__ import annotations

import inspect
import json
import os
from collections.abc import Mapping

from ptqkit import _ptqkit

_ALL = _ptqkit.quantize_option_table()


def specs(command: str) -> list[dict]:
    """The Python keywords of `command` ("quantize", "calibrate" or "sensitivity"), in table order."""
    return [spec for spec in _ALL if spec["python"] and spec[command]]


def by_name(table: list[dict]) -> dict[str, dict]:
    """{name or alias: spec}."""
    found = {spec["name"]: spec for spec in table}
    for spec in table:
        for alias in spec["aliases"]:
            found[alias] = spec
    return found


def python_default(spec: dict):
    """The keyword's default as a Python value (None: not given, the library decides)."""
    text = spec["default"]
    if spec["refusal"] or spec["python_none_default"] or spec["default_doc"] and not text:
        return None
    kind = spec["kind"]
    if kind == "flag" or spec["implicit_value"] == "true":
        return text == "true"
    if kind == "int":
        return int(text)
    if kind == "real":
        return float(text)
    if kind == "list":
        return tuple(text.split()) if text else None
    return text or None


def as_text(spec: dict, value) -> list[str]:
    """A Python value as the CLI text of its option (raises TypeError naming the keyword)."""
    name, kind = spec["name"], spec["kind"]

    def word(v) -> str:
        if isinstance(v, (str, os.PathLike)):
            return os.fsdecode(os.fspath(v))
        raise TypeError(f"{name}: expected a string{' or path' if spec['is_path'] else ''}, got {v!r}")

    if spec["implicit_value"] not in (None, "true") and isinstance(value, bool):
        return [spec["implicit_value"] if value else "false"]  # autotune=True means --autotune alone
    if kind == "flag" or spec["implicit_value"] == "true":
        if isinstance(value, str):
            return [value]
        if not isinstance(value, (bool, int)) and type(value).__name__ != "bool_":
            raise TypeError(f"{name}: expected True or False, got {value!r}")
        return ["true" if value else "false"]
    if kind == "int":
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"{name}: expected a whole number, got {value!r}")
        return [str(value.__index__())]
    if kind == "real":
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise TypeError(f"{name}: expected a number, got {value!r}")
        return [repr(float(value))]
    if isinstance(value, Mapping):
        # {input: [dims]} for shapes, {input: axis} for batch axes, as the CLI's "in:1x3,b:2".
        entries = [f"{k}:{'x'.join(str(int(d)) for d in v) if not isinstance(v, (int, str)) else v}"
                   for k, v in value.items()]
        return entries if kind == "list" else [",".join(entries)]
    if kind == "list":
        if isinstance(value, (str, os.PathLike)):
            return [word(value)]
        try:
            return [word(v) for v in value]
        except TypeError as e:
            if "expected a string" in str(e):
                raise
            raise TypeError(f"{name}: expected a list of strings, got {value!r}") from None
    if isinstance(value, (list, tuple)) and all(isinstance(v, Mapping) for v in value):
        return [json.dumps(list(value))]  # input_shapes_profile: ModelOpt's list of dicts
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(value)]  # e.g. block_size=-1
    return [word(value)]


def given_text(function: str, known: dict[str, dict], options: Mapping) -> dict[str, list[str]]:
    """{option name: CLI text} for the keywords the caller passed (None = not given); an unknown
    keyword is a TypeError naming it, as Python's own."""
    given: dict[str, list[str]] = {}
    for key, value in options.items():
        spec = known.get(key)
        if spec is None:
            raise TypeError(f"{function}() got an unexpected keyword argument {key!r}")
        if value is not None:
            given[spec["name"]] = as_text(spec, value)
    return given


def batch_axes(given: Mapping[str, list[str]]) -> dict[str, int]:
    """calibration_batch_axis as the library reads it, from its CLI text."""
    return _ptqkit.parse_batch_axis_list(",".join(given.get("calibration_batch_axis", [])))


def keywords(table: list[dict], leading: list[inspect.Parameter], skip=()) -> list[inspect.Parameter]:
    """`leading`, then every option of `table` (but `skip`) as a keyword-only parameter with its default."""
    params = list(leading)
    seen = {p.name for p in leading} | set(skip)
    for spec in table:
        if spec["name"] not in seen:
            params.append(inspect.Parameter(spec["name"], inspect.Parameter.KEYWORD_ONLY, default=python_default(spec)))
            seen.add(spec["name"])
    return params


# The sensitivity scan's positional parameters (ModelOpt's order), after onnx_path and calibration_data.
SCAN_POSITIONAL = ("granularity", "metric", "target_precision", "calibration_method", "op_types_scope")


def take_scan_positional(args: tuple, options: dict) -> None:
    """Moves the positional arguments after onnx_path and calibration_data into `options` under
    SCAN_POSITIONAL's names (the one place that order is spelled), refusing what Python would."""
    if len(args) > len(SCAN_POSITIONAL):
        raise TypeError(f"score() takes at most {len(SCAN_POSITIONAL) + 2} positional arguments "
                        f"({len(args) + 2} given)")
    for name, value in zip(SCAN_POSITIONAL, args):
        if name in options:
            raise TypeError(f"score() got multiple values for argument '{name}'")
        options[name] = value


def scan_parameters(known: dict[str, dict]) -> list[inspect.Parameter]:
    """onnx_path, calibration_data and SCAN_POSITIONAL, as sensitivity.score() and
    distributed.score() take them."""
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("onnx_path", positional), inspect.Parameter("calibration_data", positional, default=None)]
    return params + [inspect.Parameter(name, positional, default=python_default(known[name])) for name in SCAN_POSITIONAL]
