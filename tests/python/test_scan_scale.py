"""The scan at scale (issue 42): probes in sample chunks score exactly as one pass over all
samples, --stop_when_settled stops sampling targets whose place is settled without changing what
it claims, and a long run shows progress when stderr is a pipe."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

N = 512  # samples: 32 evaluation batches of 16


def scan(cli, model, data, out, *extra):
    r = cli.ok("sensitivity", "--onnx_path", model, "--calibration_data_path", data, "--granularity", "node",
               "--output_json", out, *extra)
    return r, json.loads(Path(out).read_text())


@pytest.fixture(scope="module")
def full(cli, transformer, calib, tmp_path_factory):
    data = calib("transformer", n=N)
    _, js = scan(cli, transformer, data, tmp_path_factory.mktemp("full") / "s.json", "--stop_when_settled", "false")
    assert "sampling" not in js
    return data, js


@pytest.mark.parametrize("extra", [["--probe_chunk_samples", "16"], ["--probe_chunk_samples", "100"],
                                   ["--activation_cache_limit_mb", "20"]])
def test_chunked_probes_score_bit_identically(cli, transformer, full, tmp_path, extra):
    """Scores are means over samples added in sample order, so any chunking gives the same doubles.
    A cache limit below one batch's activations (4 MiB here) would run whole-model probes instead,
    which ONNX Runtime fuses differently (equal to about 1e-5 relative, not bit for bit)."""
    data, reference = full
    r, js = scan(cli, transformer, data, tmp_path / "s.json", *extra, "--stop_when_settled", "false")
    assert re.search(r"512 samples in \d+ chunk\(s\) of up to \d+; FP32 activations cached one pass at a time", r.stderr), r.stderr[-2000:]
    assert js["scores"] == reference["scores"]  # exact float equality, every target
    assert "sampling" not in js


def test_stop_when_settled_keeps_what_it_claims(cli, transformer, full, tmp_path):
    data, reference = full
    _, js = scan(cli, transformer, data, tmp_path / "s.json")  # the default
    sampling = js["sampling"]
    assert set(sampling) == set(js["scores"])
    assert all(0 < s["samples"] <= N and s["low"] <= js["scores"][t] <= s["high"] for t, s in sampling.items()
               if s["settled"] != "unreached")
    early = {t: s for t, s in sampling.items() if s["settled"] != "all samples"}
    assert early, "no target settled before the last sample"
    assert all(s["samples"] >= 64 and s["samples"] < N for s in early.values())
    assert {s["settled"] for s in sampling.values()} <= {"separated", "precise", "negligible", "decided",
                                                          "all samples", "unreached"}
    # A target that saw every sample scores exactly as in the full scan.
    for t, s in sampling.items():
        if s["samples"] == N:
            assert js["scores"][t] == reference["scores"][t], t
    # "separated": its place in the full-sample ranking is the one the early ranking gives it.
    full_rank = sorted(reference["scores"], key=lambda t: (-reference["scores"][t], t))
    early_rank = sorted(js["scores"], key=lambda t: (-js["scores"][t], t))
    for t, s in sampling.items():
        if s["settled"] == "separated":
            assert full_rank.index(t) == early_rank.index(t), t
    # "negligible": under 0.1 % of the mass in the full scan too (within its interval's reach).
    mass = sum(reference["scores"].values())
    for t, s in early.items():
        if s["settled"] == "negligible":
            assert reference["scores"][t] < 0.01 * mass, t
    # "decided": the default picker (coverage 0.90) makes the same call for it on the full scores.
    def excluded(scores):
        out, total = set(), 0.0
        for t in sorted(scores, key=lambda t: (-scores[t], t)):
            if total + scores[t] > 0.9 * sum(scores.values()):
                break
            total += scores[t]
            out.add(t)
        return out
    early_cut, full_cut = excluded(js["scores"]), excluded(reference["scores"])
    decided = [t for t, s in early.items() if s["settled"] == "decided"]
    agree = sum((t in early_cut) == (t in full_cut) for t in decided)
    assert agree >= 0.9 * len(decided), (agree, len(decided))


def test_progress_lines_when_stderr_is_a_pipe(cli, transformer, full, tmp_path, monkeypatch):
    data, _ = full
    monkeypatch.setenv("PTQKIT_PROGRESS_INTERVAL_S", "0")  # a line per update instead of every ~10 s
    r, _ = scan(cli, transformer, data, tmp_path / "s.json", "--probe_chunk_samples", "128", "--stop_when_settled",
                "false")
    lines = r.stderr.splitlines()
    assert any(re.fullmatch(r"ptqkit: calibrating: \d+/\d+ batches \(\d+%\); \d+s elapsed(, ETA \d+s)?", ln)
               for ln in lines), r.stderr[-3000:]
    probing = [ln for ln in lines if ln.startswith("ptqkit: probing: ")]
    assert probing, r.stderr[-3000:]
    assert all(re.fullmatch(r"ptqkit: probing: \d+/\d+ probe runs \(\d+%\)(, samples \d+-\d+ of 512, \d+ of \d+ "
                            r"targets sampling)?; \d+(m\d\ds)?s? elapsed(, ETA .+)?", ln) for ln in probing), probing[:3]
    assert "samples 384-511 of 512" in probing[-1]
    assert "\r" not in r.stderr  # no terminal redraws in a pipe


def test_short_runs_print_no_progress_lines(cli, transformer, full, tmp_path, monkeypatch):
    data, _ = full
    monkeypatch.delenv("PTQKIT_PROGRESS_INTERVAL_S", raising=False)
    r, _ = scan(cli, transformer, data, tmp_path / "s.json", "--op_types_scope", "Softmax")
    assert not [ln for ln in r.stderr.splitlines() if re.match(r"ptqkit: (probing|calibrating): ", ln)]


def test_probe_groups_when_the_cut_activations_do_not_fit(cli, transformer, full, tmp_path):
    """8 MiB cannot hold every cut activation of 64 samples (4 MiB a batch of 16): the probes are
    split into groups, each with its own FP32 pass, instead of whole-model probes. Scores agree with
    the one-pass scan up to ONNX Runtime's fusions (a session that keeps other activations rounds a
    few values differently, and a Q/DQ rounding step can flip): well within the sampling noise."""
    data, reference = full
    r, js = scan(cli, transformer, data, tmp_path / "s.json", "--activation_cache_limit_mb", "8",
                 "--stop_when_settled", "false")
    assert re.search(r"\d+ groups of probes, each with its own FP32 pass", r.stderr), r.stderr[-2000:]
    assert "run the whole model" not in r.stderr
    assert set(js["scores"]) == set(reference["scores"])
    for t, v in reference["scores"].items():
        assert js["scores"][t] == pytest.approx(v, rel=0.02), t


def test_targets_that_reach_no_output_are_unreached(cli, tmp_path):
    """A node whose change reaches no graph output scores 0 without a sample; the sampling record
    says so instead of leaving the target out."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
             helper.make_node("Relu", ["x"], ["dead"], name="dead_relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "dead.onnx")
    np.save(tmp_path / "x.npy", np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32))
    _, js = scan(cli, tmp_path / "dead.onnx", tmp_path / "x.npy", tmp_path / "s.json")
    assert js["scores"]["dead_relu"] == 0.0
    assert js["sampling"]["dead_relu"] == {"samples": 0, "low": 0.0, "high": 0.0, "settled": "unreached"}
    assert js["sampling"]["mm"]["samples"] == 16 and js["sampling"]["mm"]["settled"] == "all samples"
