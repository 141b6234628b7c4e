"""Models and data in the less common forms: old opsets, Constant-node weights, external data,
calibration data as .npz / directory / none, the default output path, and what must survive."""
from __future__ import annotations

import os
import shutil

import numpy as np
import onnx
import pytest

import models
import qdq


def _runs(path, n=4):
    x = models.small_cnn_data(n, 9)
    return qdq.run(str(path), x)


def test_opset11_model_is_upgraded(cli, tmp_path, small_cnn_calib):
    src = tmp_path / "old.onnx"
    models.make_opset11_model(src)
    out = tmp_path / "old.quant.onnx"
    cli.quantize(src, out, "--calibration_data_path", small_cnn_calib)
    m = onnx.load(out)
    assert qdq.opset(m) >= 13, "per-channel DequantizeLinear needs opset 13"
    g = qdq.Graph(m)
    assert g.is_quantized(g.by_name["/conv2/Conv"])
    ref = qdq.run(str(src), models.small_cnn_data(16, 9))
    res = qdq.run(str(out), models.small_cnn_data(16, 9))
    assert qdq.cosine_rows(ref, res).mean() > 0.99


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_ir_version_14_model_is_read_as_13(cli, tmp_path, mode):
    """onnx 1.23's make_model writes IR 14, which the bundled ONNX Runtime (1.30) refuses; opset 17 needs 8."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w1, w2 = ((rng.standard_normal(shape) / 8).astype(np.float32) for shape in ((64, 64), (64, 32)))
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32])],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 14
    src, out, data = tmp_path / "ir14.onnx", tmp_path / "ir14.quant.onnx", tmp_path / "x.npy"
    onnx.save(m, src)
    np.save(data, rng.standard_normal((32, 64)).astype(np.float32))
    r = cli.quantize(src, out, "--quantize_mode", mode, "--calibration_data_path", data)
    assert "declares IR version 14; read as 13" in r.stderr + r.stdout
    q = onnx.load(out)
    assert q.ir_version <= 13
    onnx.checker.check_model(q, full_check=True)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    ref, got = np.maximum(x @ w1, 0) @ w2, qdq.run(str(out), x)
    assert qdq.cosine_rows(ref, got).mean() > 0.98


def test_constant_node_weight_gets_per_channel_qdq(cli, tmp_path, small_cnn_calib):
    src = tmp_path / "const.onnx"
    models.make_constant_weight_model(src)
    out = tmp_path / "const.quant.onnx"
    cli.quantize(src, out, "--calibration_data_path", small_cnn_calib)
    g = qdq.Graph(onnx.load(out))
    conv = g.by_name["/conv/Conv"]
    assert g.is_quantized(conv)
    wq = qdq.weight_quant(g, conv)
    assert wq.axis == 0 and wq.scale.shape == (32,)
    assert wq.zero_point is not None and wq.zero_point.dtype == np.int8 and not wq.zero_point.any()
    _runs(out)


def test_external_data_input(cli, tmp_path, small_cnn_calib):
    src_dir, out_dir = tmp_path / "src", tmp_path / "out"
    src_dir.mkdir()
    out_dir.mkdir()
    src = src_dir / "ext.onnx"
    models.make_external_data_model(src)
    assert (src_dir / "ext.onnx.data").exists()
    out = out_dir / "ext.quant.onnx"
    cli.quantize(src, out, "--calibration_data_path", small_cnn_calib,
                 also_unchanged=[src_dir / "ext.onnx.data"])
    m = onnx.load(out)  # loads external data relative to out_dir, if any was written
    assert qdq.Graph(m).is_quantized(qdq.Graph(m).by_name["/conv2/Conv"])
    assert qdq.cosine_rows(_runs(src), _runs(out)).mean() > 0.99


def test_use_external_data_format_writes_data_file(cli, tmp_path, small_cnn, small_cnn_calib):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "q.onnx"
    cli.quantize(small_cnn, out, "--calibration_data_path", small_cnn_calib, "--use_external_data_format")
    bare = onnx.load(out, load_external_data=False)
    locations = {e.value for t in bare.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL
                 for e in t.external_data if e.key == "location"}
    assert locations, "no initializer stored as external data"
    for loc in locations:
        assert os.path.dirname(loc) == "" and (out_dir / loc).is_file(), f"data file {loc} not beside output"
    onnx.load(out)
    assert qdq.cosine_rows(_runs(small_cnn), _runs(out)).mean() > 0.99


def test_default_output_path(cli, tmp_path, small_cnn, small_cnn_calib):
    src = tmp_path / "net.onnx"
    shutil.copy(small_cnn, src)
    cli.ok("quantize", "--onnx_path", src, "--calibration_data_path", small_cnn_calib)
    assert (tmp_path / "net.quant.onnx").is_file()
    assert sorted(os.listdir(tmp_path)) == ["net.onnx", "net.quant.onnx"], "stray files beside output"


@pytest.mark.parametrize("fmt", ["npz", "dir"])
def test_calibration_formats_give_same_model(cli, tmp_path, small_cnn, calib, fmt):
    """.npy, .npz and a directory of .npy chunks holding the same samples give the same model."""
    outs = []
    for f in ("npy", fmt):
        out = tmp_path / f"{f}.onnx"
        cli.quantize(small_cnn, out, "--calibration_data_path", calib("small_cnn", n=30, fmt=f))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_no_calibration_data_warns(cli, tmp_path, small_cnn):
    out = tmp_path / "synthetic.onnx"
    r = cli.quantize(small_cnn, out)
    assert "warn" in r.stderr.lower() and "synthetic" in r.stderr.lower(), r.stderr
    assert qdq.Graph(onnx.load(out)).op_counts()["DequantizeLinear"] > 0


def test_metadata_doc_string_and_producer_survive(cli, tmp_path, small_cnn_calib):
    src = tmp_path / "meta.onnx"
    m = models.make_small_cnn(None)
    m.doc_string = "model doc ✓"
    m.graph.doc_string = "graph doc"
    m.producer_name, m.producer_version = "pytorch", "2.1.0"
    m.domain, m.model_version = "ai.example", 42
    onnx.helper.set_model_props(m, {"author": "ptqkit tests", "license": "MIT"})
    m.graph.node[0].doc_string = "first node doc"
    onnx.save(m, src)
    out = tmp_path / "meta.quant.onnx"
    cli.quantize(src, out, "--calibration_data_path", small_cnn_calib)
    q = onnx.load(out)
    assert q.doc_string == "model doc ✓" and q.graph.doc_string == "graph doc"
    assert (q.producer_name, q.producer_version) == ("pytorch", "2.1.0")
    assert (q.domain, q.model_version) == ("ai.example", 42)
    props = {p.key: p.value for p in q.metadata_props}
    assert props.get("author") == "ptqkit tests" and props.get("license") == "MIT", props
    assert qdq.Graph(q).by_name[m.graph.node[0].name].doc_string == "first node doc"
    assert q.graph.name == m.graph.name


def _group_norm_model(path):
    """Conv -> GroupNormalization (opset 18: scale/bias per group) -> Relu -> Conv, as diffusion UNets export it."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, 0.1, (32, 32, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(np.array([0.5, 1.0, 1.5, 2.0], np.float32), "gn_scale"),
             numpy_helper.from_array(np.array([0.1, -0.1, 0.2, 0.0], np.float32), "gn_bias"),
             numpy_helper.from_array(rng.normal(0, 0.1, (32, 32, 3, 3)).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1] * 4),
             helper.make_node("GroupNormalization", ["c", "gn_scale", "gn_bias"], ["g"], name="gn", num_groups=4),
             helper.make_node("Relu", ["g"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2", pads=[1] * 4)]
    g = helper.make_graph(nodes, "gn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.mark.parametrize("mode", ["int8", "fp8"])
def test_group_normalization_18_is_raised_to_21_per_channel(cli, tmp_path, mode):
    """GroupNormalization-18 is deprecated (the checker refuses it) and its scale/bias become per channel
    at opset 21, which ONNX's version converter does not do: ptqkit widens them (value g for the 8
    channels of group g) and raises such a model to 21 in every mode."""
    import onnxruntime as ort
    src, out, calib = tmp_path / "gn.onnx", tmp_path / "gn.q.onnx", tmp_path / "gn.npy"
    _group_norm_model(src)
    x = np.random.default_rng(1).normal(0, 1, (16, 32, 8, 8)).astype(np.float32)
    np.save(calib, x)
    cli.quantize(src, out, "--quantize_mode", mode, "--calibration_data_path", calib, "--op_types_to_quantize", "Conv")
    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [21]
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    gn = next(n for n in m.graph.node if n.op_type == "GroupNormalization")
    np.testing.assert_array_equal(inits[gn.input[1]], np.repeat([0.5, 1.0, 1.5, 2.0], 8).astype(np.float32))
    np.testing.assert_array_equal(inits[gn.input[2]], np.repeat([0.1, -0.1, 0.2, 0.0], 8).astype(np.float32))
    assert "gn_scale" not in inits and "gn_bias" not in inits
    ref = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(got - ref).max() <= 0.1 * np.abs(ref).max()
