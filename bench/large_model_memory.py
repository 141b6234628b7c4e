"""Peak memory of `ptqkit quantize` (int8) on a model whose weights exceed protobuf's 2 GiB limit
(issue 8): builds a chain of MatMuls with GiB-scale initializers stored as external data, quantizes
it, and reports peak RSS (from /usr/bin/time) against the weights' size.

    .deps/venv/bin/python bench/large_model_memory.py build/ptqkit [total_GiB] [--embedded]

--embedded writes the weights inside the .onnx (only possible below 2 GiB).
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(path: Path, total_gib: float, embedded: bool) -> int:
    d = 4096  # each weight d x d float32 = 64 MiB
    per = d * d * 4
    layers = max(1, int(total_gib * (1 << 30) // per))
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((d, d), dtype=np.float32) / np.sqrt(d)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", d])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", d])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8  # what opset 17 came with (onnx stamps its newest IR, which ONNX Runtime may not read)
    if embedded:
        onnx.save(m, str(path))
    else:
        onnx.save(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="big.onnx.data")
    return layers * per


def main() -> None:
    ptqkit = sys.argv[1]
    total = float(sys.argv[2]) if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else 2.25
    embedded = "--embedded" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "big.onnx"
        weights = build(src, total, embedded)
        calib = Path(tmp) / "calib.npy"
        np.save(calib, np.random.default_rng(1).standard_normal((8, 4096)).astype(np.float32))
        r = subprocess.run(["/usr/bin/time", "-v", ptqkit, "quantize", "--onnx_path", str(src), "--output_path",
                            str(Path(tmp) / "big.quant.onnx"), "--calibration_data_path", str(calib),
                            "--calibration_method", "max"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ptqkit failed:\n{r.stderr[:3000]}")
        rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
        wall = re.search(r"Elapsed \(wall clock\) time.*: (.+)", r.stderr).group(1)
        print(f"weights {weights / 2**30:.2f} GiB ({'embedded' if embedded else 'external data'}): "
              f"peak RSS {rss_kib / 2**20:.2f} GiB = {rss_kib * 1024 / weights:.2f}x the weights, wall {wall}")


if __name__ == "__main__":
    main()
