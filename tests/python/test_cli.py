"""The CLI surface: --help, `ptqkit inspect`, and the summary of a quantize run."""
from __future__ import annotations

import re

import onnx

import qdq

QUANTIZE_FLAGS = [
    "--onnx_path", "--calibration_data_path", "--quantize_mode", "--output_path", "--calibration_method",
    "--percentile", "--calibration_shapes", "--calibration_batch_size", "--calibration_batch_axis",
    "--calibration_eps",
    "--op_types_to_quantize", "--op_types_to_exclude", "--nodes_to_quantize", "--nodes_to_exclude",
    "--dq_only", "--high_precision_dtype", "--use_external_data_format", "--save_calibration_cache",
    "--calibration_cache", "--intra_op_num_threads", "--log_level", "--log_file",
]


def test_quantize_help_lists_every_flag(cli):
    r = cli.ok("quantize", "--help")
    missing = [f for f in QUANTIZE_FLAGS if f not in r.stdout]
    assert not missing, f"--help does not mention {missing}"


def test_no_arguments_is_an_error(cli):
    r = cli.run("quantize")
    assert r.returncode != 0
    assert "--onnx_path" in r.error_line()


def test_inspect_lists_io_opsets_op_counts_and_names(cli, resnet):
    r = cli.ok("inspect", resnet)
    g = qdq.Graph(onnx.load(resnet))
    out = r.stdout
    for name in ("images", "logits"):
        assert name in out
    assert re.search(r"\b17\b", out), "default-domain opset 17 not shown"
    for node in g.nodes:
        assert node.name in out, f"node {node.name} missing"
    lines = out.splitlines()
    for op, count in g.op_counts().items():
        # A line naming the op type with its count (e.g. "Conv 8", "Conv: 8", "8  Conv").
        assert any(re.search(rf"(^|[^\w/]){op}([^\w/]|$)", ln) and re.search(rf"(^|\D){count}(\D|$)", ln)
                   and "/" not in ln for ln in lines), f"no count line for {op} ({count})"


def test_inspect_missing_file(cli, tmp_path):
    r = cli.run("inspect", tmp_path / "nope.onnx")
    assert r.returncode != 0 and "nope.onnx" in r.error_line()


def test_log_file_receives_warnings(cli, small_cnn, tmp_path):
    """Without calibration data ptqkit warns (synthetic data); the warning also goes to --log_file."""
    log = tmp_path / "run.log"
    cli.quantize(small_cnn, tmp_path / "q.onnx", "--log_level", "info", "--log_file", log)
    assert log.is_file() and "synthetic" in log.read_text().lower()


def test_summary_reports_calibration_time_and_output(cli, small_cnn, small_cnn_calib, tmp_path):
    out = tmp_path / "q.onnx"
    r = cli.quantize(small_cnn, out, "--calibration_data_path", small_cnn_calib)
    text = r.stdout + r.stderr
    assert re.search(r"calibration: \d+(\.\d+)? s", text), "no 'calibration: X.XX s' in the summary"
    assert str(out) in text or out.name in text
