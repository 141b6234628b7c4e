"""The sensitivity code blocks of the reference document ("Quantization Sensitivity Scan",
"Turning scores into an exclusion list", "Grouping per-node scores into architectural blocks"),
with `modelopt.onnx.quantization` replaced by `ptqkit` and CoAtNet/ViT replaced by the two-block
transformer fixture (nodes /blocks.0/..., /blocks.1/..., /head/...). Every result is also
checked against the CLI (`ptqkit sensitivity`, `ptqkit exclude`) on the same inputs."""
from __future__ import annotations

import json
import re

import numpy as np
import onnx
import pytest

from api_helpers import without_timings


def _cli_scores(cli, tmp_path, model, data, *extra) -> dict:
    out = tmp_path / "cli.sensitivity.json"
    cli.ok("sensitivity", "--onnx_path", model, "--calibration_data_path", data, "--output_json", out, *extra)
    return json.loads(out.read_text())


def _cli_exclude(cli, tmp_path, scores: dict, *extra) -> dict:
    scores_file = tmp_path / "scores_for_exclude.json"
    scores_file.write_text(json.dumps({**scores_template(), "scores": scores}))
    return json.loads(cli.ok("exclude", "--scores", scores_file, "--format", "json", *extra).stdout)


def scores_template() -> dict:
    return {"onnx_path": "m.onnx", "failed": [], "calibration_source": "real", "num_calibration_samples": 32,
            "metric": "kl_div", "granularity": "node", "target_precision": "int8"}


def _blocks_file(tmp_path, blocks) -> str:
    path = tmp_path / "blocks.json"
    path.write_text(json.dumps(blocks))
    return str(path)


@pytest.mark.parametrize("granularity", ["op_type", "node"])
def test_reference_score(granularity, tmp_path, transformer, transformer_npz, cli):
    # --- reference: "Python API" of the sensitivity scan ---
    from ptqkit.sensitivity import score

    result = score(
        onnx_path=str(transformer),
        calibration_data=str(transformer_npz),
        granularity=granularity,
        metric="kl_div",
        target_precision="int8",
    )
    # result["scores"] is a dict {op_type_or_node_name: metric_value}, higher = more sensitive.
    # --- end of reference ---
    assert isinstance(result["scores"], dict) and result["scores"]
    assert all(isinstance(v, float) and v >= 0 for v in result["scores"].values())
    assert result["granularity"] == granularity and result["calibration_source"] == "real"
    assert result["failed"] == [] or all({"target", "reason"} <= set(f) for f in result["failed"])
    if granularity == "op_type":
        assert {"MatMul", "Softmax"} <= set(result["scores"])
    else:
        assert "/blocks.0/attn/q/MatMul" in result["scores"]
    cli_result = _cli_scores(cli, tmp_path, transformer, transformer_npz, "--granularity", granularity)
    assert without_timings(result) == without_timings(cli_result)


def test_score_output_json_and_in_memory_data_match_the_cli(tmp_path, transformer, transformer_npz, cli):
    from ptqkit.sensitivity import score

    result = score(transformer, dict(np.load(transformer_npz)), granularity="node", metric="mse",
                   calibration_method="max", op_types_scope=["MatMul", "Add"],
                   output_json=tmp_path / "py.json", report=tmp_path / "py.html")
    cli_result = _cli_scores(cli, tmp_path, transformer, transformer_npz, "--granularity", "node",
                             "--metric", "mse", "--calibration_method", "max",
                             "--op_types_scope", "MatMul", "Add")
    assert without_timings(result) == without_timings(cli_result)
    assert without_timings(json.loads((tmp_path / "py.json").read_text())) == without_timings(cli_result)
    assert (tmp_path / "py.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert {n.split("/")[-1].rstrip("_0123456789") for n in result["scores"]} <= {"MatMul", "Add"}


def test_score_without_data_is_synthetic(transformer):
    from ptqkit.sensitivity import score

    result = score(transformer, num_calib_samples=4)
    assert result["calibration_source"] == "synthetic" and result["num_calibration_samples"] == 4


def test_reference_coverage_mode(tmp_path, transformer, transformer_npz, node_scores, cli):
    # --- reference: "Python API -- coverage mode" ---
    from ptqkit import quantize
    from ptqkit.sensitivity import (
        score, suggest_exclusion, summarize_exclusion,
    )

    result = score(
        onnx_path=str(transformer),
        calibration_data=str(transformer_npz),
        granularity="node",
    )

    # Leave at most 90% of the total sensitivity score mass at FP16; quantize the rest.
    excluded = suggest_exclusion(result["scores"], coverage=0.90)

    quantize(
        onnx_path=str(transformer),
        quantize_mode="int8",
        calibration_data=str(transformer_npz),
        nodes_to_exclude=excluded,
        output_path=str(tmp_path / "transformer.quant.onnx"),
    )
    # --- end of reference ---
    assert result["scores"] == node_scores
    assert excluded, "coverage 0.90 of a non-zero score mass excludes something"
    ranked = sorted(node_scores, key=lambda n: (-node_scores[n], n))
    assert excluded == ranked[:len(excluded)]
    assert sum(node_scores[n] for n in excluded) <= 0.90 * sum(node_scores.values()) * (1 + 1e-9)
    assert excluded == _cli_exclude(cli, tmp_path, node_scores, "--coverage", "0.90")["excluded"]

    # No excluded node reads a DequantizeLinear output in the quantized model.
    model = onnx.load(str(tmp_path / "transformer.quant.onnx"))
    dq_outputs = {o for n in model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    assert any(n.op_type == "QuantizeLinear" for n in model.graph.node)
    for node in model.graph.node:
        if node.name in excluded:
            assert not dq_outputs & set(node.input), node.name
    summary = summarize_exclusion(result["scores"], excluded)
    assert summary["num_excluded"] == len(excluded)


def test_reference_threshold_mode(tmp_path, node_scores, cli):
    from ptqkit.sensitivity import suggest_exclusion

    result = {"scores": node_scores}
    threshold = float(np.quantile(list(node_scores.values()), 0.8))
    # --- reference: "Python API -- threshold mode" (the value is model specific) ---
    excluded = suggest_exclusion(result["scores"], threshold=threshold)
    # --- end of reference ---
    expected = sorted((n for n, s in node_scores.items() if s > threshold), key=lambda n: (-node_scores[n], n))
    assert excluded == expected and excluded
    assert excluded == _cli_exclude(cli, tmp_path, node_scores, "--threshold", repr(threshold))["excluded"]


@pytest.mark.parametrize("block_agg", ["max", "sum"])
def test_reference_blocks(block_agg, tmp_path, transformer, transformer_npz, node_scores, cli, capsys):
    # --- reference: "Example: vit_tiny_patch16_224 from timm" (2 blocks, named /blocks.N/) ---
    from ptqkit import quantize
    from ptqkit.sensitivity import (
        score, suggest_exclusion, summarize_exclusion,
    )

    result = score(
        onnx_path=str(transformer),
        calibration_data=str(transformer_npz),
        granularity="node",
        metric="kl_div",
        target_precision="int8",
    )

    blocks = {f"blocks.{n}": [rf"^/blocks\.{n}/"] for n in range(2)}

    # The fixture's scores are small: take a threshold between its group scores.
    groups = _groups(result["scores"], blocks, block_agg)
    threshold = float(np.median(list(groups.values())))
    excluded = suggest_exclusion(
        result["scores"],
        threshold=threshold, blocks=blocks, block_agg=block_agg,
    )
    print(summarize_exclusion(result["scores"], excluded))

    quantize(
        onnx_path=str(transformer),
        output_path=str(tmp_path / "transformer.block_excluded.onnx"),
        calibration_data=str(transformer_npz),
        nodes_to_exclude=excluded,
        quantize_mode="int8",
    )
    # --- end of reference ---
    printed = capsys.readouterr().out
    assert "coverage_pct" in printed and "num_remaining_quantized" in printed
    # Whole groups: the members of every group scoring above the threshold, and nothing else.
    selected = [g for g, v in groups.items() if v > threshold]
    assert selected and len(selected) < len(groups)
    assert set(excluded) == {n for n in node_scores if _group_of(n, blocks) in selected}
    cli_pick = _cli_exclude(cli, tmp_path, node_scores, "--threshold", repr(threshold),
                            "--blocks", _blocks_file(tmp_path, blocks), "--block_agg", block_agg)
    assert excluded == cli_pick["excluded"]

    # --- reference: "sum + max_nodes" / "max + threshold" expressions ---
    scores = result["scores"]
    by_max_nodes = suggest_exclusion(scores, coverage=1.0, max_nodes=len(selected), blocks=blocks,
                                     block_agg=block_agg)
    # --- end of reference ---
    assert by_max_nodes == excluded


def _group_of(name: str, blocks: dict) -> str:
    """First group with a regex found in the name; else the name itself (a singleton)."""
    return next((g for g, patterns in blocks.items() if any(re.search(p, name) for p in patterns)), name)


def _groups(scores: dict, blocks: dict, agg: str) -> dict:
    members = {}
    for name, value in scores.items():
        members.setdefault(_group_of(name, blocks), []).append(value)
    return {g: (max(v) if agg == "max" else sum(v)) for g, v in members.items()}


def test_depth2_blocks_first_match_wins(node_scores):
    from ptqkit.sensitivity import suggest_exclusion

    blocks_depth2 = {}
    for n in range(2):
        blocks_depth2[f"blocks.{n}.attn"] = [rf"^/blocks\.{n}/norm1", rf"^/blocks\.{n}/attn/", rf"^/blocks\.{n}/Add$"]
        blocks_depth2[f"blocks.{n}.mlp"] = [rf"^/blocks\.{n}/norm2", rf"^/blocks\.{n}/mlp/", rf"^/blocks\.{n}/Add_1$"]
    everything = suggest_exclusion(node_scores, coverage=1.0, blocks=blocks_depth2, near_tie_ratio=None)
    assert set(everything) == {n for n, s in node_scores.items() if s > 0}
    one_group = suggest_exclusion(node_scores, coverage=1.0, max_nodes=1, blocks=blocks_depth2)
    groups = _groups(node_scores, blocks_depth2, "sum")
    top = min(groups, key=lambda g: (-groups[g], g))
    assert set(one_group) == {n for n in node_scores if _group_of(n, blocks_depth2) == top}


def test_reference_summarize_exclusion(tmp_path, node_scores, cli, caplog):
    from ptqkit.sensitivity import suggest_exclusion, summarize_exclusion

    excluded = suggest_exclusion(node_scores, coverage=0.5)
    summary = summarize_exclusion(node_scores, excluded)
    assert set(summary) == {"coverage_pct", "num_excluded", "num_previously_quantized",
                            "num_remaining_quantized", "num_non_finite", "excluded_mass", "total_mass"}
    assert summary["num_previously_quantized"] == len(node_scores)
    assert summary["num_remaining_quantized"] == len(node_scores) - len(excluded)
    assert summary["total_mass"] == pytest.approx(sum(node_scores.values()))
    assert summary["coverage_pct"] == pytest.approx(100 * summary["excluded_mass"] / summary["total_mass"])
    cli_summary = _cli_exclude(cli, tmp_path, node_scores, "--coverage", "0.5")["summary"]
    assert {k: cli_summary[k] for k in summary} == summary

    # Names that are not scored, or repeat, are not counted and are logged as warnings.
    with caplog.at_level("WARNING", logger="ptqkit"):
        again = summarize_exclusion(node_scores, [*excluded, excluded[0], "/not/a/node"])
    assert again == summary
    assert "/not/a/node" in caplog.text


def test_near_tie_is_a_logged_warning(caplog):
    from ptqkit.sensitivity import suggest_exclusion

    scores = {"a": 1.0, "b": 0.999, "c": 0.001}
    with caplog.at_level("WARNING", logger="ptqkit"):
        assert suggest_exclusion(scores, max_nodes=1) == ["a"]
    assert any(r.name == "ptqkit" and "b" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="ptqkit"):
        suggest_exclusion(scores, max_nodes=1, near_tie_ratio=None)
    assert not caplog.records
