"""Peak memory and wall time of `ptqkit quantize` at its default options on a model whose weights
reach protobuf's 2 GiB limit (issues 8 and 20): builds a chain of 4096x4096 MatMuls (64 MiB each)
stored as external data (or embedded in the .onnx), quantizes it at the defaults (mse calibration,
bias correction, smoothing, the held-out loss report, the checker) and again with
`--eval_samples 0`, and prints peak RSS (from /usr/bin/time) against the weights' size and the
wall time of the default run against the run without the loss report.

    .deps/venv/bin/python bench/large_model_memory.py build/ptqkit [--gib 2.25] [--embedded]
        [--modes int8,fp8,scan,budget] [--samples 64] [--max_ratio R]

Modes int8 and fp8 quantize at the defaults; `scan` runs `ptqkit sensitivity --granularity node`
(int8) and `budget` an int8 quantize with an --accuracy_budget no quantized node meets (the ranking
scan, then every candidate of the search), each reporting peak RSS against the weights.

--embedded writes the weights inside the .onnx (only possible below 2 GiB). --max_ratio makes
the run fail when a default run's peak RSS exceeds R times the weights (CI's reduced check).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D = 4096  # each weight D x D float32 = 64 MiB


def build(path: Path, total_gib: float, embedded: bool) -> int:
    per = D * D * 4
    layers = max(1, int(total_gib * (1 << 30) // per))
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((D, D), dtype=np.float32) / np.sqrt(D)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", D])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8  # what opset 17 came with (onnx stamps its newest IR, which ONNX Runtime may not read)
    if embedded:
        onnx.save(m, str(path))
    else:
        onnx.save(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="big.onnx.data")
    return layers * per


def run(ptqkit: str, model: Path, calib: Path, out: Path, extra: list[str]) -> tuple[float, float, str]:
    """(peak RSS bytes, wall seconds, stdout) of one quantize run."""
    return measure([ptqkit, "quantize", "--onnx_path", str(model), "--output_path", str(out),
                    "--calibration_data_path", str(calib), *extra])


def measure(command: list[str]) -> tuple[float, float, str]:
    """(peak RSS bytes, wall seconds, stdout) of one ptqkit command."""
    r = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ptqkit failed:\n{r.stderr[:3000]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) * 1024
    clock = re.search(r"Elapsed \(wall clock\) time.*: (.+)", r.stderr).group(1).strip().split(":")
    wall = sum(float(part) * 60**k for k, part in enumerate(reversed(clock)))
    return rss, wall, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ptqkit")
    ap.add_argument("--gib", type=float, default=2.25)
    ap.add_argument("--embedded", action="store_true")
    ap.add_argument("--modes", default="int8,fp8")
    ap.add_argument("--samples", type=int, default=64, help="calibration samples (the default holds out 16)")
    ap.add_argument("--max_ratio", type=float, default=0.0)
    a = ap.parse_args()
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "big.onnx"
        weights = build(src, a.gib, a.embedded)
        calib = Path(tmp) / "calib.npy"
        np.save(calib, np.random.default_rng(1).standard_normal((a.samples, D)).astype(np.float32))
        stored = "embedded" if a.embedded else "external data"
        for mode in a.modes.split(","):
            out = Path(tmp) / "big.quant.onnx"
            if mode in ("scan", "budget"):
                if mode == "scan":
                    rss, wall, stdout = measure([a.ptqkit, "sensitivity", "--onnx_path", str(src), "--granularity", "node",
                                                 "--calibration_data_path", str(calib),
                                                 "--output_json", str(Path(tmp) / "scan.json")])
                else:  # a budget no quantized node meets: the ranking scan and every candidate run
                    rss, wall, stdout = run(a.ptqkit, src, calib, out, ["--accuracy_budget", "1e-12"])
                worst = max(worst, rss / weights)
                evaluations = re.search(r"(\d+) full evaluation", stdout)
                print(f"{mode} {weights / 2**30:.2f} GiB ({stored}): peak RSS {rss / 2**30:.2f} GiB = "
                      f"{rss / weights:.2f}x the weights, wall {wall:.1f} s"
                      + (f" ({evaluations.group(1)} candidate evaluations)" if evaluations else ""), flush=True)
                continue
            rss, wall, stdout = run(a.ptqkit, src, calib, out, ["--quantize_mode", mode])
            rss0, wall0, _ = run(a.ptqkit, src, calib, out, ["--quantize_mode", mode, "--eval_samples", "0"])
            loss = re.search(r"loss vs FP32 on (\d+) held-out", stdout)
            cosine = re.search(r"cosine ([0-9.]+)", stdout)
            worst = max(worst, rss / weights)
            print(f"{mode} {weights / 2**30:.2f} GiB ({stored}), defaults: peak RSS {rss / 2**30:.2f} GiB = "
                  f"{rss / weights:.2f}x the weights, wall {wall:.1f} s = {wall / wall0:.2f}x the --eval_samples 0 run "
                  f"({rss0 / 2**30:.2f} GiB = {rss0 / weights:.2f}x, {wall0:.1f} s); loss report on "
                  f"{loss.group(1) if loss else '?'} held-out samples, cosine {cosine.group(1) if cosine else '?'}",
                  flush=True)
    if a.max_ratio > 0 and worst > a.max_ratio:
        sys.exit(f"peak RSS {worst:.2f}x the weights exceeds the limit of {a.max_ratio}x")


if __name__ == "__main__":
    main()
