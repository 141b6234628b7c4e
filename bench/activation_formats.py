#!/usr/bin/env python3
"""INT8 / FP8 per layer (`--mixed_precision int8,fp8`) under an accuracy budget, against INT8 alone.

  .deps/venv/bin/python bench/activation_formats.py [--ptqkit build/ptqkit] [--models a,b] [--budget_of 0.5]

For each corpus model (scripts/fetch_corpus) and its calibration set (the tests', seed 1):
  1. pure INT8 (the default) and pure FP8, with --report_json: ptqkit's divergence (cos: 1 - mean
     cosine) on its held-out calibration samples;
  2. a budget B = --budget_of x the better of those two divergences (a budget neither pure format
     meets), then `--accuracy_budget B` with INT8 alone and with `--mixed_precision int8,fp8`: how
     many nodes each keeps in float (FP16/FP32), how many the mix puts in FP8, and whether each met B.
Every output also runs in ONNX Runtime (basic level) on the corpus's held-out inputs (4x the tests'
size, never seen by ptqkit): the task metric against FP32. Timings are not tests (DESIGN.md): the
table goes in bench/README.md with the machine it ran on.
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


def quantize(binary, model, calib, out, extra):
    report = out.with_suffix(".json")
    cmd = [binary, "quantize", "--onnx_path", str(model), "--output_path", str(out), "--calibration_data_path",
           str(calib), "--report_json", str(report), "--log_level", "WARNING", *extra]
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads(report.read_text()), time.time() - start


def divergence(report):
    outs = report["loss"]["outputs"]
    return 1.0 - min(o["cosine_mean"] for o in outs)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ptqkit", default=str(REPO / "build" / "ptqkit"))
    p.add_argument("--models", default="ocr_det,ocr_rec,ocr_cls,orientation,efficientnet_lite0,layout_det,minilm")
    p.add_argument("--budget_of", type=float, default=0.5)
    a = p.parse_args()
    print("| model | run | budget (cos) | met | in float | in FP8 | ptqkit divergence | task metric (ORT basic, "
          "held-out) | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    tmp = Path(tempfile.mkdtemp(prefix="activation_formats_"))
    for name in a.models.split(","):
        m = corpus.BY_NAME[name]
        src = corpus.path(m.rel)
        calib = tmp / f"{name}_calib.npz"
        corpus.save_calib(m.build(m.n_calib, seed=1), calib)
        test = m.build(m.n_test * 4, seed=2)
        ref = corpus.run(src, test, basic=True)

        def row(label, extra, budget=None):
            out = tmp / f"{name}_{label.replace(' ', '_')}.onnx"
            try:
                report, seconds = quantize(a.ptqkit, src, calib, out, extra)
            except RuntimeError as e:
                print(f"| {name} | {label} | - | - | - | - | - | FAILED: {e} | |", flush=True)
                return None
            b = report["accuracy_budget"]
            fp8 = sum(f["format"] == "fp8" for f in report["node_formats"])
            if "--quantize_mode" in extra:
                fp8 = "all"
            metric = m.metric(ref, corpus.run(out, test, basic=True), test)
            met = ("yes" if b.get("met") else "no") if b.get("used") else "-"
            kept = len(b.get("excluded_nodes", [])) if b.get("used") else 0
            shown = " ".join(f"{k}={v:.4f}" for k, v in metric.items())
            print(f"| {name} | {label} | {budget if budget is not None else '-'} | {met} | {kept} | {fp8} | "
                  f"{divergence(report):.5f} | {shown} | {seconds:.0f} |", flush=True)
            return report

        pure = [row("int8", []), row("fp8", ["--quantize_mode", "fp8"]),
                row("mixed", ["--mixed_precision", "int8,fp8"])]
        if any(r is None for r in pure[:2]):
            continue
        budget = float(f"{a.budget_of * min(divergence(pure[0]), divergence(pure[1])):.3g}")
        flags = ["--accuracy_budget", str(budget), "--accuracy_budget_metric", "cos"]
        row("int8 + budget", flags, budget)
        row("mixed + budget", flags + ["--mixed_precision", "int8,fp8"], budget)


if __name__ == "__main__":
    main()
