"""Reading Q/DQ structure out of a quantized model, and comparing model outputs.

These helpers are deliberately independent of ptqkit: they look only at the ONNX graph (via the
onnx package) and run models with onnxruntime from PyPI.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def ort_int8_kernels_saturate() -> bool:
    """Whether onnxruntime's CPU provider computes INT8 Q/DQ models wrongly at its default level on
    this machine (ptqkit's OrtInt8KernelsSaturate): x86-64 without VNNI, where its u8s8 kernels add
    pairs of u8*s8 products in 16 bits and saturate. There, 7-bit weights (--reduce_range) are what
    a user must deploy, and ptqkit's INT8 probes run at the basic level."""
    import platform
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return False
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    return not {"avx512_vnni", "avx_vnni"} & set(flags)


class Graph:
    """Producer/consumer index of a loaded model; constants = initializers + Constant outputs."""

    def __init__(self, model: onnx.ModelProto):
        self.model = model
        g = model.graph
        self.nodes = list(g.node)
        self.by_name = {n.name: n for n in self.nodes}
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.consumers: dict[str, list] = {}
        for n in self.nodes:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.consts = {t.name: t for t in g.initializer}
        for n in self.nodes:
            if n.op_type == "Constant":
                self.consts[n.output[0]] = next(a.t for a in n.attribute if a.name == "value")
        self.outputs = {o.name for o in g.output}

    def const(self, name):
        return numpy_helper.to_array(self.consts[name]) if name in self.consts else None

    def op_counts(self) -> Counter:
        return Counter(n.op_type for n in self.nodes)

    def dq_on_input(self, node, index):
        """The DequantizeLinear producing input `index` of `node`, or None."""
        if index >= len(node.input):
            return None
        p = self.producer.get(node.input[index])
        return p if p is not None and p.op_type == "DequantizeLinear" else None

    def is_quantized(self, node) -> bool:
        """True when the data input and (if any) weight input of `node` come from DQ nodes."""
        n_in = 2 if node.op_type in ("Conv", "ConvTranspose", "Gemm", "MatMul") else 1
        return all(self.dq_on_input(node, i) is not None for i in range(n_in))


@dataclass
class WeightQuant:
    axis: int
    scale: np.ndarray
    zero_point: np.ndarray | None
    stored: np.ndarray          # the integer weights (dq_only) or float weights before Q
    stored_is_int8: bool
    via_quantize: bool          # weight goes initializer -> Q -> DQ (default mode)


def weight_quant(g: Graph, node, index=1) -> WeightQuant:
    dq = g.dq_on_input(node, index)
    assert dq is not None, f"{node.name}: input {index} has no DequantizeLinear"
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in dq.attribute}
    scale = g.const(dq.input[1])
    zp = g.const(dq.input[2]) if len(dq.input) > 2 and dq.input[2] else None
    src = dq.input[0]
    q = g.producer.get(src)
    via_q = q is not None and q.op_type == "QuantizeLinear"
    stored = g.const(q.input[0]) if via_q else g.const(src)
    assert stored is not None, f"{node.name}: weight of input {index} is not a constant"
    axis = attrs.get("axis", 1)
    rank = stored.ndim
    return WeightQuant(axis % rank if rank else 0, np.asarray(scale), zp, stored,
                       stored.dtype == np.int8, via_q)


def activation_scale(g: Graph, node, index=0) -> np.ndarray:
    dq = g.dq_on_input(node, index)
    assert dq is not None, f"{node.name}: input {index} has no DequantizeLinear"
    return np.asarray(g.const(dq.input[1]))


def opset(model: onnx.ModelProto) -> int:
    """The default-domain opset of the model."""
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


# ---- running and comparing ----------------------------------------------------------------------
def session(path_or_model, threads=2) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    src = path_or_model if isinstance(path_or_model, str) else (
        path_or_model.SerializeToString() if isinstance(path_or_model, onnx.ModelProto) else str(path_or_model))
    return ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"])


def run(path, x, batch=250) -> np.ndarray:
    s = session(path)
    name = s.get_inputs()[0].name
    return np.concatenate([s.run(None, {name: x[i:i + batch]})[0] for i in range(0, len(x), batch)])


def cosine_rows(a, b) -> np.ndarray:
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)


def compare(ref, out, labels=None) -> dict:
    """Top-1 agreement, mean / min cosine, and accuracies when labels are given."""
    cos = cosine_rows(ref, out)
    res = {"agreement": float((ref.argmax(1) == out.argmax(1)).mean()),
           "cos_mean": float(cos.mean()), "cos_min": float(cos.min())}
    if labels is not None:
        res["acc_fp32"] = float((ref.argmax(1) == labels).mean())
        res["acc_int8"] = float((out.argmax(1) == labels).mean())
    return res
