"""Calibration data for inputs without samples on axis 0 (issue 8): a scalar int64 input (a
sample rate, as silero VAD's `sr`) is fed unchanged with every batch, and a recurrent state
[layers, B, hidden] takes its samples along axis 1 (explicit --calibration_batch_axis or inferred).
Also the reference document's recipes: float64 .npy is cast with a warning, a pickled dict in an
.npz is refused with the way to save it."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import qdq

HIDDEN = 16
FEATURES = 32


def _make_stateful(path):
    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((3 * HIDDEN, 8)).astype(np.float32) * 0.3
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Cast", ["sr"], ["sr_f"], to=TensorProto.FLOAT, name="cast_sr"),
        helper.make_node("Div", ["sr_f", "k16000"], ["sr_scale"], name="div_sr"),
        helper.make_node("Mul", ["h", "sr_scale"], ["hs"], name="mul_sr"),
        helper.make_node("Relu", ["hs"], ["hr"], name="relu"),
        helper.make_node("Transpose", ["state"], ["st"], perm=[1, 0, 2], name="tr"),
        helper.make_node("Reshape", ["st", "flat"], ["stf"], name="reshape"),
        helper.make_node("Concat", ["hr", "stf"], ["cat"], axis=1, name="concat"),
        helper.make_node("MatMul", ["cat", "w2"], ["y"], name="mm2"),
        helper.make_node("Tanh", ["state"], ["new_state"], name="tanh_state"),
    ]
    graph = helper.make_graph(
        nodes, "stateful",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", FEATURES]),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "B", HIDDEN]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 8]),
         helper.make_tensor_value_info("new_state", TensorProto.FLOAT, [2, "B", HIDDEN])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(np.array(16000.0, np.float32), "k16000"),
         numpy_helper.from_array(np.array([0, 2 * HIDDEN], np.int64), "flat")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((n, FEATURES)).astype(np.float32),
            "state": rng.standard_normal((2, n, HIDDEN)).astype(np.float32),
            "sr": np.array(16000, np.int64)}


@pytest.fixture(scope="module")
def stateful(tmp_path_factory):
    path = tmp_path_factory.mktemp("stateful") / "stateful.onnx"
    _make_stateful(path)
    return path


def _check_output(out, n=5):
    onnx.checker.check_model(onnx.load(out))
    g = qdq.Graph(onnx.load(out))
    assert any(node.op_type == "QuantizeLinear" for node in g.nodes), "no Q/DQ in the output"
    feed = _data(n, seed=9)
    y = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    assert y.shape == (n, 8) and np.isfinite(y).all()


@pytest.mark.parametrize("explicit", [True, False])
def test_scalar_and_batch_axis_1_state(cli, stateful, tmp_path, explicit):
    calib = tmp_path / "calib.npz"
    np.savez(calib, **_data(12))
    out = tmp_path / "q.onnx"
    extra = ["--calibration_batch_axis", "state:1"] if explicit else []
    r = cli.quantize(stateful, out, "--calibration_data_path", calib, "--calibration_batch_size", "4",
                     *extra)
    if not explicit:
        assert "'state'" in r.stderr + r.stdout and "axis 1" in r.stderr + r.stdout, r.stderr
    _check_output(out)


def test_wrong_batch_axis_is_refused(cli, stateful, tmp_path):
    calib = tmp_path / "calib.npz"
    np.savez(calib, **_data(12))
    r = cli.run("quantize", "--onnx_path", stateful, "--output_path", tmp_path / "q.onnx",
                "--calibration_data_path", calib, "--calibration_batch_axis", "state:0")
    assert r.returncode != 0
    assert "state" in r.error_line()


def test_python_keyword_batch_axis(stateful, tmp_path):
    ptqkit = pytest.importorskip("ptqkit")
    out = tmp_path / "q.onnx"
    ptqkit.quantize(stateful, "int8", _data(12), output_path=out, calibration_batch_axis={"state": 1},
                    calibration_batch_size=4)
    _check_output(out)


def test_python_sequence_of_per_sample_feeds(stateful, tmp_path):
    """Per-run feeds as recorded from a stream: state [2, 1, H] each, joined along axis 1; sr 0-d."""
    ptqkit = pytest.importorskip("ptqkit")
    d = _data(6)
    feeds = [{"x": d["x"][i:i + 1], "state": d["state"][:, i:i + 1], "sr": d["sr"]} for i in range(6)]
    out = tmp_path / "q.onnx"
    # eval_samples=0: all 6 joined samples calibrate (none held out for the loss report)
    report = ptqkit.quantize(stateful, "int8", feeds, output_path=out,
                             calibration_batch_axis="state:1", calibration_batch_size=2, eval_samples=0)
    assert report["num_calibration_samples"] == 6
    _check_output(out)


def test_float64_npy_is_cast_with_a_warning(cli, small_cnn, tmp_path):
    import models
    x = models.small_cnn_data(8, seed=1).astype(np.float64)
    calib = tmp_path / "calib.npy"
    np.save(calib, x)
    out = tmp_path / "q.onnx"
    r = cli.quantize(small_cnn, out, "--calibration_data_path", calib)
    assert "float64" in r.stderr.lower() or "double" in r.stderr.lower(), r.stderr
    assert "cast" in r.stderr.lower(), r.stderr
    onnx.checker.check_model(onnx.load(out))


def test_pickled_dict_npz_is_refused_with_the_fix(cli, small_cnn, tmp_path):
    import models
    calib = tmp_path / "calib.npz"
    np.savez(calib, {"input": models.small_cnn_data(4, seed=1)})
    r = cli.run("quantize", "--onnx_path", small_cnn, "--output_path", tmp_path / "q.onnx",
                "--calibration_data_path", calib)
    assert r.returncode != 0
    line = r.error_line()
    assert "pickled" in line and "np.savez(path, **calib_dict)" in line, line


def test_sensitivity_scan_with_scalar_and_state_inputs(cli, stateful, tmp_path):
    import json
    calib = tmp_path / "calib.npz"
    np.savez(calib, **_data(12))
    out = tmp_path / "scores.json"
    r = cli.run("sensitivity", "--onnx_path", stateful, "--calibration_data_path", calib,
                "--granularity", "node", "--calibration_batch_axis", "state:1",
                "--calibration_batch_size", "4", "--output_json", out)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "mm1" in text and "mm2" in text, text[:2000]
    json.loads(text)
