"""Before/after comparison of an FP32 model and its INT8 Q/DQ version on a labelled eval set.

usage: compare.py FP32.onnx INT8.onnx EVAL.npz
EVAL.npz holds "images" (any float dtype; cast to float32) and "labels". Both models run in
onnxruntime (CPU); prints accuracy, agreement, cosine similarity of the logits, sizes and Q/DQ counts.
"""
import os
import sys
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort


def run(path, x):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 100]})[0] for i in range(0, len(x), 100)])


def model_size(path):
    """Bytes of the model file plus any external data files it references."""
    total = os.path.getsize(path)
    m = onnx.load(path, load_external_data=False)
    locs = {e.value for t in m.graph.initializer for e in t.external_data if e.key == "location"}
    return total + sum(os.path.getsize(os.path.join(os.path.dirname(path), loc)) for loc in locs)


def quantized_nodes(model):
    """Op type -> number of nodes whose inputs come from DequantizeLinear."""
    dq_out = {o for n in model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return Counter(n.op_type for n in model.graph.node
                   if n.op_type not in ("QuantizeLinear", "DequantizeLinear") and set(n.input) & dq_out)


def main(fp32_path, int8_path, eval_path):
    data = np.load(eval_path)
    x, labels = data["images"].astype(np.float32), data["labels"]
    ref, out = run(fp32_path, x), run(int8_path, x)
    a64, b64 = ref.astype(np.float64), out.astype(np.float64)
    cos = (a64 * b64).sum(1) / (np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1))
    q = onnx.load(int8_path)
    ops = Counter(n.op_type for n in q.graph.node)
    acc_fp32, acc_int8 = (ref.argmax(1) == labels).mean(), (out.argmax(1) == labels).mean()

    print(f"\nEvaluation on {len(x)} held-out samples ({os.path.basename(eval_path)})\n")
    print(f"{'':28}{'FP32':>14}{'INT8':>14}")
    print(f"{'top-1 accuracy':28}{acc_fp32 * 100:>13.1f}%{acc_int8 * 100:>13.1f}%")
    print(f"{'model size':28}{model_size(fp32_path) / 1024:>10.1f} KiB{model_size(int8_path) / 1024:>10.1f} KiB")
    print(f"{'QuantizeLinear nodes':28}{0:>14}{ops['QuantizeLinear']:>14}")
    print(f"{'DequantizeLinear nodes':28}{0:>14}{ops['DequantizeLinear']:>14}")
    print()
    print(f"top-1 agreement INT8 vs FP32:  {(ref.argmax(1) == out.argmax(1)).mean() * 100:.1f}%")
    print(f"cosine similarity of logits:   mean {cos.mean():.5f}, worst {cos.min():.5f}")
    print("nodes with quantized inputs:   "
          + (", ".join(f"{op} {n}" for op, n in sorted(quantized_nodes(q).items())) or "none"))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
