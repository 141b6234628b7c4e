"""ptqkit.quantize() returns the loss report ("loss") that --report_json writes (issue 9 item 4)."""
from __future__ import annotations

import json

import ptqkit
import pytest


def test_python_report_carries_the_same_loss(small_cnn, small_cnn_npy, tmp_path):
    rep = tmp_path / "r.json"
    report = ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy),
                             output_path=tmp_path / "q.onnx", report_json=rep, log_level="ERROR")
    assert report["loss"] == json.loads(rep.read_text())["loss"]
    loss = report["loss"]
    assert loss["evaluated"] and loss["held_out"] and loss["samples"] == 8  # a quarter of 32
    assert loss["outputs"][0]["cosine_mean"] > 0.99


def test_eval_samples_keyword(small_cnn, small_cnn_npy, tmp_path):
    report = ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy),
                             output_path=tmp_path / "q.onnx", eval_samples=0, log_level="ERROR")
    assert not report["loss"]["evaluated"] and report["num_calibration_samples"] == 32


def test_accuracy_eval_callback_drives_the_budget(small_cnn, small_cnn_npy, tmp_path):
    """accuracy_eval scores every candidate file on the caller's data: here the agreement of the
    candidate's argmax with the FP32 model's on 64 inputs (higher is better). The budget is the
    largest allowed drop; the chosen model must be one the scorer saw meet it."""
    import numpy as np
    import onnxruntime as ort

    x = np.load(small_cnn_npy)
    ref = ort.InferenceSession(str(small_cnn), providers=["CPUExecutionProvider"]).run(None, {"cnn_input": x})[0]
    seen = {}

    def agreement(path):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        out = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"cnn_input": x})[0]
        score = float((out.argmax(1) == ref.argmax(1)).mean()) - 0.5 * float(np.abs(out - ref).mean())
        seen[path] = score
        return score

    report = ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy),
                             output_path=tmp_path / "q.onnx", accuracy_budget=1e-9,
                             accuracy_eval=agreement, log_level="ERROR")
    b = report["accuracy_budget"]
    assert b["used"] and b["metric"] == "accuracy_eval drop"
    assert len(seen) == b["evaluations"] + 1  # + the FP32 model's own score
    assert b["curve"][0]["divergence"] > 1e-9  # quantizing everything changes the outputs a little
    drops = {e["excluded"]: e["divergence"] for e in b["curve"]}
    k = len(b["excluded_nodes"])
    if b["met"]:
        assert drops[k] <= 1e-9 and (k == 0 or drops.get(k - 1, 1.0) > 1e-9)
    final = agreement(str(tmp_path / "q.onnx"))
    assert final == pytest.approx(seen[str(small_cnn)] - drops[k], abs=1e-9)


def test_accuracy_eval_errors_propagate(small_cnn, small_cnn_npy, tmp_path):
    def broken(path):
        raise RuntimeError("scorer exploded")

    with pytest.raises(RuntimeError, match="scorer exploded"):
        ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy), output_path=tmp_path / "q.onnx",
                        accuracy_budget=0.0, accuracy_eval=broken, log_level="ERROR")
    assert not (tmp_path / "q.onnx").exists()
