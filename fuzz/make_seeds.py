"""Writes the seed corpus of the fuzz harnesses into fuzz/corpus/<harness>/ (run once; the result is
committed, and scripts/fuzz merges what the fuzzers find into it). Seeds are small, so each run
executes fast: the hostile-suite MLP instead of the example ResNet, a few rows of data.

Usage: .deps/venv/bin/python fuzz/make_seeds.py build/ptqkit
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import hostile  # noqa: E402

CORPUS = ROOT / "fuzz" / "corpus"


def put(harness: str, name: str, data: bytes):
    folder = CORPUS / harness
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def npy(arr) -> bytes:
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


def npz(arrays: dict, deflate: bool) -> bytes:
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as z:
        for k, v in arrays.items():
            z.writestr(k + ".npy", npy(v))
    return b.getvalue()


def main(ptqkit: str):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # model loader
        put("fuzz_model_loader", "mlp.onnx", hostile.mlp(tmp / "m.onnx").SerializeToString())
        put("fuzz_model_loader", "mlp_cyclic.onnx", hostile.mlp(tmp / "c.onnx", cyclic=True).SerializeToString())
        put("fuzz_model_loader", "mlp_external.onnx",
            hostile.mlp(tmp / "e.onnx", external=("w.bin", "0", "4096")).SerializeToString())
        put("fuzz_model_loader", "mlp_dynamic.onnx", hostile.mlp(tmp / "d.onnx", dims=("N", "D")).SerializeToString())
        t = onnx.TypeProto()
        t.sequence_type.elem_type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        put("fuzz_model_loader", "mlp_sequence.onnx", hostile.mlp(tmp / "s.onnx", input_type=t).SerializeToString())
        # npy / npz: the first byte picks the reader (0 memory .npy, 1 file .npy, 2 .npz)
        x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
        for i, arr in enumerate([x, x.astype(np.float16), np.arange(6, dtype=np.int64).reshape(3, 2),
                                 np.array(16000, np.int64), np.zeros((2, 3), bool)]):
            put("fuzz_npy_npz", f"npy_mem_{i}", b"\x00" + npy(arr))
            put("fuzz_npy_npz", f"npy_file_{i}", b"\x01" + npy(arr))
        put("fuzz_npy_npz", "npz_stored", b"\x02" + npz({"x": x, "mask": x > 0}, False))
        put("fuzz_npy_npz", "npz_deflated", b"\x02" + npz({"x": x, "sr": np.array(1, np.int64)}, True))
        # JSON readers: 0 scores, 1 calibration cache, 2 blocks
        scores = json.loads(hostile.scores_file(tmp / "s.json", {"/a/MatMul": 1.0, "/b/Conv": 0.25}).read_text())
        put("fuzz_json_readers", "scores", b"\x00" + json.dumps(scores).encode())
        scores["non_finite"] = [{"target": "/c/Sqrt", "reason": "NaN"}]
        scores["scores"]["/c/Sqrt"] = 1.7976931348623157e308
        put("fuzz_json_readers", "scores_non_finite", b"\x00" + json.dumps(scores).encode())
        hostile.mlp_data(tmp / "calib.npy")
        subprocess.run([ptqkit, "quantize", "--onnx_path", tmp / "m.onnx", "--calibration_data_path",
                        tmp / "calib.npy", "--output_path", tmp / "q.onnx", "--save_calibration_cache",
                        tmp / "cache.json", "--log_level", "ERROR"], check=True, capture_output=True)
        put("fuzz_json_readers", "cache", b"\x01" + (tmp / "cache.json").read_bytes())
        put("fuzz_json_readers", "blocks", b"\x02" + json.dumps({"attn": ["^/a/", "Softmax"], "conv": "Conv$"}).encode())
        # selectors: pattern NUL name NUL name ...
        for i, parts in enumerate([["/l/.*MatMul", "/l/MatMul", "/l/MatMul_1", "/head/Add"],
                                   ["(a+)+$", "a" * 30 + "!"], ["^blocks\\.(\\d+)/", "blocks.1/attn", "blocks.22/mlp"],
                                   ["x:8x3x224x224,mask:8x128", "state:1,h:1"],
                                   ["Status Message: /onnxruntime_src/a/b.cc:12 onnxruntime::F(int) const x",
                                    "matmul_helper.h:59 Compute MatMul dimension mismatch"]]):
            put("fuzz_selectors", f"seed_{i}", "\0".join(parts).encode())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "ptqkit"))
