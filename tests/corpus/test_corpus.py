"""End-to-end accuracy on the real-model corpus (scripts/fetch_corpus): each model is quantized by the
ptqkit CLI with --calibration_method max; the output must pass onnx.checker, load and run in ONNX
Runtime at ORT_ENABLE_BASIC and at the default level, contain QuantizeLinear/DequantizeLinear (inside
the If branches for the VAD, whose whole network lives there), and keep its task metric vs FP32 on
held-out inputs above the thresholds below, at both optimization levels.

A missing model FAILS (run scripts/fetch_corpus); nothing here is skipped.

Thresholds: set slightly below what `max` achieves on main at 12c6fba at ORT_ENABLE_BASIC (fake-quant;
measured with bench/corpus_accuracy.py, table in bench/README.md); the default level must reach the
same bound (issue 9: outputs ONNX Runtime runs as accurately as fake-quant), so FP8 cases whose default
level collapses today (ocr_cls, ocr_det, ocr_rec) fail by design. Where `max` failed on main (model refused), the
threshold is what max achieves on the model converted to opset 13 by onnx.version_converter, i.e.
what the fixed ptqkit must reach on the original model.
"""
from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest

import corpus

# model -> mode -> {metric: (min or max, bound)}; "min": metric >= bound, "max": metric <= bound
THRESHOLDS = {
    # measured with max on main 12c6fba (ORT basic / ORT default), 8-64 held-out samples:
    # det int8 IoU 0.855/0.856, fp8 0.902/0.684
    "ocr_det": {"int8": {"mask_iou": ("min", 0.80)}, "fp8": {"mask_iou": ("min", 0.85)}},
    # rec int8 line 0.542/0.542 char 0.960/0.960; fp8 line 0.417/0.104 char 0.965/0.821
    "ocr_rec": {"int8": {"line_agree": ("min", 0.45), "char_agree": ("min", 0.93)},
                "fp8": {"line_agree": ("min", 0.35), "char_agree": ("min", 0.93)}},
    # cls int8 top-1 1.000/1.000; fp8 1.000/0.500 (default level: coin flip, issue 9 item 3)
    "ocr_cls": {"int8": {"top1_agree": ("min", 0.95)}, "fp8": {"top1_agree": ("min", 0.95)}},
    # PP-LCNet (depthwise) int8 top-1 0.578/0.578; fp8 0.813/0.781
    "orientation": {"int8": {"top1_agree": ("min", 0.52)}, "fp8": {"top1_agree": ("min", 0.75)}},
    # ResNet-50 int8 top-1 1.000/1.000 (max prob diff 0.002); fp8 1.000/1.000 (0.004/0.025)
    "nsfw_resnet50": {"int8": {"top1_agree": ("min", 0.95)}, "fp8": {"top1_agree": ("min", 0.95)}},
    # MiniLM int8 cos 0.9826 nn 0.875 (both levels); fp8 cos 0.9976 nn 0.984
    "minilm": {"int8": {"mean_cos": ("min", 0.975), "nn_agree": ("min", 0.80)},
               "fp8": {"mean_cos": ("min", 0.99), "nn_agree": ("min", 0.93)}},
    # VAD: refused on main (scalar `sr` in the calibration file), so not measured; target: speech
    # probability within 0.05 of FP32 on every chunk.
    "silero_vad": {"int8": {"max_abs_diff": ("max", 0.05)}, "fp8": {"max_abs_diff": ("max", 0.05)}},
}

CASES = [(m.name, mode) for m in corpus.MODELS for mode in ("int8", "fp8")]


@pytest.fixture(scope="session")
def ptqkit(request):
    return request.config.getoption("--ptqkit")


@pytest.mark.parametrize("name,mode", CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_corpus_model(name, mode, ptqkit, tmp_path):
    m = corpus.BY_NAME[name]
    src = corpus.path(m.rel)  # FileNotFoundError naming scripts/fetch_corpus when missing
    calib = tmp_path / "calib.npz"
    corpus.save_calib(m.build(m.n_calib, seed=1), calib)
    out = tmp_path / "q.onnx"
    r = subprocess.run([ptqkit, "quantize", "--onnx_path", str(src), "--output_path", str(out),
                        "--quantize_mode", mode, "--calibration_method", "max",
                        "--calibration_data_path", str(calib)], capture_output=True, text=True)
    assert r.returncode == 0, f"ptqkit refused {name} ({mode}):\n{r.stderr[-3000:]}"

    onnx.checker.check_model(str(out), full_check=True)
    n = corpus.count_qdq(out)
    assert n["top"] + n["sub"] > 0, f"{name}: no QuantizeLinear/DequantizeLinear in the output"
    if name == "silero_vad":
        assert n["sub"] > 0, "silero_vad: no Q/DQ inside the If branches, where its network lives"

    test = m.build(m.n_test, seed=2)
    ref = corpus.run(src, test, basic=True)
    for basic in (True, False):
        level = "ORT_ENABLE_BASIC" if basic else "ORT default level"
        q = corpus.run(out, test, basic=basic)
        assert q.shape == ref.shape and np.isfinite(q).all(), f"{name} {mode} {level}: bad output"
        got = m.metric(ref, q, test)
        for key, (kind, bound) in THRESHOLDS[name][mode].items():
            ok = got[key] >= bound if kind == "min" else got[key] <= bound
            assert ok, f"{name} {mode} at {level}: {key}={got[key]:.4f}, needs {kind} {bound} ({got})"
