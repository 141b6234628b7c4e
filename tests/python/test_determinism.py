"""Same inputs and options give a byte-identical output model, whatever the batch size, the
thread count or the run. 70 calibration samples divide evenly by 1, 7 and 10, so batch-size
independence is tested without relying on how a short last batch is handled.
"""
from __future__ import annotations

import json

import pytest

from conftest import sha256


@pytest.fixture(scope="module")
def calib70(calib):
    return calib("resnet", n=70)


@pytest.mark.parametrize("method", ["entropy", "max", "percentile", "mse"])
def test_batch_size_does_not_change_output(cli, resnet, calib70, tmp_path, method):
    outs = []
    for bs in ("1", "7"):
        out = tmp_path / f"bs{bs}.onnx"
        cli.quantize(resnet, out, "--calibration_data_path", calib70, "--calibration_method", method,
                     "--calibration_batch_size", bs)
        outs.append(sha256(out))
    assert outs[0] == outs[1], f"{method}: batch size 1 and 7 give different files"


def test_two_runs_identical(cli, transformer, calib, tmp_path):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    for out in (a, b):
        cli.quantize(transformer, out, "--calibration_data_path", calib("transformer", n=70))
    assert sha256(a) == sha256(b)


def test_thread_count_does_not_change_output(cli, resnet, calib70, tmp_path):
    outs = []
    for threads in ("1", "2"):
        out = tmp_path / f"t{threads}.onnx"
        cli.quantize(resnet, out, "--calibration_data_path", calib70, "--calibration_batch_size", "10",
                     "--intra_op_num_threads", threads)
        outs.append(sha256(out))
    assert outs[0] == outs[1]


def test_calibration_cache_round_trip(cli, resnet, calib70, tmp_path):
    """A saved CalibrationTable reproduces the same model without calibrating again."""
    cache, first, second = tmp_path / "calib.json", tmp_path / "first.onnx", tmp_path / "second.onnx"
    cli.quantize(resnet, first, "--calibration_data_path", calib70, "--calibration_batch_size", "10",
                 "--save_calibration_cache", cache)
    table = json.loads(cache.read_text())
    assert table, "empty calibration cache"
    assert "/layer1/layer1.0/relu/Relu_output_0" in json.dumps(table), "cache lacks an activation"
    cli.quantize(resnet, second, "--calibration_cache", cache)
    assert sha256(first) == sha256(second)
