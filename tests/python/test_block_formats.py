"""NVFP4, MXFP8 and MXFP4 weight-only quantization (`--quantize_mode nvfp4|mxfp8|mxfp4`), end to end.

MXFP4 (OCP MX: E2M1 values in blocks of 32 sharing an E8M0 scale) is one row of the format table
(src/quant/formats.cc): its test is the parametrization below.

Checked independently of ptqkit (numpy + ml_dtypes casts, onnx, onnxruntime):
  - `--target_runtime trt` writes the standard types: nvfp4 as packed FLOAT4E2M1 values whose block
    scales come from DequantizeLinear(FLOAT8E4M3FN codes, float global scale) (opset 23), mxfp8 as
    FLOAT8E4M3FN values with FLOAT8E8M0 scales (opset 24); the full ONNX checker passes, and ONNX's
    reference evaluator runs the file;
  - round-to-nearest values and scales equal a numpy reimplementation of the formats, bit for bit
    (blocks of 16 / 32 along K, K = 200 and 96 not multiples of them);
  - `--target_runtime ort_cpu` writes the same numbers in containers ONNX Runtime runs (opset 21):
    its dequantized weights equal the trt file's bit for bit, and ONNX Runtime's output on it equals
    the reference evaluator's on the trt file;
  - the clip search on calibration data lowers the output error below round-to-nearest's;
  - options that do not apply fail with a clear message.
"""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import models
import qdq
from test_int4 import mlp, mlp_calib, mlp_data, softmax_kl  # noqa: F401 (fixtures: the int4 tests' MLP)

BLOCK = {"nvfp4": 16, "mxfp8": 32, "mxfp4": 32}


def quantize(cli, mode, model, out, *flags):
    return cli.quantize(model, out, "--quantize_mode", mode, *flags)


def run_basic(path, x):
    """ONNX Runtime at its basic level (the default level is checked where it matters)."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    s = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def blocks_along(w, axis, bs):
    """w with K (axis) moved first and zero-padded to whole blocks: [num_blocks, bs, ...] and K."""
    wm = np.moveaxis(w, axis, 0)
    k = wm.shape[0]
    nb = -(-k // bs)
    pad = np.concatenate([wm, np.zeros((nb * bs - k,) + wm.shape[1:], np.float32)])
    return pad.reshape((nb, bs) + wm.shape[1:]), k


def expand(scale_kfirst, bs, k):
    return np.repeat(scale_kfirst, bs, 0)[:k]


def e4m3(x):
    """float32 -> FLOAT8E4M3FN value, saturating at 448 (ONNX's default), round half to even."""
    return np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)


def rtn_reference(mode, w, axis):
    """Independent round-to-nearest of one weight: (dequantized weight, scales as float32), K axis first."""
    bs = BLOCK[mode]
    blocks, k = blocks_along(w, axis, bs)
    wm = np.moveaxis(w, axis, 0)
    amax = np.abs(blocks).max(1)
    if mode == "nvfp4":
        g = np.float32(np.abs(w).max() / np.float32(6 * 448))
        code = e4m3(amax / np.float32(6) / g)
        code[code == 0] = 2.0 ** -9
        scale = (code * g).astype(np.float32)
        values = (wm / expand(scale, bs, k)).astype(np.float32)
        q = np.clip(values, -6, 6).astype(ml_dtypes.float4_e2m1fn).astype(np.float32)
    elif mode == "mxfp8":
        e = np.ceil(np.log2(amax / np.float32(448)))  # the smallest 2^e >= amax / 448
        scale = np.exp2(e).astype(np.float32)
        q = e4m3(wm / expand(scale, bs, k))
    else:  # mxfp4: the smallest 2^e >= amax / 6, E2M1 values
        scale = np.exp2(np.ceil(np.log2(amax / np.float32(6)))).astype(np.float32)
        q = np.clip(wm / expand(scale, bs, k), -6, 6).astype(ml_dtypes.float4_e2m1fn).astype(np.float32)
    deq = (q * expand(scale, bs, k)).astype(np.float32)
    return np.moveaxis(deq, 0, axis), scale


def weight_dqs(path):
    """{float weight's consumer node name: (its DequantizeLinear, qdq.Graph)} of a quantized file."""
    g = qdq.Graph(onnx.load(path))
    return {n.name: g.dq_on_input(n, 1) for n in g.nodes if n.op_type in ("MatMul", "Gemm")}, g


def dequantized(dq, g):
    """numpy blocked DequantizeLinear of a weight DQ (nvfp4's scale input itself a DQ)."""
    attrs = {a.name: helper.get_attribute_value(a) for a in dq.attribute}
    values = g.const(dq.input[0]).astype(np.float32)
    producer = g.producer.get(dq.input[1])
    if producer is not None:  # nvfp4: DequantizeLinear(E4M3 codes, global)
        assert producer.op_type == "DequantizeLinear" and len(producer.input) == 2
        codes = g.const(producer.input[0])
        assert codes.dtype == ml_dtypes.float8_e4m3fn
        scale = (codes.astype(np.float32) * g.const(producer.input[1])).astype(np.float32)
    else:
        s = g.const(dq.input[1])
        scale = s.astype(np.float32)  # E8M0 -> its power of two (ml_dtypes float8_e8m0fnu)
    axis, bs = attrs["axis"], attrs["block_size"]
    k = values.shape[axis]
    rep = np.moveaxis(np.repeat(np.moveaxis(scale, axis, 0), bs, 0)[:k], 0, axis)
    return (values * rep).astype(np.float32), attrs


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8", "mxfp4"])
def test_rtn_matches_numpy_and_both_forms_agree(mode, cli, mlp, tmp_path):
    trt, ort_form = tmp_path / "trt.onnx", tmp_path / "ort.onnx"
    quantize(cli, mode, mlp, trt, "--calibration_method", "rtn")
    quantize(cli, mode, mlp, ort_form, "--calibration_method", "rtn", "--target_runtime", "ort_cpu")
    src = qdq.Graph(onnx.load(mlp))
    m_trt, m_ort = onnx.load(trt), onnx.load(ort_form)
    onnx.checker.check_model(m_trt, full_check=True)
    onnx.checker.check_model(m_ort, full_check=True)
    assert qdq.opset(m_trt) == (23 if mode == "nvfp4" else 24) and m_trt.ir_version >= 11
    assert qdq.opset(m_ort) == 21
    want_type = {"nvfp4": TensorProto.FLOAT4E2M1, "mxfp8": TensorProto.FLOAT8E4M3FN,
                 "mxfp4": TensorProto.FLOAT4E2M1}[mode]
    dq_trt, g_trt = weight_dqs(trt)
    dq_ort, g_ort = weight_dqs(ort_form)
    for node, axis in (("/fc1/Gemm", 1), ("/head/MatMul", 0)):  # Gemm transB: K is axis 1
        w = src.const(src.by_name[node].input[1])
        dq = dq_trt[node]
        init = {t.name: t for t in m_trt.graph.initializer}[dq.input[0]]
        assert init.data_type == want_type
        if want_type == TensorProto.FLOAT4E2M1:
            assert len(init.raw_data) == (w.size + 1) // 2, "FLOAT4E2M1 not packed two per byte"
        if mode != "nvfp4":
            scale_init = {t.name: t for t in m_trt.graph.initializer}[dq.input[1]]
            assert scale_init.data_type == TensorProto.FLOAT8E8M0
        deq_trt, attrs = dequantized(dq, g_trt)
        assert attrs["axis"] == axis and attrs["block_size"] == BLOCK[mode], attrs
        want, _ = rtn_reference(mode, w, axis)
        np.testing.assert_array_equal(deq_trt, want, err_msg=f"{mode} {node}: values differ from numpy")
        deq_ort, _ = dequantized(dq_ort[node], g_ort)
        np.testing.assert_array_equal(deq_ort, deq_trt, err_msg=f"{mode} {node}: ort_cpu form differs")
        rel = np.abs(deq_trt - w).max() / np.abs(w).max()
        assert rel < {"nvfp4": 0.17, "mxfp8": 0.07, "mxfp4": 0.34}[mode], rel
    # ONNX Runtime runs the ort_cpu file; ONNX's reference evaluator runs the standard one: same outputs.
    x = mlp_data(16, models.EVAL_SEED)[0]
    got_ort = run_basic(ort_form, x)
    got_ref = ReferenceEvaluator(m_trt).run(None, {"features": x})[0]
    np.testing.assert_allclose(got_ort, got_ref, rtol=1e-4, atol=1e-4 * np.abs(got_ref).max())
    assert (qdq.run(str(ort_form), x).argmax(1) == got_ref.argmax(1)).all()  # default level too


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_clip_search_beats_round_to_nearest(mode, cli, mlp, mlp_calib, tmp_path):
    rtn, clip = tmp_path / "rtn.onnx", tmp_path / "clip.onnx"
    d = quantize(cli, mode, mlp, rtn, "--calibration_data_path", mlp_calib, "--target_runtime", "ort_cpu")
    assert f"{mode} rtn: round to nearest; the data serves the loss report only" in d.stdout  # the default
    assert "held-out sample(s), ONNX Runtime basic level" in d.stdout, d.stdout
    r = quantize(cli, mode, mlp, clip, "--calibration_data_path", mlp_calib, "--target_runtime", "ort_cpu",
                 "--calibration_method", "awq_clip")
    assert "method awq_clip" in r.stdout
    x = mlp_data(1000, models.EVAL_SEED)[0]
    ref = qdq.run(str(mlp), x)
    err = {}
    for name, path in (("rtn", rtn), ("clip", clip)):
        out = run_basic(path, x)
        err[name] = (float(((out - ref) ** 2).mean()), softmax_kl(ref, out), float((out.argmax(1) == ref.argmax(1)).mean()))
    print(mode, err, r.stdout[-300:])
    if mode == "nvfp4":
        assert err["clip"][0] < 0.9 * err["rtn"][0], err
    else:
        # MXFP8's only choices are a block's exponent and the one below (2x finer steps, the top
        # values saturating at 448); on this MLP they move the held-out error by < 0.1%.
        assert err["clip"][0] < 1.01 * err["rtn"][0], err
    assert err["clip"][2] >= 0.97, err


def test_float16_model_gets_float16_scales(cli, mlp, tmp_path):
    half = tmp_path / "mlp16.onnx"
    m = onnx.load(mlp)
    for i, t in enumerate(m.graph.initializer):
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    cast_in = helper.make_node("Cast", ["features"], ["features16"], to=TensorProto.FLOAT16, name="cast_in")
    for n in m.graph.node:
        for j, name in enumerate(n.input):
            if name == "features":
                n.input[j] = "features16"
    m.graph.node.insert(0, cast_in)
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.save(m, half)
    x = mlp_data(200, models.EVAL_SEED)[0]
    ref = qdq.run(str(mlp), x)
    for mode in ("nvfp4", "mxfp8"):
        out = tmp_path / f"{mode}.onnx"
        quantize(cli, mode, half, out, "--calibration_method", "rtn", "--target_runtime", "ort_cpu")
        g = qdq.Graph(onnx.load(out))
        dq = g.dq_on_input(g.by_name["/head/MatMul"], 1)
        scale_source = g.producer[dq.input[1]].input[1] if mode == "nvfp4" else dq.input[1]
        assert g.const(scale_source).dtype == np.float16, mode
        got = run_basic(out, x).astype(np.float32)
        assert (got.argmax(1) == ref.argmax(1)).mean() >= 0.95, mode


@pytest.mark.parametrize("flags,message", [
    (("--quantize_mode", "nvfp4", "--block_size", "64"), "its blocks are 16 weights by definition"),
    (("--quantize_mode", "mxfp8", "--use_zero_point"), "--use_zero_point applies to --quantize_mode int4 only"),
    (("--quantize_mode", "mxfp8", "--calibration_method", "entropy"), "does not apply to --quantize_mode mxfp8"),
])
def test_options_that_do_not_apply_are_refused(flags, message, cli, mlp, tmp_path):
    out = tmp_path / "x.onnx"
    r = cli.run("quantize", "--onnx_path", mlp, "--output_path", out, *flags)
    assert r.returncode != 0 and message in r.error_line(), r.stderr
    assert not out.exists()


def test_loss_report_of_the_standard_form_is_what_onnx_runtime_gives_on_its_twin(cli, mlp, mlp_calib, tmp_path):
    """The nvfp4 trt file does not run in ONNX Runtime; its loss report runs the same weights in
    ONNX Runtime's containers. Recomputed here on the ort_cpu file, on the samples the report names."""
    trt, twin, report = tmp_path / "trt.onnx", tmp_path / "ort.onnx", tmp_path / "r.json"
    quantize(cli, "nvfp4", mlp, trt, "--calibration_data_path", mlp_calib, "--report_json", report)
    quantize(cli, "nvfp4", mlp, twin, "--calibration_data_path", mlp_calib, "--target_runtime", "ort_cpu")
    loss = json.loads(report.read_text())["loss"]
    assert loss["evaluated"] and loss["held_out"] and loss["ort_level"] == "basic", loss
    x = np.load(mlp_calib)[loss["sample_indices"]]
    ref, got = qdq.run(str(mlp), x), run_basic(twin, x)
    cos = qdq.cosine_rows(ref, got)
    out = loss["outputs"][0]
    assert out["output"] == "logits"
    assert abs(out["cosine_mean"] - cos.mean()) < 1e-5 and abs(out["cosine_min"] - cos.min()) < 1e-5, (out, cos)
