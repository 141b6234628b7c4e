"""FP8 outputs at every ONNX Runtime level, --target_runtime and --reduce_range (issues 9 and 23).

FP8 Q/DQ carry no zero point, so ONNX Runtime's default level (these tests run onnxruntime 1.32 from
the test venv) computes the TensorRT-form file as its basic level does; --target_runtime ort_cpu
writes the same file.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import models


def _session(path, basic):
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC if basic
                                   else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def _clip_cnn(path):
    """Conv -> Clip(0, 6) -> Conv -> Relu -> GAP -> Gemm: ReLU6 as mobile CNNs export it."""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(rng.normal(0, 0.1, (32, 32, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.normal(0, 0.1, (32, 32, 3, 3)).astype(np.float32), "w2"),
             numpy_helper.from_array(rng.normal(0, 0.3, (10, 32)).astype(np.float32), "fc"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6, np.float32), "hi")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1] * 4),
             helper.make_node("Clip", ["c1", "lo", "hi"], ["r1"], name="relu6"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1] * 4),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc_gemm", transB=1)]
    g = helper.make_graph(nodes, "clip_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32, 12, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.fixture(scope="module")
def clip_cnn(tmp_path_factory):
    d = tmp_path_factory.mktemp("clip_cnn")
    _clip_cnn(d / "m.onnx")
    rng = np.random.default_rng(5)
    np.save(d / "calib.npy", rng.normal(0, 1, (64, 32, 12, 12)).astype(np.float32))
    return d / "m.onnx", d / "calib.npy", rng.normal(0, 1, (200, 32, 12, 12)).astype(np.float32)


def test_fp8_without_zero_points_runs_alike_at_every_onnx_runtime_level(cli, clip_cnn, tmp_path):
    """FP8 Q/DQ carry no zero point (the Q names FLOAT8E4M3FN in output_dtype, opset 21). The
    Relu/Clip -> QuantizeLinear pairs TensorRT fuses stay, and ONNX Runtime's default level, whose
    Relu/Clip + Q rewrites match only a Q with a zero point, computes the file as its basic level."""
    model, calib, x = clip_cnn
    trt, ocpu = tmp_path / "trt.onnx", tmp_path / "ort.onnx"
    cli.quantize(model, trt, "--quantize_mode", "fp8", "--calibration_data_path", calib)
    cli.quantize(model, ocpu, "--quantize_mode", "fp8", "--calibration_data_path", calib, "--target_runtime", "ort_cpu")
    assert trt.read_bytes() == ocpu.read_bytes()
    m = onnx.load(str(trt))
    assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [21]
    g = m.graph
    qs = [n for n in g.node if n.op_type == "QuantizeLinear"]
    dqs = [n for n in g.node if n.op_type == "DequantizeLinear"]
    assert qs and dqs and all(len(n.input) == 2 for n in qs + dqs)
    assert all({a.name: a.i for a in n.attribute}.get("output_dtype") == TensorProto.FLOAT8E4M3FN for n in qs)
    producer = {o: n for n in g.node for o in n.output}
    clamped = [n for n in qs if n.input[0] in producer and producer[n.input[0]].op_type in ("Relu", "Clip")]
    assert clamped, "the Clip's output is quantized where it is (what TensorRT fuses)"
    basic = _session(trt, basic=True).run(None, {"x": x})[0]
    default = _session(trt, basic=False).run(None, {"x": x})[0]
    assert np.abs(default - basic).max() <= 1e-4 * max(1.0, np.abs(basic).max())
    ref = _session(model, basic=True).run(None, {"x": x})[0]
    assert (ref.argmax(1) == basic.argmax(1)).mean() >= 0.9


def test_the_old_zero_point_form_is_what_the_default_level_miscomputes(cli, clip_cnn, tmp_path):
    """Why the zero points went: the same file with an FP8 zero point added to every Q/DQ is
    computed differently by ONNX Runtime's default level (its ReluQuantRewrite drops the Relu in
    front of an FP8 Q; ClipQuantRewrite refuses the FP8 zero point). If this starts to pass with
    equal outputs, ONNX Runtime fixed its rules and this test can go."""
    model, calib, x = clip_cnn
    out = tmp_path / "q.onnx"
    cli.quantize(model, out, "--quantize_mode", "fp8", "--calibration_data_path", calib)
    m = onnx.load(str(out))
    m.graph.initializer.append(helper.make_tensor("fp8_zero", TensorProto.FLOAT8E4M3FN, [], [0.0]))
    per_tensor = {t.name for t in m.graph.initializer if not t.dims}  # activations: the weights' scales are per channel
    for n in m.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") and n.input[1] in per_tensor:
            n.input.append("fp8_zero")
            keep = [a for a in n.attribute if a.name != "output_dtype"]
            del n.attribute[:]
            n.attribute.extend(keep)
    zp = tmp_path / "zp.onnx"
    onnx.save(m, str(zp))
    basic = _session(zp, basic=True).run(None, {"x": x})[0]
    same_as_written = _session(out, basic=True).run(None, {"x": x})[0]
    np.testing.assert_array_equal(basic, same_as_written)
    try:
        default = _session(zp, basic=False).run(None, {"x": x})[0]
    except Exception as e:  # noqa: BLE001 - ClipQuantRewrite (clip_quantizelinear.cc) refuses the FP8 zero point
        assert "clip_quantizelinear" in str(e) or "zero_point" in str(e), e
        return
    assert np.abs(default - basic).max() > 1e-3 * max(1.0, np.abs(basic).max())


def test_ort_cpu_changes_nothing_for_int8(cli, clip_cnn, tmp_path):
    model, calib, _ = clip_cnn
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    cli.quantize(model, a, "--calibration_data_path", calib)
    cli.quantize(model, b, "--calibration_data_path", calib, "--target_runtime", "ort_cpu")
    assert a.read_bytes() == b.read_bytes()


def test_reduce_range_stores_seven_bit_weights(cli, tmp_path):
    model, calib = tmp_path / "cnn.onnx", tmp_path / "calib.npy"
    models.make_small_cnn(model)
    np.save(calib, models.small_cnn_data(32, 1))
    out = tmp_path / "q.onnx"
    cli.quantize(model, out, "--calibration_data_path", calib, "--reduce_range", "--dq_only")
    m = onnx.load(str(out))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    int8 = [v for v in inits.values() if v.dtype == np.int8 and v.ndim >= 2]
    assert int8 and all(np.abs(v.astype(int)).max() == 63 for v in int8)
    x = models.small_cnn_data(64, 9)
    ref = _session(model, True).run(None, {models.SMALL_CNN_INPUT: x})[0]
    got = _session(out, False).run(None, {models.SMALL_CNN_INPUT: x})[0]
    assert (ref.argmax(1) == got.argmax(1)).mean() >= 0.95


@pytest.mark.parametrize("args,message", [
    (["--target_runtime", "tensorrt"], "--target_runtime: 'tensorrt' is not one of trt, ort_cpu"),
    (["--quantize_mode", "fp8", "--reduce_range"], "--reduce_range applies to --quantize_mode int8 only"),
])
def test_refusals(cli, clip_cnn, tmp_path, args, message):
    model, calib, _ = clip_cnn
    r = cli.run("quantize", "--onnx_path", model, "--output_path", tmp_path / "q.onnx",
                "--calibration_data_path", calib, *args)
    assert r.returncode != 0 and message in r.error_line()
