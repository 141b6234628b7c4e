"""INT4 weight-only with some weights in INT8 (`--mixed_precision int4,int8`, `--int8_nodes`), end to end.

Checked independently of ptqkit (numpy, onnx, onnxruntime):
  - --int8_nodes: the selected MatMuls' weights are INT8 with one scale per output channel (a
    per-axis DequantizeLinear; values equal numpy's round-half-even of w / (amax / 127)), and every
    other weight's initializers are byte-identical to the pure INT4 run's;
  - --accuracy_budget: the pure INT4 model misses the budget, the written model meets it (the
    divergence recomputed here on the held-out samples the report names), with fewer INT8 weights
    than MatMuls, and the report lists each node's format;
  - options that do not apply fail with a clear message.
"""
from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import qdq


def run_basic(path, x):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    s = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def cos_divergence(a, b):
    a, b = a.reshape(len(a), -1).astype(np.float64), b.reshape(len(b), -1).astype(np.float64)
    return float(np.mean(1 - (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))))


def weight_inits(path):
    """{MatMul node: [its weight DQ's initializers, serialized]}."""
    m = onnx.load(path)
    g = qdq.Graph(m)
    out = {}
    for n in g.nodes:
        dq = g.dq_on_input(n, 1) if n.op_type == "MatMul" else None
        if dq is not None:
            out[n.name] = [g.consts[i].SerializeToString() for i in dq.input if i in g.consts]
    return out


def test_int8_nodes_store_per_channel_int8_and_leave_the_rest(cli, transformer, calib, tmp_path):
    data = calib("transformer")
    pure, mixed = tmp_path / "pure.onnx", tmp_path / "mixed.onnx"
    cli.quantize(transformer, pure, "--quantize_mode", "int4", "--calibration_data_path", data)
    r = cli.quantize(transformer, mixed, "--quantize_mode", "int4", "--calibration_data_path", data,
                     "--int8_nodes", r"/blocks\.0/mlp/", "--int8_nodes", "/head/MatMul")
    assert "weights stored as INT8 (--mixed_precision int4,int8): 3 of 13 node(s)" in r.stdout, r.stdout
    onnx.checker.check_model(onnx.load(mixed), full_check=True)
    src, g = qdq.Graph(onnx.load(transformer)), qdq.Graph(onnx.load(mixed))
    int8 = {"/blocks.0/mlp/fc1/MatMul", "/blocks.0/mlp/fc2/MatMul", "/head/MatMul"}
    before, after = weight_inits(pure), weight_inits(mixed)
    assert set(before) == set(after) and len(after) == 13
    for node, inits in after.items():
        if node not in int8:
            assert inits == before[node], f"{node}: INT4 weight changed"
            continue
        dq = g.dq_on_input(g.by_name[node], 1)
        q, scale = g.const(dq.input[0]), g.const(dq.input[1])
        attrs = {a.name: helper.get_attribute_value(a) for a in dq.attribute}
        assert q.dtype == np.int8 and scale.ndim == 1 and attrs == {"axis": 1}, (node, attrs)
        w = src.const(src.by_name[node].input[1])  # [K, N]
        want_scale = (np.abs(w).max(0) / np.float32(127)).astype(np.float32)
        np.testing.assert_array_equal(scale, want_scale, err_msg=node)
        np.testing.assert_array_equal(q, np.clip(np.rint(w / want_scale), -128, 127).astype(np.int8), err_msg=node)


def test_accuracy_budget_picks_int8_weights_until_the_budget_is_met(cli, transformer, calib, tmp_path):
    data = calib("transformer")
    pure, mixed = tmp_path / "pure.onnx", tmp_path / "mixed.onnx"
    pure_json, mixed_json = tmp_path / "pure.json", tmp_path / "mixed.json"
    cli.quantize(transformer, pure, "--quantize_mode", "int4", "--calibration_data_path", data,
                 "--block_size", "32", "--report_json", pure_json)
    loss = json.loads(pure_json.read_text())["loss"]
    x = np.load(data)[loss["sample_indices"]]
    ref = qdq.run(str(transformer), x)
    d_pure = cos_divergence(ref, run_basic(pure, x))
    budget = d_pure / 4
    r = cli.quantize(transformer, mixed, "--quantize_mode", "int4", "--calibration_data_path", data,
                     "--block_size", "32", "--mixed_precision", "int4,int8", "--accuracy_budget", f"{budget:.8g}",
                     "--accuracy_budget_metric", "cos", "--report_json", mixed_json)
    j = json.loads(mixed_json.read_text())
    b = j["accuracy_budget"]
    assert b["used"] and b["met"] and b["kept_as"] == "int8 weights", b
    # The search starts from the pure INT4 model: the same divergence as recomputed here.
    assert b["ranked_nodes"] == 13 and abs(b["curve"][0]["divergence"] - d_pure) < 1e-5, (b, d_pure)
    int8 = sorted(n for n, p in j["weight_precision"].items() if p == "int8")
    assert int8 == sorted(b["excluded_nodes"]) and 1 <= len(int8) < 13, (int8, b)
    assert set(j["weight_precision"].values()) == {"int4", "int8"}
    assert "accuracy budget: cos <= " in r.stdout and "kept in int8 weights:" in r.stdout
    d_mixed = cos_divergence(ref, run_basic(mixed, x))  # the same samples the search judged on
    assert d_mixed <= budget + 1e-6 < d_pure, (d_mixed, budget, d_pure)
    assert json.loads(mixed_json.read_text())["loss"]["warning"] == ""  # the budget said what is acceptable


@pytest.mark.parametrize("flags,message", [
    (("--quantize_mode", "fp8", "--mixed_precision", "int4,int8"), "apply to --quantize_mode int4"),
    (("--quantize_mode", "nvfp4", "--int8_nodes", "/head/MatMul"), "apply to --quantize_mode int4"),
    (("--quantize_mode", "int4", "--accuracy_budget", "0.1"), "or to int4 with --mixed_precision int4,int8"),
    (("--quantize_mode", "int4", "--mixed_precision", "int4,int8", "--accuracy_budget", "0.1",
      "--calibration_method", "rtn"), "--accuracy_budget needs calibration data"),
])
def test_mixed_precision_options_that_do_not_apply_are_refused(flags, message, cli, transformer, tmp_path):
    out = tmp_path / "x.onnx"
    r = cli.run("quantize", "--onnx_path", transformer, "--output_path", out, *flags)
    assert r.returncode != 0 and message in r.error_line(), r.stderr
    assert not out.exists()
