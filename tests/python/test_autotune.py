"""--autotune end to end on the real ONNX Runtime (CPU backend): the search runs on calibrated
candidates, the report says what it timed and decided, the state file makes a repeated run time
nothing and give the same bytes, the output runs, and GPU backends refuse clearly without a GPU.
Latency figures are never asserted against targets here (bench/autotune.py measures them); only
what the search guarantees by construction is (the result is never slower than the placement it
started from, as measured).
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
import pytest

FAST = ["--autotune_warmup_runs", "1", "--autotune_timing_runs", "5"]


def _report(path):
    return json.loads(path.read_text())


def _qdq_count(path):
    return sum(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in onnx.load(str(path)).graph.node)


def _check_consistent(rep):
    a = rep["autotune"]
    assert a["used"] and a["backend"] == "ort_cpu"
    # The incumbent is replaced only by a faster measured candidate.
    assert a["autotuned"]["median_ms"] <= a["default_placement"]["median_ms"]
    for s in ("fp32", "default_placement", "autotuned"):
        assert a[s]["p10_ms"] <= a[s]["median_ms"] <= a[s]["p90_ms"]
    assert a["gate_fp32"]["runs"] == 3 * a["timing_runs"] and a["gate_autotuned"]["runs"] == 3 * a["timing_runs"]
    assert a["speedup_vs_fp32"] == pytest.approx(a["gate_fp32"]["median_ms"] / a["gate_autotuned"]["median_ms"])
    assert a["gate_passed"] == (a["speedup_vs_fp32"] >= 1.02)
    # Without a budget the accuracy limit is the rules' placement's own divergence + 10% (+ 1e-6).
    assert a["divergence_autotuned"] <= a["divergence_default"] * 1.1 + 1e-6
    if a["gate_passed"]:
        kept = {n for n, why in ((e["node"], e["reason"]) for e in rep["left_in_float"]) if "--autotune" in why}
        assert kept == set(a["nodes_in_float"])
    else:
        assert rep["qdq_pairs"] == 0
    return a


def test_quick_autotune_on_resnet_resumes_from_its_state_file(cli, resnet, calib, tmp_path):
    data = calib("resnet", n=64)
    state = tmp_path / "state.json"
    out1, out2 = tmp_path / "a.onnx", tmp_path / "b.onnx"
    rep1, rep2 = tmp_path / "a.json", tmp_path / "b.json"
    r = cli.quantize(resnet, out1, "--calibration_data_path", data, "--autotune", "quick", *FAST,
                     "--autotune_state_file", state, "--report_json", rep1)
    assert "autotune (quick, backend ort_cpu" in r.stdout
    a1 = _check_consistent(_report(rep1))
    assert a1["mode"] == "quick" and a1["timing_runs"] == 5 and a1["warmup_runs"] == 1
    assert a1["candidates_timed"] >= 3  # FP32, the rules' placement and at least one alternative
    assert a1["candidates_from_state"] == 0
    assert any(g["why"] == "searched" for g in a1["groups"])
    assert state.exists()
    # The same run again: every timing comes from the state file, the decisions and bytes repeat.
    cli.quantize(resnet, out2, "--calibration_data_path", data, "--autotune", "quick", *FAST,
                 "--autotune_state_file", state, "--report_json", rep2)
    a2 = _check_consistent(_report(rep2))
    assert a2["candidates_timed"] == 0
    assert a2["candidates_from_state"] == a1["candidates_timed"]
    assert a2["nodes_in_float"] == a1["nodes_in_float"]
    assert out1.read_bytes() == out2.read_bytes()
    # The output runs in ONNX Runtime.
    x = np.load(data)[:4]
    sess = ort.InferenceSession(str(out1), providers=["CPUExecutionProvider"])
    y = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    assert np.isfinite(y).all()


def test_autotune_without_a_value_is_the_default_mode_and_writes_its_output_dir(cli, small_cnn, small_cnn_calib,
                                                                                tmp_path):
    out, rep, work = tmp_path / "q.onnx", tmp_path / "r.json", tmp_path / "work"
    cli.quantize(small_cnn, out, "--calibration_data_path", small_cnn_calib, "--autotune", *FAST,
                 "--autotune_output_dir", work, "--report_json", rep)
    a = _check_consistent(_report(rep))
    assert a["mode"] == "default"
    assert (work / "autotune_state.json").exists()
    patterns = json.loads((work / "autotune_patterns.json").read_text())
    assert patterns["format"] == "ptqkit-autotune-patterns"
    searched = {g["signature"]: g["scheme"] for g in a["groups"] if g["why"] == "searched"}
    assert all(patterns["patterns"][sig] == scheme for sig, scheme in searched.items())


def test_standalone_autotune_command(cli, small_cnn, small_cnn_calib, tmp_path):
    out, rep = tmp_path / "q.onnx", tmp_path / "r.json"
    r = cli.ok("autotune", "--onnx_path", small_cnn, "--output_path", out, "--calibration_data_path",
               small_cnn_calib, "--mode", "quick", "--warmup_runs", "1", "--timing_runs", "5",
               "--report_json", rep)
    assert f"Wrote {out}" in r.stdout
    a = _check_consistent(_report(rep))
    assert a["mode"] == "quick"
    onnx.checker.check_model(str(out))


def test_accuracy_budget_bounds_every_candidate(cli, small_cnn, small_cnn_calib, tmp_path):
    out, rep = tmp_path / "q.onnx", tmp_path / "r.json"
    cli.quantize(small_cnn, out, "--calibration_data_path", small_cnn_calib, "--autotune", "quick", *FAST,
                 "--accuracy_budget", "0.5", "--report_json", rep)
    a = _report(rep)["autotune"]
    assert a["budget"] == 0.5
    assert a["divergence_autotuned"] <= max(0.5, a["divergence_default"])


def _no_gpu():
    return not os.path.exists("/dev/nvidia0") and shutil.which("trtexec") is None


@pytest.mark.skipif(not _no_gpu(), reason="checks the messages of a machine without a GPU")
@pytest.mark.parametrize("flags,backend", [
    (["--autotune_backend", "tensorrt"], "tensorrt"),
    (["--autotune_use_trtexec"], "tensorrt"),
    (["--autotune_backend", "ort_trt"], "ort_trt"),
    (["--autotune_backend", "ort_cuda"], "ort_cuda"),
])
def test_gpu_backends_say_no_gpu_was_found(cli, small_cnn, small_cnn_calib, tmp_path, flags, backend):
    out = tmp_path / "q.onnx"
    r = cli.run("quantize", "--onnx_path", small_cnn, "--output_path", out, "--calibration_data_path",
                small_cnn_calib, "--autotune", "quick", *flags)
    assert r.returncode == 1
    line = r.error_line()
    assert "no GPU / TensorRT found" in line and backend in line and "scripts/setup --gpu" in line
    assert not out.exists()


@pytest.mark.parametrize("flags,words", [
    (["--autotune_qdq_baseline", "x.onnx"], "--autotune_qdq_baseline is not supported"),
    (["--autotune_trtexec_args", "--fp16"], "--autotune_trtexec_args applies only with --autotune_use_trtexec"),
    (["--autotune_timing_cache", "t.cache"], "has no meaning for the ort_cpu backend"),
    (["--quantize_mode", "fp8"], "no FP8 kernels"),
    (["--eval_samples", "0"], "--autotune needs calibration data"),
])
def test_options_without_meaning_are_refused(cli, small_cnn, small_cnn_calib, tmp_path, flags, words):
    out = tmp_path / "q.onnx"
    r = cli.run("quantize", "--onnx_path", small_cnn, "--output_path", out, "--calibration_data_path",
                small_cnn_calib, "--autotune", "quick", *flags)
    assert r.returncode == 1
    assert words in r.error_line()
    assert not out.exists()


def test_bad_mode_is_refused(cli, small_cnn, tmp_path):
    # A bad option value is exit code 1, as for every option of the table (2 is for a malformed command line).
    r = cli.run("quantize", "--onnx_path", small_cnn, "--output_path", tmp_path / "q.onnx", "--autotune", "fastest")
    assert r.returncode == 1
    assert "fastest" in r.stderr
