"""Calibration speed and memory of `ptqkit quantize` on a ResNet-18, against ONNX Runtime alone.

    .deps/venv/bin/python bench/bench_calibration.py --ptqkit build/ptqkit [--samples 256]
        [--batch 8] [--threads N] [--workdir DIR]

What it measures (a benchmark, never a test):
  1. ORT alone: a Python onnxruntime session (CPU EP, default graph optimisations, the same
     intra-op thread count) runs the FP32 model over the same samples in the same batches. The
     samples are already in memory, so this is the pure forward-pass time.
  2. ptqkit calibration with --calibration_method max and entropy. The time is taken from the
     "calibration: X.XX s" line of ptqkit's summary (the streaming ORT pass plus histogram work,
     excluding model load, planning and save). If that line is missing, the whole wall time is
     used instead and the report says so.
     Ratio = ptqkit calibration time / ORT-alone time (targets: <= 1.3 max, <= 1.6 entropy).
  3. Peak memory (maximum resident set size, from the kernel's rusage of the child process, the
     number `/usr/bin/time -v` prints) of ptqkit with 64 and with 256 samples: with streaming
     calibration it must not grow with the number of samples.

The model has the ResNet-18 topology (11.7 M parameters, 3x224x224 input, 1000 classes) with
He-scaled random weights: only timing matters here, not accuracy.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
from models import GraphBuilder  # noqa: E402


def make_resnet18(path: Path, seed: int = 0):
    rng = np.random.default_rng(seed)
    g = GraphBuilder()

    def conv_bn(x, name, cin, cout, k, stride, gamma=1.0, relu=True):
        g.init(f"{name}.weight", rng.normal(0, np.sqrt(2 / (cin * k * k)), (cout, cin, k, k)).astype(np.float32))
        y = g.op("Conv", f"/{name}/Conv", [x, f"{name}.weight"], kernel_shape=[k, k], strides=[stride] * 2,
                 pads=[k // 2] * 4)
        for s, v in (("gamma", gamma), ("beta", 0.0), ("mean", 0.0), ("var", 1.0)):
            g.init(f"{name}.bn.{s}", np.full(cout, v, np.float32))
        y = g.op("BatchNormalization", f"/{name}/BatchNormalization",
                 [y] + [f"{name}.bn.{s}" for s in ("gamma", "beta", "mean", "var")], epsilon=1e-5)
        return g.op("Relu", f"/{name}/Relu", [y]) if relu else y

    x = conv_bn("input", "conv1", 3, 64, 7, 2)
    x = g.op("MaxPool", "/maxpool/MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    cin = 64
    for li, cout in enumerate((64, 128, 256, 512), start=1):
        for bi in range(2):
            stride = 2 if (bi == 0 and li > 1) else 1
            n = f"layer{li}.{bi}"
            h = conv_bn(x, f"{n}.conv1", cin, cout, 3, stride)
            h = conv_bn(h, f"{n}.conv2", cout, cout, 3, 1, gamma=0.5, relu=False)  # keeps depth stable
            skip = conv_bn(x, f"{n}.downsample", cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout else x
            x = g.op("Relu", f"/{n}/Relu", [g.op("Add", f"/{n}/Add", [h, skip])])
            cin = cout
    x = g.op("Flatten", "/Flatten", [g.op("GlobalAveragePool", "/avgpool/GlobalAveragePool", [x])], axis=1)
    g.init("fc.weight", rng.normal(0, np.sqrt(1 / 512), (1000, 512)).astype(np.float32))
    g.init("fc.bias", np.zeros(1000, np.float32))
    g.nodes.append(helper.make_node("Gemm", [x, "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm", transB=1))
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])
    onnx.save(g.model([inp], [out], "resnet18"), path)


def ort_alone(model: Path, data: np.ndarray, batch: int, threads: int) -> float:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    sess.run(None, {"input": data[:batch]})  # warm-up, as ptqkit's session creation is not timed
    t = time.perf_counter()
    for i in range(0, len(data), batch):
        sess.run(None, {"input": data[i:i + batch]})
    return time.perf_counter() - t


def run_ptqkit(ptqkit, model, data, out, method, batch, threads):
    """Returns (calibration seconds, wall seconds, peak RSS MiB, whether the time was parsed)."""
    cmd = [ptqkit, "quantize", "--onnx_path", model, "--calibration_data_path", data, "--output_path", out,
           "--quantize_mode", "int8", "--calibration_method", method, "--calibration_batch_size", str(batch),
           "--intra_op_num_threads", str(threads)]
    with tempfile.TemporaryFile("w+") as log:
        t = time.perf_counter()
        proc = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)  # rusage of this child alone
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        text = log.read()
    if proc.returncode != 0:
        sys.exit(f"ptqkit failed ({proc.returncode}):\n{text}")
    m = re.search(r"calibration: (\d+(?:\.\d+)?) s", text)
    return (float(m.group(1)) if m else wall), wall, usage.ru_maxrss / 1024, bool(m)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptqkit", default=str(REPO / "build" / "ptqkit"))
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workdir", help="keep files here (default: a temporary folder)")
    args = ap.parse_args()
    ptqkit = str(Path(args.ptqkit).resolve())
    if not os.access(ptqkit, os.X_OK):
        sys.exit(f"bench: ptqkit binary not found at {ptqkit}")

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        model = work / "resnet18.onnx"
        make_resnet18(model)
        data = np.random.default_rng(1).normal(0, 1, (args.samples, 3, 224, 224)).astype(np.float32)
        np.save(work / "calib.npy", data)
        np.save(work / "calib64.npy", data[:64])
        print(f"ResNet-18, {args.samples} samples, batch {args.batch}, {args.threads} threads, ORT {ort.__version__}")

        base = ort_alone(model, data, args.batch, args.threads)
        print(f"ORT alone (FP32 forward passes):   {base:8.2f} s")
        targets = {"max": 1.3, "entropy": 1.6}
        for method, target in targets.items():
            calib, wall, rss, parsed = run_ptqkit(ptqkit, model, work / "calib.npy", work / f"q_{method}.onnx",
                                                  method, args.batch, args.threads)
            how = "" if parsed else "  (no 'calibration:' line: whole wall time used)"
            verdict = "ok" if calib / base <= target else "ABOVE TARGET"
            print(f"ptqkit calibration, {method:8}: {calib:8.2f} s  = {calib / base:4.2f}x ORT "
                  f"(target <= {target}x: {verdict}); wall {wall:.2f} s, peak RSS {rss:.0f} MiB{how}")

        peaks = {}
        for n, f in ((64, "calib64.npy"), (args.samples, "calib.npy")):
            peaks[n] = run_ptqkit(ptqkit, model, work / f, work / "q_mem.onnx", "entropy", args.batch, args.threads)[2]
            print(f"peak RSS, entropy, {n:4} samples: {peaks[n]:8.0f} MiB")
        growth = peaks[args.samples] - peaks[64]
        print(f"growth 64 -> {args.samples} samples: {growth:+.0f} MiB "
              f"(streaming calibration: should stay flat, apart from data pages if the file is memory-mapped)")


if __name__ == "__main__":
    main()
