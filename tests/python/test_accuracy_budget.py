"""--accuracy_budget (issue 9 item 2): the fewest nodes, in the order of a node sensitivity scan, kept
in float so that the divergence from FP32 on the held-out calibration samples is within the budget.

Checked against an independent recomputation: the written model's per-sample cosine divergence on
the held-out samples (a quarter of the calibration file, spread through it; the report lists them) is within the
budget, and the curve shows that one node fewer in float missed it (minimality along the ranking).
"""
from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest


def _run(path, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    # As ptqkit's own evaluations: the graph as written, the bias in float (runtime/session.cc:
    # WeightBiasQuantization would round it to int32 steps of x_scale * w_scale).
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=["WeightBiasQuantization"])
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])


def _cos_divergence(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.mean(1 - (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))))


# With fp16 as the high precision, candidates are scored as the model is written (in fp16), so the
# curve's last point is the written model's divergence there too.
@pytest.mark.parametrize("budget,extra", [("0.01", []), ("0.0001", []), ("0.01", ["--high_precision_dtype", "fp16"])])
def test_budget_is_met_by_the_fewest_ranked_nodes(cli, outlier_mlp, outlier_calib, tmp_path, budget, extra):
    out, rep = tmp_path / "q.onnx", tmp_path / "r.json"
    r = cli.quantize(outlier_mlp, out, "--calibration_data_path", outlier_calib, "--accuracy_budget", budget,
                     "--report_json", rep, *extra)
    js = json.loads(rep.read_text())
    b = js["accuracy_budget"]
    assert b["used"] and b["met"] and b["metric"] == "cos" and b["budget"] == float(budget)
    k = len(b["excluded_nodes"])
    assert k >= 1, "the default quantization of this model is wrecked: something must stay in float"
    curve = {e["excluded"]: e["divergence"] for e in b["curve"]}
    assert curve[0] > float(budget) and curve[k] <= float(budget)
    assert curve[k - 1] > float(budget), "one node fewer in float must have missed the budget"
    assert b["evaluations"] == len(b["curve"])
    # The excluded nodes are in float in the written model and the left-in-float list says why.
    left = {e["node"]: e["reason"] for e in js["left_in_float"]}
    assert all(left[n] == "kept in float by --accuracy_budget" for n in b["excluded_nodes"])
    # Independent check on the held-out samples.
    x = np.load(outlier_calib)[js["loss"]["sample_indices"]]
    assert len(x) == js["loss"]["samples"]
    got = _cos_divergence(_run(outlier_mlp, x), _run(out, x))
    assert got == pytest.approx(curve[k], rel=1e-3, abs=1e-7)
    assert got <= float(budget)
    assert "accuracy budget: cos <= " in r.stdout and "met with" in r.stdout


def test_budget_already_met_changes_nothing(cli, resnet, calib, tmp_path):
    data = calib("resnet", n=40)
    plain, budgeted, rep = tmp_path / "a.onnx", tmp_path / "b.onnx", tmp_path / "r.json"
    cli.quantize(resnet, plain, "--calibration_data_path", data)
    cli.quantize(resnet, budgeted, "--calibration_data_path", data, "--accuracy_budget", "0.5",
                 "--accuracy_budget_metric", "top1", "--report_json", rep)
    b = json.loads(rep.read_text())["accuracy_budget"]
    assert b["met"] and b["excluded_nodes"] == [] and b["evaluations"] == 1 and b["ranked_nodes"] == 0
    assert plain.read_bytes() == budgeted.read_bytes()


def test_top1_budget_finer_than_one_flip_is_named(cli, resnet, calib, tmp_path):
    """A top1 budget smaller than one flip of the held-out rows can only mean "no flip": the run says so,
    with the row count; a budget a flip fits in says nothing."""
    data = calib("resnet", n=40)
    fine = cli.quantize(resnet, tmp_path / "a.onnx", "--calibration_data_path", data, "--accuracy_budget", "0.01",
                        "--accuracy_budget_metric", "top1", "--report_json", tmp_path / "a.json")
    rows = json.loads((tmp_path / "a.json").read_text())["loss"]["samples"]  # one row per sample: [batch, classes]
    assert 1.0 / rows > 0.01
    assert f"top1 compares {rows} argmax row(s) of the held-out samples: one flip is {1.0 / rows:.3g}" in fine.stderr
    coarse = cli.quantize(resnet, tmp_path / "b.onnx", "--calibration_data_path", data, "--accuracy_budget", "0.5",
                          "--accuracy_budget_metric", "top1")
    assert "argmax row(s)" not in coarse.stderr
    cosine = cli.quantize(resnet, tmp_path / "c.onnx", "--calibration_data_path", data, "--accuracy_budget", "0.001")
    assert "argmax row(s)" not in cosine.stderr


@pytest.mark.parametrize("args,message", [
    (["--accuracy_budget", "0.1", "--accuracy_budget_metric", "l1"], "--accuracy_budget_metric: 'l1' is not one of cos, kl_div, mse, top1"),
    (["--accuracy_budget", "0.1", "--eval_samples", "0"], "and held-out samples (--eval_samples > 0)"),
])
def test_budget_refusals(cli, resnet, calib, tmp_path, args, message):
    r = cli.run("quantize", "--onnx_path", resnet, "--output_path", tmp_path / "q.onnx",
                "--calibration_data_path", calib("resnet", n=40), *args)
    assert r.returncode != 0 and message in r.error_line()
    assert not (tmp_path / "q.onnx").exists()


def test_html_report_shows_the_curve_and_the_loss(cli, outlier_mlp, outlier_calib, tmp_path):
    import xml.etree.ElementTree as ET

    html, rep = tmp_path / "r.html", tmp_path / "r.json"
    cli.quantize(outlier_mlp, tmp_path / "q.onnx", "--calibration_data_path", outlier_calib,
                 "--accuracy_budget", "0.0001", "--report_html", html, "--report_json", rep)
    js = json.loads(rep.read_text())
    root = ET.fromstring(html.read_text())  # valid XHTML
    ns = {"h": "http://www.w3.org/1999/xhtml", "s": "http://www.w3.org/2000/svg"}
    circles = root.findall(".//s:circle", ns)
    points = [c for c in circles if c.get("class", "").startswith("point")]
    assert len(points) == len(js["accuracy_budget"]["curve"])
    assert len([c for c in circles if c.get("class") == "chosen"]) == 1
    assert len(root.findall(".//s:line[@class='budget']", ns)) == 1
    text = "".join(root.itertext())
    for node in js["accuracy_budget"]["excluded_nodes"]:
        assert node in text
    assert "logits" in text and "held-out" in text
    # Same run, same bytes (no timestamps).
    html2 = tmp_path / "r2.html"
    cli.quantize(outlier_mlp, tmp_path / "q2.onnx", "--calibration_data_path", outlier_calib,
                 "--accuracy_budget", "0.0001", "--report_html", html2)
    assert html2.read_text().replace("q2.onnx", "q.onnx") == html.read_text()
