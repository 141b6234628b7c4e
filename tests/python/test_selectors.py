"""Node and op-type selectors. An exact node name selects that node only; anything else is a
regular expression matched from the start of the name. Selectors that match nothing warn."""
from __future__ import annotations

import onnx
import pytest

import qdq

A, B = "/l/MatMul", "/l/MatMul_1"  # B's name starts with A's


@pytest.fixture
def quantize_two(cli, two_matmul, calib, tmp_path):
    def run(*flags):
        out = tmp_path / "two.onnx"
        r = cli.quantize(two_matmul, out, "--calibration_data_path", calib("two_matmul", n=32), *flags)
        g = qdq.Graph(onnx.load(out))
        return {name: g.is_quantized(g.by_name[name]) for name in (A, B)}, r
    return run


def _untouched(g: qdq.Graph, name):
    n = g.by_name[name]
    return all(g.dq_on_input(n, i) is None for i in range(len(n.input)))


def test_both_matmuls_quantized_by_default(quantize_two):
    assert quantize_two()[0] == {A: True, B: True}


def test_exact_name_excludes_only_that_node(quantize_two):
    assert quantize_two("--nodes_to_exclude", A)[0] == {A: False, B: True}


def test_exact_name_of_longer_node(quantize_two):
    assert quantize_two("--nodes_to_exclude", B)[0] == {A: True, B: False}


def test_non_exact_selector_is_prefix_regex(quantize_two):
    assert quantize_two("--nodes_to_exclude", "/l/Mat")[0] == {A: False, B: False}
    assert quantize_two("--nodes_to_exclude", r"/l/MatMul_\d")[0] == {A: True, B: False}


def test_nodes_to_quantize_selects_only_those(quantize_two):
    assert quantize_two("--nodes_to_quantize", B)[0] == {A: False, B: True}


def test_excluded_node_has_no_qdq_at_all(cli, two_matmul, calib, tmp_path):
    out = tmp_path / "two.onnx"
    cli.quantize(two_matmul, out, "--calibration_data_path", calib("two_matmul", n=32), "--nodes_to_exclude", A)
    assert _untouched(qdq.Graph(onnx.load(out)), A)


@pytest.mark.parametrize("flag,value", [("--nodes_to_exclude", "/does/not/exist"),
                                        ("--op_types_to_exclude", "NoSuchOp")])
def test_selector_matching_nothing_warns(quantize_two, flag, value):
    _, r = quantize_two(flag, value)
    lines = [ln for ln in r.stderr.splitlines() if value in ln]
    assert lines and any("warn" in ln.lower() for ln in lines), r.stderr


def test_op_types_to_exclude_conv(cli, resnet, calib, tmp_path):
    out = tmp_path / "noconv.onnx"
    cli.quantize(resnet, out, "--calibration_data_path", calib("resnet", n=32), "--calibration_batch_size", "16",
                 "--op_types_to_exclude", "Conv")
    g = qdq.Graph(onnx.load(out))
    for n in g.nodes:
        if n.op_type == "Conv":
            assert _untouched(g, n.name), f"{n.name} still has Q/DQ"
    assert g.is_quantized(g.by_name["/fc1/Gemm"]), "excluding Conv must not drop Gemm"


def test_op_types_to_quantize_only_gemm(cli, resnet, calib, tmp_path):
    out = tmp_path / "gemm_only.onnx"
    cli.quantize(resnet, out, "--calibration_data_path", calib("resnet", n=32), "--calibration_batch_size", "16",
                 "--op_types_to_quantize", "Gemm")
    g = qdq.Graph(onnx.load(out))
    assert g.is_quantized(g.by_name["/fc1/Gemm"])
    assert not any(g.is_quantized(n) for n in g.nodes if n.op_type == "Conv")
