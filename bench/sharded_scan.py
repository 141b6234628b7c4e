"""Wall time of a node-granularity sensitivity scan split over local workers (issue 13).

Builds a deep residual MLP with >= 200 scan targets, then times
  - the single-process scan (`ptqkit sensitivity`, one ONNX Runtime thread: one worker);
  - the sharded pipeline with 1 and 2 local workers, each worker a `ptqkit` process with one
    thread: `calibrate --for_sensitivity --shard K/N` (in parallel), `calibrate --merge`,
    `sensitivity --shard K/N --calibration_cache T` (in parallel), `sensitivity --merge`;
and checks that the merged scores equal the single-process ones. From the measured parts it fits
    T(N) = C / N + M + F + R + b (A + P) / N
(C: calibration over all batches, M: the two merges, F: a probe shard's fixed start-up (process,
model load, probe planning, digests), R: the FP32 reference every probe shard recomputes, A: the
range searches, P: all probes of the scan, b: slowest / mean probe shard)
and prints T(N) for larger N. Measures, never asserts.

    .deps/venv/bin/python bench/sharded_scan.py --ptqkit build/ptqkit [--layers 50 --width 512 --samples 128] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build_model(path: str, layers: int, width: int, seed: int = 0) -> None:
    """x -> [MatMul -> Add(bias) -> Relu -> Add(skip)] x layers -> MatMul: 4 targets a layer."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    x = "x"
    for i in range(layers):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        b = (0.1 * rng.standard_normal(width)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"mm{i}"], name=f"/l{i}/MatMul"),
                  helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"ab{i}"], name=f"/l{i}/bias"),
                  helper.make_node("Relu", [f"ab{i}"], [f"r{i}"], name=f"/l{i}/Relu"),
                  helper.make_node("Add", [f"r{i}", x], [f"h{i}"], name=f"/l{i}/skip")]
        x = f"h{i}"
    head = (rng.standard_normal((width, 10)) / np.sqrt(width)).astype(np.float32)
    inits.append(numpy_helper.from_array(head, "head"))
    nodes.append(helper.make_node("MatMul", [x, "head"], ["logits"], name="/head/MatMul"))
    graph = helper.make_graph(nodes, "deep_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def run(cmd) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


CPU_SECONDS = []  # CPU time (user + sys) of every process parallel() ran, in order


def parallel(cmds) -> float:
    """Runs the commands at once; returns the wall time and records each one's CPU time (on a
    loaded machine, wall >> CPU shows that the workers waited for cores, not for each other)."""
    start = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in cmds]
    for p, c in zip(procs, cmds):
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise RuntimeError(f"{c} failed with exit code {p.returncode}")
        CPU_SECONDS.append(usage.ru_utime + usage.ru_stime)
    return time.perf_counter() - start


def sharded(ptqkit, model, data, n, work) -> dict:
    common = ["--onnx_path", model, "--calibration_data_path", data, "--intra_op_num_threads", "1"]
    t = {}
    t["calibrate"] = parallel([[ptqkit, "calibrate", *common, "--for_sensitivity", "--granularity", "node",
                                "--shard", f"{k}/{n}", "-o", f"{work}/c{n}.{k}.json"] for k in range(n)])
    start = time.perf_counter()
    run([ptqkit, "calibrate", "--merge", *[f"{work}/c{n}.{k}.json" for k in range(n)], "-o", f"{work}/t{n}.json"])
    t["merge_table"] = time.perf_counter() - start
    del CPU_SECONDS[:]
    t["probe_shards"] = parallel([[ptqkit, "sensitivity", *common, "--granularity", "node", "--calibration_cache",
                                   f"{work}/t{n}.json", "--shard", f"{k}/{n}", "--output_json",
                                   f"{work}/s{n}.{k}.json"] for k in range(n)])
    start = time.perf_counter()
    run([ptqkit, "sensitivity", "--merge", *[f"{work}/s{n}.{k}.json" for k in range(n)], "--output_json",
         f"{work}/m{n}.json"])
    t["merge_scores"] = time.perf_counter() - start
    t["total"] = sum(t.values())
    t["shards"] = [json.load(open(f"{work}/s{n}.{k}.json"))["result"]["timings"] for k in range(n)]
    t["shard_cpu"] = list(CPU_SECONDS)
    t["result"] = json.load(open(f"{work}/m{n}.json"))
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptqkit", default="build/ptqkit")
    ap.add_argument("--layers", type=int, default=50)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--samples", type=int, default=128)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--ray", action="store_true",
                    help="also time ptqkit.distributed on a local Ray cluster of 1 and 2 CPUs (needs ptqkit importable, "
                         "e.g. PYTHONPATH=build/python, and ray)")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="ptqkit-sharded-bench-")
    os.makedirs(work, exist_ok=True)
    model, data = f"{work}/deep_mlp.onnx", f"{work}/calib.npy"
    build_model(model, args.layers, args.width)
    np.save(data, np.random.default_rng(1).standard_normal((args.samples, args.width)).astype(np.float32))
    ptqkit = os.path.abspath(args.ptqkit)

    start = time.perf_counter()
    run([ptqkit, "sensitivity", "--onnx_path", model, "--calibration_data_path", data, "--granularity", "node",
         "--intra_op_num_threads", "1", "--output_json", f"{work}/single.json"])
    single_wall = time.perf_counter() - start
    single = json.load(open(f"{work}/single.json"))
    targets = len(single["scores"]) + len(single["failed"])
    print(f"model: {args.layers} residual layers of width {args.width}, {targets} node targets, "
          f"{args.samples} samples; every process uses 1 ONNX Runtime thread")
    print(f"single process: {single_wall:.2f} s wall; timings {json.dumps(single['timings'])}")

    runs = {n: sharded(ptqkit, model, data, n, work) for n in (1, 2)}
    strip = lambda r: {k: v for k, v in r.items() if k != "timings"}  # noqa: E731
    for n, t in runs.items():
        same = strip(t["result"]) == strip(single)
        print(f"{n} worker(s): total {t['total']:.2f} s = calibrate {t['calibrate']:.2f} + merge "
              f"{t['merge_table']:.2f} + probe shards {t['probe_shards']:.2f} + merge {t['merge_scores']:.2f}; "
              f"merged scores identical to single process: {same}")
        for k, s in enumerate(t["shards"]):
            print(f"    shard {k}/{n}: ranges {s['calibration_s']:.2f} s, reference {s['reference_s']:.2f} s, "
                  f"probes {s['probes_s']:.2f} s, total {s['total_s']:.2f} s; process CPU {t['shard_cpu'][k]:.2f} s")

    # Fit from the 1-worker run. Per probe shard: A (ranges: the mse/entropy searches for its own
    # probes' tensors) and P (its probes) shrink as 1/N; R (the FP32 reference) and F (the rest:
    # process start, model load, probe planning, model and data digests) do not. Calibration C
    # shrinks as 1/N; the merges M do not.
    one = runs[1]
    s = one["shards"][0]
    C, M = one["calibrate"], one["merge_table"] + one["merge_scores"]
    A, R, P = s["calibration_s"], s["reference_s"], s["probes_s"]
    F = one["probe_shards"] - A - R - P
    # The slowest probe shard runs b times the mean (the strided split is not perfectly even);
    # b is measured at N = 2 and assumed to hold for larger N.
    work2 = [x["calibration_s"] + x["probes_s"] for x in runs[2]["shards"]]
    b = max(work2) / (sum(work2) / 2)
    model_t = lambda n: C / n + M + F + R + (b if n > 1 else 1.0) * (A + P) / n  # noqa: E731
    print(f"model T(N) = C/N + M + F + R + b (A + P)/N with C={C:.2f} M={M:.2f} F={F:.2f} R={R:.2f} "
          f"A={A:.2f} P={P:.2f} s, b={b:.3f} (slowest / mean shard at N = 2)")
    print(f"    predicted T(2) = {model_t(2):.2f} s, measured {runs[2]['total']:.2f} s")
    for n in (1, 2, 4, 8, 16, 32, 64):
        print(f"    N={n:>2}: {model_t(n):7.2f} s  (speed-up {model_t(1) / model_t(n):.1f}x over 1 worker)")
    if args.ray:
        time_ray(model, data, single)


def time_ray(model, data, single) -> None:
    """ptqkit.distributed.score() with 1 and 2 local Ray workers (cluster start-up timed apart)."""
    import ray

    import ptqkit.distributed

    for n in (1, 2):
        start = time.perf_counter()
        ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False)
        started = time.perf_counter() - start
        start = time.perf_counter()
        result = ptqkit.distributed.score(model, data, granularity="node", progress=False)
        wall = time.perf_counter() - start
        ray.shutdown()
        same = {k: v for k, v in result.items() if k != "timings"} == {k: v for k, v in single.items() if k != "timings"}
        print(f"Ray, {n} worker(s): score() {wall:.2f} s (+ {started:.2f} s cluster start-up); "
              f"identical to single process: {same}")

if __name__ == "__main__":
    main()
