"""Deterministic generators of small FP32 ONNX models and their data, for end-to-end tests.

The models are "trained" cheaply so that quantization errors show up in accuracy: convolution
filters are structured (edge, Laplacian and colour-opponent detectors plus He-scaled random ones),
BatchNorm statistics are measured on the model's own activations, and the classifier is fitted by
softmax regression on a synthetic labelled data set. Everything is seeded; a given call always
writes the same bytes. Only numpy, onnx and onnxruntime are used (no torch).

Node and tensor names follow what torch.onnx.export writes ("/layer1/layer1.0/conv1/Conv",
"/layer1/layer1.0/conv1/Conv_output_0"), so name-based selectors are tested on realistic names.
"""
from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
RESNET_INPUT = "images"
TRANSFORMER_INPUT = "hidden_states"
TOKENS_INPUT = "input_ids"
NUM_IMAGE_CLASSES = 10
NUM_SEQ_CLASSES = 8
SEQ, D_MODEL, HEADS, D_MLP, VOCAB = 16, 64, 4, 128, 32

# Seeds of the data splits: weights are fitted on TRAIN, calibration and evaluation use other seeds
# so the tests never evaluate on the samples that scales were computed from.
TRAIN_SEED, CALIB_SEED, EVAL_SEED = 0, 1, 2


# --------------------------------------------------------------------------------------------
# Graph building
# --------------------------------------------------------------------------------------------
class GraphBuilder:
    """Collects nodes and initializers; names outputs the way torch does (<node>_output_<i>)."""

    def __init__(self):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def init(self, name: str, array) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type: str, name: str, inputs, n_out: int = 1, **attrs):
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, inputs, outputs, graph_name: str, opset: int = OPSET, extra_opsets=()):
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, self.inits)
        opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
        m = helper.make_model(graph, opset_imports=opsets, producer_name="pytorch",
                              producer_version="2.1.0")
        m.ir_version = IR_VERSION
        return m


def _session(model: onnx.ModelProto, extra_outputs=()):
    """An ORT session on a copy of `model` that also returns the named intermediate tensors."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for name in extra_outputs:
        m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _set_init(model: onnx.ModelProto, name: str, array):
    for t in model.graph.initializer:
        if t.name == name:
            t.CopyFrom(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
            return
    raise KeyError(name)


def _orthogonal(rng, rows, cols):
    a = rng.standard_normal((max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    return (q if rows >= cols else q.T)[:rows, :cols].astype(np.float32)


def fit_softmax_regression(feats, labels, n_classes, steps=400, lr=0.5, l2=1e-3):
    """Multinomial logistic regression by full-batch gradient descent on standardised features.

    Returns (W [n_classes, F], b [n_classes]) acting on the *raw* features, so that the fitted
    layer can be written straight into a Gemm/MatMul of the model.
    """
    mu, sd = feats.mean(0), feats.std(0) + 1e-6
    z = (feats - mu) / sd
    onehot = np.eye(n_classes)[labels]
    w = np.zeros((n_classes, z.shape[1]))
    b = np.zeros(n_classes)
    for _ in range(steps):
        logits = z @ w.T + b
        logits -= logits.max(1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(1, keepdims=True)
        g = (p - onehot) / len(z)
        w -= lr * (g.T @ z + l2 * w)
        b -= lr * g.sum(0)
    w_raw = w / sd
    return w_raw.astype(np.float32), (b - w_raw @ mu).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Image data: 10 procedurally generated classes (stripes at 4 angles, colour blobs, checkers,
# rings, smooth gradients) with colour jitter and pixel noise, normalised like ImageNet inputs.
# --------------------------------------------------------------------------------------------
def resnet_data(n: int, seed: int, size: int = 32):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_IMAGE_CLASSES, n)
    yy, xx = np.meshgrid(np.linspace(-1, 1, size), np.linspace(-1, 1, size), indexing="ij")
    imgs = np.empty((n, 3, size, size), np.float32)
    for i, c in enumerate(labels):
        colour = rng.uniform(0.3, 1.0, 3)
        if c < 4:  # oriented stripes
            ang = np.deg2rad(45 * c + rng.uniform(-10, 10))
            f = rng.uniform(2.5, 4.5) * np.pi
            pat = np.sin(f * (xx * np.cos(ang) + yy * np.sin(ang)) + rng.uniform(0, 2 * np.pi))
            img = 0.5 + 0.4 * pat[None] * colour[:, None, None]
        elif c < 7:  # red / green / blue blob on grey
            cy, cx = rng.uniform(-0.5, 0.5, 2)
            r = rng.uniform(0.25, 0.5)
            blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
            tint = np.full(3, 0.1)
            tint[c - 4] = 0.8
            img = 0.45 + (tint[:, None, None] - 0.45) * blob[None]
        elif c == 7:  # checkerboard
            cell = rng.integers(3, 7)
            off = rng.integers(0, cell, 2)
            ii, jj = np.indices((size, size))
            pat = (((ii + off[0]) // cell + (jj + off[1]) // cell) % 2) * 2.0 - 1.0
            img = 0.5 + 0.35 * pat[None] * colour[:, None, None]
        elif c == 8:  # concentric rings
            cy, cx = rng.uniform(-0.3, 0.3, 2)
            rad = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
            pat = np.cos(rng.uniform(8, 12) * rad + rng.uniform(0, 2 * np.pi))
            img = 0.5 + 0.4 * pat[None] * colour[:, None, None]
        else:  # smooth colour gradient, no texture
            ang = rng.uniform(0, 2 * np.pi)
            ramp = 0.5 * (xx * np.cos(ang) + yy * np.sin(ang))
            img = 0.5 + ramp[None] * (colour[:, None, None] - 0.5) * 1.5
        img = img + rng.normal(0, 0.08, (3, size, size))
        imgs[i] = (np.clip(img, 0, 1) - 0.45) / 0.25
    return imgs, labels.astype(np.int64)


def _stem_filters(rng, out_ch: int) -> np.ndarray:
    """3x3 filters over RGB: luminance edges/Laplacians (both signs), colour opponents, random."""
    sobel = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)
    diag = np.array([[0, 1, 2], [-1, 0, 1], [-2, -1, 0]], np.float32)
    lap = np.array([[0, -1, 0], [-1, 4, -1], [0, -1, 0]], np.float32)
    spatial = [sobel, sobel.T, diag, diag[:, ::-1], lap]
    filters = []
    for k in spatial:
        for s in (1, -1):
            filters.append(np.stack([s * k] * 3) / 3)
    box = np.ones((3, 3), np.float32) / 9
    for rgb in ([1, -1, 0], [-1, 1, 0], [-0.5, -0.5, 1], [0.5, 0.5, -1], [1, 0, 0], [0, 1, 0],
                [0, 0, 1], [1, 1, 1]):
        filters.append(np.stack([c * box for c in rgb]))
    filters = [f / np.linalg.norm(f) * np.sqrt(2.0) for f in filters]  # same norm as He init
    while len(filters) < out_ch:
        filters.append(rng.normal(0, np.sqrt(2 / 27), (3, 3, 3)).astype(np.float32))
    return np.stack(filters[:out_ch]).astype(np.float32)


def _build_resnet_graph(rng, widths=(32, 32, 64), hidden=64):
    g = GraphBuilder()
    bns = []  # (bn input tensor, param-name prefix) in topological order, for stat fitting

    def bn(x, pname, node_name, cout, gamma=1.0, beta=0.0):
        for suffix, val in (("weight", gamma), ("bias", beta), ("running_mean", 0.0), ("running_var", 1.0)):
            g.init(f"{pname}.{suffix}", np.full(cout, val, np.float32))
        bns.append((x, pname))
        return g.op("BatchNormalization", node_name, [x] + [f"{pname}.{s}" for s in
                    ("weight", "bias", "running_mean", "running_var")], epsilon=1e-5, momentum=0.9)

    x = RESNET_INPUT
    c0 = widths[0]
    w = _stem_filters(rng, c0)
    g.init("conv1.weight", w)
    y = g.op("Conv", "/conv1/Conv", [x, "conv1.weight"], kernel_shape=[3, 3], pads=[1] * 4)
    y = bn(y, "bn1", "/bn1/BatchNormalization", c0, beta=0.1)
    y = g.op("Relu", "/relu/Relu", [y])
    y = g.op("MaxPool", "/maxpool/MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])

    cin = c0
    for li, cout in enumerate(widths, start=1):
        stride = 1 if cin == cout else 2
        p, n = f"layer{li}.0", f"/layer{li}/layer{li}.0"
        w1 = rng.normal(0, np.sqrt(2 / (cin * 9)), (cout, cin, 3, 3)).astype(np.float32)
        g.init(f"{p}.conv1.weight", w1)
        h = g.op("Conv", f"{n}/conv1/Conv", [y, f"{p}.conv1.weight"], kernel_shape=[3, 3],
                 strides=[stride] * 2, pads=[1] * 4)
        h = bn(h, f"{p}.bn1", f"{n}/bn1/BatchNormalization", cout, beta=0.1)
        h = g.op("Relu", f"{n}/relu/Relu", [h])
        w2 = rng.normal(0, np.sqrt(2 / (cout * 9)), (cout, cout, 3, 3)).astype(np.float32)
        g.init(f"{p}.conv2.weight", w2)
        h = g.op("Conv", f"{n}/conv2/Conv", [h, f"{p}.conv2.weight"], kernel_shape=[3, 3], pads=[1] * 4)
        # gamma 0.5 on the branch's last BN, as residual nets learn: the skip path dominates.
        h = bn(h, f"{p}.bn2", f"{n}/bn2/BatchNormalization", cout, gamma=0.5)
        skip = y
        if stride != 1 or cin != cout:
            wd = rng.normal(0, np.sqrt(2 / cin), (cout, cin, 1, 1)).astype(np.float32)
            g.init(f"{p}.downsample.0.weight", wd)
            skip = g.op("Conv", f"{n}/downsample/downsample.0/Conv", [y, f"{p}.downsample.0.weight"],
                        kernel_shape=[1, 1], strides=[stride] * 2)
            skip = bn(skip, f"{p}.downsample.1", f"{n}/downsample/downsample.1/BatchNormalization", cout)
        y = g.op("Add", f"{n}/Add", [h, skip])
        y = g.op("Relu", f"{n}/relu_1/Relu", [y])
        cin = cout

    y = g.op("GlobalAveragePool", "/avgpool/GlobalAveragePool", [y])
    feats = g.op("Flatten", "/Flatten", [y], axis=1)
    g.init("fc1.weight", np.zeros((hidden, cin), np.float32))
    g.init("fc1.bias", np.zeros(hidden, np.float32))
    h = g.op("Gemm", "/fc1/Gemm", [feats, "fc1.weight", "fc1.bias"], alpha=1.0, beta=1.0, transB=1)
    hidden_out = g.op("Relu", "/relu_fc/Relu", [h])
    g.init("fc2.weight", np.zeros((NUM_IMAGE_CLASSES, hidden), np.float32))
    g.init("fc2.bias", np.zeros(NUM_IMAGE_CLASSES, np.float32))
    g.nodes.append(helper.make_node("Gemm", [hidden_out, "fc2.weight", "fc2.bias"], ["logits"],
                                    name="/fc2/Gemm", alpha=1.0, beta=1.0, transB=1))
    return g, bns, feats, hidden_out


def make_resnet(path, n_train: int = 600, seed: int = 7, size: int = 32) -> onnx.ModelProto:
    """ResNet-style CNN, input images[N,3,size,size] -> logits[N,10]; returns the model it saved."""
    rng = np.random.default_rng(seed)
    g, bns, feats_name, hidden_name = _build_resnet_graph(rng)
    inp = helper.make_tensor_value_info(RESNET_INPUT, TensorProto.FLOAT, ["N", 3, size, size])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", NUM_IMAGE_CLASSES])
    model = g.model([inp], [out], "main_graph")
    x, y = resnet_data(n_train, TRAIN_SEED, size)

    # BatchNorm statistics layer by layer: each BN sees activations of the already-fitted layers.
    # 200 samples x H x W pixels per channel are plenty for a mean and variance.
    for tensor, pname in bns:
        act = _session(model, [tensor]).run([tensor], {RESNET_INPUT: x[:200]})[0]
        _set_init(model, f"{pname}.running_mean", act.mean(axis=(0, 2, 3)))
        _set_init(model, f"{pname}.running_var", act.var(axis=(0, 2, 3)))

    # Hidden FC: standardise the pooled features, then a random rotation, so ReLU keeps about half.
    feats = _session(model, [feats_name]).run([feats_name], {RESNET_INPUT: x})[0].astype(np.float64)
    q = _orthogonal(rng, feats.shape[1], feats.shape[1])
    w1 = q / (feats.std(0) + 1e-6)
    _set_init(model, "fc1.weight", w1)
    _set_init(model, "fc1.bias", -w1 @ feats.mean(0) + 0.2)

    hid = _session(model, [hidden_name]).run([hidden_name], {RESNET_INPUT: x})[0].astype(np.float64)
    w2, b2 = fit_softmax_regression(hid, y, NUM_IMAGE_CLASSES)
    _set_init(model, "fc2.weight", w2)
    _set_init(model, "fc2.bias", b2)

    model.doc_string = "ResNet-style test model generated by tests/python/models.py"
    helper.set_model_props(model, {"ptqkit_test_model": "resnet", "classes": str(NUM_IMAGE_CLASSES)})
    onnx.checker.check_model(model)
    _save(model, path)
    return model


# --------------------------------------------------------------------------------------------
# Sequence data: 8 classes. Tokens 0..15 are "signal" tokens (2 per class), 16..31 filler; each
# position carries a token of the sample's class with p=0.25, of a random class with p=0.1.
# The float model sees embeddings (+ noise); the token model embeds inside (Gather).
# --------------------------------------------------------------------------------------------
def _embedding_table():
    rng = np.random.default_rng(1234)
    return rng.normal(0, 1, (VOCAB, D_MODEL)).astype(np.float32)


def _positions():
    pos = np.arange(SEQ)[:, None] / np.power(100.0, np.arange(D_MODEL)[None] / D_MODEL)
    return (0.3 * np.where(np.arange(D_MODEL) % 2 == 0, np.sin(pos), np.cos(pos))).astype(np.float32)


def transformer_tokens(n: int, seed: int):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_SEQ_CLASSES, n)
    u = rng.uniform(size=(n, SEQ))
    own = 2 * labels[:, None] + rng.integers(0, 2, (n, SEQ))
    other = 2 * rng.integers(0, NUM_SEQ_CLASSES, (n, SEQ)) + rng.integers(0, 2, (n, SEQ))
    filler = rng.integers(16, VOCAB, (n, SEQ))
    tokens = np.where(u < 0.25, own, np.where(u < 0.35, other, filler))
    return tokens.astype(np.int64), labels.astype(np.int64)


def transformer_data(n: int, seed: int, tokens: bool = False):
    """(inputs, labels); inputs are token ids [n,16] or noisy embeddings [n,16,64] float32."""
    ids, labels = transformer_tokens(n, seed)
    if tokens:
        return ids, labels
    rng = np.random.default_rng(seed + 100)
    x = _embedding_table()[ids] + _positions()[None] + rng.normal(0, 0.3, (n, SEQ, D_MODEL))
    return x.astype(np.float32), labels


def _decomposed_layernorm(g: GraphBuilder, inp: str, name: str, node: str, d: int = D_MODEL) -> str:
    """LayerNorm as torch exports it below opset 17 (and many ViT exports do anyway):
    ReduceMean, Sub, Pow, ReduceMean, Add(eps), Sqrt, Div, then Mul/Add by weight and bias."""
    g.init(f"{name}.weight", np.ones(d, np.float32))
    g.init(f"{name}.bias", np.zeros(d, np.float32))
    g.init(f"{name}.two", np.array(2.0, np.float32))
    g.init(f"{name}.eps", np.array(1e-5, np.float32))
    mean = g.op("ReduceMean", f"{node}/ReduceMean", [inp], axes=[-1], keepdims=1)
    c = g.op("Sub", f"{node}/Sub", [inp, mean])
    sq = g.op("Pow", f"{node}/Pow", [c, f"{name}.two"])
    var = g.op("ReduceMean", f"{node}/ReduceMean_1", [sq], axes=[-1], keepdims=1)
    var = g.op("Add", f"{node}/Add", [var, f"{name}.eps"])
    std = g.op("Sqrt", f"{node}/Sqrt", [var])
    y = g.op("Div", f"{node}/Div", [c, std])
    y = g.op("Mul", f"{node}/Mul", [y, f"{name}.weight"])
    return g.op("Add", f"{node}/Add_1", [y, f"{name}.bias"])


def _encoder_block(g: GraphBuilder, rng, x: str, i: int, decomposed_ln: bool = False) -> str:
    p, n = f"blocks.{i}", f"/blocks.{i}"
    d, hd = D_MODEL, D_MODEL // HEADS

    def linear(inp, name, node, w, bias):
        g.init(f"{name}.weight_T", w.astype(np.float32))
        g.init(f"{name}.bias", bias.astype(np.float32))
        y = g.op("MatMul", f"{node}/MatMul", [inp, f"{name}.weight_T"])
        return g.op("Add", f"{node}/Add", [y, f"{name}.bias"])

    def layernorm(inp, name, node):
        if decomposed_ln:
            return _decomposed_layernorm(g, inp, name, node)
        g.init(f"{name}.weight", np.ones(d, np.float32))
        g.init(f"{name}.bias", np.zeros(d, np.float32))
        return g.op("LayerNormalization", f"{node}/LayerNormalization",
                    [inp, f"{name}.weight", f"{name}.bias"], axis=-1, epsilon=1e-5)

    def small(k):
        return rng.normal(0, 0.02, k)

    h = layernorm(x, f"{p}.norm1", f"{n}/norm1")
    # W_k = W_q (+ a little noise): attention scores are token similarities, as trained models show.
    wq = _orthogonal(rng, d, d)
    wk = wq + rng.normal(0, 0.05, (d, d))
    q = linear(h, f"{p}.attn.q", f"{n}/attn/q", wq, small(d))
    k = linear(h, f"{p}.attn.k", f"{n}/attn/k", wk, small(d))
    v = linear(h, f"{p}.attn.v", f"{n}/attn/v", _orthogonal(rng, d, d), small(d))
    g.init(f"{p}.attn.heads_shape", np.array([0, -1, HEADS, hd], np.int64))
    g.init(f"{p}.attn.merge_shape", np.array([0, -1, d], np.int64))
    g.init(f"{p}.attn.scale", np.array(np.sqrt(hd), np.float32))
    heads = []
    for j, t in enumerate((q, k, v)):
        r = g.op("Reshape", f"{n}/attn/Reshape" + (f"_{j}" if j else ""), [t, f"{p}.attn.heads_shape"])
        perm = [0, 2, 3, 1] if j == 1 else [0, 2, 1, 3]  # K comes out transposed for Q @ K^T
        heads.append(g.op("Transpose", f"{n}/attn/Transpose" + (f"_{j}" if j else ""), [r], perm=perm))
    s = g.op("MatMul", f"{n}/attn/MatMul", [heads[0], heads[1]])
    s = g.op("Div", f"{n}/attn/Div", [s, f"{p}.attn.scale"])
    a = g.op("Softmax", f"{n}/attn/Softmax", [s], axis=-1)
    o = g.op("MatMul", f"{n}/attn/MatMul_1", [a, heads[2]])
    o = g.op("Transpose", f"{n}/attn/Transpose_3", [o], perm=[0, 2, 1, 3])
    o = g.op("Reshape", f"{n}/attn/Reshape_3", [o, f"{p}.attn.merge_shape"])
    o = linear(o, f"{p}.attn.proj", f"{n}/attn/proj", 0.5 * _orthogonal(rng, d, d), small(d))
    x = g.op("Add", f"{n}/Add", [x, o])

    h = layernorm(x, f"{p}.norm2", f"{n}/norm2")
    h = linear(h, f"{p}.mlp.fc1", f"{n}/mlp/fc1", _orthogonal(rng, d, D_MLP), np.full(D_MLP, -0.3))
    # GELU as torch exports it: x * 0.5 * (1 + erf(x / sqrt(2))).
    for name, val in (("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5)):
        g.init(f"{p}.mlp.act.{name}", np.array(val, np.float32))
    e = g.op("Div", f"{n}/mlp/act/Div", [h, f"{p}.mlp.act.sqrt2"])
    e = g.op("Erf", f"{n}/mlp/act/Erf", [e])
    e = g.op("Add", f"{n}/mlp/act/Add", [e, f"{p}.mlp.act.one"])
    e = g.op("Mul", f"{n}/mlp/act/Mul", [h, e])
    e = g.op("Mul", f"{n}/mlp/act/Mul_1", [e, f"{p}.mlp.act.half"])
    h = linear(e, f"{p}.mlp.fc2", f"{n}/mlp/fc2", 0.7 * _orthogonal(rng, D_MLP, d), small(d))
    return g.op("Add", f"{n}/Add_1", [x, h])


def make_transformer_block(path, blocks: int = 2, tokens: bool = False, n_train: int = 1500,
                           seed: int = 11, decomposed_ln: bool = False, data_fn=None) -> onnx.ModelProto:
    """Pre-LN encoder: [N,16,64] float (or input_ids [N,16] int64) -> logits [N,8].
    decomposed_ln: every LayerNorm as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add;
    data_fn(n, seed) -> (inputs, labels) replaces transformer_data for fitting the head."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    if tokens:
        g.init("embed.weight", _embedding_table())
        g.init("pos_embed", _positions()[None])
        x = g.op("Gather", "/embed/Gather", ["embed.weight", TOKENS_INPUT], axis=0)
        x = g.op("Add", "/Add", [x, "pos_embed"])
        inp = helper.make_tensor_value_info(TOKENS_INPUT, TensorProto.INT64, ["N", SEQ])
    else:
        x = TRANSFORMER_INPUT
        inp = helper.make_tensor_value_info(TRANSFORMER_INPUT, TensorProto.FLOAT, ["N", SEQ, D_MODEL])
    for i in range(blocks):
        x = _encoder_block(g, rng, x, i, decomposed_ln)
    if decomposed_ln:
        x = _decomposed_layernorm(g, x, "norm", "/norm")
    else:
        g.init("norm.weight", np.ones(D_MODEL, np.float32))
        g.init("norm.bias", np.zeros(D_MODEL, np.float32))
        x = g.op("LayerNormalization", "/norm/LayerNormalization", [x, "norm.weight", "norm.bias"],
                 axis=-1, epsilon=1e-5)
    pooled = g.op("ReduceMean", "/ReduceMean", [x], axes=[1], keepdims=0)
    g.init("head.weight_T", np.zeros((D_MODEL, NUM_SEQ_CLASSES), np.float32))
    g.init("head.bias", np.zeros(NUM_SEQ_CLASSES, np.float32))
    y = g.op("MatMul", "/head/MatMul", [pooled, "head.weight_T"])
    g.nodes.append(helper.make_node("Add", [y, "head.bias"], ["logits"], name="/head/Add"))
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", NUM_SEQ_CLASSES])
    model = g.model([inp], [out], "main_graph")

    data, labels = (data_fn(n_train, TRAIN_SEED) if data_fn else
                    transformer_data(n_train, TRAIN_SEED, tokens=tokens))
    feats = _session(model, [pooled]).run([pooled], {inp.name: data})[0].astype(np.float64)
    w, b = fit_softmax_regression(feats, labels, NUM_SEQ_CLASSES)
    _set_init(model, "head.weight_T", w.T)
    _set_init(model, "head.bias", b)
    model.doc_string = "Transformer encoder test model generated by tests/python/models.py"
    helper.set_model_props(model, {"ptqkit_test_model": "transformer"})
    onnx.checker.check_model(model)
    _save(model, path)
    return model


# --------------------------------------------------------------------------------------------
# Small special-purpose models for the edge-case tests. Input "cnn_input" [N,16,8,8].
# --------------------------------------------------------------------------------------------
def _save(model, path):
    if path is not None:
        onnx.save(model, os.fspath(path))


SMALL_CNN_INPUT = "cnn_input"


def _conv_trunk(g: GraphBuilder, rng, x=SMALL_CNN_INPUT, cin=16, cout=32, weight_from_constant=False):
    w = rng.normal(0, np.sqrt(2 / (cin * 9)), (cout, cin, 3, 3)).astype(np.float32)
    if weight_from_constant:
        g.nodes.append(helper.make_node("Constant", [], ["/conv/Constant_output_0"], name="/conv/Constant",
                                        value=numpy_helper.from_array(w, "const_w")))
        wname = "/conv/Constant_output_0"
    else:
        wname = g.init("conv.weight", w)
    y = g.op("Conv", "/conv/Conv", [x, wname], kernel_shape=[3, 3], pads=[1] * 4)
    y = g.op("Relu", "/relu/Relu", [y])
    g.init("conv2.weight", rng.normal(0, np.sqrt(2 / (cout * 9)), (cout, cout, 3, 3)).astype(np.float32))
    y = g.op("Conv", "/conv2/Conv", [y, "conv2.weight"], kernel_shape=[3, 3], pads=[1] * 4)
    y = g.op("Relu", "/relu_1/Relu", [y])
    y = g.op("GlobalAveragePool", "/pool/GlobalAveragePool", [y])
    return g.op("Flatten", "/Flatten", [y], axis=1)


def _small_cnn(path, opset=OPSET, weight_from_constant=False, custom_op=False, seed=3):
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = SMALL_CNN_INPUT
    extra = ()
    if custom_op:
        x = g.op("MysteryScale", "/custom/MysteryScale", [x], domain="com.example.ptqkit")
        extra = (("com.example.ptqkit", 1),)
    f = _conv_trunk(g, rng, x, weight_from_constant=weight_from_constant)
    g.init("fc.weight", rng.normal(0, 0.2, (32, 32)).astype(np.float32))
    g.init("fc.bias", np.zeros(32, np.float32))
    g.nodes.append(helper.make_node("Gemm", [f, "fc.weight", "fc.bias"], ["y"], name="/fc/Gemm", transB=1))
    inp = helper.make_tensor_value_info(SMALL_CNN_INPUT, TensorProto.FLOAT, ["N", 16, 8, 8])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32])
    m = g.model([inp], [out], "small_cnn", opset=opset, extra_opsets=extra)
    if opset < 13:
        m.ir_version = 7  # the oldest IR ptqkit accepts; IR 7 covers opsets up to 12
    _save(m, path)
    return m


def small_cnn_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.normal(0, 1, (n, 16, 8, 8)).astype(np.float32)


def make_small_cnn(path):
    """Conv/Relu/Conv/Relu/GAP/Flatten/Gemm on cnn_input[N,16,8,8], opset 17."""
    return _small_cnn(path)


def make_custom_op_model(path):
    """The small CNN behind an op of an unknown domain ("com.example.ptqkit"::MysteryScale)."""
    return _small_cnn(path, custom_op=True)


def make_opset11_model(path):
    """The small CNN at opset 11 (IR 7): must be upgraded to opset >= 13 for per-channel Q/DQ."""
    return _small_cnn(path, opset=11)


def make_constant_weight_model(path):
    """The small CNN with the first Conv's weight coming from a Constant node, not an initializer."""
    return _small_cnn(path, weight_from_constant=True)


def make_external_data_model(path):
    """The small CNN saved with every initializer in one external file "<name>.data" beside it."""
    m = _small_cnn(None)
    onnx.save(m, os.fspath(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location=os.path.basename(os.fspath(path)) + ".data", size_threshold=0)
    return m


def make_qdq_model(path):
    """The small CNN with a QuantizeLinear/DequantizeLinear pair already on its input."""
    m = _small_cnn(None)
    g = m.graph
    g.initializer.extend([numpy_helper.from_array(np.array(0.05, np.float32), "x_scale"),
                          numpy_helper.from_array(np.array(0, np.int8), "x_zero_point")])
    for node in g.node:
        if node.name == "/conv/Conv":
            node.input[0] = "x_dq"
    g.node.insert(0, helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["x_dq"],
                                      name="/x/DequantizeLinear"))
    g.node.insert(0, helper.make_node("QuantizeLinear", [SMALL_CNN_INPUT, "x_scale", "x_zero_point"], ["x_q"],
                                      name="/x/QuantizeLinear"))
    _save(m, path)
    return m


def make_two_matmul_model(path, seed=5):
    """x[N,16,64] -> /l/MatMul -> Relu -> /l/MatMul_1 -> Relu -> /head/MatMul -> Add -> y.

    Two nodes whose names share a prefix, for the exact-name selector test.
    """
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    y = "x"
    for i, name in enumerate(("/l/MatMul", "/l/MatMul_1", "/head/MatMul")):
        g.init(f"w{i}", (_orthogonal(rng, 64, 64) * 1.4).astype(np.float32))
        y = g.op("MatMul", name, [y, f"w{i}"])
        if i < 2:
            y = g.op("Relu", f"/l/Relu_{i}", [y])
    g.init("head.bias", np.zeros(64, np.float32))
    g.nodes.append(helper.make_node("Add", [y, "head.bias"], ["y"], name="/head/Add"))
    inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 64])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16, 64])
    m = g.model([inp], [out], "two_matmul")
    _save(m, path)
    return m


def two_matmul_data(n: int, seed: int):
    return np.random.default_rng(seed).normal(0, 1, (n, 16, 64)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Calibration data files
# --------------------------------------------------------------------------------------------
def make_calibration(kind: str, path, n: int = 128, fmt: str = "npy", seed: int = CALIB_SEED,
                     files: int = 3):
    """Write calibration inputs of model `kind` ("resnet", "transformer", "tokens", "small_cnn",
    "two_matmul") as fmt "npy" (one array), "npz" (key = input name) or "dir" (`files` .npy
    chunks in a directory, named so that sorted order is sample order). Returns the array."""
    if kind == "resnet":
        x, name = resnet_data(n, seed)[0], RESNET_INPUT
    elif kind == "transformer":
        x, name = transformer_data(n, seed)[0], TRANSFORMER_INPUT
    elif kind == "tokens":
        x, name = transformer_data(n, seed, tokens=True)[0], TOKENS_INPUT
    elif kind == "small_cnn":
        x, name = small_cnn_data(n, seed), SMALL_CNN_INPUT
    elif kind == "two_matmul":
        x, name = two_matmul_data(n, seed), "x"
    else:
        raise ValueError(kind)
    path = os.fspath(path)
    if fmt == "npy":
        np.save(path, x)
    elif fmt == "npz":
        np.savez(path, **{name: x})
    elif fmt == "dir":
        os.makedirs(path, exist_ok=True)
        for i, chunk in enumerate(np.array_split(x, files)):
            np.save(os.path.join(path, f"calib_{i:03d}.npy"), chunk)
    else:
        raise ValueError(fmt)
    return x


# --------------------------------------------------------------------------------------------
# Sensitivity-scan models (tests/python/test_sensitivity.py, test_exclude.py)
# --------------------------------------------------------------------------------------------
OUTLIER_MLP_INPUT = "features"
OUTLIER_FEATURES, OUTLIER_HIDDEN, OUTLIER_CLASSES = 32, 64, 10
# Feature 0 arrives in raw units (think of a price in cents next to standardised features):
# raw = OUTLIER_GAIN * z + OUTLIER_OFFSET, so |x[:, 0]| is ~2000 while every other feature is ~1.
OUTLIER_GAIN, OUTLIER_OFFSET = 500.0, 2000.0


def outlier_mlp_data(n: int, seed: int):
    """(features [n,32] float32, labels [n]): 10 Gaussian classes; feature 0 in raw units.

    The class prototypes come from a fixed seed, so every split shares the same classes."""
    protos = np.random.default_rng(4321).normal(0, 1, (OUTLIER_CLASSES, OUTLIER_FEATURES))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, OUTLIER_CLASSES, n)
    z = protos[labels] + rng.normal(0, 0.7, (n, OUTLIER_FEATURES))
    z[:, 0] = z[:, 0] * OUTLIER_GAIN + OUTLIER_OFFSET
    return z.astype(np.float32), labels.astype(np.int64)


def make_outlier_mlp(path, n_train: int = 1500, seed: int = 21, layers: int = 3) -> onnx.ModelProto:
    """features[N,32] -> /fc1/Gemm -> Relu -> (/fc2, /fc3: Gemm -> Relu) -> /head/Gemm -> logits[N,10].

    A model with exactly one quantization-sensitive node: /fc1/Gemm, the only consumer of the raw
    input whose feature 0 is ~2000x larger than the others. fc1 folds the standardisation of that
    feature into its weights (column 0 divided by OUTLIER_GAIN, the offset moved into the bias), so
    in FP32 the network is an ordinary well-conditioned MLP. Quantizing fc1's input per tensor puts
    ~16 units in one INT8 step and rounds every standardised feature to 0; its per-channel weights
    lose column 0 the same way. Every other tensor is a standardised activation that INT8 handles.
    Weights: orthogonal rotations (He gain) centred on the training data, head fitted by softmax
    regression, as for the ResNet fixture.
    """
    rng = np.random.default_rng(seed)
    x, y = outlier_mlp_data(n_train, TRAIN_SEED)
    g = GraphBuilder()
    h = OUTLIER_MLP_INPUT
    acts = x.astype(np.float64)
    cin = OUTLIER_FEATURES
    for i in range(1, layers + 1):
        q = _orthogonal(rng, OUTLIER_HIDDEN, cin).astype(np.float64) * np.sqrt(2.0)  # [out, in]
        if i == 1:
            # Standardise inside the layer: z0 = (x0 - offset) / gain, folded into W and b.
            w = q.copy()
            w[:, 0] = q[:, 0] / OUTLIER_GAIN
            b = -q[:, 0] * OUTLIER_OFFSET / OUTLIER_GAIN
            pre = acts @ w.T + b
        else:
            w, b = q, np.zeros(OUTLIER_HIDDEN)
            pre = acts @ w.T
        # Centre each unit on the training data (+0.2 so ReLU keeps a bit more than half).
        b = b - pre.mean(0) + 0.2
        pre = pre - pre.mean(0) + 0.2
        g.init(f"fc{i}.weight", w.astype(np.float32))
        g.init(f"fc{i}.bias", b.astype(np.float32))
        h = g.op("Gemm", f"/fc{i}/Gemm", [h, f"fc{i}.weight", f"fc{i}.bias"], transB=1)
        h = g.op("Relu", f"/act{i}/Relu", [h])
        acts = np.maximum(pre, 0.0)
        cin = OUTLIER_HIDDEN
    w, b = fit_softmax_regression(acts, y, OUTLIER_CLASSES)
    g.init("head.weight", w)
    g.init("head.bias", b)
    g.nodes.append(helper.make_node("Gemm", [h, "head.weight", "head.bias"], ["logits"],
                                    name="/head/Gemm", transB=1))
    inp = helper.make_tensor_value_info(OUTLIER_MLP_INPUT, TensorProto.FLOAT, ["N", OUTLIER_FEATURES])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", OUTLIER_CLASSES])
    model = g.model([inp], [out], "outlier_mlp")
    model.doc_string = "MLP with one outlier input channel, generated by tests/python/models.py"
    onnx.checker.check_model(model)
    _save(model, path)
    return model


def make_grid_input_model(path, seed: int = 8) -> onnx.ModelProto:
    """x[N,16] -> /relu/Relu -> /fc/MatMul -> y[N,16], for inputs on the INT8 grid.

    Fed integer values in [-127, 127] that reach both ends (grid_input_data), max calibration gives
    x a scale of exactly 1, so Q/DQ on x is the identity: the Relu's probe changes nothing and must
    score exactly 0.0. The MatMul's probe also quantizes its weight (a scaled rotation), which is
    not on any grid, so it scores above 0.
    """
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    h = g.op("Relu", "/relu/Relu", ["x"])
    g.init("fc.weight", (_orthogonal(rng, 16, 16) * 0.05).astype(np.float32))
    g.nodes.append(helper.make_node("MatMul", [h, "fc.weight"], ["y"], name="/fc/MatMul"))
    inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])
    m = g.model([inp], [out], "grid_input")
    onnx.checker.check_model(m)
    _save(m, path)
    return m


def grid_input_data(n: int, seed: int):
    """Integers in [-127, 127] as float32; every sample holds both -127 and 127."""
    x = np.random.default_rng(seed).integers(-127, 128, (n, 16)).astype(np.float32)
    x[:, 0], x[:, 1] = 127.0, -127.0
    return x


# Massive activations (as in trained ViTs and LLMs): one token of every sample carries a few
# features thousands of times larger than the rest. A decomposed LayerNorm's variance then spans
# ~1 (ordinary tokens) to ~1e5 (that token), so an 8-bit Sqrt input rounds ordinary tokens'
# variance to 0 and Div(x - mean, 0) turns the outputs NaN/Inf.
MASSIVE_VALUE = 3000.0


def massive_transformer_data(n: int, seed: int):
    x, labels = transformer_data(n, seed)
    x = x.copy()
    x[:, 0, :4] = MASSIVE_VALUE
    return x, labels


def make_decomposed_ln_transformer(path, blocks: int = 1) -> onnx.ModelProto:
    return make_transformer_block(path, blocks=blocks, decomposed_ln=True, data_fn=massive_transformer_data)


def make_padded_token_model(path):
    """A stand-in for a token model: hidden states x [batch, 6, 32] through two MatMuls and a bias
    (each position on its own), and an attention_mask input [batch, 6] that only the loss report
    and the sensitivity scan read (--eval_mask_input)."""
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.normal(size=(32, 64)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(size=(64, 32)).astype(np.float32), "w2")
    bias = numpy_helper.from_array(rng.normal(size=(32,)).astype(np.float32), "bias")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"), helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["m"], name="mm2"), helper.make_node("Add", ["m", "bias"], ["y"], name="add")],
        "tokens",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 6, 32]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["B", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 6, 32])], initializer=[w1, w2, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.save(model, path)


def padded_token_data(path, n: int = 32, pad_seed: int = 5):
    """Calibration data for make_padded_token_model: sequences of 1..6 real positions; padded
    positions hold large values (from `pad_seed`), as a model's hidden states at padding can, so
    they set the ranges and dominate an unmasked comparison. Returns (x, mask)."""
    rng = np.random.default_rng(4)
    lengths = rng.integers(1, 7, size=n)
    mask = (np.arange(6)[None, :] < lengths[:, None]).astype(np.int64)
    x = rng.normal(size=(n, 6, 32)).astype(np.float32)
    pad = np.random.default_rng(pad_seed).normal(size=x.shape).astype(np.float32) * 30.0
    x = np.where(mask[..., None] == 1, x, pad).astype(np.float32)
    np.savez(path, x=x, attention_mask=mask)
    return x, mask
