#!/usr/bin/env python3
"""Builds a decoder LLM over 2 GiB as an exported ONNX model, from a real architecture with random
weights (issue 20: no registry this machine reaches serves a >2 GiB transformer; PyTorch and
transformers are not installed, so the graph is written here the way an `optimum` export of a Llama
model lays it out).

  build_decoder.py OUT_DIR [--layers 11] [--seed 0]

Architecture: TinyLlama-1.1B's dimensions (LlamaForCausalLM: hidden 2048, 32 attention heads of 64,
4 key/value heads (grouped-query attention), SwiGLU MLP of 5632, vocabulary 32000, RMSNorm eps 1e-5,
rotary embeddings with theta 10000), 11 of its 22 layers: 571 M parameters, 2.13 GiB of float32 weights
stored as external data (model.onnx + model.onnx.data). Weights: normal with std 0.02 (the
initializer_range of Hugging Face's Llama config), norms 1.

Signature of a KV-cache export: inputs input_ids [B, S] int64, attention_mask [B, P+S] int64,
position_ids [B, S] int64, past_key_values.{i}.key / .value [B, 4, P, 64]; outputs logits [B, S, 32000]
and present.{i}.key / .value [B, 4, P+S, 64]. The causal mask is built in the graph (Trilu over the
query and key lengths), padding from attention_mask; rotary cos/sin tables are initializers gathered by
position_ids.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 2048, 32, 4, 64, 5632, 32000
MAX_POSITIONS, THETA, EPS = 2048, 10000.0, 1e-5


class Graph:
    def __init__(self, seed):
        self.nodes, self.inits, self.rng, self.count = [], [], np.random.default_rng(seed), 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name, shape):
        w = self.rng.standard_normal(shape, dtype=np.float32)
        w *= 0.02
        return self.const(name, w)

    def op(self, op, inputs, name, outputs=1, **attrs):
        outs = [f"{name}_out{k}" if outputs > 1 else f"{name}_out" for k in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs if outputs > 1 else outs[0]


def rms_norm(g, x, name):
    sq = g.op("Mul", [x, x], f"{name}/square")
    mean = g.op("ReduceMean", [sq], f"{name}/mean", axes=[-1], keepdims=1)
    var = g.op("Add", [mean, "eps"], f"{name}/add_eps")
    inv = g.op("Reciprocal", [g.op("Sqrt", [var], f"{name}/sqrt")], f"{name}/reciprocal")
    normed = g.op("Mul", [x, inv], f"{name}/normalize")
    return g.op("Mul", [normed, g.const(f"{name}.weight", np.ones(HIDDEN, np.float32))], f"{name}/scale")


def rotate(g, x, cos, sin, name):
    """x * cos + rotate_half(x) * sin on [B, heads, S, 64]."""
    first = g.op("Slice", [x, "zero1", "half1", "axis3"], f"{name}/first_half")
    second = g.op("Slice", [x, "half1", "dim1", "axis3"], f"{name}/second_half")
    rotated = g.op("Concat", [g.op("Neg", [second], f"{name}/neg"), first], f"{name}/rotate_half", axis=-1)
    return g.op("Add", [g.op("Mul", [x, cos], f"{name}/mul_cos"), g.op("Mul", [rotated, sin], f"{name}/mul_sin")],
                f"{name}/rotary")


def attention(g, x, layer, cos, sin, mask, inputs, outputs):
    p = f"model.layers.{layer}.self_attn"
    heads = lambda t, n, what: g.op("Transpose", [g.op("Reshape", [t, n], f"{p}/{what}_reshape")],
                                    f"{p}/{what}_transpose", perm=[0, 2, 1, 3])
    q = heads(g.op("MatMul", [x, g.weight(f"{p}.q_proj.weight", (HIDDEN, HIDDEN))], f"{p}/q_proj/MatMul"), "heads_shape", "q")
    k = heads(g.op("MatMul", [x, g.weight(f"{p}.k_proj.weight", (HIDDEN, KV_HEADS * HEAD_DIM))], f"{p}/k_proj/MatMul"),
              "kv_heads_shape", "k")
    v = heads(g.op("MatMul", [x, g.weight(f"{p}.v_proj.weight", (HIDDEN, KV_HEADS * HEAD_DIM))], f"{p}/v_proj/MatMul"),
              "kv_heads_shape", "v")
    q, k = rotate(g, q, cos, sin, f"{p}/q"), rotate(g, k, cos, sin, f"{p}/k")
    past_k, past_v = f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"
    inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", KV_HEADS, "past", HEAD_DIM])
               for n in (past_k, past_v)]
    present_k = g.op("Concat", [past_k, k], f"{p}/present_key", axis=2)
    present_v = g.op("Concat", [past_v, v], f"{p}/present_value", axis=2)
    for name, out in ((f"present.{layer}.key", present_k), (f"present.{layer}.value", present_v)):
        g.nodes.append(helper.make_node("Identity", [out], [name], name=f"{p}/{name}"))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", KV_HEADS, "total", HEAD_DIM]))
    # Grouped-query attention: each key/value head serves HEADS / KV_HEADS query heads.
    repeat = lambda t, what: g.op("Reshape", [g.op("Expand", [g.op("Unsqueeze", [t, "axis2"], f"{p}/{what}_unsqueeze"),
                                                               "gqa_expand"], f"{p}/{what}_expand"), "gqa_merge"],
                                  f"{p}/{what}_repeat")
    k_all, v_all = repeat(present_k, "k"), repeat(present_v, "v")
    scores = g.op("MatMul", [q, g.op("Transpose", [k_all], f"{p}/keys_transpose", perm=[0, 1, 3, 2])], f"{p}/qk/MatMul")
    scores = g.op("Add", [g.op("Mul", [scores, "inv_sqrt_dim"], f"{p}/scale"), mask], f"{p}/mask")
    probs = g.op("Softmax", [scores], f"{p}/Softmax", axis=-1)
    ctx = g.op("MatMul", [probs, v_all], f"{p}/pv/MatMul")
    ctx = g.op("Reshape", [g.op("Transpose", [ctx], f"{p}/ctx_transpose", perm=[0, 2, 1, 3]), "merge_shape"],
               f"{p}/ctx_reshape")
    return g.op("MatMul", [ctx, g.weight(f"{p}.o_proj.weight", (HIDDEN, HIDDEN))], f"{p}/o_proj/MatMul")


def mlp(g, x, layer):
    p = f"model.layers.{layer}.mlp"
    gate = g.op("MatMul", [x, g.weight(f"{p}.gate_proj.weight", (HIDDEN, FFN))], f"{p}/gate_proj/MatMul")
    up = g.op("MatMul", [x, g.weight(f"{p}.up_proj.weight", (HIDDEN, FFN))], f"{p}/up_proj/MatMul")
    silu = g.op("Mul", [gate, g.op("Sigmoid", [gate], f"{p}/act_fn/Sigmoid")], f"{p}/act_fn/Mul")
    return g.op("MatMul", [g.op("Mul", [silu, up], f"{p}/Mul"), g.weight(f"{p}.down_proj.weight", (FFN, HIDDEN))],
                f"{p}/down_proj/MatMul")


def build(out_dir: Path, layers: int, seed: int) -> Path:
    g = Graph(seed)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", VOCAB])]
    for name, value in (("eps", np.float32(EPS)), ("inv_sqrt_dim", np.float32(1 / np.sqrt(HEAD_DIM))),
                        ("zero1", np.array([0], np.int64)), ("half1", np.array([HEAD_DIM // 2], np.int64)),
                        ("dim1", np.array([HEAD_DIM], np.int64)), ("axis3", np.array([3], np.int64)),
                        ("axis1", np.array([1], np.int64)), ("axis2", np.array([2], np.int64)),
                        ("axes12", np.array([1, 2], np.int64)), ("one_i", np.array(1, np.int64)),
                        ("one_f", np.float32(1.0)), ("neg_big", np.float32(-1e9)),
                        ("heads_shape", np.array([0, 0, HEADS, HEAD_DIM], np.int64)),
                        ("kv_heads_shape", np.array([0, 0, KV_HEADS, HEAD_DIM], np.int64)),
                        ("gqa_expand", np.array([1, 1, HEADS // KV_HEADS, 1, 1], np.int64)),
                        ("gqa_merge", np.array([0, HEADS, -1, HEAD_DIM], np.int64)),
                        ("merge_shape", np.array([0, 0, HIDDEN], np.int64))):
        g.const(name, value)
    # Rotary tables [MAX_POSITIONS, 64] gathered by position_ids -> [B, 1, S, 64].
    inv_freq = 1.0 / THETA ** (np.arange(0, HEAD_DIM, 2, dtype=np.float64) / HEAD_DIM)
    angles = np.outer(np.arange(MAX_POSITIONS), inv_freq)
    angles = np.concatenate([angles, angles], axis=1)
    cos = g.op("Unsqueeze", [g.op("Gather", [g.const("rotary.cos", np.cos(angles).astype(np.float32)), "position_ids"],
                                  "rotary/cos_gather"), "axis1"], "rotary/cos")
    sin = g.op("Unsqueeze", [g.op("Gather", [g.const("rotary.sin", np.sin(angles).astype(np.float32)), "position_ids"],
                                  "rotary/sin_gather"), "axis1"], "rotary/sin")
    # Mask [B, 1, S, P+S]: -1e9 above the causal diagonal (key j > P + i) and on padded keys.
    seq = g.op("Gather", [g.op("Shape", ["input_ids"], "mask/ids_shape"), "axis1"], "mask/seq")
    total = g.op("Gather", [g.op("Shape", ["attention_mask"], "mask/am_shape"), "axis1"], "mask/total")
    ones = g.op("ConstantOfShape", [g.op("Concat", [seq, total], "mask/shape", axis=0)], "mask/ones",
                value=numpy_helper.from_array(np.array([1.0], np.float32)))
    shift = g.op("Add", [g.op("Sub", [g.op("Squeeze", [total], "mask/total_scalar"),
                                      g.op("Squeeze", [seq], "mask/seq_scalar")], "mask/past"), "one_i"], "mask/shift")
    future = g.op("Trilu", [ones, shift], "mask/future", upper=1)
    padded = g.op("Sub", ["one_f", g.op("Cast", ["attention_mask"], "mask/cast", to=TensorProto.FLOAT)], "mask/padded")
    blocked = g.op("Add", [future, g.op("Unsqueeze", [padded, "axes12"], "mask/padded_unsqueeze")], "mask/blocked")
    mask = g.op("Mul", [g.op("Min", [blocked, "one_f"], "mask/clip"), "neg_big"], "mask/additive")

    x = g.op("Gather", [g.weight("model.embed_tokens.weight", (VOCAB, HIDDEN)), "input_ids"], "model/embed_tokens")
    for layer in range(layers):
        p = f"model.layers.{layer}"
        x = g.op("Add", [x, attention(g, rms_norm(g, x, f"{p}.input_layernorm"), layer, cos, sin, mask, inputs, outputs)],
                 f"{p}/attn_residual")
        x = g.op("Add", [x, mlp(g, rms_norm(g, x, f"{p}.post_attention_layernorm"), layer)], f"{p}/mlp_residual")
    x = rms_norm(g, x, "model.norm")
    g.nodes.append(helper.make_node("MatMul", [x, g.weight("lm_head.weight", (HIDDEN, VOCAB))], ["logits"],
                                    name="lm_head/MatMul"))
    graph = helper.make_graph(g.nodes, "llama_decoder", inputs, outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ptqkit-tests")
    model.ir_version = 8
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "model.onnx"
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="model.onnx.data")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--layers", type=int, default=11)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(build(a.out_dir, a.layers, a.seed))


if __name__ == "__main__":
    main()
