#!/usr/bin/env python3
"""INT4 weight-only with a measured INT4/INT8 mix against pure INT4 and fixed INT8 rules.

  .deps/venv/bin/python bench/mixed_precision.py [--ptqkit build/ptqkit] [--model minilm] [--budgets 0.05,0.015]
      [--mask]

For a corpus transformer (scripts/fetch_corpus), quantizes with --quantize_mode int4 (default
awq_clip) on --n_calib calibration samples (a quarter held out by ptqkit for its search):
  - pure INT4;
  - fixed rules (--int8_nodes): every FFN down-projection in INT8 (llmc's example), attention value +
    FFN down-projection (llama.cpp Q4_K_M's choice of tensors), and the first and last layer whole;
  - --mixed_precision int4,int8 --accuracy_budget B (cos: 1 - mean cosine) for each budget.
Each output runs in ONNX Runtime (basic and default level) on the corpus's held-out set (4x the
tests' size), none of which ptqkit saw; the table gives the INT8 weight count, ptqkit's own
divergence on its held-out calibration samples, and the task metric. --mask passes
--eval_mask_input attention_mask to every run, so ptqkit's divergence leaves padded positions out
as the task metric does.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "corpus"))
import corpus  # noqa: E402

RULES = {
    "minilm": {
        "FFN down": [r"/encoder/layer\.\d+/output/dense/MatMul"],
        "attn V + FFN down": [r"/encoder/layer\.\d+/output/dense/MatMul",
                              r"/encoder/layer\.\d+/attention/self/value/MatMul"],
        "first + last layer": [r"/encoder/layer\.0/", r"/encoder/layer\.5/"],
    },
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptqkit", default=str(REPO / "build" / "ptqkit"))
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--budgets", default="0.05,0.015")
    ap.add_argument("--n_calib", type=int, default=128)
    ap.add_argument("--mask", action="store_true", help="--eval_mask_input attention_mask on every run")
    a = ap.parse_args()
    common = ["--eval_mask_input", "attention_mask"] if a.mask else []
    m = corpus.BY_NAME[a.model]
    src = corpus.path(m.rel)
    tmp = Path(tempfile.mkdtemp(prefix="mixed_bench_"))
    calib = tmp / "calib.npz"
    corpus.save_calib(m.build(a.n_calib, seed=1), calib)
    test = m.build(m.n_test * 4, seed=2)
    ref = corpus.run(src, test, basic=True)
    runs = [("pure INT4", [])]
    for name, patterns in RULES.get(a.model, {}).items():
        runs.append((f"rule: {name}", [x for p in patterns for x in ("--int8_nodes", p)]))
    for b in a.budgets.split(","):
        runs.append((f"budget cos <= {b}", ["--mixed_precision", "int4,int8", "--accuracy_budget", b,
                                           "--accuracy_budget_metric", "cos"]))
    print("| run | INT8 weights | ptqkit held-out cos | metrics at ORT basic | metrics at ORT default | time |")
    print("|---|---|---|---|---|---|")
    for i, (name, extra) in enumerate(runs):
        out, report = tmp / f"q{i}.onnx", tmp / f"q{i}.json"
        t = time.time()
        r = subprocess.run([a.ptqkit, "quantize", "--onnx_path", str(src), "--output_path", str(out),
                            "--quantize_mode", "int4", "--calibration_data_path", str(calib),
                            "--report_json", str(report), "--log_level", "WARNING", *common, *extra],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"| {name} | FAILED: {r.stderr.strip().splitlines()[-1]} | | | | |")
            continue
        seconds = time.time() - t
        j = json.loads(report.read_text())
        int8 = sum(1 for p in j["weight_precision"].values() if p == "int8")
        cos = j["loss"]["outputs"][0]["cosine_mean"]
        cols = []
        for basic in (True, False):
            got = corpus.run(out, test, basic=basic)
            cols.append(" ".join(f"{k}={v:.4f}" for k, v in m.metric(ref, got, test).items()))
        print(f"| {name} | {int8} of {len(j['weight_precision'])} | {cos:.4f} | {cols[0]} | {cols[1]} | "
              f"{seconds:.0f} s |", flush=True)


if __name__ == "__main__":
    main()
