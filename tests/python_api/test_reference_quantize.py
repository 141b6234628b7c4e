"""The quantization code blocks of the reference document (ModelOpt's "ONNX Quantization"
page), with `modelopt.onnx.quantization` replaced by `ptqkit` and the model and data replaced by
the small CNN fixture; plus the calibration_data shapes the API accepts, which must all give the
bytes the CLI writes for the same samples."""
from __future__ import annotations

import os

import numpy as np
import pytest

import models
import ptqkit
from api_helpers import qdq_count, run_model


@pytest.fixture
def in_tmp(tmp_path):
    """The reference writes relative paths ("quant.onnx"): run each example in its own folder."""
    cwd = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(cwd)


def _cli_output(cli, model, data_path, out, *extra) -> bytes:
    cli.ok("quantize", "--onnx_path", model, "--calibration_data_path", data_path,
           "--output_path", out, *extra)
    return out.read_bytes()


def test_reference_npy_single_input(in_tmp, small_cnn, cli):
    # --- reference: "Example numpy file for single-input ONNX" (float32: the model's type) ---
    batch_size, channels, h, w = 32, 16, 8, 8
    calib_data = np.random.default_rng(0).standard_normal((batch_size, channels, h, w)).astype(np.float32)
    np.save("calib_data.npy", calib_data)

    # --- reference: "Call PTQ function" ---
    import ptqkit as moq

    onnx_path, calibration_data_path = str(small_cnn), "calib_data.npy"
    calibration_data = np.load(calibration_data_path)

    moq.quantize(
        onnx_path=onnx_path,
        calibration_data=calibration_data,
        output_path="quant.onnx",
        quantize_mode="int8",
    )
    # --- end of reference ---
    assert qdq_count("quant.onnx") > 0
    fp32 = run_model(small_cnn, calib_data[:4], models.SMALL_CNN_INPUT)
    int8 = run_model("quant.onnx", calib_data[:4], models.SMALL_CNN_INPUT)
    assert np.corrcoef(fp32.ravel(), int8.ravel())[0, 1] > 0.99
    assert (in_tmp / "quant.onnx").read_bytes() == _cli_output(cli, small_cnn, "calib_data.npy", in_tmp / "cli.onnx")


def test_reference_npz_dict(in_tmp, small_cnn, cli):
    # --- reference: "Example numpy file for single/multi-input ONNX" ---
    shape = (32, 16, 8, 8)
    calib_data = {
        models.SMALL_CNN_INPUT: np.random.default_rng(1).standard_normal(shape).astype(np.float32),
    }
    # (the reference writes np.savez(path, calib_data), which pickles the dict as "arr_0";
    # keyword arguments give the .npz the CLI and ModelOpt's loader read: one member per input)
    np.savez("calib_data.npz", **calib_data)

    import ptqkit as moq

    calibration_data = np.load("calib_data.npz")
    moq.quantize(
        onnx_path=str(small_cnn),
        calibration_data=calibration_data,
        output_path="quant.onnx",
        quantize_mode="int8",
    )
    # --- end of reference ---
    assert (in_tmp / "quant.onnx").read_bytes() == _cli_output(cli, small_cnn, "calib_data.npz", in_tmp / "cli.onnx")


def test_pickled_dict_npz_as_the_reference_writes_it(in_tmp, small_cnn, small_cnn_npy, cli):
    x = np.load(small_cnn_npy)
    np.savez("pickled.npz", {models.SMALL_CNN_INPUT: x})  # exactly the reference's call
    ptqkit.quantize(onnx_path=small_cnn, calibration_data=np.load("pickled.npz", allow_pickle=True),
                    output_path="quant.onnx")
    assert (in_tmp / "quant.onnx").read_bytes() == _cli_output(cli, small_cnn, small_cnn_npy, in_tmp / "cli.onnx")


@pytest.mark.parametrize("shape", ["path_npy", "path_npz", "pathlib", "array", "dict", "npzfile",
                                   "per_sample_dicts", "batched_dicts", "per_sample_arrays",
                                   "calibration_data_path", "non_contiguous"])
def test_every_calibration_data_shape_gives_the_cli_bytes(shape, tmp_path, small_cnn, small_cnn_npy,
                                                         small_cnn_npz, cli):
    x = np.load(small_cnn_npy)
    name = models.SMALL_CNN_INPUT
    kwargs = {
        "path_npy": {"calibration_data": str(small_cnn_npy)},
        "path_npz": {"calibration_data": str(small_cnn_npz)},
        "pathlib": {"calibration_data": small_cnn_npz},
        "array": {"calibration_data": x},
        "dict": {"calibration_data": {name: x}},
        "npzfile": {"calibration_data": np.load(small_cnn_npz)},
        "per_sample_dicts": {"calibration_data": [{name: s} for s in x]},
        "batched_dicts": {"calibration_data": [{name: x[i:i + 8]} for i in range(0, 32, 8)]},
        "per_sample_arrays": {"calibration_data": list(x)},
        "calibration_data_path": {"calibration_data_path": str(small_cnn_npy)},
        "non_contiguous": {"calibration_data": np.asfortranarray(x)},
    }[shape]
    out = tmp_path / "py.onnx"
    report = ptqkit.quantize(onnx_path=small_cnn, output_path=out, **kwargs)
    assert report["output_path"] == str(out)
    # 32 samples: a quarter (8) is held out for the loss report, 24 calibrate.
    assert report["num_calibration_samples"] == 24 and not report["synthetic_data"]
    assert report["loss"]["held_out"] and report["loss"]["samples"] == 8
    assert out.read_bytes() == _cli_output(cli, small_cnn, small_cnn_npy, tmp_path / "cli.onnx")


def test_options_map_onto_the_cli_flags(tmp_path, small_cnn, small_cnn_npy, cli):
    """A call using many options at once writes what the CLI writes with the same flags."""
    out = tmp_path / "py.onnx"
    report = ptqkit.quantize(
        onnx_path=small_cnn, calibration_data=str(small_cnn_npy), output_path=out,
        calibration_method="max", nodes_to_exclude=["/conv2/Conv"], op_types_to_exclude="Gemm",
        dq_only=True, calibration_shapes={models.SMALL_CNN_INPUT: [8, 16, 8, 8]},
        calibration_eps=["cpu"], intra_op_num_threads=1, log_level="WARNING",
        save_calibration_cache=tmp_path / "py_cache.json")
    expected = _cli_output(cli, small_cnn, small_cnn_npy, tmp_path / "cli.onnx",
                           "--calibration_method", "max", "--nodes_to_exclude", "/conv2/Conv",
                           "--op_types_to_exclude", "Gemm", "--dq_only",
                           "--calibration_shapes", f"{models.SMALL_CNN_INPUT}:8x16x8x8",
                           "--calibration_eps", "cpu", "--intra_op_num_threads", "1",
                           "--log_level", "WARNING", "--save_calibration_cache", tmp_path / "cli_cache.json")
    assert out.read_bytes() == expected
    assert (tmp_path / "py_cache.json").read_bytes() == (tmp_path / "cli_cache.json").read_bytes()
    left = dict(report["left_in_float"])
    assert "/conv2/Conv" in left and "/fc/Gemm" in left
    assert report["batch_size"] == 8

    # The cache written above, read back instead of calibrating.
    again = ptqkit.quantize(onnx_path=small_cnn, output_path=tmp_path / "cached.onnx",
                            calibration_method="max", nodes_to_exclude=["/conv2/Conv"],
                            op_types_to_exclude=["Gemm"], dq_only=True,
                            calibration_cache=tmp_path / "py_cache.json")
    assert again["calibration_from_cache"]
    assert (tmp_path / "cached.onnx").read_bytes() == expected


def test_default_output_path_is_beside_the_model(tmp_path, small_cnn, small_cnn_npy):
    model = tmp_path / "m.onnx"
    model.write_bytes(small_cnn.read_bytes())
    report = ptqkit.quantize(model, "int8", str(small_cnn_npy))
    assert report["output_path"] == str(tmp_path / "m.quant.onnx")
    assert (tmp_path / "m.quant.onnx").is_file()


def test_external_data_format(tmp_path, small_cnn, small_cnn_npy):
    out = tmp_path / "ext.onnx"
    ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy), output_path=out,
                    use_external_data_format=True)
    assert (tmp_path / "ext.onnx.data").is_file()
    x = np.load(small_cnn_npy)[:2]
    assert run_model(out, x, models.SMALL_CNN_INPUT).shape == (2, 32)


def test_synthetic_data_without_calibration_data(tmp_path, small_cnn):
    report = ptqkit.quantize(onnx_path=small_cnn, output_path=tmp_path / "syn.onnx",
                             num_synthetic_samples=4)
    # One of the 4 samples is held out for the loss report (a quarter of the data).
    assert report["synthetic_data"] and report["num_calibration_samples"] == 3
    assert report["loss"]["synthetic"] and report["loss"]["samples"] == 1
