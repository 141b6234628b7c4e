"""The Python API's contract beyond the reference examples: the same options and defaults as the
CLI, keyword errors, ptqkit.Error with the CLI's messages, `python -m` entry points equal to the
binary, log_level / log_file, and the GIL released during long calls."""
from __future__ import annotations

import inspect
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import models
import ptqkit
import ptqkit.sensitivity
from api_helpers import without_timings

# CLI flags with no keyword of the same name, and why.
NOT_KEYWORDS = {
    # The *_file options read long lists from a file on the command line; Python passes lists.
    "quantize": {"help", "nodes_to_exclude_file", "nodes_to_quantize_file", "op_types_to_exclude_file",
                 "op_types_to_quantize_file"},
    # The ranking printout is the CLI's; score() returns the scores instead of printing them.
    # Shards and merges are command-line tools for batch schedulers; Python has ptqkit.distributed.
    "sensitivity": {"help", "show_zero_scores", "shard", "merge"},
}


def _cli_flags(cli, subcommand) -> dict[str, object]:
    """{flag: default} parsed from `ptqkit <subcommand> --help` (None: no default shown)."""
    text = cli.ok(subcommand, "--help").stdout
    flags = {}
    for m in re.finditer(r"^\s+(?:-h,)?--(\w+)(?: (TEXT|FLOAT|INT|BOOLEAN)(?:=(\[[^\]]*\]|\S+))?)?", text, re.M):
        flag, kind, default = m.groups()
        if default is not None:
            if kind == "BOOLEAN":  # an option that is on by default (--bias_correction false turns it off)
                default = default in ("1", "true")
            elif default.startswith("["):
                default = [d.strip() for d in default[1:-1].split(",")]
            elif kind == "FLOAT":
                default = float(default)
            elif kind == "INT":
                default = int(default)
        flags[flag] = default
    return flags


@pytest.mark.parametrize("subcommand", ["quantize", "sensitivity"])
def test_every_cli_option_is_a_keyword_with_the_tables_default(subcommand, cli):
    # Both front ends are made from the option table: every flag is a keyword, with the table's
    # default (None where the library decides).
    from ptqkit import _option_table

    function = {"quantize": ptqkit.quantize, "sensitivity": ptqkit.sensitivity.score}[subcommand]
    params = inspect.signature(function).parameters
    flags = _cli_flags(cli, subcommand)
    assert "onnx_path" in flags and "log_level" in flags  # the help text parsed
    table = _option_table.by_name(_option_table.specs(subcommand))
    for flag in flags:
        if flag in NOT_KEYWORDS[subcommand]:
            continue
        assert flag in params and flag in table, f"`ptqkit {subcommand} --{flag}` has no keyword in {function.__qualname__}"
        if params[flag].default is not inspect.Parameter.empty:
            assert params[flag].default == _option_table.python_default(table[flag]), flag
    # The sensitivity scan shares quantize's calibration options (one declaration each).
    if subcommand == "sensitivity":
        for shared in ("calibration_data_path", "calibration_method", "percentile", "calibration_batch_axis",
                       "calibration_eps", "calibration_cache", "log_level"):
            assert table[shared]["quantize"] and table[shared]["sensitivity"], shared


def test_python_defaults_match_the_cpp_structs():
    from ptqkit import _ptqkit

    # (quantize()'s and score()'s are the option table's, which reads them from the C++ structs.)
    for function, struct in ((ptqkit.sensitivity.suggest_exclusion, _ptqkit.PickerOptions()),):
        for name, p in inspect.signature(function).parameters.items():
            if p.default is None or p.default is inspect.Parameter.empty or not hasattr(struct, name):
                continue
            cpp = getattr(struct, name)
            py = list(p.default) if isinstance(p.default, tuple) else p.default
            assert py == (pytest.approx(cpp) if isinstance(cpp, float) else cpp), (function.__name__, name)


@pytest.mark.parametrize("call", [
    lambda m: ptqkit.quantize(onnx_path=m, no_such_option=True),
    lambda m: ptqkit.sensitivity.score(onnx_path=m, no_such_option=True),
    lambda m: ptqkit.sensitivity.suggest_exclusion({"a": 1.0}, no_such_option=True),
    lambda m: ptqkit.sensitivity.summarize_exclusion({"a": 1.0}, [], no_such_option=True),
])
def test_unknown_keyword_is_a_type_error_naming_it(call, small_cnn):
    with pytest.raises(TypeError, match="no_such_option"):
        call(small_cnn)


def _cli_error(cli, *args) -> str:
    r = cli.run(*args)
    assert r.returncode == 1
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("ptqkit: error: ")
    return line[len("ptqkit: error: "):]


@pytest.mark.parametrize("case", ["wrong_shape", "int64_for_float", "missing_file", "bad_method", "bad_log_level",
                                  "extra_input"])
def test_bad_input_raises_ptqkit_error_with_the_cli_message(case, tmp_path, small_cnn, cli):
    x = models.small_cnn_data(8, 0)
    data = {
        "wrong_shape": x[:, :, :4, :],
        "int64_for_float": x.astype(np.int64),  # float64 is cast (with a warning), int64 is not
        "missing_file": tmp_path / "nope.npy",
        "bad_method": x,
        "bad_log_level": x,
        "extra_input": {models.SMALL_CNN_INPUT: x, "mask": x},
    }[case]
    extra = {"bad_method": {"calibration_method": "minmax"}, "bad_log_level": {"log_level": "LOUD"}}.get(case, {})
    out = tmp_path / "out.onnx"
    with pytest.raises(ptqkit.Error) as info:
        ptqkit.quantize(onnx_path=small_cnn, calibration_data=data, output_path=out, **extra)
    assert isinstance(info.value, ValueError)
    assert info.value.kind in ("invalid_input", "io", "runtime", "unsupported")
    assert not out.exists()

    # The CLI on the same data, written to a file, says the same.
    if isinstance(data, (np.ndarray, dict)):
        path = tmp_path / ("data.npz" if isinstance(data, dict) else "data.npy")
        np.savez(path, **data) if isinstance(data, dict) else np.save(path, data)
    else:
        path = data
    flags = [f"--{k}={v}" for k, v in extra.items()]
    expected = _cli_error(cli, "quantize", "--onnx_path", small_cnn, "--calibration_data_path", path,
                          "--output_path", out, *flags)
    # The library names the data source: the file for the CLI, the argument for Python.
    assert _normalize(str(info.value)) == _normalize(expected), (str(info.value), expected)


def _normalize(message: str) -> str:
    """The message minus where the data came from: "(<file>.npy)" in the CLI, "(calibration
    tensor ...)" for in-memory arrays."""
    message = re.sub(r"\(calibration tensor (\(unnamed\)|'[^']*')\)", "(<data>)", message)
    return re.sub(r"\(?'?/\S+\.np[yz]'?\)?", "(<data>)", message)


@pytest.mark.parametrize("option, value, flag_value", [
    ("metric", "kl", "kl"),                             # a scan option: the table's choices
    ("granularity", "layer", "layer"),
    ("calibration_method", "minmax", "minmax"),         # a shared option: quantize's entry
    ("calibration_shapes", "in:8x3", "in:8x3"),         # parsed by quantize's shape parser
    ("calibration_batch_axis", {"in": -1}, "in:-1"),
    ("log_level", "LOUD", "LOUD"),
])
def test_sensitivity_score_and_cli_read_options_alike(option, value, flag_value, small_cnn, cli):
    # score() hands each keyword to the option table as the CLI's text: same parser, same message.
    with pytest.raises(ptqkit.Error) as info:
        ptqkit.sensitivity.score(small_cnn, **{option: value})
    assert str(info.value) == _cli_error(cli, "sensitivity", "--onnx_path", str(small_cnn), f"--{option}", flag_value)


def test_object_arrays_and_unjoinable_samples_are_ptqkit_errors(small_cnn):
    with pytest.raises(ptqkit.Error, match="unsupported dtype"):
        ptqkit.quantize(onnx_path=small_cnn, calibration_data=np.array([["a"]], dtype=object))
    with pytest.raises(ptqkit.Error, match=r"calibration_data\[1\]"):
        ptqkit.quantize(onnx_path=small_cnn, calibration_data=[{"a": np.zeros(1)}, {"b": np.zeros(1)}])
    with pytest.raises(TypeError, match="calibration_data"):
        ptqkit.quantize(onnx_path=small_cnn, calibration_data=42)
    with pytest.raises(ptqkit.Error, match="coverage"):
        ptqkit.sensitivity.suggest_exclusion({"a": 1.0}, coverage=2.0)
    with pytest.raises(ptqkit.Error):
        ptqkit.sensitivity.suggest_exclusion({"a": float("nan")})


def _python_m(module, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600, cwd=cwd, env=os.environ.copy())


def test_python_m_ptqkit_is_the_quantize_cli(tmp_path, small_cnn, small_cnn_npz, cli):
    args = ["--onnx_path", small_cnn, "--calibration_data_path", small_cnn_npz, "--dq_only",
            "--nodes_to_exclude", "/fc/Gemm"]
    py = _python_m("ptqkit", *args, "--output_path", tmp_path / "py.onnx")
    assert py.returncode == 0, py.stderr
    binary = cli.ok("quantize", *args, "--output_path", tmp_path / "cli.onnx")
    assert (tmp_path / "py.onnx").read_bytes() == (tmp_path / "cli.onnx").read_bytes()
    # Same summary on stdout, timings and the output name aside.
    strip = lambda s: re.sub(r"[\d.]+ s\b|\S+\.onnx", "#", s)  # noqa: E731
    assert strip(py.stdout) == strip(binary.stdout)

    usage = _python_m("ptqkit", "--no_such_flag", "1")
    assert usage.returncode == 2 and "ptqkit: error:" in usage.stderr
    failure = _python_m("ptqkit", "--onnx_path", tmp_path / "missing.onnx")
    assert failure.returncode == 1 and failure.stderr.strip().endswith("does not exist")
    helped = _python_m("ptqkit", "--help")
    assert helped.returncode == 0 and "--calibration_data_path" in helped.stdout
    # The other subcommands are reachable too.
    inspected = _python_m("ptqkit", "inspect", small_cnn)
    assert inspected.returncode == 0 and inspected.stdout == cli.ok("inspect", small_cnn).stdout


def test_python_m_ptqkit_sensitivity_is_the_sensitivity_cli(tmp_path, transformer, transformer_npz, cli):
    args = ["--onnx_path", transformer, "--calibration_data_path", transformer_npz, "--granularity", "node"]
    py = _python_m("ptqkit.sensitivity", *args, "--output_json", tmp_path / "py.json")
    assert py.returncode == 0, py.stderr
    cli.ok("sensitivity", *args, "--output_json", tmp_path / "cli.json")
    py_json, cli_json = (json.loads((tmp_path / f).read_text()) for f in ("py.json", "cli.json"))
    assert without_timings(py_json) == without_timings(cli_json)
    # The files differ only in the timing values.
    assert ({**py_json, "timings": {}}) == ({**cli_json, "timings": {}})
    assert without_timings(py_json) == without_timings(
        ptqkit.sensitivity.score(transformer, str(transformer_npz), granularity="node"))


def test_log_level_and_log_file(tmp_path, small_cnn, caplog):
    # Without data the library warns that the scales are synthetic (through the "ptqkit" logger);
    # ERROR silences warnings at the source.
    def warnings():
        found = [r for r in caplog.records if r.name == "ptqkit" and r.levelno == logging.WARNING]
        caplog.clear()
        return found

    caplog.set_level(logging.WARNING, logger="ptqkit")
    ptqkit.quantize(onnx_path=small_cnn, output_path=tmp_path / "a.onnx", num_synthetic_samples=2)
    assert any("synthetic" in r.getMessage() for r in warnings())
    log = tmp_path / "run.log"
    ptqkit.quantize(onnx_path=small_cnn, output_path=tmp_path / "b.onnx", num_synthetic_samples=2,
                    log_level="ERROR", log_file=log)
    assert not warnings()
    ptqkit.quantize(onnx_path=small_cnn, output_path=tmp_path / "c.onnx", num_synthetic_samples=2,
                    log_level="DEBUG", log_file=log)
    assert log.stat().st_size > 0
    size = log.stat().st_size
    ptqkit.quantize(onnx_path=small_cnn, output_path=tmp_path / "d.onnx", num_synthetic_samples=2)
    assert log.stat().st_size == size, "the log file is closed after the call that named it"


def test_summary_goes_to_the_ptqkit_logger(tmp_path, small_cnn, small_cnn_npy, caplog):
    with caplog.at_level("INFO", logger="ptqkit"):
        report = ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy),
                                 output_path=tmp_path / "q.onnx")
    assert f"Wrote {report['output_path']}" in caplog.text and "quantized nodes:" in caplog.text


def test_gil_is_released_during_quantize(tmp_path, transformer, transformer_npz):
    """Another Python thread keeps running while the library calibrates."""
    ticks = 0
    done = threading.Event()

    def run():
        for i in range(3):
            ptqkit.quantize(onnx_path=transformer, calibration_data=str(transformer_npz),
                            output_path=tmp_path / f"t{i}.onnx", calibration_method="percentile")
        done.set()

    worker = threading.Thread(target=run)
    start = time.perf_counter()
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    elapsed = time.perf_counter() - start
    # Held GIL: the loop would not run at all until the call returns (at most a few ticks).
    assert ticks > 0.2 * elapsed / 0.001 * 0.1, (ticks, elapsed)


def test_log_file_never_overwrites_an_input(tmp_path):
    """issue 10: log_file= pointing at the model is refused before the log is opened."""
    import shutil

    import ptqkit
    from pathlib import Path
    examples = Path(__file__).resolve().parents[2] / "examples"
    model = tmp_path / "m.onnx"
    shutil.copy(examples / "resnet_tiny.onnx", model)
    before = model.read_bytes()
    with pytest.raises(ptqkit.Error, match="same file"):
        ptqkit.quantize(onnx_path=str(model), calibration_data=str(examples / "calib.npy"),
                        output_path=str(tmp_path / "q.onnx"), log_file=str(model))
    assert model.read_bytes() == before and not (tmp_path / "q.onnx").exists()
