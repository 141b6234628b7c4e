"""NVFP4 and MXFP8 weights + activations (`--quantize_mode nvfp4|mxfp8 --quantize_activations`).

Checked independently of ptqkit (numpy + ml_dtypes casts, onnx, onnxruntime), on the int4 tests'
MLP (/fc1/Gemm K = 200, a multiple of neither block; /head/MatMul K = 96, a multiple of both):
  - `--target_runtime ort_cpu`: the quantized activation that /head/MatMul reads equals a numpy
    fake-quantization of its input, bit for bit, at ONNX Runtime's basic and default levels: blocks
    of 16 (nvfp4: E4M3(amax / 6 / global) x global, E2M1 values, half to even) or 32 (mxfp8: the
    smallest power of two >= amax / 448, E4M3 values) along K, each from its own block's amax;
  - nvfp4's global scale is the FP32 model's amax on the calibration samples / 2688 (held-out
    samples excluded);
  - /fc1/Gemm's input stays float (K not a multiple of the block);
  - `--target_runtime trt` writes TensorRT's ops (domain "trt", its attributes, the "trt" opset
    import) and its loss report, run on the standard-operator twin, equals the ort_cpu file's;
  - modes and options that do not apply are refused with a message.
"""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from test_int4 import mlp, mlp_calib, mlp_data, softmax_kl  # noqa: F401 (fixtures: the int4 tests' MLP)

BLOCK = {"nvfp4": 16, "mxfp8": 32}
LEVELS = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, "default": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}


def e4m3(x):
    return np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)


def fake_quantize(mode, x, global_scale=None):
    """Independent dynamic block quantization of x [rows, K] along K."""
    bs = BLOCK[mode]
    blocks = x.reshape(-1, bs).astype(np.float32)
    amax = np.abs(blocks).max(1, keepdims=True)
    if mode == "nvfp4":
        g = np.float32(global_scale)
        scale = (e4m3(amax / np.float32(6 * g)) * g).astype(np.float32)
        safe = np.where(scale == 0, np.float32(1), scale)
        q = np.clip(blocks / safe, -6, 6).astype(ml_dtypes.float4_e2m1fn).astype(np.float32)
    else:
        r = np.maximum(amax / np.float32(448), np.float32(2.0 ** -126))
        scale = np.exp2(np.ceil(np.log2(r))).astype(np.float32)
        q = e4m3(blocks / scale)
    return (q * scale).astype(np.float32).reshape(x.shape)


def run_with_outputs(path, x, names, level):
    """ONNX Runtime at `level` on `path` with the tensors `names` made graph outputs."""
    m = onnx.load(path)
    for n in names:
        m.graph.output.append(helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = LEVELS[level]
    s = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, {s.get_inputs()[0].name: x})))


def node(m, name):
    return next(n for n in m.graph.node if n.name == name)


def quantize(cli, mode, mlp, mlp_calib, out, *flags):
    return cli.quantize(mlp, out, "--quantize_mode", mode, "--quantize_activations", "--calibration_data_path",
                        mlp_calib, *flags)


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_activations_match_numpy_bit_for_bit_at_both_levels(mode, cli, mlp, mlp_calib, tmp_path):
    trt, ort_file, report = tmp_path / "trt.onnx", tmp_path / "ort.onnx", tmp_path / "r.json"
    quantize(cli, mode, mlp, mlp_calib, trt, "--report_json", report)
    quantize(cli, mode, mlp, mlp_calib, ort_file, "--target_runtime", "ort_cpu")
    m = onnx.load(ort_file)
    original = onnx.load(mlp)
    head_input = node(original, "/head/MatMul").input[0]
    quantized_input = node(m, "/head/MatMul").input[0]
    assert quantized_input != head_input
    assert node(m, "/fc1/Gemm").input[0] == node(original, "/fc1/Gemm").input[0], "K = 200: stays float"
    assert not any(n.domain == "trt" for n in m.graph.node) and {o.domain for o in m.opset_import} <= {"", "ai.onnx"}

    global_scale = None
    if mode == "nvfp4":  # the trt file names it: input 1 of TensorRT's quantizer
        t = onnx.load(trt)
        q = next(n for n in t.graph.node if n.op_type == "TRT_FP4DynamicQuantize")
        global_scale = onnx.numpy_helper.to_array(next(i for i in t.graph.initializer if i.name == q.input[1]))
        held_out = set(json.loads(report.read_text())["loss"]["sample_indices"])
        calib = np.load(mlp_calib)
        kept = [i for i in range(len(calib)) if i not in held_out]
        # Calibration observes the FP32 model.
        acts = run_with_outputs(mlp, calib[kept], [head_input], "basic")[head_input]
        assert global_scale == np.float32(np.float32(np.abs(acts).max()) / np.float32(6 * 448))

    x = mlp_data(64, 7)[0]
    for level in LEVELS:
        got = run_with_outputs(ort_file, x, [head_input, quantized_input], level)
        want = fake_quantize(mode, got[head_input], global_scale)
        assert np.array_equal(got[quantized_input], want), (mode, level, np.abs(got[quantized_input] - want).max())
        assert not np.array_equal(want, got[head_input])  # something was rounded


@pytest.mark.parametrize("mode,quantizer,dequantizer", [
    ("nvfp4", "TRT_FP4DynamicQuantize", "DequantizeLinear"),
    ("mxfp8", "TRT_MXFP8DynamicQuantize", "TRT_MXFP8DequantizeLinear"),
])
def test_trt_form_holds_tensorrt_ops_and_reports_the_loss_of_its_twin(mode, quantizer, dequantizer, cli, mlp,
                                                                      mlp_calib, tmp_path):
    trt, ort_file = tmp_path / "trt.onnx", tmp_path / "ort.onnx"
    reports = {name: tmp_path / f"{name}.json" for name in ("trt", "ort")}
    quantize(cli, mode, mlp, mlp_calib, trt, "--report_json", reports["trt"])
    quantize(cli, mode, mlp, mlp_calib, ort_file, "--target_runtime", "ort_cpu", "--report_json", reports["ort"])
    m = onnx.load(trt)
    onnx.checker.check_model(m, full_check=False)
    assert {o.domain: o.version for o in m.opset_import}.get("trt") == 1
    (q,) = [n for n in m.graph.node if n.op_type == quantizer]
    attrs = {a.name: helper.get_attribute_value(a) for a in q.attribute}
    expected = {"axis": -1, "block_size": BLOCK[mode],
                ("scale_type" if mode == "nvfp4" else "output_dtype"): onnx.TensorProto.FLOAT8E4M3FN}
    assert q.domain == "trt" and attrs == expected and len(q.output) == 2, (q, attrs)
    (dq,) = [n for n in m.graph.node if n.op_type == dequantizer and n.input[0] == q.output[0]]
    dq_attrs = {a.name: helper.get_attribute_value(a) for a in dq.attribute}
    assert dq_attrs["axis"] == -1 and dq_attrs["block_size"] == BLOCK[mode]
    assert node(m, "/head/MatMul").input[0] == dq.output[0]
    if mode == "nvfp4":  # the block scales: DequantizeLinear(E4M3 codes, global)
        scale_dq = next(n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == q.output[1])
        assert dq.input[1] == scale_dq.output[0] and scale_dq.input[1] == q.input[1]
    losses = {name: json.loads(p.read_text()) for name, p in reports.items()}
    assert losses["trt"]["dynamic_block_activations"] == losses["ort"]["dynamic_block_activations"] == 1
    trt_out, ort_out = (losses[name]["loss"]["outputs"][0] for name in ("trt", "ort"))
    assert trt_out["cosine_mean"] == ort_out["cosine_mean"] and trt_out["max_abs_diff"] == ort_out["max_abs_diff"]
    assert trt_out["cosine_mean"] < 1.0  # the activations were quantized in both


@pytest.mark.parametrize("flags,message", [
    (("--quantize_mode", "int4"), "--quantize_activations applies to --quantize_mode nvfp4 and mxfp8"),
    (("--quantize_mode", "nvfp4", "--high_precision_dtype", "fp16"), "not supported with it yet"),
])
def test_modes_that_cannot_take_it_are_refused(flags, message, cli, mlp, tmp_path):
    out = tmp_path / "x.onnx"
    r = cli.run("quantize", "--onnx_path", mlp, "--output_path", out, "--quantize_activations", *flags)
    assert r.returncode != 0 and message in r.error_line(), r.stderr
    assert not out.exists()


def test_mxfp4_activations_are_refused_naming_the_formats_that_take_them(cli, mlp, tmp_path):
    out = tmp_path / "x.onnx"
    r = cli.run("quantize", "--onnx_path", mlp, "--output_path", out, "--quantize_mode", "mxfp4",
                "--quantize_activations")
    assert r.returncode != 0 and "applies to --quantize_mode nvfp4 and mxfp8" in r.error_line(), r.stderr
    assert "mxfp4 is weight-only" in r.error_line() and not out.exists()


def shared_input_model(path):
    """x [batch, 5, 64] read by two MatMuls (as Q and K projections share a layer's input)."""
    rng = np.random.default_rng(5)
    wq = onnx.numpy_helper.from_array((rng.standard_normal((64, 32)) / 8).astype(np.float32), "wq")
    wk = onnx.numpy_helper.from_array((rng.standard_normal((64, 32)) / 8).astype(np.float32), "wk")
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
             helper.make_node("MatMul", ["x", "wk"], ["k"], name="k_proj"),
             helper.make_node("Add", ["q", "k"], ["y"], name="add")]
    g = helper.make_graph(nodes, "shared", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, 5, 64])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, 5, 64 // 2])], [wq, wk])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_an_activation_read_by_two_matmuls_gets_one_chain(mode, cli, tmp_path):
    src, calib = tmp_path / "shared.onnx", tmp_path / "calib.npy"
    shared_input_model(src)
    rng = np.random.default_rng(6)
    np.save(calib, (rng.standard_normal((24, 5, 64)) * np.linspace(0.1, 4, 64)).astype(np.float32))
    trt, ort_file = tmp_path / "trt.onnx", tmp_path / "ort.onnx"
    reports = {name: tmp_path / f"{name}.json" for name in ("trt", "ort")}
    quantize(cli, mode, src, calib, trt, "--report_json", reports["trt"])
    quantize(cli, mode, src, calib, ort_file, "--target_runtime", "ort_cpu", "--report_json", reports["ort"])
    m = onnx.load(trt)
    chains = [n for n in m.graph.node if n.domain == "trt" and n.op_type.endswith("DynamicQuantize")]
    assert len(chains) == 1 and chains[0].input[0] == "x"
    o = onnx.load(ort_file)
    reads = {node(o, name).input[0] for name in ("q_proj", "k_proj")}
    assert len(reads) == 1 and reads != {"x"}
    losses = [json.loads(reports[name].read_text())["loss"]["outputs"][0] for name in ("trt", "ort")]
    assert losses[0]["cosine_mean"] == losses[1]["cosine_mean"] < 1.0
    global_scale = None
    if mode == "nvfp4":
        global_scale = onnx.numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == chains[0].input[1]))
    x = (rng.standard_normal((3, 5, 64)) * np.linspace(0.1, 4, 64)).astype(np.float32)
    (quantized,) = reads
    for level in LEVELS:
        got = run_with_outputs(ort_file, x, [quantized], level)[quantized]
        want = fake_quantize(mode, x.reshape(-1, 64), global_scale).reshape(x.shape)
        assert np.array_equal(got, want), (mode, level)
