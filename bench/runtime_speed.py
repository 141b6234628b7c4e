#!/usr/bin/env python3
"""Speed of quantized corpus models on every runtime this machine has, beside FP32 and the peers' outputs.

  .deps/venv/bin/python bench/runtime_speed.py [--ptqkit build/ptqkit] [--models a,b] [--rounds 15]
                                               [--forms fp32,ptqkit_trt,ptqkit_ort,...]

For each corpus model (scripts/fetch_corpus) the forms are: fp32; ptqkit's default INT8 (`ptqkit_trt`,
--target_runtime trt); ptqkit's INT8 for ONNX Runtime (`ptqkit_ort`, --target_runtime ort_cpu); ONNX
Runtime's own quantize_static (QDQ, its defaults) and quantize_dynamic (models with MatMul); NNCF's ONNX
PTQ (`nncf.quantize`, TRANSFORMER model type for the encoder) when nncf is importable. All quantizers get
the same calibration inputs (the corpus tests' set, seed 1). `ptqkit_ov` is --target_runtime openvino. A form
NAME=RUNTIME OPTIONS is ptqkit with --target_runtime RUNTIME and those options (an A/B of one option, e.g.
`ort_nosmooth=ort_cpu --smoothquant_alpha 0`).

Per form and runtime (ONNX Runtime CPU at its default level; OpenVINO CPU when `openvino` is importable):
  - latency of one sample (the first held-out input), median over interleaved rounds (every form of the
    model runs once per round, so drift hits all alike), at 1 thread and at all cores;
  - the integer-kernel share: of the Conv/MatMul/Gemm the file quantizes (a DequantizeLinear on their
    weight), how many the runtime runs in integer kernels. ONNX Runtime: QLinearConv, QLinearMatMul,
    MatMulIntegerToFloat, DynamicQuantizeMatMul, QGemm, MatMulInteger, ConvInteger in the graph its
    optimizer writes (ORT_ENABLE_EXTENDED, the fusions without the NCHWc layout); OpenVINO: Convolution /
    FullyConnected / MatMul nodes of the compiled model whose runtimePrecision is i8 or u8, against all
    of them (OpenVINO quantizes the dynamic forms' DynamicQuantizeLinear itself, so there it is the share
    of all such nodes);
  - the file size, and the task metric of the corpus tests against FP32 on the held-out inputs (ONNX
    Runtime at its default level).
Timings are not tests (DESIGN.md): the table goes in bench/README.md with the machine it ran on.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "corpus"))
import corpus  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

INTEGER_KERNELS = {"QLinearConv", "QLinearMatMul", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QGemm",
                   "MatMulInteger", "ConvInteger"}
FORMS = ["fp32", "ptqkit_trt", "ptqkit_ort", "ptqkit_ov", "ort_static", "ort_dynamic", "nncf"]


def ptqkit_quantize(binary, model, calib, out, runtime, extra=()):
    cmd = [binary, "quantize", "--onnx_path", str(model), "--output_path", str(out), "--calibration_data_path",
           str(calib), "--target_runtime", runtime, "--log_level", "WARNING", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["?"])[-1])


class _Reader:
    """ONNX Runtime's calibration reader over the corpus calibration inputs, one sample a batch."""

    def __init__(self, inputs):
        n = len(next(iter(inputs.values())))
        self.feeds = iter([{k: v[i:i + 1] for k, v in inputs.items()} for i in range(n)])

    def get_next(self):
        return next(self.feeds, None)

    def rewind(self):
        pass


def ort_static(model, calib_inputs, out):
    from onnxruntime.quantization import QuantFormat, quantize_static
    quantize_static(str(model), str(out), _Reader(calib_inputs), quant_format=QuantFormat.QDQ)


def ort_dynamic(model, out):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(str(model), str(out), weight_type=QuantType.QInt8)


def nncf_quantize(model, calib_inputs, out, transformer):
    import nncf
    m = onnx.load(str(model))
    n = len(next(iter(calib_inputs.values())))
    data = nncf.Dataset([{k: v[i:i + 1] for k, v in calib_inputs.items()} for i in range(n)])
    kwargs = {"model_type": nncf.ModelType.TRANSFORMER} if transformer else {}
    q = nncf.quantize(m, data, subset_size=n, **kwargs)
    onnx.save(q, str(out))


def ort_session(path, threads, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL, optimized=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    if optimized:
        so.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def quantized_compute_nodes(path):
    """Conv/MatMul/Gemm whose weight comes out of a DequantizeLinear (or a dynamic form's MatMulInteger)."""
    g = onnx.load(str(path), load_external_data=False).graph
    dq_out = {n.output[0] for n in g.node if n.op_type == "DequantizeLinear"}
    count = sum(n.op_type in ("Conv", "MatMul", "Gemm") and len(n.input) > 1 and n.input[1] in dq_out for n in g.node)
    return count + sum(n.op_type in ("MatMulInteger", "ConvInteger") for n in g.node)


def ort_integer_share(path, tmp):
    optimized = Path(tmp) / "optimized.onnx"
    ort_session(path, 1, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, optimized)
    ops = Counter(n.op_type for n in onnx.load(str(optimized)).graph.node)
    fused = sum(ops[k] for k in INTEGER_KERNELS)
    return fused, quantized_compute_nodes(path)


def ov_compile(core, path, threads):
    config = {"INFERENCE_NUM_THREADS": threads} if threads else {}
    config["PERFORMANCE_HINT"] = "LATENCY"
    return core.compile_model(str(path), "CPU", config)


def ov_integer_share(compiled):
    def field(op, key):
        return op.get_rt_info()[key].astype(str)
    total = i8 = 0
    for op in compiled.get_runtime_model().get_ordered_ops():
        if field(op, "layerType") not in ("Convolution", "FullyConnected", "MatMul"):
            continue
        total += 1
        i8 += field(op, "runtimePrecision") in ("i8", "u8")
    return i8, total


def median_latencies(runners, rounds):
    """Median seconds per runner over interleaved rounds (after one warm-up run each)."""
    for run in runners.values():
        run()
    times = {k: [] for k in runners}
    for _ in range(rounds):
        for k, run in runners.items():
            t = time.perf_counter()
            run()
            times[k].append(time.perf_counter() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def build_forms(args, m, tmp, calib_inputs):
    fp32 = corpus.path(m.rel)
    calib = Path(tmp) / "calib.npz"
    corpus.save_calib(calib_inputs, calib)
    has_matmul = any(n.op_type in ("MatMul", "Gemm") for n in onnx.load(str(fp32), load_external_data=False).graph.node)
    files, errors = {"fp32": fp32}, {}
    makers = {
        "ptqkit_trt": lambda out: ptqkit_quantize(args.ptqkit, fp32, calib, out, "trt"),
        "ptqkit_ort": lambda out: ptqkit_quantize(args.ptqkit, fp32, calib, out, "ort_cpu"),
        "ptqkit_ov": lambda out: ptqkit_quantize(args.ptqkit, fp32, calib, out, "openvino"),
        "ort_static": lambda out: ort_static(fp32, calib_inputs, out),
        "ort_dynamic": (lambda out: ort_dynamic(fp32, out)) if has_matmul and m.name == "minilm" else None,
        "nncf": lambda out: nncf_quantize(fp32, calib_inputs, out, m.name == "minilm"),
    }
    for spec in args.forms:
        if "=" in spec:  # NAME=RUNTIME OPTIONS
            name, rest = spec.split("=", 1)
            runtime, *extra = rest.split()
            makers[name] = (lambda out, r=runtime, e=extra: ptqkit_quantize(args.ptqkit, fp32, calib, out, r, e))
    for form in (f.split("=", 1)[0] for f in args.forms):
        if form == "fp32" or makers.get(form) is None:
            continue
        out = Path(tmp) / f"{form}.onnx"
        try:
            start = time.perf_counter()
            makers[form](out)
            files[form] = out
            print(f"  {form}: quantized in {time.perf_counter() - start:.1f} s", flush=True)
        except Exception as e:  # noqa: BLE001 - a peer that refuses a model is a row, not a crash
            errors[form] = str(e).splitlines()[-1][:120] if str(e) else type(e).__name__
            print(f"  {form}: failed: {errors[form]}", flush=True)
    return files, errors


def bench_model(args, m):
    calib_inputs = m.build(m.n_calib, corpus.CALIB_SEED)
    test_inputs = m.build(m.n_test, 2)
    one = {k: v[:1] for k, v in test_inputs.items()}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files, errors = build_forms(args, m, tmp, calib_inputs)
        ref = corpus.run(files["fp32"], test_inputs, basic=False)
        metric, share, sizes = {}, {}, {}
        for form, path in files.items():
            sizes[form] = os.path.getsize(path) / 2**20
            try:
                q = corpus.run(path, test_inputs, basic=False)
                metric[form] = m.metric(ref, q, test_inputs)
            except Exception as e:  # noqa: BLE001
                metric[form] = {"error": str(e).splitlines()[0][:80]}
            share[form] = ort_integer_share(path, tmp) if form != "fp32" else None
        latency = {}
        for threads in (1, 0):
            sessions = {f: ort_session(p, threads) for f, p in files.items()}
            runners = {f: (lambda s=s: s.run(None, one)) for f, s in sessions.items()}
            latency[("ort", threads)] = median_latencies(runners, args.rounds)
        ov_share = {}
        try:
            import openvino as ov
            core = ov.Core()
            for threads in (1, 0):
                compiled = {}
                for f, p in files.items():
                    try:
                        compiled[f] = ov_compile(core, p, threads)
                    except Exception as e:  # noqa: BLE001
                        errors.setdefault(f + "@openvino", str(e).splitlines()[0][:120])
                if threads == 1:
                    ov_share = {f: ov_integer_share(c) for f, c in compiled.items()}
                requests = {f: c.create_infer_request() for f, c in compiled.items()}
                runners = {f: (lambda r=r: r.infer(one)) for f, r in requests.items()}
                latency[("ov", threads)] = median_latencies(runners, args.rounds)
        except ImportError:
            pass
        for form in files:
            rows.append((m.name, form, sizes[form], metric[form], share[form], ov_share.get(form),
                         {k: v.get(form) for k, v in latency.items()}, {k: v.get("fp32") for k, v in latency.items()}))
    return rows, errors


def fmt_metric(d):
    return " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in d.items())


def print_rows(rows, errors):
    print("| model | form | MB | metric vs FP32 (ORT default) | ORT int kernels | ORT 1t ms (x FP32) | ORT all ms (x) "
          "| OV i8 nodes | OV 1t ms (x) | OV all ms (x) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, form, size, metric, share, ov_share, lat, base in rows:
        def cell(key):
            v, b = lat.get(key), base.get(key)
            return f"{1e3 * v:.1f} ({b / v:.2f}x)" if v and b else "-"
        sh = f"{share[0]}/{share[1]}" if share else "-"
        osh = f"{ov_share[0]}/{ov_share[1]}" if ov_share else "-"
        print(f"| {name} | {form} | {size:.1f} | {fmt_metric(metric) if form != 'fp32' else '-'} | {sh} | "
              f"{cell(('ort', 1))} | {cell(('ort', 0))} | {osh} | {cell(('ov', 1))} | {cell(('ov', 0))} |")
    for k, v in errors.items():
        print(f"- {k}: {v}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ptqkit", default=str(REPO / "build" / "ptqkit"))
    p.add_argument("--models", default="efficientnet_lite0,nsfw_resnet50,minilm,ocr_rec,ocr_det,orientation,"
                   "ocr_cls,layout_det")
    p.add_argument("--forms", default=",".join(FORMS), help="comma list; NAME=RUNTIME OPTIONS for a ptqkit variant")
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    args.forms = args.forms.split(",")
    print(f"onnxruntime {ort.__version__}, {os.cpu_count()} cores", flush=True)
    all_rows, all_errors = [], {}
    for name in args.models.split(","):
        print(f"{name}:", flush=True)
        rows, errors = bench_model(args, corpus.BY_NAME[name])
        all_rows += rows
        all_errors.update({f"{name} {k}": v for k, v in errors.items()})
        print_rows(rows, errors)
    print("\nall models:")
    print_rows(all_rows, all_errors)


if __name__ == "__main__":
    main()
