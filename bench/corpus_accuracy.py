#!/usr/bin/env python3
"""Task metrics of every real-corpus model quantized by ptqkit, per calibration method and precision.

  .deps/venv/bin/python bench/corpus_accuracy.py [--ptqkit build/ptqkit] [--models a,b] [--methods ...]

Models come from scripts/fetch_corpus. For each model x precision (int8, fp8) x method (max, entropy,
percentile, mse when `ptqkit quantize --help` lists it, and "default": no --calibration_method) the
quantized model runs in ONNX Runtime at
ORT_ENABLE_BASIC (fake-quant) and at the default level (ORT_ENABLE_ALL) on held-out inputs; metrics
compare it with FP32 on the same inputs. When ptqkit refuses the original model, the model is converted
with onnx.version_converter to opset 13 (IR bumped to 7 if older) and quantized again: such rows say
"(opset13 copy)". Rows where that fails too print the error.

Held-out sets are --test_scale times the tests' size (default 4: a few near-tie samples flip a top-1
agreement by 1-2 points on the tests' 64-128 samples). After each model x precision, a line gives
every method's paired difference to `max` on the same held-out samples, per-sample metric by metric,
as the mean with a 95% bootstrap interval (2000 resamples of the samples, fixed seed); "+" is better
than max. The intervals treat samples as independent: EfficientNet's crops come from 6 photos, so
its true uncertainty is larger.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "corpus"))
import corpus  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import version_converter  # noqa: E402


def fmt(d):
    return " ".join(f"{k}={v:.4f}" for k, v in d.items())


def quantize(ptqkit, model, calib, out, mode, method):
    cmd = [ptqkit, "quantize", "--onnx_path", str(model), "--output_path", str(out),
           "--quantize_mode", mode, "--calibration_data_path", str(calib), "--log_level", "WARNING"]
    if "=" in method:  # "name=extra options": the defaults plus those options (e.g. a step turned off)
        cmd += method.split("=", 1)[1].split()
    elif method != "default":  # "default": no --calibration_method, what a user gets
        cmd += ["--calibration_method", method]
    r = subprocess.run(cmd, capture_output=True, text=True)
    err = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or [""])[-1]
    return r.returncode == 0, err


# Per-sample metrics where smaller is better (the rest: larger is better).
LOWER_IS_BETTER = {"kl", "mean_abs_diff", "edits"}


def paired_difference(a, b, lower_is_better, resamples=2000, seed=0):
    """Mean of (a - b) per sample, signed so that + means `a` is better, with a 95% bootstrap interval."""
    d = (np.asarray(b) - np.asarray(a)) if lower_is_better else (np.asarray(a) - np.asarray(b))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(resamples, len(d)))
    lo, hi = np.percentile(d[idx].mean(1), [2.5, 97.5])
    return float(d.mean()), float(lo), float(hi)


def compare_to(samples, base="max"):
    """`samples`: method -> {metric: per-sample array}; text of every method's difference to `base`."""
    if base not in samples:
        return ""
    parts = []
    for method, per in samples.items():
        if method == base:
            continue
        for key, values in per.items():
            if key == "chars":
                continue
            mean, lo, hi = paired_difference(values, samples[base][key], key in LOWER_IS_BETTER)
            parts.append(f"{method} {key} {mean:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    return "; ".join(parts)


def to_opset13(src, dst):
    m = onnx.load(str(src))
    m = version_converter.convert_version(m, 13)
    if m.ir_version < 7:
        m.ir_version = 7
    onnx.save(m, str(dst))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptqkit", default=str(REPO / "build" / "ptqkit"))
    ap.add_argument("--models", default=",".join(m.name for m in corpus.MODELS))
    ap.add_argument("--modes", default="int8,fp8")
    ap.add_argument("--methods", default=None,
                    help="comma list (';' list when an option value has a comma); an entry NAME=OPTIONS quantizes "
                         "with the defaults plus OPTIONS (e.g. 'before=--canonicalize false "
                         "--depthwise_equalization false', 'default;mixed=--mixed_precision int8,fp8')")
    ap.add_argument("--compare_to", default="max",
                    help="the method (or NAME) every other is paired against; a comma list pairs against each")
    ap.add_argument("--test_scale", type=float, default=4.0, help="held-out samples = this x the tests' count")
    a = ap.parse_args()
    helptext = subprocess.run([a.ptqkit, "quantize", "--help"], capture_output=True, text=True).stdout
    methods = a.methods.split(";" if ";" in a.methods else ",") if a.methods else (
        ["max", "entropy", "percentile"] + (["mse"] if "mse" in helptext else []) + ["default"])
    print(f"| model | precision | method | metrics at ORT basic | metrics at ORT default | note |")
    print(f"|---|---|---|---|---|---|")
    tmp = Path(tempfile.mkdtemp(prefix="corpus_bench_"))
    for name in a.models.split(","):
        m = corpus.BY_NAME[name]
        src = corpus.path(m.rel)
        cal = m.build(m.n_calib, seed=1)
        test = m.build(int(round(m.n_test * a.test_scale)), seed=2)
        calib = tmp / f"{name}_calib.npz"
        corpus.save_calib(cal, calib)
        ref = corpus.run(src, test, basic=True)
        print(f"| {name} | fp32 | - | {fmt(m.metric(ref, ref, test))} | | reference |", flush=True)
        for mode in a.modes.split(","):
            samples = {}
            for spec in methods:
                t = time.time()
                method = spec.split("=", 1)[0]
                out = tmp / f"{name}_{mode}_{method}.onnx"
                ok, err = quantize(a.ptqkit, src, calib, out, mode, spec)
                note = ""
                opset = max(o.version for o in onnx.load(str(src), load_external_data=False).opset_import
                            if o.domain in ("", "ai.onnx"))
                if not ok and opset >= 13:
                    note = f"FAILED: {err}"
                elif not ok:
                    c13 = tmp / f"{name}_op13.onnx"
                    if not c13.exists():
                        to_opset13(src, c13)
                    ok, err2 = quantize(a.ptqkit, c13, calib, out, mode, spec)
                    note = f"(opset13 copy; original refused: {err})" if ok else f"FAILED: {err} / opset13 copy: {err2}"
                if not ok:
                    print(f"| {name} | {mode} | {method} | - | - | {note} |", flush=True)
                    continue
                cols = []
                for basic in (True, False):
                    try:
                        got = corpus.run(out, test, basic=basic)
                        cols.append(fmt(m.metric(ref, got, test)))
                        if basic:
                            samples[method] = m.samples(ref, got, test)
                    except Exception as e:  # noqa: BLE001
                        cols.append("ORT error: " + str(e).splitlines()[0][:120])
                print(f"| {name} | {mode} | {method} | {cols[0]} | {cols[1]} | {note} {time.time() - t:.0f}s |",
                      flush=True)
            for base in a.compare_to.split(","):
                diff = compare_to(samples, base)
                if diff:
                    n = len(next(iter(next(iter(samples.values())).values())))
                    print(f"| {name} | {mode} | vs {base} (basic) | {diff} | | paired, n={n} |", flush=True)


if __name__ == "__main__":
    main()
