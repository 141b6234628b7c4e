"""ptqkit.quantize() returns the loss report ("loss") that --report_json writes (issue 9 item 4)."""
from __future__ import annotations

import json

import ptqkit


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
