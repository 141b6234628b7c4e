"""A decoder LLM over 2 GiB through `ptqkit quantize` at its defaults (issue 20): build_decoder.py's
Llama-architecture model (TinyLlama's dimensions, 11 layers, 2.29 GiB of float32 weights as external
data, KV-cache inputs and outputs, int64 token/position/mask inputs) quantized to int8, fp8 and int4
(awq_clip, awq_lite). Each output must pass the runs a user does: it loads and runs in ONNX Runtime
(basic level; also the default level for int8 and int4), and its next-token logits agree with FP32's
on held-out inputs above the bounds below.

Inputs as a deployed decoder sees them: a 16-token prompt run through the FP32 model gives the KV
cache (past_key_values, "state recorded from FP32" as for the corpus VAD), then 8 new tokens at
positions 16..23 are the sample. Token ids are uniform over the vocabulary (the weights are random, so
no text is more real than another). Calibration seed 1 (48 samples; the default holds 12 out for the
loss report), held-out seed 2 (16 samples).

Peak RSS and wall of every run are printed (pytest -s; figures in bench/README.md); the memory bound is
the benchmark's and the large_model_memory ctest's to check, not this test's.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import build_decoder  # noqa: E402
from qdq import ort_int8_kernels_saturate  # noqa: E402

LAYERS, PAST, STEP, BATCH = 11, 16, 8, 8
CALIB_SAMPLES, TEST_SAMPLES = 48, 16

# case -> (quantize options, {level: (min mean logits cosine, min next-token top-1 agreement)}).
# Measured 2026-12-04 on this AVX2 machine at the basic level on these 16 x 8 held-out positions:
# int8 cosine 0.9958, top-1 0.789 (default level, --reduce_range file: 0.9940, 0.742); fp8 0.9874, 0.625 (random weights: near-flat logits over 32000
# tokens make top-1 fragile). Bounds a little below. 2026-12-05, same code as the BatchNormalization fold:
# int8 0.9958 / 0.805 (default level 0.9958 / 0.812), fp8 0.9874 / 0.641; int4 awq_clip (block 128) 0.9087 /
# 0.305 at the basic level: on random Gaussian weights 4-bit blocks leave ~11% noise per weight in each of the
# 11 layers (real LLM weights keep far more), so its bound is set from that run. 2026-12-06: awq_lite 0.9078 /
# 0.312 at the basic level, 0.9073 / 0.305 at the default level (1.33x the weights, 718 s).
CASES = {
    "int8": (["--quantize_mode", "int8"], {"basic": (0.99, 0.75), "default": (0.99, 0.70)}),
    "fp8": (["--quantize_mode", "fp8"], {"basic": (0.98, 0.58)}),
    "int4_awq_clip": (["--quantize_mode", "int4", "--calibration_method", "awq_clip"],
                      {"basic": (0.89, 0.25), "default": (0.89, 0.25)}),
    "int4_awq_lite": (["--quantize_mode", "int4", "--calibration_method", "awq_lite"],
                      {"basic": (0.89, 0.25), "default": (0.89, 0.25)}),
}
# Where ONNX Runtime's INT8 kernels saturate (x86 without VNNI) the INT8 file a user deploys at the
# default level is the --reduce_range one (tests/python/qdq.py).
SATURATING_INT8 = ort_int8_kernels_saturate()


def _session(path, basic):
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC if basic
                                   else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def _run(sess, feeds):
    names = [o.name for o in sess.get_outputs()]
    n = feeds["input_ids"].shape[0]
    outs = [dict(zip(names, sess.run(None, {k: v[i:i + BATCH] for k, v in feeds.items()}))) for i in range(0, n, BATCH)]
    return {k: np.concatenate([o[k] for o in outs]) for k in names}


def _samples(fp32, n, seed):
    """n decoding steps: STEP new tokens after a PAST-token prompt whose KV cache FP32 computed."""
    rng = np.random.default_rng(seed)
    prompt = rng.integers(0, build_decoder.VOCAB, (n, PAST))
    step = rng.integers(0, build_decoder.VOCAB, (n, STEP))
    empty = np.zeros((n, build_decoder.KV_HEADS, 0, build_decoder.HEAD_DIM), np.float32)
    first = {"input_ids": prompt, "attention_mask": np.ones((n, PAST), np.int64),
             "position_ids": np.tile(np.arange(PAST), (n, 1))}
    for i in range(LAYERS):
        first[f"past_key_values.{i}.key"] = first[f"past_key_values.{i}.value"] = empty
    cache = _run(fp32, first)
    feeds = {"input_ids": step, "attention_mask": np.ones((n, PAST + STEP), np.int64),
             "position_ids": np.tile(np.arange(PAST, PAST + STEP), (n, 1))}
    for i in range(LAYERS):
        for kv in ("key", "value"):
            feeds[f"past_key_values.{i}.{kv}"] = cache[f"present.{i}.{kv}"]
    return feeds


class Decoder:
    def __init__(self, folder: Path):
        self.model = build_decoder.build(folder / "fp32", LAYERS, seed=0)
        self.weights = (folder / "fp32" / "model.onnx.data").stat().st_size
        fp32 = _session(self.model, basic=True)
        self.calib = folder / "calib.npz"
        np.savez(self.calib, **_samples(fp32, CALIB_SAMPLES, seed=1))
        self.test = _samples(fp32, TEST_SAMPLES, seed=2)
        self.reference = _run(fp32, self.test)


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    return Decoder(tmp_path_factory.mktemp("decoder"))


@pytest.fixture(scope="module")
def ptqkit(request):
    return request.config.getoption("--ptqkit")


def _quantize(ptqkit, decoder, options, out):
    r = subprocess.run(["/usr/bin/time", "-v", ptqkit, "quantize", "--onnx_path", str(decoder.model),
                        "--calibration_data_path", str(decoder.calib), "--output_path", str(out), *options],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"ptqkit refused the decoder ({options}):\n{r.stderr[-3000:]}"
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) * 1024
    clock = re.search(r"Elapsed \(wall clock\) time.*: (.+)", r.stderr).group(1).strip().split(":")
    wall = sum(float(part) * 60**k for k, part in enumerate(reversed(clock)))
    return rss, wall


def _agreement(reference, quantized):
    """(mean cosine of each sample's logits, top-1 agreement of the next token over all positions)."""
    a = reference["logits"].reshape(reference["logits"].shape[0], -1).astype(np.float64)
    b = quantized["logits"].reshape(a.shape).astype(np.float64)
    cos = float(np.mean(np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))))
    top1 = float(np.mean(reference["logits"].argmax(-1) == quantized["logits"].argmax(-1)))
    return cos, top1


@pytest.mark.parametrize("case", list(CASES))
def test_decoder_over_2gib_quantizes_at_the_defaults(case, decoder, ptqkit, tmp_path):
    assert decoder.weights > 2 * 2**30
    options, bounds = CASES[case]
    out = tmp_path / f"{case}.onnx"
    rss, wall = _quantize(ptqkit, decoder, options, out)
    onnx.checker.check_model(str(out))  # by path: the weights are external data over 2 GiB
    print(f"\n{case}: peak RSS {rss / 2**30:.2f} GiB = {rss / decoder.weights:.2f}x the weights, wall {wall:.1f} s, "
          f"output {sum(f.stat().st_size for f in tmp_path.iterdir()) / 2**30:.2f} GiB")
    for level, (min_cos, min_top1) in bounds.items():
        path = out
        if level == "default" and case == "int8" and SATURATING_INT8:
            path = tmp_path / "int8_reduce_range.onnx"
            _quantize(ptqkit, decoder, options + ["--reduce_range", "--eval_samples", "0"], path)
        quantized = _run(_session(path, basic=level == "basic"), decoder.test)
        assert set(quantized) == set(decoder.reference)
        cos, top1 = _agreement(decoder.reference, quantized)
        present = min(float(np.dot(decoder.reference[k].ravel(), quantized[k].ravel()) /
                            (np.linalg.norm(decoder.reference[k]) * np.linalg.norm(quantized[k])))
                      for k in decoder.reference if k.startswith("present."))
        print(f"  {level} level{' (--reduce_range)' if path != out else ''}: logits cosine {cos:.4f}, "
              f"next-token top-1 agreement {top1:.3f}, worst KV-cache cosine {present:.4f}")
        assert cos >= min_cos and top1 >= min_top1, (
            f"{case} at ONNX Runtime's {level} level: logits cosine {cos:.4f} (bound {min_cos}), top-1 agreement "
            f"{top1:.3f} (bound {min_top1})")
