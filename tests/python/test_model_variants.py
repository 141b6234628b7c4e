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
