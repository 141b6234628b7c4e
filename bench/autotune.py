"""Autotune on the ONNX Runtime CPU backend: autotuned vs the rules' placement vs FP32.

For each model: calibration data (real corpus inputs where the model comes from the corpus),
`ptqkit quantize` (the rules' placement) and `ptqkit quantize --autotune MODE` (search wall time,
candidates timed, accuracy vs the budget from its report), then an independent timing of the three
models with the onnxruntime Python package (one intra-op thread, full graph optimizations, the
three models interleaved round by round so machine load hits them alike): median, p10, p90.
Measures, never asserts.

    .deps/venv/bin/python bench/autotune.py --ptqkit build/ptqkit [--models resnet_tiny,nsfw_resnet50,minilm]
        [--mode quick] [--runs 40] [--workdir DIR]

Models: resnet_tiny (examples/), a transformer block built by tests/python/models.py
(transformer_block), and the corpus' nsfw_resnet50 (ResNet-50), efficientnet_lite0, minilm
(scripts/fetch_corpus puts them in ~/.cache/ptqkit/corpus).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "corpus"))
sys.path.insert(0, str(REPO / "tests" / "python"))


def prepare(name: str, work: Path):
    """(model path, calibration .npz) for `name`."""
    if name == "resnet_tiny":
        x = np.load(REPO / "examples" / "calib.npy")
        np.save(work / "resnet_tiny.npy", x[:48])
        return REPO / "examples" / "resnet_tiny.onnx", work / "resnet_tiny.npy"
    if name == "transformer_block":
        import models
        path = work / "transformer_block.onnx"
        models.make_transformer_block(path)
        data = work / "transformer_block.npz"
        models.make_calibration("transformer", data, n=48, fmt="npz")
        return path, data
    import corpus
    m = corpus.BY_NAME[name]
    data = work / f"{name}.npz"
    corpus.save_calib(m.build(m.n_calib + 16, 1), data)
    return corpus.path(m.rel), data


def ptqkit(binary, *args):
    start = time.perf_counter()
    r = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ptqkit {' '.join(map(str, args))} failed:\n{r.stderr}")
    return time.perf_counter() - start, r


def feeds_for(model: Path, data: Path):
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    arrays = np.load(data)
    if isinstance(arrays, np.ndarray):
        arrays = {sess.get_inputs()[0].name: arrays}
    return {i.name: np.asarray(arrays[i.name])[:1] for i in sess.get_inputs()}


def time_interleaved(paths: dict, feeds, runs: int, warmup: int = 3):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sessions = {k: ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"]) for k, p in paths.items()}
    for s in sessions.values():
        for _ in range(warmup):
            s.run(None, feeds)
    times = {k: [] for k in sessions}
    for _ in range(runs):
        for k, s in sessions.items():
            t = time.perf_counter()
            s.run(None, feeds)
            times[k].append(1000 * (time.perf_counter() - t))
    return {k: {"median_ms": float(np.median(v)), "p10_ms": float(np.percentile(v, 10)),
                "p90_ms": float(np.percentile(v, 90))} for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptqkit", default=str(REPO / "build" / "ptqkit"))
    ap.add_argument("--models", default="resnet_tiny,transformer_block,nsfw_resnet50,minilm")
    ap.add_argument("--mode", default="quick")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--budget", type=float, default=None, help="--accuracy_budget (cos); default: none")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="ptqkit-bench-autotune-"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.models.split(","):
        model, data = prepare(name, work)
        default = work / f"{name}.default.onnx"
        tuned = work / f"{name}.autotuned.onnx"
        report = work / f"{name}.autotune.json"
        t_default, _ = ptqkit(args.ptqkit, "quantize", "--onnx_path", model, "--output_path", default,
                              "--calibration_data_path", data, "--log_level", "WARNING")
        extra = ["--accuracy_budget", args.budget] if args.budget is not None else []
        t_tuned, r = ptqkit(args.ptqkit, "quantize", "--onnx_path", model, "--output_path", tuned,
                            "--calibration_data_path", data, "--autotune", args.mode, "--report_json", report,
                            "--log_level", "WARNING", *extra)
        a = json.loads(report.read_text())["autotune"]
        timing = time_interleaved({"fp32": model, "default": default, "autotuned": tuned}, feeds_for(model, data),
                                  args.runs)
        row = {"model": name, "mode": args.mode, "quantize_s": round(t_default, 2), "autotune_quantize_s": round(t_tuned, 2),
               "search_s": round(a["search_seconds"], 2), "candidates_timed": a["candidates_timed"],
               "candidates_pruned": a["candidates_pruned"], "groups": len(a["groups"]),
               "nodes_in_float": len(a["nodes_in_float"]), "gate_passed": a["gate_passed"],
               "gate_speedup_vs_fp32": round(a["speedup_vs_fp32"], 3),
               "search_ms": {k: round(a[k]["median_ms"], 3) for k in ("fp32", "default_placement", "autotuned")},
               "divergence": {"metric": a["divergence_metric"], "default": a["divergence_default"],
                              "autotuned": a["divergence_autotuned"], "budget": a["budget"]},
               "independent_ms": {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in timing.items()}}
        results.append(row)
        ind = row["independent_ms"]
        print(f"{name}: search {row['search_s']} s ({row['candidates_timed']} timed, {row['candidates_pruned']} pruned, "
              f"{row['groups']} groups, {row['nodes_in_float']} nodes to float, gate {row['gate_speedup_vs_fp32']}x {'passed' if row['gate_passed'] else 'FAILED'}); "
              f"independent median ms [p10..p90]: " + ", ".join(
                  f"{k} {v['median_ms']:.3f} [{v['p10_ms']:.3f}..{v['p90_ms']:.3f}]" for k, v in ind.items()) +
              f"; {a['divergence_metric']} divergence default {a['divergence_default']:.3g} -> autotuned "
              f"{a['divergence_autotuned']:.3g}", flush=True)
    (work / "results.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
