"""--target_runtime ort_cpu and --reduce_range (issue 9 item 3).

The FP8 ort_cpu form moves the Q/DQ of a Relu/Clip output onto the Relu/Clip input and re-applies the
Relu/Clip after the DQ. It must compute what the TensorRT form computes (both as fake-quant, ONNX
Runtime's basic level), leave no Relu/Clip -> QuantizeLinear pair, and give the same outputs at ONNX
Runtime's default level (these tests run onnxruntime 1.32 from the test venv) as at the basic level.
"""
from __future__ import annotations

import json

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


def test_ort_cpu_fp8_has_no_clamp_before_quantize_and_computes_the_same(cli, clip_cnn, tmp_path):
    model, calib, x = clip_cnn
    trt, ocpu = tmp_path / "trt.onnx", tmp_path / "ort.onnx"
    cli.quantize(model, trt, "--quantize_mode", "fp8", "--calibration_data_path", calib)
    cli.quantize(model, ocpu, "--quantize_mode", "fp8", "--calibration_data_path", calib, "--target_runtime", "ort_cpu")
    g = onnx.load(str(ocpu)).graph
    producer = {o: n for n in g.node for o in n.output}
    qs = [n for n in g.node if n.op_type == "QuantizeLinear"]
    assert qs and not [n.name for n in qs if producer.get(n.input[0]) is not None
                       and producer[n.input[0]].op_type in ("Relu", "Clip")]
    # The Clip was moved, not lost: it now reads a DequantizeLinear, and the original is gone. (The
    # Relu feeds a GlobalAveragePool, which FP8 does not quantize: it stays where it was.)
    clips = [n for n in g.node if n.op_type == "Clip"]
    assert len(clips) == 1 and producer[clips[0].input[0]].op_type == "DequantizeLinear"
    assert [producer[n.input[0]].op_type for n in g.node if n.op_type == "Relu"] == ["Conv"]
    a = _session(trt, basic=True).run(None, {"x": x})[0]
    b = _session(ocpu, basic=True).run(None, {"x": x})[0]
    # Relu moves exactly; a Clip bound may now be hit exactly instead of its nearest FP8 grid point.
    assert np.abs(a - b).max() <= 0.02 * np.abs(a).max()
    assert (a.argmax(1) == b.argmax(1)).mean() >= 0.99
    # ONNX Runtime's default level computes the ort_cpu file as its basic level does.
    d = _session(ocpu, basic=False).run(None, {"x": x})[0]
    assert np.abs(d - b).max() <= 1e-4 * max(1.0, np.abs(b).max())


def test_trt_form_fp8_summary_says_which_onnx_runtime_level_computes_it(cli, clip_cnn, tmp_path):
    """The TensorRT-form FP8 file keeps its Relu/Clip -> QuantizeLinear pairs (what TensorRT fuses);
    the summary and the JSON report count them and tell an ONNX Runtime user to validate at basic
    level or write the ort_cpu form; the ort_cpu run has none and says nothing."""
    model, calib, _ = clip_cnn
    trt, ocpu, rep = tmp_path / "trt.onnx", tmp_path / "ort.onnx", tmp_path / "r.json"
    r = cli.quantize(model, trt, "--quantize_mode", "fp8", "--calibration_data_path", calib, "--report_json", rep)
    g = onnx.load(str(trt)).graph
    producer = {o: n for n in g.node for o in n.output}
    pairs = [n for n in g.node if n.op_type == "QuantizeLinear" and n.input[0] in producer
             and producer[n.input[0]].op_type in ("Relu", "Clip")]
    assert pairs, "the TensorRT form quantizes the Clip's output"
    assert json.loads(rep.read_text())["fp8_clamp_quantize_pairs"] == len(pairs)
    assert "validate this TensorRT-form FP8 file at ORT_ENABLE_BASIC" in r.stdout
    assert f"its {len(pairs)} Relu/Clip -> FP8 QuantizeLinear pair(s)" in r.stdout
    r = cli.quantize(model, ocpu, "--quantize_mode", "fp8", "--calibration_data_path", calib,
                     "--target_runtime", "ort_cpu", "--report_json", rep)
    assert json.loads(rep.read_text())["fp8_clamp_quantize_pairs"] == 0
    assert "ORT_ENABLE_BASIC" not in r.stdout
    # INT8 has no such hazard: the count is for FP8 zero points only.
    r = cli.quantize(model, trt, "--calibration_data_path", calib, "--report_json", rep)
    assert json.loads(rep.read_text())["fp8_clamp_quantize_pairs"] == 0 and "ORT_ENABLE_BASIC" not in r.stdout


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
