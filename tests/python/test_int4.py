"""INT4 weight-only quantization (`--quantize_mode int4`), end to end.

What is checked, independently of ptqkit (numpy + onnx + onnxruntime only):
  - the output runs in onnxruntime (CPU) at opset 21 with blocked DequantizeLinear on INT4/UINT4;
  - only MatMul/Gemm weights change: every other initializer and node survives byte for byte,
    quantized weights are INT4 (22) or, with --use_zero_point, UINT4 (21) initializers;
  - RTN values equal a numpy reimplementation of the ONNX rules (scale = amax/7 per block,
    round half to even, clamp), including K not a multiple of the block and --block_size -1;
  - AWQ-clip's output error vs FP32 on held-out data is lower than RTN's, on the transformer
    fixture and on an MLP whose weights are fitted (not random);
  - bad options and models without eligible weights fail with a clear message and no output.

Measured when this was written (held-out data, --block_size 32, onnxruntime 1.32 with exact
MatMulNBits, see run_exact; MSE of the logits vs FP32, mean KL of the softmax, top-1 agreement):
    transformer  RTN      mse 0.206  kl 0.0117  agreement 0.983
                 AWQ-clip mse 0.114  kl 0.0051  agreement 0.988
    MLP          RTN      mse 0.166  kl 0.00347 agreement 0.999
                 AWQ-clip mse 0.111  kl 0.00328 agreement 1.000
(transformer, block 128 = one block per column since K <= 128: RTN mse 0.348, AWQ-clip 0.118.)
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import models
import qdq

# ---- an MLP with fitted weights and odd shapes ------------------------------------------------
MLP_IN, MLP_HIDDEN, MLP_CLASSES = 200, 96, 10  # K = 200: not a multiple of 128, 64 or 32


def mlp_data(n: int, seed: int):
    """Class prototypes in a 200-d space with a few high-energy channels (as LLM activations have)."""
    rng = np.random.default_rng(seed)
    protos = np.random.default_rng(99).normal(0, 1, (MLP_CLASSES, MLP_IN))
    gain = np.ones(MLP_IN)
    gain[[3, 50, 120, 199]] = [12.0, 8.0, 10.0, 6.0]
    labels = rng.integers(0, MLP_CLASSES, n)
    x = (protos[labels] + rng.normal(0, 1.5, (n, MLP_IN))) * gain
    return x.astype(np.float32), labels


def make_mlp(path):
    """features[N,200] -> /fc1/Gemm (transB, PCA whitening, 96 units) -> Relu -> /head/MatMul -> logits."""
    x, y = mlp_data(2000, models.TRAIN_SEED)
    mu = x.mean(0)
    _, s, vt = np.linalg.svd(x - mu, full_matrices=False)
    w1 = (vt[:MLP_HIDDEN] / (s[:MLP_HIDDEN, None] / np.sqrt(len(x)))).astype(np.float32)  # [96, 200]
    b1 = (-w1 @ mu + 0.3).astype(np.float32)
    h = np.maximum(x @ w1.T + b1, 0)
    w2, b2 = models.fit_softmax_regression(h.astype(np.float64), y, MLP_CLASSES)
    g = models.GraphBuilder()
    g.init("fc1.weight", w1)
    g.init("fc1.bias", b1)
    g.init("head.weight_T", w2.T.copy())
    g.init("head.bias", b2)
    hid = g.op("Gemm", "/fc1/Gemm", ["features", "fc1.weight", "fc1.bias"], transB=1)
    hid = g.op("Relu", "/relu/Relu", [hid])
    out = g.op("MatMul", "/head/MatMul", [hid, "head.weight_T"])
    g.nodes.append(helper.make_node("Add", [out, "head.bias"], ["logits"], name="/head/Add"))
    model = g.model([helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", MLP_IN])],
                    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", MLP_CLASSES])], "mlp")
    onnx.checker.check_model(model)
    onnx.save(model, path)


@pytest.fixture(scope="module")
def mlp(gen_dir):
    path = gen_dir / "int4_mlp.onnx"
    if not path.exists():
        make_mlp(path)
    return path


@pytest.fixture(scope="module")
def mlp_calib(gen_dir):
    path = gen_dir / "int4_mlp_calib.npy"
    np.save(path, mlp_data(128, models.CALIB_SEED)[0])
    return path


# ---- helpers ---------------------------------------------------------------------------------
def quantize(cli, model, out, *flags, **kw):
    return cli.quantize(model, out, "--quantize_mode", "int4", *flags, **kw)


def softmax_kl(ref, out):
    """Mean KL(softmax(ref) || softmax(out)) over rows, in float64."""
    ref, out = ref.astype(np.float64), out.astype(np.float64)
    lp = ref - ref.max(1, keepdims=True)
    lp -= np.log(np.exp(lp).sum(1, keepdims=True))
    lq = out - out.max(1, keepdims=True)
    lq -= np.log(np.exp(lq).sum(1, keepdims=True))
    return float((np.exp(lp) * (lp - lq)).sum(1).mean())


def run_exact(path, x, batch=250):
    """onnxruntime CPU with its DequantizeLinear->MatMul fusion kept exact.

    At its default optimization level onnxruntime fuses a blocked INT4 DequantizeLinear feeding a
    MatMul into MatMulNBits, with session option session.qdq_matmulnbits_accuracy_level = 4 by
    default: the activations are then quantized to int8 inside the kernel, which adds its own
    error (up to ~1% of the logits here). Level 0 keeps float activations and reproduces the
    dequantized weights exactly, so the error measured is the weight quantization's alone.
    """
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "0")
    s = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return np.concatenate([s.run(None, {name: x[i:i + batch]})[0] for i in range(0, len(x), batch)])


def errors(model, quantized, x):
    ref, out = qdq.run(str(model), x), run_exact(quantized, x)
    return {"mse": float(((ref - out) ** 2).mean()), "kl": softmax_kl(ref, out),
            "agreement": float((ref.argmax(1) == out.argmax(1)).mean())}


def blocked_dq(dq_node, g: qdq.Graph):
    """numpy DequantizeLinear (blocked) of a weight DQ: (q - zp) * scale, scale repeated along the axis."""
    attrs = {a.name: helper.get_attribute_value(a) for a in dq_node.attribute}
    q = g.const(dq_node.input[0]).astype(np.int32)
    scale = g.const(dq_node.input[1])
    zp = g.const(dq_node.input[2]).astype(np.int32) if len(dq_node.input) > 2 else np.zeros(scale.shape, np.int32)
    axis, bs = attrs["axis"], attrs["block_size"]
    k = q.shape[axis]
    rep = lambda a: np.repeat(a, bs, axis=axis).take(np.arange(k), axis=axis)  # noqa: E731
    return ((q - rep(zp)).astype(np.float32) * rep(scale)).astype(scale.dtype), q, scale, zp, axis, bs


def rtn_reference(w, axis, bs, zero_point):
    """Independent numpy RTN: blocks of bs along axis, symmetric amax/7 or asymmetric (0 in range)/15."""
    k = w.shape[axis]
    bs = k if bs == -1 else min(bs, k)
    wm = np.moveaxis(w, axis, 0)  # [K, ...]
    nb = -(-k // bs)
    pad = np.concatenate([wm, np.zeros((nb * bs - k,) + wm.shape[1:], np.float32)])  # zeros don't change amax
    blocks = pad.reshape((nb, bs) + wm.shape[1:])
    if not zero_point:
        scale = (np.abs(blocks).max(1) / np.float32(7)).astype(np.float32)
        q = np.clip(np.rint(wm / np.repeat(scale, bs, 0)[:k]), -8, 7)
        zp = np.zeros_like(scale)
    else:
        lo, hi = np.minimum(blocks.min(1), 0), np.maximum(blocks.max(1), 0)
        scale = ((hi - lo) / np.float32(15)).astype(np.float32)
        zp = np.clip(np.rint(-lo / scale), 0, 15)
        q = np.clip(np.rint(wm / np.repeat(scale, bs, 0)[:k]) + np.repeat(zp, bs, 0)[:k], 0, 15)
    return np.moveaxis(q, 0, axis), np.moveaxis(scale, 0, axis), np.moveaxis(zp, 0, axis)


# Ops of the fixtures whose definition changed between opset 17 and 21 (converted, not copied).
UPGRADED_TO_21 = {"ReduceMean"}


def check_structure(model_path, out_path, zero_point=False, expect_rtn=False, block=128):
    """Only MatMul/Gemm weights changed; INT4/UINT4 initializers; DQ attributes and scale shapes."""
    src, dst = onnx.load(model_path), onnx.load(out_path)
    assert qdq.opset(dst) == 21 and dst.ir_version >= 10
    g, ref = qdq.Graph(dst), qdq.Graph(src)
    weights = {}
    for n in ref.nodes:
        if n.op_type in ("MatMul", "Gemm") and n.input[1] in ref.consts:
            weights[n.input[1]] = n
    ref_inits = {t.name: t for t in src.graph.initializer}
    out_inits = {t.name: t for t in dst.graph.initializer}
    for name, t in ref_inits.items():  # every other initializer is unchanged
        if name in weights:
            assert name not in out_inits, f"float weight {name} still stored"
        else:
            assert out_inits[name].SerializeToString() == t.SerializeToString(), name
    # Every original non-MatMul/Gemm node survives unchanged; MatMul/Gemm change only input B.
    for n in ref.nodes:
        m = g.by_name[n.name]
        if n.op_type in ("MatMul", "Gemm") and n.input[1] in weights:
            assert list(m.input[:1]) + list(m.input[2:]) == list(n.input[:1]) + list(n.input[2:])
            assert list(m.attribute) == list(n.attribute)
        elif n.op_type in UPGRADED_TO_21:  # `axes` moved from attribute to input by the opset upgrade
            assert (m.op_type, m.input[0], list(m.output)) == (n.op_type, n.input[0], list(n.output)), n.name
        else:
            assert m.SerializeToString() == n.SerializeToString(), n.name
    # The ONNX version converter moves `axes` attributes to Constant-node inputs (opset 18).
    assert set(g.op_counts()) - set(ref.op_counts()) - {"Constant"} == {"DequantizeLinear"}
    for name, node in weights.items():
        m = g.by_name[node.name]
        dq = g.dq_on_input(m, 1)
        assert dq is not None, f"{node.name}: no DequantizeLinear on its weight"
        t = out_inits[dq.input[0]]
        assert t.data_type == (TensorProto.UINT4 if zero_point else TensorProto.INT4), t.data_type
        assert len(t.raw_data) == (int(np.prod(t.dims)) + 1) // 2, "not packed two per byte"
        w = ref.const(name)
        deq, q, scale, zp, axis, bs = blocked_dq(dq, g)
        trans_b = any(a.name == "transB" and a.i for a in node.attribute)
        want_axis = (1 if trans_b else 0) if node.op_type == "Gemm" else w.ndim - 2
        assert axis == want_axis, f"{node.name}: axis {axis}"
        k = w.shape[axis]
        assert bs == (k if block == -1 else min(block, k)), f"{node.name}: block_size {bs}"
        want_scale_shape = list(w.shape)
        want_scale_shape[axis] = -(-k // bs)
        assert list(scale.shape) == want_scale_shape and scale.dtype == w.dtype, f"{node.name}: scale {scale.shape}"
        assert (len(dq.input) > 2) == zero_point
        if expect_rtn:
            rq, rs, rzp = rtn_reference(w, axis, block, zero_point)
            np.testing.assert_array_equal(scale, rs, err_msg=f"{node.name}: RTN scales")
            np.testing.assert_array_equal(q, rq.astype(np.int32), err_msg=f"{node.name}: RTN values")
            np.testing.assert_array_equal(zp, rzp.astype(np.int32), err_msg=f"{node.name}: zero points")
        # Every weight is represented within half a step of its own (possibly clipped) grid, or
        # clipped at most to 0.5 x its block's range.
        rep = np.repeat(scale, bs, axis=axis).take(np.arange(k), axis=axis)
        assert np.all(np.abs(deq - w) <= np.maximum(0.5 * rep * 1.0001, np.abs(w) * 0.5 + rep)), node.name
    return g


# ---- tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["transformer", "mlp"])
def test_awq_clip_error_is_lower_than_rtn(kind, cli, calib, transformer, transformer_eval, mlp, mlp_calib,
                                          tmp_path):
    model, data = (transformer, calib("transformer")) if kind == "transformer" else (mlp, mlp_calib)
    x = transformer_eval[0] if kind == "transformer" else mlp_data(1000, models.EVAL_SEED)[0]
    rtn, awq = tmp_path / "rtn.onnx", tmp_path / "awq.onnx"
    quantize(cli, model, rtn, "--calibration_method", "rtn", "--block_size", "32")
    r = quantize(cli, model, awq, "--calibration_data_path", data, "--block_size", "32")
    assert "method awq_clip" in r.stdout  # the int4 default
    e_rtn, e_awq = errors(model, rtn, x), errors(model, awq, x)
    print(f"{kind}: rtn {e_rtn}  awq_clip {e_awq}")
    assert e_awq["mse"] < 0.8 * e_rtn["mse"], (e_rtn, e_awq)
    assert e_awq["kl"] < e_rtn["kl"], (e_rtn, e_awq)
    assert e_awq["agreement"] >= 0.95, e_awq
    check_structure(model, awq, block=32)


def test_transformer_int4_default_block_runs_and_rtn_matches_numpy(cli, transformer, transformer_eval, tmp_path):
    out = tmp_path / "t.onnx"
    r = quantize(cli, transformer, out, "--calibration_method", "rtn")
    assert "int4 rtn: round to nearest, reads no data" in r.stdout
    g = check_structure(transformer, out, expect_rtn=True, block=128)
    assert g.op_counts()["DequantizeLinear"] == 13  # 12 linear layers + head; attention MatMuls stay
    for b in range(2):
        for name in ("attn/MatMul", "attn/MatMul_1"):
            assert g.dq_on_input(g.by_name[f"/blocks.{b}/{name}"], 1) is None
    onnx.checker.check_model(onnx.load(out))
    e = errors(transformer, out, transformer_eval[0])
    assert e["agreement"] >= 0.9, e


@pytest.mark.parametrize("block", ["128", "64", "-1"])
def test_odd_k_blocks_match_numpy_and_onnxruntime(block, cli, mlp, tmp_path):
    """K = 200 (fc1, Gemm transB) and 96 (head, MatMul): short last blocks, or one block per column."""
    out = tmp_path / "mlp.onnx"
    quantize(cli, mlp, out, "--calibration_method", "rtn", "--block_size", block)
    g = check_structure(mlp, out, expect_rtn=True, block=int(block))
    # onnxruntime's output equals the FP32 model evaluated with numpy-dequantized weights.
    x = mlp_data(64, models.EVAL_SEED)[0]
    w1 = blocked_dq(g.dq_on_input(g.by_name["/fc1/Gemm"], 1), g)[0]
    w2 = blocked_dq(g.dq_on_input(g.by_name["/head/MatMul"], 1), g)[0]
    h = np.maximum(x @ w1.T + g.const("fc1.bias"), 0)
    want = h @ w2 + g.const("head.bias")
    np.testing.assert_allclose(run_exact(out, x), want, rtol=1e-4, atol=1e-4)
    # At onnxruntime's defaults MatMulNBits quantizes the activations to int8 (see run_exact).
    np.testing.assert_allclose(qdq.run(str(out), x), want, rtol=0, atol=0.02 * np.abs(want).max())


@pytest.mark.parametrize("method", ["rtn", "awq_clip"])
def test_use_zero_point_writes_uint4(method, cli, mlp, mlp_calib, tmp_path):
    out = tmp_path / "zp.onnx"
    quantize(cli, mlp, out, "--calibration_method", method, "--calibration_data_path", mlp_calib,
             "--use_zero_point", "--block_size", "64")
    check_structure(mlp, out, zero_point=True, expect_rtn=method == "rtn", block=64)
    e = errors(mlp, out, mlp_data(500, models.EVAL_SEED)[0])
    assert e["agreement"] >= 0.9, e


def test_resnet_gemms_only(cli, resnet, calib, tmp_path):
    """A CNN: its Convs stay float (int4 is MatMul/Gemm only); the two Gemms (transB) are quantized."""
    out = tmp_path / "r.onnx"
    quantize(cli, resnet, out, "--calibration_data_path", calib("resnet"), "--calibration_batch_size", "16")
    g = check_structure(resnet, out)
    assert g.op_counts()["DequantizeLinear"] == 2
    x, _ = models.resnet_data(200, models.EVAL_SEED)
    assert errors(resnet, out, x)["agreement"] >= 0.9


def test_selectors_apply(cli, transformer, tmp_path):
    out = tmp_path / "sel.onnx"
    r = quantize(cli, transformer, out, "--calibration_method", "rtn", "--nodes_to_exclude", "/head/MatMul",
                 "--nodes_to_exclude", r"/blocks\.1/")
    g = qdq.Graph(onnx.load(out))
    assert g.op_counts()["DequantizeLinear"] == 6
    assert "/head/MatMul" in r.stdout and "excluded by --nodes_to_exclude" in r.stdout


@pytest.mark.parametrize("flags,message", [
    (("--calibration_method", "entropy"), "does not apply to --quantize_mode int4"),
    (("--block_size", "0"), "--block_size"),
    (("--save_calibration_cache", "c.json"), "int4 has none"),
])
def test_bad_int4_options(flags, message, cli, transformer, tmp_path):
    out = tmp_path / "bad.onnx"
    r = cli.run("quantize", "--onnx_path", transformer, "--output_path", out, "--quantize_mode", "int4", *flags)
    assert r.returncode != 0 and message in r.error_line(), r.stderr
    assert not out.exists()


def test_int4_methods_are_refused_in_int8(cli, transformer, tmp_path):
    out = tmp_path / "bad.onnx"
    r = cli.run("quantize", "--onnx_path", transformer, "--output_path", out, "--calibration_method", "awq_clip")
    assert r.returncode != 0 and "applies to the weight-only modes (int4, nvfp4, mxfp8, mxfp4) only" in r.error_line()
    assert not out.exists()


def test_model_without_eligible_weights_is_an_error(cli, tmp_path):
    """Two activations multiplied: nothing to quantize, a message naming why, no output file."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 8])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [8, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])
    m = helper.make_model(helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "g",
                                            [a, b], [y]), opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path, out = tmp_path / "acts.onnx", tmp_path / "acts.int4.onnx"
    onnx.save(m, path)
    r = cli.run("quantize", "--onnx_path", path, "--output_path", out, "--quantize_mode", "int4",
                "--calibration_method", "rtn")
    assert r.returncode != 0
    assert "no MatMul/Gemm whose weight --quantize_mode int4 can quantize" in r.error_line()
    assert "'mm': weight (input B) is not a constant" in r.error_line()
    assert not out.exists()


def test_float16_weights_get_float16_scales(cli, mlp, tmp_path):
    """A model stored in float16: scales are float16 too, and the model runs in onnxruntime."""
    m = onnx.load(mlp)
    for t in m.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.elem_type = TensorProto.FLOAT16
    path, out = tmp_path / "mlp16.onnx", tmp_path / "mlp16.int4.onnx"
    onnx.save(m, path)
    quantize(cli, path, out, "--calibration_method", "rtn", "--block_size", "64")
    g = qdq.Graph(onnx.load(out))
    for name in ("/fc1/Gemm", "/head/MatMul"):
        dq = g.dq_on_input(g.by_name[name], 1)
        assert g.const(dq.input[1]).dtype == np.float16
    x = mlp_data(200, models.EVAL_SEED)[0]
    ref = qdq.run(str(mlp), x)
    y = run_exact(out, x.astype(np.float16)).astype(np.float32)
    assert float((ref.argmax(1) == y.argmax(1)).mean()) >= 0.9


def test_int4_with_float16_high_precision_runs(cli, transformer, calib, transformer_eval, tmp_path):
    """--high_precision_dtype fp16 also converts the INT4 scales (and everything float) to float16."""
    out = tmp_path / "t16.onnx"
    quantize(cli, transformer, out, "--calibration_data_path", calib("transformer"), "--high_precision_dtype", "fp16")
    g = qdq.Graph(onnx.load(out))
    dqs = [n for n in g.nodes if n.op_type == "DequantizeLinear"]
    assert len(dqs) == 13 and all(g.const(n.input[1]).dtype == np.float16 for n in dqs)
    assert errors(transformer, out, transformer_eval[0][:500])["agreement"] >= 0.95


# ---- awq_lite: activation-aware per input channel scaling ------------------------------------
def awq_lite_muls(model_path, out_path):
    """{consumer node name: (Mul node, 1/s)} for each quantized MatMul/Gemm whose input A now comes
    from a Mul(original activation, [K] float initializer) inserted by awq_lite."""
    ref, g = qdq.Graph(onnx.load(model_path)), qdq.Graph(onnx.load(out_path))
    producer = {o: n for n in g.nodes for o in n.output}
    found = {}
    for n in ref.nodes:
        m = g.by_name[n.name]
        if n.op_type not in ("MatMul", "Gemm") or m.input[0] == n.input[0]:
            continue
        mul = producer[m.input[0]]
        assert mul.op_type == "Mul" and mul.input[0] == n.input[0], n.name
        inv = g.const(mul.input[1])
        assert inv.ndim == 1 and inv.dtype == np.float32 and np.all(np.isfinite(inv)) and np.all(inv > 0)
        found[n.name] = (mul, inv)
    return found, g


def check_awq_lite_weights(model_path, out_path):
    """Each scaled consumer's weight W' = DQ(...) is diag(s)·W (s = 1/inv) on its own (possibly
    clipped) grid: within half a step of W·s, or clipped at most to half its block's range."""
    found, g = awq_lite_muls(model_path, out_path)
    ref = qdq.Graph(onnx.load(model_path))
    for name, (_, inv) in found.items():
        node = ref.by_name[name]
        w = ref.const(node.input[1])
        deq, q, scale, zp, axis, bs = blocked_dq(g.dq_on_input(g.by_name[name], 1), g)
        shape = [1] * w.ndim
        shape[axis] = -1
        ws = w / inv.reshape(shape)
        rep = np.repeat(scale, bs, axis=axis).take(np.arange(w.shape[axis]), axis=axis)
        assert np.all(np.abs(deq - ws) <= np.maximum(0.5 * rep * 1.001, np.abs(ws) * 0.5 + rep)), name
    return found, g


@pytest.mark.parametrize("kind", ["transformer", "outlier_mlp", "mlp"])
def test_awq_lite_error_is_lower_than_rtn(kind, cli, calib, transformer, transformer_eval, outlier_mlp, mlp,
                                          mlp_calib, tmp_path):
    """Held-out MSE vs FP32, --block_size 32. Measured when this was written (onnxruntime 1.32,
    exact MatMulNBits, see run_exact):
        transformer  RTN 0.206   awq_lite 0.107   awq_clip 0.114
        outlier MLP  RTN 2.90    awq_lite 0.156   awq_clip 2.58
        MLP          RTN 0.166   awq_lite 0.096   awq_clip 0.111
    (awq_lite = the per-channel scale search, then the clip search on the scaled weight. On the
    outlier MLP only the scaling keeps fc1's raw-units column, whose weights are 500x smaller.)
    """
    if kind == "transformer":
        model, data, x = transformer, calib("transformer"), transformer_eval[0]
    elif kind == "mlp":
        model, data, x = mlp, mlp_calib, mlp_data(1000, models.EVAL_SEED)[0]
    else:
        model, data = outlier_mlp, tmp_path / "outlier_calib.npy"
        np.save(data, models.outlier_mlp_data(128, models.CALIB_SEED)[0])
        x = models.outlier_mlp_data(1000, models.EVAL_SEED)[0]
    rtn, lite, clip = tmp_path / "rtn.onnx", tmp_path / "lite.onnx", tmp_path / "clip.onnx"
    quantize(cli, model, rtn, "--calibration_method", "rtn", "--block_size", "32")
    r = quantize(cli, model, lite, "--calibration_method", "awq_lite", "--calibration_data_path", data,
                 "--block_size", "32")
    assert "method awq_lite" in r.stdout
    quantize(cli, model, clip, "--calibration_data_path", data, "--block_size", "32")
    e_rtn, e_lite, e_clip = errors(model, rtn, x), errors(model, lite, x), errors(model, clip, x)
    print(f"{kind}: rtn {e_rtn}  awq_lite {e_lite}  awq_clip {e_clip}")
    assert e_lite["mse"] < e_rtn["mse"], (e_rtn, e_lite)
    assert e_lite["agreement"] >= 0.95, e_lite
    onnx.checker.check_model(onnx.load(lite))
    found, g = check_awq_lite_weights(model, lite)
    assert found, "awq_lite scaled no weight"
    assert set(g.op_counts()) - set(qdq.Graph(onnx.load(model)).op_counts()) <= {"DequantizeLinear", "Mul", "Constant"}
    if kind == "outlier_mlp":
        assert "/fc1/Gemm" in found and e_lite["mse"] < 0.2 * e_rtn["mse"]
        inv = found["/fc1/Gemm"][1]
        assert inv[0] == inv.min() and inv[0] < 0.1 * np.median(inv)  # the raw-units feature is scaled down


def test_awq_lite_gives_each_consumer_of_a_shared_activation_its_own_mul(cli, calib, transformer, tmp_path):
    """Q, K and V read the same LayerNorm output: three Muls, each with its own weight's 1/s, and
    the LayerNorm output itself is left as it was for every other reader."""
    out = tmp_path / "lite.onnx"
    quantize(cli, transformer, out, "--calibration_method", "awq_lite", "--calibration_data_path",
             calib("transformer"), "--block_size", "32")
    found, g = awq_lite_muls(transformer, out)
    ref = qdq.Graph(onnx.load(transformer))
    by_act = {}
    for name, (mul, inv) in found.items():
        by_act.setdefault(ref.by_name[name].input[0], []).append((name, mul, inv))
    shared = [v for v in by_act.values() if len(v) > 1]
    assert shared, "no activation with several scaled consumers in the fixture"
    for group in shared:
        assert len({mul.name for _, mul, _ in group}) == len(group)
        assert len({mul.input[1] for _, mul, _ in group}) == len(group)
        assert any(not np.array_equal(group[0][2], inv) for _, _, inv in group[1:])


def test_awq_lite_is_deterministic_across_thread_counts(cli, mlp, mlp_calib, tmp_path):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    for path, threads in ((a, "1"), (b, "2")):
        quantize(cli, mlp, path, "--calibration_method", "awq_lite", "--calibration_data_path", mlp_calib,
                 "--block_size", "64", "--intra_op_num_threads", threads)
    assert a.read_bytes() == b.read_bytes()
