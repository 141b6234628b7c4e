"""End-to-end tests of `ptqkit sensitivity` (DESIGN.md "Sensitivity scan and picker").

Every scan runs the real binary; the scores are checked with onnx, onnxruntime and numpy as
independent checkers: the targets against the graph, the numbers against probes built with
`ptqkit quantize` and scored here in float64, the ranking against the printed table.

Scans use 16-32 calibration samples: enough for stable scales on these small models, and the
whole file stays a few seconds long.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from qdq import ort_int8_kernels_saturate


# Graph plumbing the default scope must skip (DESIGN.md, issue 3).
PLUMBING = {"Reshape", "Transpose", "Shape", "Cast", "Constant", "Flatten", "Concat", "Squeeze",
            "Unsqueeze", "Gather", "Slice", "Split", "Identity", "Expand"}
REQUIRED_KEYS = {"onnx_path", "scores", "failed", "calibration_source", "num_calibration_samples",
                 "metric", "granularity", "target_precision", "timings", "ptqkit_version"}
N_CALIB = 16
# The scan's evaluation batch for models with a dynamic batch dimension (kEvalBatchForDynamicModels
# in src/scan/sensitivity_scan.cc); the checker below evaluates in the same batches.
EVAL_BATCH = 16


# ---- helpers -----------------------------------------------------------------------------------
def scan(cli, model, out_json, *extra, data=None):
    """Runs a scan that must succeed; returns (Result, parsed JSON)."""
    args = ["sensitivity", "--onnx_path", model, "--output_json", out_json, *extra]
    if data is not None:
        args += ["--calibration_data_path", data]
    r = cli.ok(*args)
    return r, json.loads(Path(out_json).read_text())


def ranked(scores: dict) -> list[str]:
    """DESIGN.md's ranking order: score descending, ties by name ascending."""
    return [k for k, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def log_softmax(a: np.ndarray) -> np.ndarray:
    m = a.max(axis=1, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=1, keepdims=True))


def per_sample_metric(metric: str, ref: np.ndarray, probe: np.ndarray) -> np.ndarray:
    """DESIGN.md's metrics on [samples, values] float64 arrays, one value per sample (row)."""
    if metric == "kl_div":  # KL(softmax(ref) || softmax(probe)); values already in [0, 1]: normalised, no softmax
        lp, lq = log_softmax(ref), log_softmax(probe)
        out = (np.exp(lp) * (lp - lq)).sum(axis=1)
        for i in np.where(((ref >= 0) & (ref <= 1)).all(axis=1) & (ref.sum(axis=1) > 0))[0]:
            p = (ref[i] + 1e-12) / (ref[i] + 1e-12).sum()
            q = (np.maximum(probe[i], 0) + 1e-12) / (np.maximum(probe[i], 0) + 1e-12).sum()
            out[i] = max(float((p * np.log(p / q)).sum()), 0.0)
        return out
    if metric == "mse":
        return ((ref - probe) ** 2).mean(axis=1)
    if metric == "cos":  # 1 - cosine; one zero vector -> 1, both zero -> 0
        nr, npb = np.linalg.norm(ref, axis=1), np.linalg.norm(probe, axis=1)
        out = np.ones(len(ref))
        both = (nr == 0) & (npb == 0)
        ok = (nr > 0) & (npb > 0)
        out[both] = 0.0
        out[ok] = 1.0 - np.clip((ref[ok] * probe[ok]).sum(axis=1) / (nr[ok] * npb[ok]), -1, 1)
        return out
    raise ValueError(metric)


# The level the scan runs its INT8 probes at: ORT's default, except on CPUs where its INT8 kernels
# saturate (x86 without VNNI), where the scan measures quantization at the basic level (fake-quant).
PROBE_BASIC = ort_int8_kernels_saturate()


def run_batched(model, x: np.ndarray, batch: int = EVAL_BATCH, basic: bool = False) -> list[np.ndarray]:
    """Every graph output of `model` on x, run `batch` samples at a time, as [samples, values]
    float64 arrays. ORT's default optimisation level (the scan's FP32 reference), or basic."""
    so = ort.SessionOptions()
    if basic:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    per = [sess.run(None, {name: x[i:i + batch]}) for i in range(0, len(x), batch)]
    return [np.concatenate([p[k] for p in per]).reshape(len(x), -1).astype(np.float64)
            for k in range(len(per[0]))]


def score_from_outputs(metric, ref_outputs, probe_outputs) -> float:
    """Mean over samples, sum over outputs."""
    return float(sum(per_sample_metric(metric, r, p).mean() for r, p in zip(ref_outputs, probe_outputs)))


def parse_ranking(stdout: str):
    """The terminal ranking: (header, [(name, value text, marker or None, marker column)], tail lines)."""
    lines = stdout.rstrip("\n").splitlines()
    rows, tail = [], []
    for ln in lines[1:]:
        m = re.fullmatch(r"  (\S+) +(0|\d+\.\d+(?:e[-+]\d+)?)(?: +(<-- (?:highest|lowest) impact))? *", ln)
        if m and not tail:
            rows.append((m.group(1), m.group(2), m.group(3), ln.find("<--")))
        else:
            tail.append(ln)
    return lines[0], rows, tail


def graph_nodes(model) -> dict[str, str]:
    return {n.name: n.op_type for n in onnx.load(str(model)).graph.node}


# ---- 1. scans on the ResNet and transformer fixtures ----------------------------------------------
@pytest.fixture(scope="module")
def fixture_scans(cli, resnet, transformer, calib, tmp_path_factory):
    """The four basic scans (model x granularity), run once for the tests that read them."""
    d = tmp_path_factory.mktemp("scans")
    out = {}
    for kind, model in (("resnet", resnet), ("transformer", transformer)):
        for gran in ("op_type", "node"):
            r, js = scan(cli, model, d / f"{kind}_{gran}.json", "--granularity", gran,
                         data=calib(kind, n=N_CALIB))
            out[kind, gran] = (model, d / f"{kind}_{gran}.json", r, js)
    return out


@pytest.mark.parametrize("kind", ["resnet", "transformer"])
@pytest.mark.parametrize("granularity", ["op_type", "node"])
def test_scan_json_and_targets(fixture_scans, kind, granularity):
    model, path, _, js = fixture_scans[kind, granularity]
    assert REQUIRED_KEYS <= set(js), f"missing keys: {REQUIRED_KEYS - set(js)}"
    assert js["onnx_path"] == str(model)
    assert js["calibration_source"] == "real"
    assert js["num_calibration_samples"] == N_CALIB
    assert (js["metric"], js["granularity"], js["target_precision"]) == ("kl_div", granularity, "int8")
    assert isinstance(js["ptqkit_version"], str) and js["ptqkit_version"]
    assert isinstance(js["timings"], dict) and all(isinstance(v, (int, float)) and v >= 0
                                                   for v in js["timings"].values())
    for f in js["failed"]:
        assert set(f) >= {"target", "reason"} and f["reason"], f
    failed = {f["target"] for f in js["failed"]}
    scores = js["scores"]
    assert scores, "no target scored"
    assert not failed & set(scores), "a target is both scored and failed"
    for t, v in scores.items():
        assert isinstance(v, float) and math.isfinite(v) and v >= 0, (t, v)

    nodes = graph_nodes(model)
    present_types = set(nodes.values())
    # Default scope = op types present in the graph minus plumbing. On these fixtures that is every
    # non-plumbing type (Conv, BN, Relu, MaxPool, Add, GAP, Gemm / LN, MatMul, Add, Div, Softmax,
    # Erf, Mul, ReduceMean), so every one of them must be probed: scored or failed.
    # The scan ranks the graph quantize plans on: every BatchNormalization of these fixtures follows a
    # Conv and is folded into it first (--canonicalize), so none is a target.
    expected_types = present_types - PLUMBING - {"BatchNormalization"}
    targets = set(scores) | failed
    if granularity == "op_type":
        assert targets == expected_types, (targets ^ expected_types)
    else:
        assert targets <= set(nodes), f"not node names: {targets - set(nodes)}"
        assert targets == {n for n, t in nodes.items() if t in expected_types}
        assert not {nodes[t] for t in targets} & PLUMBING
    # Any real probe changes something: an all-zero scan would mean the probes inserted nothing.
    assert max(scores.values()) > 0


@pytest.mark.parametrize("kind", ["resnet", "transformer"])
@pytest.mark.parametrize("granularity", ["op_type", "node"])
def test_scan_terminal_rendering(fixture_scans, kind, granularity):
    _, path, r, js = fixture_scans[kind, granularity]
    header, rows, tail = parse_ranking(r.stdout)
    assert header == f"Sensitivity scan (int8 / kl_div / {granularity}):"
    nonzero = {k: v for k, v in js["scores"].items() if v != 0.0}
    assert [row[0] for row in rows] == ranked(nonzero), "rows are not the JSON ranking"
    assert rows[0][2] == "<-- highest impact" and rows[-1][2] == "<-- lowest impact"
    assert all(row[2] is None for row in rows[1:-1])
    assert rows[0][3] == rows[-1][3], "the markers are not aligned in one column"
    for name, text, _, _ in rows:
        v = js["scores"][name]
        # Three decimals; three significant digits in scientific notation when a non-zero score
        # rounds to 0.000.
        if "e" in text:
            assert 0 < v < 0.0005 and abs(float(text) - v) <= 0.005 * v, (name, text, v)
        else:
            assert abs(float(text) - v) <= 0.0005 + 1e-12, (name, text, v)
    assert tail[-1] == f"Wrote {path}"
    if len(nonzero) < len(js["scores"]):
        assert any("with score 0.0 hidden" in ln for ln in tail)


def test_default_json_path(cli, transformer, calib, tmp_path):
    model = tmp_path / "block_model.onnx"
    shutil.copy(transformer, model)
    r = cli.ok("sensitivity", "--onnx_path", model, "--calibration_data_path",
               calib("transformer", n=N_CALIB))
    expected = tmp_path / "block_model.sensitivity.json"
    assert expected.is_file()
    assert r.stdout.rstrip("\n").splitlines()[-1] == f"Wrote {expected}"
    assert json.loads(expected.read_text())["onnx_path"] == str(model)


@pytest.fixture(scope="module")
def metric_scans(cli, transformer, calib, tmp_path_factory):
    d = tmp_path_factory.mktemp("metrics")
    return {m: scan(cli, transformer, d / f"{m}.json", "--metric", m,
                    data=calib("transformer", n=N_CALIB)) for m in ("kl_div", "mse", "cos")}


@pytest.mark.parametrize("metric", ["kl_div", "mse", "cos"])
def test_every_metric(metric_scans, metric):
    r, js = metric_scans[metric]
    assert js["metric"] == metric
    assert r.stdout.startswith(f"Sensitivity scan (int8 / {metric} / op_type):\n")
    assert all(math.isfinite(v) and v >= 0 for v in js["scores"].values())
    if metric == "cos":  # 1 - cosine is at most 2 per sample and output
        assert max(js["scores"].values()) <= 2.0
    # The three metrics measure different things: identical numbers would mean the flag is ignored.
    others = [metric_scans[m][1]["scores"] for m in metric_scans if m != metric]
    assert all(o != js["scores"] for o in others)
    assert set(js["scores"]) == set(others[0])


def test_op_types_scope_restricts_targets(cli, transformer, calib, tmp_path):
    _, js = scan(cli, transformer, tmp_path / "s.json", "--granularity", "node",
                 "--op_types_scope", "MatMul", "Softmax", data=calib("transformer", n=N_CALIB))
    nodes = graph_nodes(transformer)
    assert set(js["scores"]) | {f["target"] for f in js["failed"]} == \
        {n for n, t in nodes.items() if t in ("MatMul", "Softmax")}
    _, js = scan(cli, transformer, tmp_path / "t.json", "--op_types_scope", "LayerNormalization",
                 data=calib("transformer", n=N_CALIB))
    assert set(js["scores"]) == {"LayerNormalization"}


def test_synthetic_data_is_marked_and_warned(cli, transformer, tmp_path):
    r, js = scan(cli, transformer, tmp_path / "s.json", "--num_calib_samples", "8")
    assert js["calibration_source"] == "synthetic"
    assert js["num_calibration_samples"] == 8
    assert "directional" in r.stderr.lower(), r.stderr
    assert all(math.isfinite(v) and v >= 0 for v in js["scores"].values())


def test_fp8_target_precision(cli, transformer, calib, fixture_scans, tmp_path):
    r, js = scan(cli, transformer, tmp_path / "fp8.json", "--target_precision", "fp8",
                 data=calib("transformer", n=N_CALIB))
    assert js["target_precision"] == "fp8"
    assert r.stdout.startswith("Sensitivity scan (fp8 / kl_div / op_type):\n")
    assert js["scores"] and all(math.isfinite(v) and v >= 0 for v in js["scores"].values())
    int8 = fixture_scans["transformer", "op_type"][3]["scores"]
    assert set(js["scores"]) == set(int8)
    assert js["scores"] != int8, "fp8 scores equal the int8 ones: the precision flag is ignored"


def test_failed_probe_is_listed_not_scored(cli, token_transformer, calib, tmp_path):
    """/embed/Gather reads int64 ids and a table: its probe has nothing to quantize -> `failed`."""
    r, js = scan(cli, token_transformer, tmp_path / "s.json", "--granularity", "node",
                 "--op_types_scope", "Gather", "MatMul", data=calib("tokens", n=8))
    failed = {f["target"]: f["reason"] for f in js["failed"]}
    assert "/embed/Gather" in failed and failed["/embed/Gather"]
    assert "/embed/Gather" not in js["scores"]
    assert "failed" in r.stdout and "/embed/Gather" in r.stdout
    assert "/head/MatMul" in js["scores"]


def test_zero_scores_hidden_unless_asked(cli, grid_input, tmp_path):
    model, data = grid_input
    r, js = scan(cli, model, tmp_path / "a.json", "--granularity", "node", "--calibration_method",
                 "max", data=data)
    # Max calibration on integers reaching +-127 gives scale 1: Q/DQ on the Relu input is exact.
    assert js["scores"]["/relu/Relu"] == 0.0
    assert js["scores"]["/fc/MatMul"] > 0.0
    _, rows, tail = parse_ranking(r.stdout)
    assert [row[0] for row in rows] == ["/fc/MatMul"]
    assert "  (1 target(s) with score 0.0 hidden; pass --show_zero_scores or read the JSON)" in tail
    r, _ = scan(cli, model, tmp_path / "b.json", "--granularity", "node", "--calibration_method",
                "max", "--show_zero_scores", data=data)
    _, rows, tail = parse_ranking(r.stdout)
    assert [(row[0], row[1]) for row in rows][-1] == ("/relu/Relu", "0")
    assert not any("with score 0.0 hidden" in ln for ln in tail)


@pytest.mark.parametrize("method", ["mse", "percentile", "entropy", "max"])
def test_every_calibration_method_is_accepted(cli, grid_input, tmp_path, method):
    model, data = grid_input
    r, js = scan(cli, model, tmp_path / "a.json", "--granularity", "node", "--calibration_method",
                 method, data=data)
    assert r.returncode == 0, r.stderr
    assert js["scores"]["/fc/MatMul"] > 0.0


# ---- 2. independent re-computation of a score ----------------------------------------------------
# The probe is rebuilt with `ptqkit quantize` selecting the same target, calibrated with the same
# method on the same data; both models run here in onnxruntime and are scored in float64. The scan
# evaluates dynamic-batch models in batches of 16 samples (EVAL_BATCH), so the
# checker does too: batch 1 instead moves the fp32 outputs by a few ulps (observed up to 4e-7
# relative on the outlier MLP's scores).


@pytest.mark.parametrize("metric", ["kl_div", "mse", "cos"])
def test_node_scores_match_independent_probe_exactly(cli, outlier_mlp, outlier_calib, tmp_path, metric):
    """On a Gemm/Relu-only model there is no fusion for ORT to choose differently, so the scan and
    the checker compute the same fp32 outputs: observed agreement ~1e-12 relative. 1e-6 still
    flags any change of definition; e.g. the reversed KL(probe || ref) is 3.7x the score of /fc1."""
    _, js = scan(cli, outlier_mlp, tmp_path / "s.json", "--granularity", "node", "--metric", metric,
                 data=outlier_calib)
    x = np.load(outlier_calib)
    ref = run_batched(outlier_mlp, x)
    for node in ("/fc1/Gemm", "/fc2/Gemm"):  # the outlier node and an ordinary one
        probe = tmp_path / "probe.onnx"
        cli.quantize(outlier_mlp, probe, "--calibration_data_path", outlier_calib,
                     "--nodes_to_quantize", node, "--calibration_method", "mse",
                     "--eval_samples", "0")  # calibrate on every sample, as the scan does  # the scan's default
        expected = score_from_outputs(metric, ref, run_batched(probe, x, basic=PROBE_BASIC))
        assert expected > 0
        assert js["scores"][node] == pytest.approx(expected, rel=1e-6), node


def with_softmax_output(model, path):
    """`model` with a Softmax over its (logit) output: an output of probabilities, as classifiers and
    PP-OCR rec export them."""
    m = onnx.load(str(model))
    out = m.graph.output[0]
    logits = out.name + "_logits"
    for n in m.graph.node:
        n.output[:] = [logits if o == out.name else o for o in n.output]
    m.graph.node.append(onnx.helper.make_node("Softmax", [logits], [out.name], axis=-1))
    onnx.save(m, str(path))
    return path


def test_kl_div_of_probability_outputs_compares_the_probabilities(cli, outlier_mlp, outlier_calib, tmp_path):
    """An output already in [0, 1] is compared as a distribution (normalised, no second softmax). The
    softmax of probabilities is nearly uniform: under that definition the two nodes score 42x and 160x
    less (measured), and what rank there is comes from squared probability differences."""
    model = with_softmax_output(outlier_mlp, tmp_path / "probs.onnx")
    _, js = scan(cli, model, tmp_path / "s.json", "--granularity", "node", data=outlier_calib)
    x = np.load(outlier_calib)
    ref = run_batched(model, x)
    assert ((ref[0] >= 0) & (ref[0] <= 1)).all()
    for node in ("/fc1/Gemm", "/fc2/Gemm"):
        probe = tmp_path / "probe.onnx"
        cli.quantize(model, probe, "--calibration_data_path", outlier_calib, "--nodes_to_quantize", node,
                     "--calibration_method", "mse", "--eval_samples", "0")
        out = run_batched(probe, x, basic=PROBE_BASIC)
        expected = score_from_outputs("kl_div", ref, out)
        lp, lq = log_softmax(ref[0]), log_softmax(out[0])
        softmax_of_probabilities = float((np.exp(lp) * (lp - lq)).sum(axis=1).mean())
        assert expected > 0
        assert js["scores"][node] == pytest.approx(expected, rel=1e-6), node
        assert js["scores"][node] > 10 * softmax_of_probabilities, node


def test_percentile_reaches_the_scan(cli, outlier_mlp, outlier_calib, tmp_path):
    """--percentile: the scan's probes use the same percentile range as `quantize --percentile` (it
    was fixed at 99.999, so the budget's ranking never saw the user's value)."""
    _, js = scan(cli, outlier_mlp, tmp_path / "s.json", "--granularity", "node", "--calibration_method",
                 "percentile", "--percentile", "90", data=outlier_calib)
    x = np.load(outlier_calib)
    ref = run_batched(outlier_mlp, x)
    expected = {}
    for p in ("90", "99.999"):
        probe = tmp_path / f"probe_{p}.onnx"
        cli.quantize(outlier_mlp, probe, "--calibration_data_path", outlier_calib, "--nodes_to_quantize",
                     "/fc1/Gemm", "--calibration_method", "percentile", "--percentile", p, "--eval_samples", "0")
        expected[p] = score_from_outputs("kl_div", ref, run_batched(probe, x, basic=PROBE_BASIC))
    assert expected["90"] != pytest.approx(expected["99.999"], rel=1e-3)  # the percentile matters here
    assert js["scores"]["/fc1/Gemm"] == pytest.approx(expected["90"], rel=1e-6)
    r = cli.run("sensitivity", "--onnx_path", outlier_mlp, "--calibration_data_path", outlier_calib,
                "--output_json", tmp_path / "bad.json", "--percentile", "0")
    assert r.returncode != 0 and "--percentile must be in (0, 100], got 0" in r.error_line()


@pytest.mark.parametrize("metric", ["kl_div", "mse"])
def test_scores_sum_over_graph_outputs(cli, outlier_mlp, outlier_calib, tmp_path, metric):
    """Two graph outputs (the logits and the hidden /act2 activation): each score is the sum over
    outputs of the per-output mean over samples. Same exact tolerance as above."""
    model = tmp_path / "two_outputs.onnx"
    m = onnx.load(str(outlier_mlp))
    m.graph.output.append(onnx.helper.make_tensor_value_info("/act2/Relu_output_0",
                                                             onnx.TensorProto.FLOAT, ["N", 64]))
    onnx.save(m, str(model))
    _, js = scan(cli, model, tmp_path / "s.json", "--granularity", "node", "--metric", metric,
                 data=outlier_calib)
    x = np.load(outlier_calib)
    ref = run_batched(model, x)
    assert len(ref) == 2
    node = "/fc2/Gemm"  # changes both outputs
    probe = tmp_path / "probe.onnx"
    cli.quantize(model, probe, "--calibration_data_path", outlier_calib, "--nodes_to_quantize", node,
                 "--calibration_method", "mse", "--eval_samples", "0")  # the scan's calibration
    out = run_batched(probe, x, basic=PROBE_BASIC)
    parts = [per_sample_metric(metric, r, p).mean() for r, p in zip(ref, out)]
    assert min(parts) > 0, "one output unchanged: the sum would not be tested"
    assert js["scores"][node] == pytest.approx(sum(parts), rel=1e-6)


# On the ResNet and the transformer the scan runs each probe's sub-graph from cached FP32
# activations, and ORT fuses a sub-graph (MatMul+Add, Conv+BN, ...) differently from the whole model
# the checker runs: outputs differ by fp32 rounding (~1e-7 relative). Against a quantization
# perturbation of ~1e-3, that moves a KL of ~1e-5 by up to ~1e-4 relative; observed at most 5.4e-5.
# 1e-3 sits above that noise and below the effect of a definition change: one sample of 16 missed
# moves a score ~6%, sum instead of mean 16x, the reversed KL(probe || ref) ~2e-3 on these two
# nodes (the outlier test above is the sharp check of the KL direction).
FUSION_REL_TOL = 1e-3


@pytest.mark.parametrize("metric", ["kl_div", "mse", "cos"])
def test_transformer_node_score_matches_independent_probe(cli, transformer, calib, tmp_path, metric):
    data = calib("transformer", n=N_CALIB)
    _, js = scan(cli, transformer, tmp_path / "s.json", "--granularity", "node", "--metric", metric,
                 data=data)
    x = np.load(data)
    ref = run_batched(transformer, x)
    for node in ("/blocks.0/mlp/fc2/MatMul", "/head/MatMul"):
        probe = tmp_path / "probe.onnx"
        cli.quantize(transformer, probe, "--calibration_data_path", data, "--nodes_to_quantize", node,
                     "--calibration_method", "mse", "--eval_samples", "0",  # the scan's calibration,
                     "--smoothquant_alpha", "0", "--bias_correction", "false")  # and no weight edits
        expected = score_from_outputs(metric, ref, run_batched(probe, x, basic=PROBE_BASIC))
        assert expected > 0
        assert js["scores"][node] == pytest.approx(expected, rel=FUSION_REL_TOL), node


def test_op_type_score_matches_independent_probe(cli, resnet, calib, tmp_path):
    data = calib("resnet", n=N_CALIB)
    _, js = scan(cli, resnet, tmp_path / "s.json", data=data)
    probe = tmp_path / "probe.onnx"
    cli.quantize(resnet, probe, "--calibration_data_path", data, "--op_types_to_quantize", "Conv",
                 "--calibration_method", "mse", "--eval_samples", "0",  # the scan's calibration,
                 "--smoothquant_alpha", "0", "--bias_correction", "false")  # and no weight edits
    # The probe really is "every Conv quantized": each Conv reads its input through a DQ.
    g = onnx.load(str(probe)).graph
    producer = {o: n.op_type for n in g.node for o in n.output}
    convs = [n for n in g.node if n.op_type == "Conv"]
    assert convs and all(producer.get(n.input[0]) == "DequantizeLinear" for n in convs)
    x = np.load(data)
    expected = score_from_outputs("kl_div", run_batched(resnet, x), run_batched(probe, x, basic=PROBE_BASIC))
    # On an AVX2 machine without VNNI (AMD EPYC, 2026-12-04) the scan's Conv score is 0.37% above
    # this probe's, the same at both ORT levels and with 7-bit weights (so not ORT's INT8 kernels):
    # the FP32 activations the two calibrations see differ in their last bits there, and the mse
    # range of some Conv input lands on a neighbouring candidate. 5e-3 still catches a missed
    # sample (~6%) and a sum instead of a mean (16x).
    assert js["scores"]["Conv"] == pytest.approx(expected, rel=5e-3)


# ---- 3. determinism --------------------------------------------------------------------------------
def without_timings(text: str) -> str:
    stripped = re.sub(r'\n  "timings": \{[^{}]*\},?', "", text)
    assert stripped != text, "no timings block found"
    return stripped


@pytest.mark.parametrize("granularity", ["op_type", "node"])
def test_same_scan_twice_is_byte_identical(cli, transformer, calib, tmp_path, granularity):
    texts = []
    for name in ("a.json", "b.json"):
        scan(cli, transformer, tmp_path / name, "--granularity", granularity,
             data=calib("transformer", n=N_CALIB))
        texts.append((tmp_path / name).read_text())
    assert without_timings(texts[0]) == without_timings(texts[1])
    # Sorted keys at every level, as the issue asks ("the same inputs give the same file").
    js = json.loads(texts[0])
    assert list(js) == sorted(js) and list(js["scores"]) == sorted(js["scores"])


# ---- 4. a deliberately sensitive node ranks first --------------------------------------------------
@pytest.mark.parametrize("metric", ["kl_div", "mse", "cos"])
def test_outlier_node_ranks_first(cli, outlier_mlp, outlier_calib, tmp_path, metric):
    """/fc1/Gemm is the only reader of the input with a ~2000x outlier feature (models.py)."""
    _, js = scan(cli, outlier_mlp, tmp_path / "node.json", "--granularity", "node", "--metric", metric,
                 data=outlier_calib)
    order = ranked(js["scores"])
    assert order[0] == "/fc1/Gemm", js["scores"]
    # Observed (kl_div): 0.21 against 0.0023 for the runner-up (/head/Gemm), ~90x. A factor 10
    # asks for a clear winner, not a near tie that rounding could flip.
    assert js["scores"][order[0]] >= 10 * js["scores"][order[1]], js["scores"]
    _, js = scan(cli, outlier_mlp, tmp_path / "op.json", "--metric", metric, data=outlier_calib)
    assert ranked(js["scores"]) == ["Gemm", "Relu"], js["scores"]


# ---- 7. bad input ------------------------------------------------------------------------------------
def assert_clean_failure(r, *words):
    assert r.returncode != 0
    err = r.error_line()
    assert len([ln for ln in r.stderr.splitlines() if ln.startswith("ptqkit: error:")]) == 1
    for w in words:
        assert w in err, f"{w!r} not named in: {err}"
    assert "Wrote" not in r.stdout


def test_missing_model(cli, tmp_path):
    r = cli.run("sensitivity", "--onnx_path", tmp_path / "nope.onnx")
    assert_clean_failure(r, "nope.onnx")
    assert list(tmp_path.iterdir()) == []


def test_corrupt_model(cli, tmp_path):
    model = tmp_path / "junk.onnx"
    model.write_bytes(b"this is not a protobuf")
    r = cli.run("sensitivity", "--onnx_path", model)
    assert_clean_failure(r, "junk.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.onnx"]


@pytest.mark.parametrize("case", ["wrong_rank", "wrong_key", "not_npy", "missing"])
def test_wrong_data(cli, transformer, calib, tmp_path, case):
    model = tmp_path / "m.onnx"
    shutil.copy(transformer, model)
    if case == "wrong_rank":
        data, word = calib("resnet", n=4), "rank"  # images [4,3,32,32] for a [N,16,64] input
    elif case == "wrong_key":
        data, word = tmp_path / "d.npz", "wrong_name"
        np.savez(data, wrong_name=np.zeros((4, 16, 64), np.float32))
    elif case == "not_npy":
        data, word = tmp_path / "d.npy", "d.npy"
        data.write_bytes(b"garbage, not an array")
    else:
        data, word = tmp_path / "absent.npy", "absent.npy"
    r = cli.run("sensitivity", "--onnx_path", model, "--calibration_data_path", data)
    assert_clean_failure(r, word)
    assert not (tmp_path / "m.sensitivity.json").exists()


@pytest.mark.parametrize("flag,value", [("--metric", "l1"), ("--granularity", "layer"),
                                        ("--target_precision", "int4"),
                                        ("--calibration_method", "minmax")])
def test_unknown_option_values(cli, transformer, calib, tmp_path, flag, value):
    out = tmp_path / "s.json"
    r = cli.run("sensitivity", "--onnx_path", transformer, "--calibration_data_path",
                calib("transformer", n=N_CALIB), "--output_json", out, flag, value)
    assert_clean_failure(r, value)
    assert not out.exists()


def test_failed_scan_keeps_previous_json(cli, transformer, calib, tmp_path):
    """An error must not destroy the scores of an earlier run at the output path."""
    out = tmp_path / "s.json"
    out.write_text("previous result\n")
    r = cli.run("sensitivity", "--onnx_path", transformer, "--calibration_data_path",
                calib("resnet", n=4), "--output_json", out)
    assert_clean_failure(r)
    assert out.read_text() == "previous result\n"


def test_output_json_never_replaces_a_non_regular_file(cli, outlier_mlp, outlier_calib, tmp_path):
    """`--output_json` naming a named pipe (as /dev/stdout or a `>(...)` substitution would): the
    scan must write into the pipe, or refuse with an error, but never rename a regular file over it.
    (Run as root with --output_json /dev/null, replacing the path destroys the system's /dev/null.)
    Run with subprocess rather than cli.run, whose input hashing would block reading the pipe."""
    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    # Opened for reading first, non-blocking, so that ptqkit's open for writing does not block.
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        proc = subprocess.run([cli.binary, "sensitivity", "--onnx_path", str(outlier_mlp),
                               "--calibration_data_path", str(outlier_calib), "--output_json",
                               str(fifo)], capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), (
        f"ptqkit replaced the named pipe {fifo} with a regular file (exit {proc.returncode})")
    if proc.returncode == 0:
        assert json.loads(b"".join(chunks))["scores"], "the pipe did not receive the scores"
    else:
        assert proc.stderr.startswith("ptqkit: error:"), proc.stderr


def test_eval_mask_input_scores_real_positions_only(cli, tmp_path):
    # Two data sets that differ only at padded positions, scanned with the same ranges (one
    # calibration table): with the padding mask (by name, or by default: the input is named
    # attention_mask) the scores are identical, without it ("none") they are not.
    import models

    model, a, b = tmp_path / "tokens.onnx", tmp_path / "a.npz", tmp_path / "b.npz"
    models.make_padded_token_model(model)
    models.padded_token_data(a, pad_seed=5)
    models.padded_token_data(b, pad_seed=6)
    table = tmp_path / "table.json"
    cli.ok("calibrate", "--onnx_path", model, "--calibration_data_path", a, "--for_sensitivity",
           "--granularity", "node", "-o", table)

    def scores(data, *extra):
        out = tmp_path / f"scores{len(list(tmp_path.glob('scores*')))}.json"
        cli.ok("sensitivity", "--onnx_path", model, "--calibration_data_path", data, "--calibration_cache", table,
               "--granularity", "node", "--metric", "mse", "--output_json", out, *extra)
        return json.loads(out.read_text())["scores"]

    masked_a, masked_b = (scores(d, "--eval_mask_input", "attention_mask") for d in (a, b))
    plain_a, plain_b = (scores(d, "--eval_mask_input", "none") for d in (a, b))
    assert masked_a and masked_a == masked_b == scores(b)
    assert plain_a != plain_b
    r = cli.run("sensitivity", "--onnx_path", model, "--calibration_data_path", a, "--output_json",
                tmp_path / "x.json", "--eval_mask_input", "nope")
    assert r.returncode == 1 and "--eval_mask_input: the model has no input 'nope'" in r.stderr
