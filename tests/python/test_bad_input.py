"""Bad input: each case must exit non-zero with a one-line "ptqkit: error: ..." on stderr that
names what is wrong, leave no output (and no temp file) behind, and leave the input unchanged
(the unchanged check is done by cli.run for every file on the command line).
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import models


def expect_error(cli, args, out_dir: Path, *patterns, also_unchanged=()):
    """Runs ptqkit, checks the failure contract, returns the error line.

    Each pattern is a regex (case-insensitive) that must occur in the error line; the listing of
    `out_dir` must be the same after the run as before (no output, no temp file left behind).
    """
    before = sorted(os.listdir(out_dir)) if out_dir.is_dir() else None
    r = cli.run(*args, also_unchanged=also_unchanged)
    assert r.returncode != 0, f"expected failure, got 0:\n{r.stdout}\n{r.stderr}"
    assert r.returncode not in (-6, -11, 134, 139), f"crashed (rc={r.returncode}):\n{r.stderr}"
    line = r.error_line()
    for p in patterns:
        assert re.search(p, line, re.IGNORECASE), f"error line does not match {p!r}: {line}"
    after = sorted(os.listdir(out_dir)) if out_dir.is_dir() else None
    assert after == before, f"files left behind in {out_dir}: {set(after or []) - set(before or [])}"
    return line


@pytest.fixture
def work(tmp_path):
    """A folder with a copy of the small CNN and its calibration data; outputs go to work/out."""
    models.make_small_cnn(tmp_path / "model.onnx")
    models.make_calibration("small_cnn", tmp_path / "calib.npy", n=16)
    (tmp_path / "out").mkdir()
    return tmp_path


def quantize_args(model, data, out):
    return ["quantize", "--onnx_path", model, "--calibration_data_path", data, "--output_path", out]


def test_missing_model_file(cli, work):
    missing = work / "does_not_exist.onnx"
    expect_error(cli, quantize_args(missing, work / "calib.npy", work / "out/q.onnx"), work / "out",
                 re.escape("does_not_exist.onnx"))


def test_corrupt_model_file(cli, work):
    bad = work / "corrupt.onnx"
    bad.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    expect_error(cli, quantize_args(bad, work / "calib.npy", work / "out/q.onnx"), work / "out",
                 re.escape("corrupt.onnx"))


def test_truncated_model_file(cli, work):
    data = (work / "model.onnx").read_bytes()
    bad = work / "truncated.onnx"
    bad.write_bytes(data[: len(data) // 2])
    expect_error(cli, quantize_args(bad, work / "calib.npy", work / "out/q.onnx"), work / "out",
                 re.escape("truncated.onnx"))


def test_unknown_custom_op(cli, work):
    """ORT cannot run an op of an unknown domain, so calibration is impossible: name the op."""
    models.make_custom_op_model(work / "custom.onnx")
    expect_error(cli, quantize_args(work / "custom.onnx", work / "calib.npy", work / "out/q.onnx"),
                 work / "out", r"MysteryScale|com\.example\.ptqkit")


def test_wrong_calibration_input_name(cli, work):
    x = np.load(work / "calib.npy")
    np.savez(work / "named.npz", wrong_name=x)
    expect_error(cli, quantize_args(work / "model.onnx", work / "named.npz", work / "out/q.onnx"),
                 work / "out", r"wrong_name|cnn_input")


def test_wrong_calibration_shape(cli, work):
    np.save(work / "shape.npy", np.zeros((8, 16, 6, 6), np.float32))  # model wants [N,16,8,8]
    expect_error(cli, quantize_args(work / "model.onnx", work / "shape.npy", work / "out/q.onnx"),
                 work / "out", r"cnn_input", r"\b6\b", r"\b8\b")


def test_wrong_calibration_rank(cli, work):
    np.save(work / "rank.npy", np.zeros((8, 16, 64), np.float32))
    expect_error(cli, quantize_args(work / "model.onnx", work / "rank.npy", work / "out/q.onnx"),
                 work / "out", r"cnn_input", r"rank|dim|shape")


def test_wrong_calibration_dtype(cli, work):
    np.save(work / "ints.npy", np.zeros((8, 16, 8, 8), np.int64))
    expect_error(cli, quantize_args(work / "model.onnx", work / "ints.npy", work / "out/q.onnx"),
                 work / "out", r"cnn_input", r"int64", r"float")


def test_empty_calibration_directory(cli, work):
    (work / "empty_calib").mkdir()
    expect_error(cli, quantize_args(work / "model.onnx", work / "empty_calib", work / "out/q.onnx"),
                 work / "out", r"empty_calib")


def test_nan_only_calibration_tensor(cli, work):
    np.save(work / "nan.npy", np.full((8, 16, 8, 8), np.nan, np.float32))
    line = expect_error(cli, quantize_args(work / "model.onnx", work / "nan.npy", work / "out/q.onnx"),
                        work / "out", r"nan|finite")
    # It must name a tensor: the input or one of the activations calibration captures.
    names = ["cnn_input", "/conv/Conv_output_0", "/relu/Relu_output_0", "/conv2/Conv_output_0",
             "/relu_1/Relu_output_0", "/pool/GlobalAveragePool_output_0", "/Flatten_output_0"]
    assert any(re.search(rf"(^|[\s'\"`(]){re.escape(n)}($|[\s'\":,`)])", line) for n in names), line


def test_unknown_calibration_method(cli, work):
    expect_error(cli, quantize_args(work / "model.onnx", work / "calib.npy", work / "out/q.onnx")
                 + ["--calibration_method", "minmaxish"], work / "out", r"minmaxish")


def test_output_under_a_regular_file(cli, work):
    out = work / "model.onnx" / "q.onnx"  # parent is a file: cannot be created by anyone, even root
    expect_error(cli, quantize_args(work / "model.onnx", work / "calib.npy", out), work,
                 re.escape(str(out.parent)))


def test_output_in_missing_directory(cli, work):
    out = work / "no_such_dir" / "q.onnx"
    expect_error(cli, quantize_args(work / "model.onnx", work / "calib.npy", out), work, r"no_such_dir")
    assert not (work / "no_such_dir").exists()


def test_output_equal_to_input(cli, work):
    model = work / "model.onnx"
    expect_error(cli, quantize_args(model, work / "calib.npy", model), work, r"output")


def test_output_equal_to_input_via_other_spelling(cli, work):
    """The same file through a different path (./x/../model.onnx) is still the input."""
    model = work / "model.onnx"
    other = work / "out" / ".." / "model.onnx"
    expect_error(cli, quantize_args(model, work / "calib.npy", other), work, r"output")


def test_model_already_quantized(cli, work):
    models.make_qdq_model(work / "qdq.onnx")
    expect_error(cli, quantize_args(work / "qdq.onnx", work / "calib.npy", work / "out/q.onnx"),
                 work / "out", r"QuantizeLinear|DequantizeLinear|Q/?DQ|already quantized")


def test_failure_keeps_existing_output(cli, work):
    """A failed run must not clobber a file already at the output path."""
    out = work / "out" / "q.onnx"
    shutil.copy(work / "model.onnx", out)
    before = out.read_bytes()
    np.save(work / "nan.npy", np.full((8, 16, 8, 8), np.nan, np.float32))
    expect_error(cli, quantize_args(work / "model.onnx", work / "nan.npy", out), work / "out")
    assert out.read_bytes() == before
