"""The loss report of `ptqkit quantize` (issue 9 item 4): --eval_samples calibration samples
(at most a quarter, spread through the file) are held out of calibration, the quantized and FP32 models run on them, and the
summary, --report_json and the Python report say what was lost, with a warning that names likely
culprit tensors when an output's cosine falls under 0.99 or its top-1 agreement under 95%.

The figures are recomputed here from the written model and the calibration file with onnxruntime
(basic level: the TensorRT-form output as fake-quant), so a wrong sample split, a wrong metric or a
report of a different model than the one written fails.
"""
from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest

import models


def _run(path, x, level=ort.GraphOptimizationLevel.ORT_ENABLE_BASIC):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    # As ptqkit's own evaluations: the graph as written, the bias in float (runtime/session.cc:
    # WeightBiasQuantization would round it to int32 steps of x_scale * w_scale).
    basic = level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=["WeightBiasQuantization"] if basic else [])
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])


def _cosines(a, b):
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    return (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))


def test_report_matches_an_independent_recomputation(cli, resnet, calib, tmp_path):
    data = calib("resnet", n=40)
    out, rep = tmp_path / "q.onnx", tmp_path / "report.json"
    r = cli.quantize(resnet, out, "--calibration_data_path", data, "--report_json", rep)
    js = json.loads(rep.read_text())
    loss = js["loss"]
    # 40 samples: 10 would be a quarter, eval_samples is 16 -> 10 are held out, one in every 4.
    assert loss["evaluated"] and loss["held_out"] and loss["samples"] == 10 and loss["ort_level"] == "basic"
    assert loss["sample_indices"] == list(range(2, 40, 4))
    assert js["num_calibration_samples"] == 30
    assert js["output_path"] == str(out)
    x = np.load(data)[loss["sample_indices"]]
    ref, got = _run(resnet, x), _run(out, x)
    (o,) = loss["outputs"]
    cos = _cosines(ref, got)
    assert o["samples"] == 10
    assert o["cosine_mean"] == pytest.approx(cos.mean(), abs=1e-5)
    assert o["cosine_min"] == pytest.approx(cos.min(), abs=1e-5)
    assert o["top1_agreement"] == pytest.approx((ref.argmax(1) == got.argmax(1)).mean())
    rel = np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref.astype(np.float64))
    assert o["relative_rmse"] == pytest.approx(rel, rel=1e-3)
    assert o["max_abs_diff"] == pytest.approx(np.abs(got - ref).max(), rel=1e-3)
    assert loss["warning"] == ""
    # The summary says the same.
    assert "loss vs FP32 on 10 held-out sample(s), ONNX Runtime basic level" in r.stdout
    assert f"cosine {o['cosine_mean']:.4f}" in r.stdout


def test_a_wrecked_run_warns_and_names_the_culprit(cli, outlier_mlp, outlier_calib, resnet, calib, tmp_path):
    """The outlier MLP's input has one feature ~2000x the others: one INT8 scale for the input of
    /fc1 flattens every other feature to 0, and the default calibration keeps 10% top-1 agreement.
    The report must say so and name that input first (most of its values round to zero)."""
    out, rep = tmp_path / "q.onnx", tmp_path / "report.json"
    r = cli.quantize(outlier_mlp, out, "--calibration_data_path", outlier_calib, "--report_json", rep)
    loss = json.loads(rep.read_text())["loss"]
    assert loss["warning"].startswith("quantization lost accuracy: output ")
    assert "WARNING: quantization lost accuracy" in r.stdout
    assert "quantization lost accuracy" in r.stderr  # the log line too
    (o,) = loss["outputs"]
    assert o["top1_agreement"] < 0.5
    culprits = loss["culprits"]
    assert culprits[0]["tensor"] == "features" and culprits[0]["relative_error"] > 0.5
    assert all(c["tensor"] in loss["warning"] for c in culprits)
    errors = [c["relative_error"] for c in culprits]
    assert errors == sorted(errors, reverse=True)
    # A sane quantization does not warn.
    ok = cli.quantize(resnet, tmp_path / "ok.onnx", "--calibration_data_path", calib("resnet", n=40))
    assert "lost accuracy" not in ok.stdout + ok.stderr


def test_split_does_not_depend_on_the_batch_size(cli, resnet, calib, tmp_path):
    data = calib("resnet", n=40)
    reports = []
    for bs in ("1", "7"):
        rep = tmp_path / f"r{bs}.json"
        cli.quantize(resnet, tmp_path / f"q{bs}.onnx", "--calibration_data_path", data,
                     "--calibration_batch_size", bs, "--report_json", rep)
        reports.append(json.loads(rep.read_text()))
    assert (tmp_path / "q1.onnx").read_bytes() == (tmp_path / "q7.onnx").read_bytes()
    assert reports[0]["num_calibration_samples"] == reports[1]["num_calibration_samples"] == 30
    assert reports[0]["loss"]["samples"] == reports[1]["loss"]["samples"] == 10


@pytest.mark.parametrize("case", ["eval_samples_0", "cache", "few_samples"])
def test_when_there_is_no_held_out_report(cli, resnet, calib, tmp_path, case):
    data = calib("resnet", n=40)
    rep = tmp_path / "r.json"
    if case == "eval_samples_0":
        r = cli.quantize(resnet, tmp_path / "q.onnx", "--calibration_data_path", data, "--eval_samples", "0",
                         "--report_json", rep)
        loss = json.loads(rep.read_text())["loss"]
        assert not loss["evaluated"] and loss["not_evaluated_because"] == "--eval_samples 0"
        assert "loss vs FP32: not measured (--eval_samples 0)" in r.stdout
        assert json.loads(rep.read_text())["num_calibration_samples"] == 40
    elif case == "cache":
        cache = tmp_path / "cache.json"
        cli.quantize(resnet, tmp_path / "a.onnx", "--calibration_data_path", data, "--save_calibration_cache", cache)
        cli.quantize(resnet, tmp_path / "b.onnx", "--calibration_cache", cache, "--report_json", rep)
        loss = json.loads(rep.read_text())["loss"]
        assert not loss["evaluated"] and "calibration cache" in loss["not_evaluated_because"]
    else:
        few = tmp_path / "few.npy"
        np.save(few, np.load(data)[:3])
        cli.quantize(resnet, tmp_path / "q.onnx", "--calibration_data_path", few, "--report_json", rep)
        js = json.loads(rep.read_text())
        # Under 4 samples nothing is held out: all 3 calibrate and the report is in-sample.
        assert js["num_calibration_samples"] == 3
        assert js["loss"]["evaluated"] and not js["loss"]["held_out"] and js["loss"]["samples"] == 3


@pytest.mark.parametrize("flag", ["--report_json", "--report_html"])
def test_reports_never_overwrite_an_input(cli, resnet, calib, tmp_path, flag):
    data = calib("resnet", n=40)
    r = cli.run("quantize", "--onnx_path", resnet, "--output_path", tmp_path / "q.onnx",
                "--calibration_data_path", data, flag, data)
    assert r.returncode == 1 and flag in r.error_line()
    assert not (tmp_path / "q.onnx").exists()


def test_eval_mask_input_leaves_padded_positions_out(cli, tmp_path):
    model, data = tmp_path / "tokens.onnx", tmp_path / "tokens.npz"
    models.make_padded_token_model(model)
    x, mask = models.padded_token_data(data)

    def reported(tag, *extra):
        out, rep = tmp_path / f"q_{tag}.onnx", tmp_path / f"r_{tag}.json"
        r = cli.quantize(model, out, "--calibration_data_path", data, "--report_json", rep, *extra)
        return out, json.loads(rep.read_text())["loss"], r.stdout

    def recomputed(out, indices, masked):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        ref_s = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        got_s = ort.InferenceSession(str(out), so, providers=["CPUExecutionProvider"],
                                     disabled_optimizers=["WeightBiasQuantization"])
        feeds = [{"x": x[i:i + 1], "attention_mask": mask[i:i + 1]} for i in indices]
        ref = np.concatenate([ref_s.run(None, f)[0] for f in feeds])
        got = np.concatenate([got_s.run(None, f)[0] for f in feeds])
        if masked:  # the positions where the mask is 0 count as equal (both zero)
            keep = mask[indices][..., None].astype(np.float32)
            ref, got = ref * keep, got * keep
        return _cosines(ref, got)

    out_all, loss_all, _ = reported("all", "--eval_mask_input", "none")
    out_masked, loss_masked, stdout = reported("named", "--eval_mask_input", "attention_mask")
    _, loss_default, default_stdout = reported("default")  # an input named attention_mask is the default
    assert loss_masked["mask_input"] == "attention_mask" and loss_all["mask_input"] == ""
    assert "positions where 'attention_mask' is 0 left out" in stdout
    assert "positions where 'attention_mask' is 0 left out" in default_stdout
    def timeless(loss):
        return {k: v for k, v in loss.items() if k != "seconds"}
    assert timeless(loss_default) == timeless(loss_masked)
    assert out_all.read_bytes() == out_masked.read_bytes()  # the report changes, the model does not
    assert loss_masked["sample_indices"] == loss_all["sample_indices"]
    cos_all = recomputed(out_all, loss_all["sample_indices"], masked=False)
    cos_masked = recomputed(out_masked, loss_masked["sample_indices"], masked=True)
    assert loss_all["outputs"][0]["cosine_mean"] == pytest.approx(cos_all.mean(), abs=1e-5)
    assert loss_masked["outputs"][0]["cosine_mean"] == pytest.approx(cos_masked.mean(), abs=1e-5)
    assert loss_masked["outputs"][0]["cosine_min"] == pytest.approx(cos_masked.min(), abs=1e-5)
    # Large padded values set the ranges: the real positions lose more than the whole output shows.
    assert cos_masked.mean() < cos_all.mean() - 1e-3


@pytest.mark.parametrize("name, says", [("nope", "has no input 'nope'"), ("x", "a padding mask is [batch, sequence]")])
def test_eval_mask_input_that_is_not_a_padding_mask_is_refused(cli, tmp_path, name, says):
    model, data, out = tmp_path / "tokens.onnx", tmp_path / "tokens.npz", tmp_path / "q.onnx"
    models.make_padded_token_model(model)
    models.padded_token_data(data)
    r = cli.run("quantize", "--onnx_path", model, "--calibration_data_path", data, "--output_path", out,
                "--eval_mask_input", name)
    assert r.returncode == 1 and says in r.stderr and "--eval_mask_input" in r.stderr
    assert not out.exists()
