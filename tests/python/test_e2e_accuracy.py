"""End to end: quantize the generated ResNet and transformer with real calibration data, run FP32
and INT8 in onnxruntime on held-out samples, and check accuracy and the Q/DQ structure.

Thresholds. As a yardstick we quantized the same models with onnxruntime's own quantize_static
(QDQ, symmetric per-channel int8, Conv/Gemm/MatMul including the attention MatMuls, 128
calibration samples) and measured on the 1000 eval samples:
    ResNet:       top-1 agreement 0.997-0.998, mean cosine 0.9984, min cosine 0.983
    transformer:  top-1 agreement 0.996,       mean cosine 0.9996, min cosine 0.992
(max, entropy and percentile alike). A correct int8 quantization therefore keeps agreement near
0.997; we require 0.98 (room for a different placement, for entropy clipping, and for ties between
close logits, which are ~1% of samples) and a mean cosine of 0.99 (ResNet) / 0.997 (transformer).
These can fail: in the same yardstick models, activation scales a quarter of the right size
(clipping) give agreement 0.64 / 0.75; scales 4x too coarse give mean cosine 0.972 / 0.9953.
INT8 accuracy against the labels may drop at most 2 points below FP32.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import qdq

THRESHOLDS = {  # kind: (min top-1 agreement, min mean cosine)
    "resnet": (0.98, 0.99),
    "transformer": (0.98, 0.997),
    "tokens": (0.98, 0.997),
}
MODEL_FIXTURE = {"resnet": "resnet", "transformer": "transformer", "tokens": "token_transformer"}
EVAL_FIXTURE = {"resnet": "resnet_eval", "transformer": "transformer_eval", "tokens": "token_eval"}
QUANTIZED_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")


@pytest.fixture(scope="module")
def quantized(cli, calib, request, tmp_path_factory):
    """quantized(kind, *flags) -> path of the model quantized with its calibration data (cached).

    A calibration batch of 16 keeps the runs short and makes the hidden Gemm of the ResNet a
    real GEMM (M=16), not a GEMV that the placement rules would leave in float.
    """
    cache = {}
    out_dir = tmp_path_factory.mktemp("quantized")

    def get(kind, *flags):
        key = (kind, flags)
        if key not in cache:
            model = request.getfixturevalue(MODEL_FIXTURE[kind])
            out = out_dir / f"{kind}_{len(cache)}.quant.onnx"
            cli.quantize(model, out, "--calibration_data_path", calib(kind), "--quantize_mode", "int8",
                         "--calibration_batch_size", "16", *flags)
            cache[key] = out
        return cache[key]

    return get


@pytest.mark.parametrize("kind,flags", [
    ("resnet", ()),
    ("resnet", ("--calibration_method", "max")),
    ("resnet", ("--calibration_method", "percentile", "--percentile", "99.99")),
    ("transformer", ()),
    ("transformer", ("--calibration_method", "max")),
    ("tokens", ()),
])
def test_int8_output_agrees_with_fp32(kind, flags, quantized, request):
    out = quantized(kind, *flags)
    x, labels = request.getfixturevalue(EVAL_FIXTURE[kind])
    model = request.getfixturevalue(MODEL_FIXTURE[kind])
    ref, q = qdq.run(str(model), x), qdq.run(str(out), x)
    m = qdq.compare(ref, q, labels)
    min_agree, min_cos = THRESHOLDS[kind]
    assert m["agreement"] >= min_agree, m
    assert m["cos_mean"] >= min_cos, m
    assert m["acc_int8"] >= m["acc_fp32"] - 0.02, m
    # The output must really be quantized, not a copy of the input.
    assert qdq.Graph(onnx.load(out)).op_counts()["DequantizeLinear"] > 0


def _check_common_structure(g: qdq.Graph):
    for n in g.nodes:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
            assert not set(n.output) & g.outputs, f"{n.name} produces a graph output"
            assert not set(n.input) & g.outputs, f"{n.name} consumes a graph output"
        if n.op_type in QUANTIZED_OPS:  # inputs are quantized, never outputs (but a residual Add's input)
            for c in g.consumers.get(n.output[0], []):
                if c.op_type == "QuantizeLinear":  # with its BatchNormalization folded, a Conv may feed one
                    readers = [r for d in g.consumers.get(c.output[0], []) for r in g.consumers.get(d.output[0], [])]
                    assert readers and all(r.op_type == "Add" for r in readers), f"output of {n.name} is quantized"
    for tensor, users in g.consumers.items():  # one shared Q per tensor
        assert sum(u.op_type == "QuantizeLinear" for u in users) <= 1, f"{tensor} quantized twice"
    for n in g.nodes:
        q = g.producer.get(n.input[0])
        weight = g.const(n.input[0]) is not None or (
            q is not None and q.op_type == "QuantizeLinear" and g.const(q.input[0]) is not None)
        if n.op_type == "DequantizeLinear" and not weight:  # activations: per tensor
            s = g.const(n.input[1])
            assert s.size == 1 and np.isfinite(s).all() and (s > 0).all(), f"{n.name}: scale {s}"
            zp = g.const(n.input[2]) if len(n.input) > 2 and n.input[2] else None
            assert zp is not None and zp.dtype == np.int8 and not zp.any(), f"{n.name}: zero point {zp}"


def _fp32_weight(ref: qdq.Graph, node) -> np.ndarray:
    """The weight of `node` (looked up by name) in the FP32 model, with the BatchNormalization that
    follows it folded in (as --canonicalize does before quantizing; computed here independently)."""
    n = ref.by_name[node.name]
    w = ref.const(n.input[1])
    readers = ref.consumers.get(n.output[0], [])
    if len(readers) == 1 and readers[0].op_type == "BatchNormalization":
        bn = readers[0]
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        gain = ref.const(bn.input[1]).astype(np.float64) / np.sqrt(ref.const(bn.input[4]).astype(np.float64) + eps)
        w = (w * gain.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32)
    return w


def _check_weight(g: qdq.Graph, ref: qdq.Graph, node, axis: int):
    wq = qdq.weight_quant(g, node)
    w = _fp32_weight(ref, node)
    channels = w.shape[axis]
    assert wq.axis == axis, f"{node.name}: DQ axis {wq.axis}, expected {axis}"
    assert wq.scale.shape == (channels,), f"{node.name}: scale shape {wq.scale.shape}"
    assert wq.zero_point is not None and wq.zero_point.dtype == np.int8, node.name
    assert wq.zero_point.shape == (channels,) and not wq.zero_point.any(), node.name
    amax = np.abs(np.moveaxis(w, axis, 0).reshape(channels, -1)).max(1)
    np.testing.assert_allclose(wq.scale, amax / 127, rtol=1e-6, err_msg=f"{node.name}: scale != amax/127")
    return wq


def test_resnet_structure(quantized, resnet):
    g = qdq.Graph(onnx.load(quantized("resnet")))
    ref = qdq.Graph(onnx.load(resnet))
    _check_common_structure(g)
    convs = [n for n in g.nodes if n.op_type == "Conv"]
    assert len(convs) == 8
    for n in convs:
        w = _fp32_weight(ref, n)
        if min(w.shape[0], w.shape[1]) < 16:
            continue  # the 3-channel stem may be left in float as a small-channel Conv
        assert g.is_quantized(n), f"{n.name} is not quantized"
        wq = _check_weight(g, ref, n, axis=0)
        assert wq.via_quantize and wq.stored.dtype == np.float32, "default mode keeps FP32 weights + Q"
    fc1 = g.by_name["/fc1/Gemm"]
    assert g.is_quantized(fc1)
    _check_weight(g, ref, fc1, axis=0)  # transB=1: weight [out, in], channels on axis 0
    assert g.op_counts()["BatchNormalization"] == 0, "every BatchNormalization follows a Conv: folded into it"
    for n in g.nodes:
        if n.op_type == "Relu":  # Conv->Relu epilogue stays fused
            assert g.dq_on_input(n, 0) is None, f"{n.name} has Q/DQ on its input"
    # Residual Adds without a downsample branch: Q/DQ on the skip input (input 1) only.
    for name in ("/layer1/layer1.0/Add", "/layer2/layer2.0/Add"):
        add = g.by_name[name]
        assert g.dq_on_input(add, 0) is None and g.dq_on_input(add, 1) is not None, name
    add3 = g.by_name["/layer3/layer3.0/Add"]
    assert (g.dq_on_input(add3, 0) is None) or (g.dq_on_input(add3, 1) is None)


def test_transformer_structure(quantized, transformer):
    g = qdq.Graph(onnx.load(quantized("transformer")))
    ref = qdq.Graph(onnx.load(transformer))
    _check_common_structure(g)
    for b in range(2):
        for lin in ("attn/q", "attn/k", "attn/v", "attn/proj", "mlp/fc1", "mlp/fc2"):
            n = g.by_name[f"/blocks.{b}/{lin}/MatMul"]
            assert g.is_quantized(n), f"{n.name} is not quantized"
            if lin == "mlp/fc2":
                # fc2 reads the GELU output, a Mul by 0.5: smoothing (--smoothquant_alpha) scaled its
                # weight rows. The scales are the smoothed weight's absmax/127, and row j is the FP32
                # row times one positive factor.
                wq = qdq.weight_quant(g, n)
                np.testing.assert_allclose(wq.scale, np.abs(wq.stored).max(0) / 127, rtol=1e-6)
                ratio = wq.stored / _fp32_weight(ref, n)
                np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones_like(ratio), rtol=1e-4)
                assert (ratio > 0).all()
                continue
            _check_weight(g, ref, n, axis=1)  # MatMul weight [K, N]: channels on axis 1
        # Attention core, GELU and LayerNorm chains stay in float by default.
        for name in ("attn/MatMul", "attn/MatMul_1", "attn/Softmax", "mlp/act/Erf", "mlp/act/Div",
                     "norm1/LayerNormalization", "norm2/LayerNormalization"):
            n = g.by_name[f"/blocks.{b}/{name}"]
            assert all(g.dq_on_input(n, i) is None for i in range(len(n.input))), f"{n.name} quantized"


def _ort_quantize_linear(w, scale, axis):
    """onnxruntime's own QuantizeLinear of w (per axis, int8 zero point) — the bit-exact reference."""
    zp = np.zeros(scale.shape, np.int8)
    node = helper.make_node("QuantizeLinear", ["w", "s", "z"], ["q"], axis=axis)
    graph = helper.make_graph([node], "q", [], [helper.make_tensor_value_info("q", TensorProto.INT8, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "s"),
                               numpy_helper.from_array(zp, "z")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return qdq.session(m).run(None, {})[0]


def test_dq_only_stores_int8_weights(cli, resnet, quantized, calib, resnet_eval, tmp_path):
    out = tmp_path / "dq_only.onnx"
    cli.quantize(resnet, out, "--calibration_data_path", calib("resnet"), "--calibration_batch_size", "16",
                 "--dq_only")
    g, ref = qdq.Graph(onnx.load(out)), qdq.Graph(onnx.load(resnet))
    _check_common_structure(g)
    checked = 0
    for n in g.nodes:
        if n.op_type in ("Conv", "Gemm") and g.dq_on_input(n, 1) is not None:
            wq = _check_weight(g, ref, n, axis=0)
            assert wq.stored_is_int8 and not wq.via_quantize, f"{n.name}: weight not stored as int8"
            expected = _ort_quantize_linear(_fp32_weight(ref, n), wq.scale.astype(np.float32), wq.axis)
            np.testing.assert_array_equal(wq.stored, expected, err_msg=f"{n.name}: int8 weights differ from ORT")
            checked += 1
    assert checked >= 7
    assert not any(n.op_type == "QuantizeLinear" and n.input[0] in g.consts for n in g.nodes)
    # dq_only only changes how weights are stored: outputs match the Q->DQ form.
    x = resnet_eval[0][:200]
    m = qdq.compare(qdq.run(str(quantized("resnet")), x), qdq.run(str(out), x))
    assert m["agreement"] == 1.0 and m["cos_mean"] > 0.99999, m
