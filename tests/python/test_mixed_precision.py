"""Mixed precision end to end: INT4 weight-only with some weights in INT8 (`--mixed_precision int4,int8`,
`--int8_nodes`), and INT8 / FP8 activations and weights chosen per node (`--mixed_precision int8,fp8`).

Checked independently of ptqkit (numpy, onnx, onnxruntime):
  - --int8_nodes: the selected MatMuls' weights are INT8 with one scale per output channel (a
    per-axis DequantizeLinear; values equal numpy's round-half-even of w / (amax / 127)), and every
    other weight's initializers are byte-identical to the pure INT4 run's;
  - --accuracy_budget: the pure INT4 model misses the budget, the written model meets it (the
    divergence recomputed here on the held-out samples the report names), with fewer INT8 weights
    than MatMuls, and the report lists each node's format;
  - int8,fp8: each node's weight and input are stored in the format the report gives it, which is
    the one with the lower of its two scan scores; the file passes the ONNX checker and runs in ONNX
    Runtime at the basic and default levels, with a budget on top keeping the ranking's first nodes;
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


def stored_format(g, dq):
    """'int8' or 'fp8': what the QuantizeLinear feeding `dq` stores (output_dtype, else its zero point's type)."""
    q = g.producer[dq.input[0]]
    assert q.op_type == "QuantizeLinear", q
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in q.attribute}
    dtype = attrs.get("output_dtype") or g.consts[q.input[2]].data_type
    return {TensorProto.INT8: "int8", TensorProto.FLOAT8E4M3FN: "fp8"}[dtype]


def run_at(path, x, level):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = level
    s = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def test_int8_fp8_puts_each_node_in_the_format_its_scan_scores_lower(cli, transformer, calib, tmp_path):
    data = calib("transformer")
    out, rep, page = tmp_path / "mixed.onnx", tmp_path / "mixed.json", tmp_path / "mixed.html"
    r = cli.quantize(transformer, out, "--calibration_data_path", data, "--mixed_precision", "int8,fp8",
                     "--report_json", rep, "--report_html", page)
    m = onnx.load(out)
    onnx.checker.check_model(m, full_check=True)
    assert max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) >= 19  # FP8 Q/DQ
    j = json.loads(rep.read_text())
    nodes = j["node_formats"]
    # The per-node mix, pure INT8 and pure FP8 were scored on the held-out samples; the lowest was written.
    candidates = j["format_candidates"]
    assert list(candidates) == ["int8", "fp8", "int8,fp8 per node"], candidates
    kept = min(candidates, key=lambda k: (candidates[k], list(candidates).index(k)))
    g = qdq.Graph(m)
    weighted = [n.name for n in g.nodes if n.op_type == "MatMul" and g.dq_on_input(n, 1) is not None]
    assert sorted(f["node"] for f in nodes) == sorted(weighted) and len(weighted) >= 12, (nodes, weighted)
    assert "activation formats (--mixed_precision)" in r.stdout
    html = page.read_text()
    assert "<h2>Activation formats</h2>" in html and all(f"<td>{f['node']}</td>" in html for f in nodes)
    chosen = {}
    for f in nodes:
        per_node = "fp8" if f["fp8_score"] < f["int8_score"] else "int8"
        assert f["format"] == (per_node if kept == "int8,fp8 per node" else kept), (f, kept)
        n = g.by_name[f["node"]]
        # The weight in the node's format; its input in it too, or FP8 where a node in FP8 shares it.
        assert stored_format(g, g.dq_on_input(n, 1)) == f["format"], f
        chosen[f["node"]] = f["format"]
    for f in nodes:
        readers = [c.name for c in g.consumers[g.by_name[f["node"]].input[0]]]
        activation = stored_format(g, g.dq_on_input(g.by_name[f["node"]], 0))
        assert activation == f["format"] or activation == "fp8", (f, readers)
    # Most sensitive first (the budget's order), by the score of the format each node is written in.
    scores = [f["int8_score"] if f["format"] == "int8" else f["fp8_score"] for f in nodes]
    assert scores == sorted(scores, reverse=True)
    x = np.load(data)[:64]
    ref = qdq.run(str(transformer), x)
    for level in (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        got = run_at(out, x, level)
        assert np.isfinite(got).all() and cos_divergence(ref, got) < 0.02, level


def test_int8_fp8_gives_the_outlier_input_fp8_and_beats_both_pure_formats(cli, outlier_mlp, outlier_calib,
                                                                          outlier_eval, tmp_path):
    # fc1 reads an input with one feature ~2000x the others: INT8's uniform grid rounds the rest to
    # 0, FP8's keeps them; every other Gemm reads a standardised activation, where INT8 is finer.
    x, _ = outlier_eval
    ref = qdq.run(str(outlier_mlp), x)
    divergence = {}
    for name, flags in (("int8", ()), ("fp8", ("--quantize_mode", "fp8")), ("mixed", ("--mixed_precision", "int8,fp8"))):
        out, rep = tmp_path / f"{name}.onnx", tmp_path / f"{name}.json"
        cli.quantize(outlier_mlp, out, "--calibration_data_path", outlier_calib, "--report_json", rep, *flags)
        divergence[name] = cos_divergence(ref, run_basic(out, x))
        if name == "mixed":
            formats = {f["node"]: f["format"] for f in json.loads(rep.read_text())["node_formats"]}
    assert formats["/fc1/Gemm"] == "fp8" and "int8" in formats.values(), formats  # the mix was kept
    assert divergence["mixed"] < min(divergence["int8"], divergence["fp8"]), divergence


def test_int8_fp8_budget_keeps_the_ranking_first_nodes_in_float(cli, transformer, calib, tmp_path):
    data = calib("transformer")
    out, rep = tmp_path / "mixed.onnx", tmp_path / "mixed.json"
    cli.quantize(transformer, out, "--calibration_data_path", data, "--mixed_precision", "int8,fp8",
                 "--accuracy_budget", "0", "--accuracy_budget_metric", "cos", "--report_json", rep)
    j = json.loads(rep.read_text())
    b = j["accuracy_budget"]
    ranking = [f["node"] for f in j["node_formats"]]
    # A budget of 0 needs every ranked node in float: the search walks the format choice's ranking.
    assert b["used"] and b["ranked_nodes"] == len(ranking) >= 12, b
    assert b["excluded_nodes"] == ranking[:len(b["excluded_nodes"])], (b["excluded_nodes"], ranking)
    onnx.checker.check_model(onnx.load(out), full_check=True)


@pytest.mark.parametrize("flags,message", [
    (("--quantize_mode", "fp8", "--mixed_precision", "int4,int8"), "does not apply to --quantize_mode fp8"),
    (("--quantize_mode", "nvfp4", "--int8_nodes", "/head/MatMul"), "--int8_nodes applies to --quantize_mode int4"),
    (("--quantize_mode", "int4", "--mixed_precision", "int8,fp8"), "expected int4,int8"),
    (("--mixed_precision", "int8,fp8", "--target_runtime", "ort_cpu"), "needs --target_runtime trt"),
    (("--mixed_precision", "int8,fp8", "--weight_rounding", "gptq"), "does not combine with --mixed_precision"),
    (("--quantize_mode", "int4", "--accuracy_budget", "0.1"), "or to int4 with --mixed_precision int4,int8"),
    (("--quantize_mode", "int4", "--mixed_precision", "int4,int8", "--accuracy_budget", "0.1",
      "--calibration_method", "rtn"), "--accuracy_budget needs calibration data"),
])
def test_mixed_precision_options_that_do_not_apply_are_refused(flags, message, cli, transformer, tmp_path):
    out = tmp_path / "x.onnx"
    r = cli.run("quantize", "--onnx_path", transformer, "--output_path", out, *flags)
    assert r.returncode != 0 and message in r.error_line(), r.stderr
    assert not out.exists()
