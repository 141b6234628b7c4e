"""Networks inside control flow (issue 8): exports such as the silero voice-activity detector keep
their whole network in the branches of an If on a scalar sample rate, and recurrent exports run
theirs in a Loop body. ptqkit must quantize inside those subgraphs, calibrate the tensors there,
leave a branch the calibration data never takes in float, and write a model ONNX Runtime runs."""
from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from qdq import ort_int8_kernels_saturate

D = 32


def _weight(rng, name):
    return numpy_helper.from_array((rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32), name)


def make_if_model(path, seed=0):
    """out = If(sr == 16000, relu(relu(x @ A) @ B), relu(relu(x) @ C)): a network per sample rate,
    weights as Constant nodes inside the branches (as the silero export has them)."""
    rng = np.random.default_rng(seed)

    def const(name):
        return helper.make_node("Constant", [], [name], value=_weight(rng, name + "_value"))

    then_g = helper.make_graph(
        [const("A"), helper.make_node("MatMul", ["x", "A"], ["t1"], name="then/mm1"),
         helper.make_node("Relu", ["t1"], ["t2"], name="then/relu"),
         const("B"), helper.make_node("MatMul", ["t2", "B"], ["t3"], name="then/mm2"),
         helper.make_node("Relu", ["t3"], ["t_out"], name="then/relu2")],
        "then", [], [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["e1"], name="else/relu"),
         const("C"), helper.make_node("MatMul", ["e1", "C"], ["e2"], name="else/mm"),
         helper.make_node("Relu", ["e2"], ["e_out"], name="else/relu2")],
        "else", [], [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    g = helper.make_graph(
        [helper.make_node("Constant", [], ["k16"], value=numpy_helper.from_array(np.array(16000, np.int64), "k")),
         helper.make_node("Equal", ["sr", "k16"], ["is16"]),
         helper.make_node("If", ["is16"], ["out"], name="rate", then_branch=then_g, else_branch=else_g)],
        "if_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", D])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))


def make_loop_model(path, seed=1):
    """Three steps of h = tanh(h @ W) in a Loop body; W is an initializer of the main graph."""
    rng = np.random.default_rng(seed)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("MatMul", ["h_in", "W"], ["hw"], name="step/mm"),
         helper.make_node("Tanh", ["hw"], ["h_out"], name="step/tanh")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, None)])
    w = _weight(rng, "W")
    w = numpy_helper.from_array(numpy_helper.to_array(w) * 2.0, "W")
    g = helper.make_graph(
        [helper.make_node("Loop", ["trip", "", "x"], ["h"], name="steps", body=body)],
        "loop_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, ["N", D])],
        initializer=[w, numpy_helper.from_array(np.array(3, np.int64), "trip")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))


def _run(path, feeds, basic):
    so = ort.SessionOptions()
    if basic:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


def _branch(model, attr):
    node = next(n for n in model.graph.node if n.op_type == "If")
    return next(a.g for a in node.attribute if a.name == attr)


def _cos(a, b):
    a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _deployed_at_default_level(cli, src, out, calib):
    """The INT8 file a user runs at onnxruntime's default level: `out`, or where its INT8 kernels
    saturate (x86 without VNNI) the same quantization with 7-bit weights (--reduce_range)."""
    if not ort_int8_kernels_saturate():
        return out
    reduced = out.with_name(out.stem + ".reduce_range.onnx")
    cli.quantize(src, reduced, "--calibration_data_path", calib, "--reduce_range")
    return reduced


def test_if_branches_are_quantized_and_the_untaken_branch_stays_float(cli, tmp_path):
    src, out, calib = tmp_path / "if.onnx", tmp_path / "if.quant.onnx", tmp_path / "calib.npz"
    make_if_model(src)
    rng = np.random.default_rng(3)
    np.savez(calib, x=rng.standard_normal((64, D)).astype(np.float32), sr=np.array(16000, np.int64))
    r = cli.quantize(src, out, "--calibration_data_path", calib)
    assert "never computed during calibration" in r.stderr, r.stderr

    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    then_ops = [n.op_type for n in _branch(m, "then_branch").node]
    else_ops = [n.op_type for n in _branch(m, "else_branch").node]
    assert then_ops.count("QuantizeLinear") >= 2 and then_ops.count("DequantizeLinear") >= 4, then_ops
    assert "QuantizeLinear" not in else_ops and "DequantizeLinear" not in else_ops, else_ops
    assert not any(n.op_type == "QuantizeLinear" for n in m.graph.node)  # nothing leaked to the main graph
    assert len(m.graph.output) == 1  # the calibration outputs were on a copy only

    x = np.random.default_rng(4).standard_normal((16, D)).astype(np.float32)
    deployed = _deployed_at_default_level(cli, src, out, calib)
    for basic in (True, False):
        for rate, exact in ((16000, False), (8000, True)):
            feeds = {"x": x, "sr": np.array(rate, np.int64)}
            ref, got = _run(src, feeds, True), _run(out if basic else deployed, feeds, basic)
            if exact:  # the float branch computes exactly what the FP32 model does
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
            else:
                assert _cos(ref, got).min() > 0.99, (basic, _cos(ref, got).min())
                assert not np.array_equal(ref, got), "quantized branch computed exactly FP32"


def test_node_names_are_unique_across_subgraphs_for_selectors(cli, tmp_path):
    src, out, calib = tmp_path / "if.onnx", tmp_path / "if.quant.onnx", tmp_path / "calib.npz"
    make_if_model(src)
    np.savez(calib, x=np.random.default_rng(5).standard_normal((32, D)).astype(np.float32),
             sr=np.array(16000, np.int64))
    cli.quantize(src, out, "--calibration_data_path", calib, "--nodes_to_exclude", "then/mm2")
    then = _branch(onnx.load(str(out)), "then_branch")
    mm2 = next(n for n in then.node if n.name == "then/mm2")
    mm1 = next(n for n in then.node if n.name == "then/mm1")
    producers = {o: n.op_type for n in then.node for o in n.output}
    assert producers.get(mm1.input[0]) == "DequantizeLinear"
    assert producers.get(mm2.input[0]) == "Relu", "excluded node inside a branch was quantized"


def test_loop_body_is_quantized_with_an_outer_weight(cli, tmp_path):
    src, out, calib = tmp_path / "loop.onnx", tmp_path / "loop.quant.onnx", tmp_path / "calib.npy"
    make_loop_model(src)
    np.save(calib, np.random.default_rng(6).standard_normal((64, D)).astype(np.float32))
    cli.quantize(src, out, "--calibration_data_path", calib)
    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    body = next(a.g for a in m.graph.node[-1].attribute if a.name == "body")
    mm = next(n for n in body.node if n.name == "step/mm")
    producers = {o: n for n in body.node for o in n.output}
    assert producers[mm.input[0]].op_type == "DequantizeLinear"
    assert producers[mm.input[1]].op_type == "DequantizeLinear"  # the main-graph weight, quantized in the body
    assert [o.name for o in m.graph.output] == ["h"]
    x = np.random.default_rng(7).standard_normal((16, D)).astype(np.float32)
    ref = _run(src, {"x": x}, True)
    deployed = _deployed_at_default_level(cli, src, out, calib)
    for basic in (True, False):
        assert _cos(ref, _run(out if basic else deployed, {"x": x}, basic)).min() > 0.99


def test_mixed_precision_compares_the_pure_formats_when_no_node_has_a_probe(cli, tmp_path):
    # The quantized MatMuls are inside If branches, where the node scans have no probes: the run
    # scores pure INT8 and pure FP8 on the held-out samples and writes the better one.
    src, out, calib, rep = tmp_path / "if.onnx", tmp_path / "if.mixed.onnx", tmp_path / "c.npz", tmp_path / "r.json"
    make_if_model(src)
    rng = np.random.default_rng(3)
    np.savez(calib, x=rng.standard_normal((64, D)).astype(np.float32), sr=np.array(16000, np.int64))
    r = cli.quantize(src, out, "--calibration_data_path", calib, "--mixed_precision", "int8,fp8", "--report_json", rep)
    j = json.loads(rep.read_text())
    assert j["node_formats"] == [] and list(j["format_candidates"]) == ["int8", "fp8"], j["format_candidates"]
    assert "no node has a scan probe of its own" in r.stdout
    kept = min(j["format_candidates"], key=lambda k: (j["format_candidates"][k], k != "int8"))
    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    then = _branch(m, "then_branch")
    fp8 = [i for i in then.initializer if i.data_type == TensorProto.FLOAT8E4M3FN]
    q_dtypes = {a.i for n in then.node if n.op_type == "QuantizeLinear" for a in n.attribute if a.name == "output_dtype"}
    assert (kept == "fp8") == bool(fp8 or TensorProto.FLOAT8E4M3FN in q_dtypes), (kept, q_dtypes)
