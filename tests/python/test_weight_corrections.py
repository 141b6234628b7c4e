"""Bias correction and activation smoothing (issue 9): the two weight edits of the int8/fp8 default.

Bias correction subtracts from each quantized Conv's bias the mean shift its rounded weights cause;
smoothing divides outlier input channels of a MatMul fed by a Mul-by-constant and multiplies the
weight rows. Both must leave the float function alone where they do not apply, be switchable off
(--bias_correction false, --smoothquant_alpha 0), and bring the quantized outputs closer to FP32.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def _run(path, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def _inits(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


def _save(nodes, inits, x_shape, y_shape, path):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.fixture(scope="module")
def mobile_block(tmp_path_factory):
    """Conv 3x3 -> Relu -> depthwise 3x3 (channel gains up to ~20, as BN folding leaves them) -> Relu ->
    pointwise 1x1 -> GAP -> Gemm: the depthwise-separable pattern whose rounding shifts output means."""
    d = tmp_path_factory.mktemp("mobile_block")
    rng = np.random.default_rng(21)
    gains = np.exp(rng.uniform(-1.5, 3.0, 32)).astype(np.float32)
    inits = [numpy_helper.from_array(rng.normal(0, 0.15, (32, 16, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.normal(0.1, 0.2, 32).astype(np.float32), "b1"),
             numpy_helper.from_array((rng.normal(0.05, 0.2, (32, 1, 3, 3)) * gains[:, None, None, None]).astype(np.float32), "wd"),
             numpy_helper.from_array(rng.normal(0, 0.5, 32).astype(np.float32), "bd"),
             numpy_helper.from_array(rng.normal(0, 0.1, (32, 32, 1, 1)).astype(np.float32), "wp"),
             numpy_helper.from_array(rng.normal(0, 0.1, 32).astype(np.float32), "bp"),
             numpy_helper.from_array(rng.normal(0, 0.3, (10, 32)).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "wd", "bd"], ["c2"], name="dw", pads=[1] * 4, group=32),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "wp", "bp"], ["c3"], name="pw"),
             helper.make_node("GlobalAveragePool", ["c3"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc_gemm", transB=1)]
    _save(nodes, inits, ["N", 16, 10, 10], ["N", 10], d / "m.onnx")
    np.save(d / "calib.npy", rng.normal(0.3, 1, (48, 16, 10, 10)).astype(np.float32))
    return d / "m.onnx", d / "calib.npy", rng.normal(0.3, 1, (256, 16, 10, 10)).astype(np.float32)


def test_bias_correction_edits_quantized_conv_biases_and_brings_outputs_closer(cli, mobile_block, tmp_path):
    model, calib, x = mobile_block
    on, off = tmp_path / "on.onnx", tmp_path / "off.onnx"
    summary = {}
    for out, flag in ((on, "true"), (off, "false")):
        summary[flag] = cli.quantize(model, out, "--calibration_data_path", calib, "--calibration_method", "max",
                                     "--bias_correction", flag, "--eval_samples", "0",
                                     "--depthwise_equalization", "false").stdout  # it would rename wd
    assert "weights edited: 3 Conv bias(es) corrected, 0 MatMul input(s) smoothed" in summary["true"]
    assert "weights edited" not in summary["false"]
    original, corrected, kept = _inits(model), _inits(on), _inits(off)
    for b in ("b1", "bd", "bp"):
        np.testing.assert_array_equal(kept[b], original[b])
    moved = [b for b in ("b1", "bd", "bp") if not np.array_equal(corrected[b], original[b])]
    assert moved == ["b1", "bd", "bp"], moved  # each bias is read by one quantized Conv: edited in place
    ref = _run(model, x)
    err_on = np.abs(_run(on, x) - ref).mean()
    err_off = np.abs(_run(off, x) - ref).mean()
    assert err_on < 0.9 * err_off, (err_on, err_off)  # measured: 0.0134 vs 0.0161


def test_bias_correction_adds_a_bias_to_a_conv_without_one(cli, tmp_path):
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.normal(0, 0.2, (16, 16, 3, 3)).astype(np.float32), "w")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1] * 4),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    _save(nodes, inits, ["N", 16, 6, 6], ["N", 16, 6, 6], tmp_path / "m.onnx")
    np.save(tmp_path / "calib.npy", rng.normal(1.0, 1, (16, 16, 6, 6)).astype(np.float32))
    cli.quantize(tmp_path / "m.onnx", tmp_path / "q.onnx", "--calibration_data_path", tmp_path / "calib.npy")
    q = onnx.load(str(tmp_path / "q.onnx"))
    conv = next(n for n in q.graph.node if n.op_type == "Conv")
    assert len(conv.input) == 3 and conv.input[2] in {t.name for t in q.graph.initializer}


def _outlier_first_weight(rng, outliers):
    """A [32, 64] weight whose output channels `outliers` are ~30x the others."""
    gain = np.ones(64, np.float32)
    gain[outliers] = 30.0
    return (rng.normal(0, 0.1, (32, 64)) * gain).astype(np.float32)


def _saved_with_data(d, rng, nodes, inits, out_dim):
    """The model over input x [N, 32], 64 calibration rows and 512 held-out rows."""
    _save(nodes, inits, ["N", 32], ["N", out_dim], d / "m.onnx")
    np.save(d / "calib.npy", rng.normal(0, 1, (64, 32)).astype(np.float32))
    return d / "m.onnx", d / "calib.npy", rng.normal(0, 1, (512, 32)).astype(np.float32)


@pytest.fixture(scope="module")
def gelu_mlp(tmp_path_factory):
    """x -> MatMul -> Add(bias) -> Mul(0.5) -> MatMul -> y, the Mul's input having a few channels ~30x the
    others (what GELU outputs of transformers look like)."""
    rng = np.random.default_rng(8)
    w0 = _outlier_first_weight(rng, [3, 17, 40])
    inits = [numpy_helper.from_array(w0, "w0"), numpy_helper.from_array(rng.normal(0, 0.1, 64).astype(np.float32), "b0"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(rng.normal(0, 0.1, (64, 32)).astype(np.float32), "w1")]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"], name="mm0"),
             helper.make_node("Add", ["h", "b0"], ["hb"], name="add0"),
             helper.make_node("Mul", ["hb", "half"], ["g"], name="mul"),
             helper.make_node("MatMul", ["g", "w1"], ["z"], name="mm1"),
             helper.make_node("Relu", ["z"], ["y"], name="relu")]
    return _saved_with_data(tmp_path_factory.mktemp("gelu_mlp"), rng, nodes, inits, 32)


def _smoothed_and_not(cli, model, calib, tmp_path):
    """The model quantized with smoothing (alpha 0.8) and without it."""
    on, off = tmp_path / "on.onnx", tmp_path / "off.onnx"
    for out, alpha in ((on, "0.8"), (off, "0")):
        cli.quantize(model, out, "--calibration_data_path", calib, "--calibration_method", "max",
                     "--smoothquant_alpha", alpha, "--eval_samples", "0")
    return on, off


def _assert_smoothing_brings_outputs_closer(model, on, off, x):
    ref = _run(model, x)
    err_on = np.abs(_run(on, x) - ref).mean()
    err_off = np.abs(_run(off, x) - ref).mean()
    assert err_on < 0.7 * err_off, (err_on, err_off)


def test_smoothing_folds_into_the_mul_constant_and_brings_outputs_closer(cli, gelu_mlp, tmp_path):
    model, calib, x = gelu_mlp
    on, off = _smoothed_and_not(cli, model, calib, tmp_path)
    q = onnx.load(str(on))
    mul = next(n for n in q.graph.node if n.op_type == "Mul")
    consts = _inits(on)
    assert mul.input[1] != "half" and consts[mul.input[1]].shape == (64,)
    s = 0.5 / consts[mul.input[1]]
    assert s[[3, 17, 40]].min() > 3 * np.median(s)  # the outlier channels are divided the most
    np.testing.assert_allclose(consts["w1"], _inits(model)["w1"] * s[:, None], rtol=1e-5)
    assert {n.input[1] for n in onnx.load(str(off)).graph.node if n.op_type == "Mul"} == {"half"}
    _assert_smoothing_brings_outputs_closer(model, on, off, x)


@pytest.fixture(scope="module")
def residual_mlp(tmp_path_factory):
    """x -> MatMul -> h (a few channels ~30x the others) -> MatMul -> z; Add(z, h) -> Relu -> y: h also
    feeds the residual Add, as a post-LN transformer's LayerNorm output does."""
    rng = np.random.default_rng(9)
    inits = [numpy_helper.from_array(_outlier_first_weight(rng, [5, 33]), "w0"),
             numpy_helper.from_array(rng.normal(0, 0.1, (64, 64)).astype(np.float32), "w1")]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"], name="mm0"),
             helper.make_node("MatMul", ["h", "w1"], ["z"], name="mm1"),
             helper.make_node("Add", ["z", "h"], ["r"], name="residual"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    return _saved_with_data(tmp_path_factory.mktemp("residual_mlp"), rng, nodes, inits, 64)


def test_smoothing_inserts_a_mul_where_the_input_has_other_readers(cli, residual_mlp, tmp_path):
    model, calib, x = residual_mlp
    on, off = _smoothed_and_not(cli, model, calib, tmp_path)
    g = onnx.load(str(on)).graph
    muls = [n for n in g.node if n.op_type == "Mul"]
    assert len(muls) == 1 and muls[0].input[0] == "h"
    residual = next(n for n in g.node if n.name == "residual")
    assert "h" in residual.input  # the residual Add keeps the unscaled tensor
    inverse = _inits(on)[muls[0].input[1]]
    assert inverse.shape == (64,) and inverse[[5, 33]].max() < 0.5 * np.median(inverse)
    assert not [n for n in onnx.load(str(off)).graph.node if n.op_type == "Mul"]
    _assert_smoothing_brings_outputs_closer(model, on, off, x)


def test_smoothquant_alpha_out_of_range_is_refused(cli, gelu_mlp, tmp_path):
    model, calib, _ = gelu_mlp
    r = cli.run("quantize", "--onnx_path", model, "--output_path", tmp_path / "q.onnx",
                "--calibration_data_path", calib, "--smoothquant_alpha", "1.5")
    assert r.returncode != 0 and "--smoothquant_alpha must be in [0, 1] (0 = off), got 1.5" in r.error_line()



def _weight_only(path, dst):
    """The quantized model with its activation Q/DQ pairs removed: what the weights alone cost."""
    m = onnx.load(str(path))
    consts = {t.name for t in m.graph.initializer}
    produced_by_q = {n.output[0]: n.input[0] for n in m.graph.node
                     if n.op_type == "QuantizeLinear" and n.input[0] not in consts}
    dq_out = {n.output[0]: produced_by_q[n.input[0]] for n in m.graph.node
              if n.op_type == "DequantizeLinear" and n.input[0] in produced_by_q}
    keep = [n for n in m.graph.node if not (n.output[0] in produced_by_q or n.output[0] in dq_out)]
    for n in keep:
        for i, name in enumerate(n.input):
            n.input[i] = dq_out.get(name, name)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    onnx.save(m, str(dst))
    return dst


def _weight_codes(path):
    """weight name -> (per-channel scale, int8 codes) of each weight's QuantizeLinear (weights stay float)."""
    m = onnx.load(str(path))
    inits = _inits(path)
    out = {}
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear" and n.input[0] in inits:
            w, s = inits[n.input[0]], inits[n.input[1]]
            codes = np.clip(np.rint(w / s.reshape((-1,) + (1,) * (w.ndim - 1))), -128, 127).astype(np.int8)
            out[n.input[0]] = (s, codes)
    return out


def test_gptq_weight_rounding_keeps_the_scales_and_lowers_the_weights_error(cli, mobile_block, tmp_path):
    """--weight_rounding gptq: same per-channel scales, other codes, standard Q/DQ that ONNX Runtime
    runs; with the activations left in float the output is closer to FP32 than round-to-nearest's."""
    model, _, _ = mobile_block
    # Channels driven by 3 shared factors (as images' colour planes and features are): correlated
    # inputs are where rounding against the Gram matrix beats rounding each weight alone.
    rng = np.random.default_rng(4)
    mix = rng.normal(0, 1, (16, 3)).astype(np.float32)

    def correlated(n):
        z = rng.normal(0, 1, (n, 3, 10, 10)).astype(np.float32)
        return np.einsum("cf,nfhw->nchw", mix, z) + 0.1 * rng.normal(0, 1, (n, 16, 10, 10)).astype(np.float32)

    calib, x = tmp_path / "calib.npy", correlated(256)
    np.save(calib, correlated(64))
    nearest, gptq = tmp_path / "nearest.onnx", tmp_path / "gptq.onnx"
    summary = {}
    for out, how in ((nearest, "nearest"), (gptq, "gptq")):
        summary[how] = cli.quantize(model, out, "--calibration_data_path", calib, "--calibration_method", "max",
                                    "--weight_rounding", how, "--eval_samples", "0",
                                    "--depthwise_equalization", "false").stdout  # it would rename wd
    assert "weight rounding (gptq): 3 of 3 weight(s) rounded" in summary["gptq"], summary["gptq"]
    assert "weight rounding" not in summary["nearest"]
    near, rounded = _weight_codes(nearest), _weight_codes(gptq)
    assert sorted(near) == sorted(rounded) == ["w1", "wd", "wp"]
    for name in near:
        np.testing.assert_array_equal(rounded[name][0], near[name][0], err_msg=name)
    changed = {name: float((near[name][1] != rounded[name][1]).mean()) for name in near}
    assert changed["w1"] > 0.05, changed
    ref = _run(model, x)
    err = {how: np.abs(_run(_weight_only(path, tmp_path / f"{how}_w.onnx"), x) - ref).mean()
           for how, path in (("nearest", nearest), ("gptq", gptq))}
    assert err["gptq"] < 0.8 * err["nearest"], err  # measured: 0.0043 vs 0.0068
    # The full model (activations quantized too) loads and runs at ONNX Runtime's default level.
    s = ort.InferenceSession(str(gptq), providers=["CPUExecutionProvider"])
    assert np.isfinite(s.run(None, {"x": x[:8]})[0]).all()
