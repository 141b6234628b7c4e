"""Real-model corpus: model locations, real-looking calibration / held-out inputs and task metrics.

Models come from scripts/fetch_corpus (cache: ${PTQKIT_CACHE_DIR:-~/.cache/ptqkit}/corpus). Inputs are
built deterministically from real content: text lines rendered with pillow (OCR recognizer/classifier),
scikit-image photos (detector with text drawn on them, orientation, ResNet-50), crops of real photos
from scikit-image, scikit-learn, matplotlib and imgaug with calibration and test photos disjoint
(EfficientNet-Lite0), tokenized sentences (MiniLM), speech-like audio chunks with recurrent state
recorded from the FP32 model (VAD), rendered document pages (layout detector, detector_boxes.py).
Every metric compares the quantized model with the FP32 model on held-out inputs.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort

# One definition of "this CPU's onnxruntime INT8 kernels saturate" for both test suites.
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from qdq import ort_int8_kernels_saturate  # noqa: E402,F401

CACHE = Path(os.environ.get("PTQKIT_CACHE_DIR", Path.home() / ".cache" / "ptqkit")) / "corpus"
IMAGES = ["astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg", "motorcycle_left.png",
          "motorcycle_right.png", "hubble_deep_field.jpg"]
# EfficientNet-Lite0 (ImageNet): calibration crops come from the first photos, held-out crops from the
# others (the stereo pair motorcycle_left/right stays on one side)
MOBILE_CALIB_PHOTOS = ["astronaut.png", "coffee.png", "hubble_deep_field.jpg", "china.jpg", "grace_hopper.jpg"]
MOBILE_TEST_PHOTOS = ["chelsea.png", "rocket.jpg", "motorcycle_left.png", "motorcycle_right.png", "flower.jpg",
                      "quokka.jpg"]
CALIB_SEED = 1  # the seed every corpus user draws calibration inputs with (held-out inputs: seed 2)

WORDS = ("the quick brown fox jumps over lazy dog invoice total amount due date 2024 order number "
         "customer service hello world quantization model accuracy receipt price tax 19.99 $ 42 "
         "street road avenue phone email address page chapter section table figure report "
         "January February March Monday OCR text line ONNX runtime check #1234 (A-B) 3.14 50%").split()
SENTENCES = [
    "A man is playing a guitar on the street.", "Someone plays music outside.",
    "The cat sleeps on the warm windowsill.", "A kitten is napping in the sun.",
    "Stock markets fell sharply on Monday.", "Shares dropped at the start of the week.",
    "How do I reset my password?", "I forgot my login credentials.",
    "The recipe needs two cups of flour.", "Add flour and sugar to the bowl.",
    "The train to Paris leaves at noon.", "Our flight was delayed by three hours.",
    "Quantization reduces model size.", "Neural networks can run in eight-bit integers.",
    "Children are playing football in the park.", "Kids kick a ball on the grass.",
    "The weather will be rainy tomorrow.", "Expect showers and clouds later.",
    "She is reading a book in the library.", "A woman studies quietly among shelves.",
]


def path(rel: str) -> Path:
    p = CACHE / rel
    if not p.is_file():
        raise FileNotFoundError(f"corpus file {p} is missing: run scripts/fetch_corpus "
                                f"(it downloads the pinned corpus into {CACHE})")
    return p


# ---------------------------------------------------------------------------------------------
# input builders
def _font(size):
    from PIL import ImageFont
    return ImageFont.load_default(size=size)


def _lines(rng, n):
    return [" ".join(rng.choice(WORDS, size=rng.integers(2, 6))) for _ in range(n)]


def _render_line(text, rng, height=48):
    from PIL import Image, ImageDraw
    f = _font(int(rng.integers(26, 36)))
    l, t, r, b = f.getbbox(text)
    w = r - l + 16
    h = b - t + 12
    bg = tuple(int(v) for v in rng.integers(190, 256, 3))
    fg = tuple(int(v) for v in rng.integers(0, 70, 3))
    im = Image.new("RGB", (w, h), bg)
    ImageDraw.Draw(im).text((8 - l, 6 - t), text, font=f, fill=fg)
    return im


def _ocr_norm(im, h, w):
    from PIL import Image
    ratio = im.width / im.height
    rw = min(w, int(np.ceil(h * ratio)))
    a = np.asarray(im.resize((rw, h), Image.BILINEAR), np.float32) / 255.0
    a = (a - 0.5) / 0.5
    out = np.zeros((h, w, 3), np.float32)
    out[:, :rw] = a
    return out.transpose(2, 0, 1)


def rec_inputs(n, seed):
    """Lines as PaddleOCR's recognizer feeds them: height 48, aspect ratio kept, padded on the right to
    the widest line (its TextRecognizer: imgW = 48 x the batch's largest w/h, at least 320; here the
    whole set is one batch, so every sample has one width). Squeezing every line into 48x320 (what this built before 2026-12-07) compressed 65%
    of the lines up to 2.3x; FP32 itself then misread 11% of those and none of the others."""
    rng = np.random.default_rng(seed)
    ims = [_render_line(s, rng) for s in _lines(rng, n)]
    width = max([320] + [int(np.ceil(48 * im.width / im.height)) for im in ims])
    return {"x": np.stack([_ocr_norm(im, 48, width) for im in ims])}


def cls_inputs(n, seed):
    rng = np.random.default_rng(seed)
    xs = []
    for i, s in enumerate(_lines(rng, n)):
        im = _render_line(s, rng)
        if i % 2:
            im = im.rotate(180)
        xs.append(_ocr_norm(im, 48, 192))
    return {"x": np.stack(xs)}


def _photos():
    from PIL import Image
    return [Image.open(path("images/" + f)).convert("RGB") for f in IMAGES]


def _crop(rng, im, size):
    lo = min(size, im.width, im.height)
    s = int(rng.integers(lo, min(im.width, im.height) + 1))
    x0 = int(rng.integers(0, im.width - s + 1))
    y0 = int(rng.integers(0, im.height - s + 1))
    return im.crop((x0, y0, x0 + s, y0 + s)).resize((size, size))


def _imagenet(a):
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    return ((np.asarray(a, np.float32) / 255.0 - mean) / std).transpose(2, 0, 1)


def det_inputs(n, seed):
    from PIL import ImageDraw
    rng = np.random.default_rng(seed)
    ph = _photos()
    xs = []
    for _ in range(n):
        im = _crop(rng, ph[int(rng.integers(len(ph)))], 320)
        d = ImageDraw.Draw(im)
        for s in _lines(rng, int(rng.integers(2, 5))):
            col = tuple(int(v) for v in rng.integers(0, 256, 3))
            d.text((int(rng.integers(0, 160)), int(rng.integers(0, 290))), s,
                   font=_font(int(rng.integers(14, 30))), fill=col)
        xs.append(_imagenet(im))
    return {"x": np.stack(xs)}


def orientation_inputs(n, seed):
    rng = np.random.default_rng(seed)
    ph = _photos()
    xs = []
    for i in range(n):
        im = _crop(rng, ph[int(rng.integers(len(ph)))], 224).rotate(90 * (i % 4))
        xs.append(_imagenet(im))
    return {"x": np.stack(xs)}


def nsfw_inputs(n, seed):
    rng = np.random.default_rng(seed)
    ph = _photos()
    xs = []
    for _ in range(n):
        a = np.asarray(_crop(rng, ph[int(rng.integers(len(ph)))], 224), np.float32)[:, :, ::-1]
        xs.append(a - np.array([104, 117, 123], np.float32))
    return {"input_0": np.ascontiguousarray(np.stack(xs))}


def mobile_inputs(n, seed):
    """Random square crops (side 45-100% of the shorter edge, random position, half of them mirrored)
    of real photos, resized to 224x224 (bicubic) and scaled as EfficientNet-Lite's TensorFlow
    preprocessing does, (x / 255 - 0.498) / 0.502. Calibration (seed CALIB_SEED) and held-out inputs
    come from disjoint photos."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    names = MOBILE_CALIB_PHOTOS if seed == CALIB_SEED else MOBILE_TEST_PHOTOS
    photos = [Image.open(path("images/" + f)).convert("RGB") for f in names]
    xs = []
    for i in range(n):
        im = photos[i % len(photos)]
        short = min(im.width, im.height)
        s = int(rng.integers(int(0.45 * short), short + 1))
        x0 = int(rng.integers(0, im.width - s + 1))
        y0 = int(rng.integers(0, im.height - s + 1))
        c = im.crop((x0, y0, x0 + s, y0 + s)).resize((224, 224), Image.BICUBIC)
        if rng.random() < 0.5:
            c = c.transpose(Image.FLIP_LEFT_RIGHT)
        a = (np.asarray(c, np.float32) / 255.0 - 0.498) / 0.502
        xs.append(a.transpose(2, 0, 1))
    return {"images": np.ascontiguousarray(np.stack(xs))}


def _wordpiece(vocab, text):
    import unicodedata
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    toks = []
    for w in text.split():
        # split punctuation
        cur = ""
        parts = []
        for c in w:
            if not c.isalnum():
                if cur:
                    parts.append(cur)
                parts.append(c)
                cur = ""
            else:
                cur += c
        if cur:
            parts.append(cur)
        for p in parts:
            start, sub = 0, []
            while start < len(p):
                end = len(p)
                while end > start:
                    s = p[start:end] if start == 0 else "##" + p[start:end]
                    if s in vocab:
                        sub.append(vocab[s])
                        break
                    end -= 1
                if end == start:
                    sub = [vocab["[UNK]"]]
                    break
                start = end
            toks += sub
    return toks


def minilm_inputs(n, seed, seq=32):
    rng = np.random.default_rng(seed)
    vocab = json.loads(path("minilm/tokenizer.json").read_text())["model"]["vocab"]
    sents = list(SENTENCES)
    while len(sents) < n:  # recombine halves of real sentences into new ones
        a, b = rng.choice(SENTENCES, 2, replace=False)
        sents.append(" ".join(a.split()[: len(a.split()) // 2] + b.split()[len(b.split()) // 2:]))
    sents = [sents[i] for i in rng.permutation(len(sents))[:n]]
    ids = np.zeros((n, seq), np.int64)
    mask = np.zeros((n, seq), np.int64)
    for i, s in enumerate(sents):
        t = [vocab["[CLS]"]] + _wordpiece(vocab, s)[: seq - 2] + [vocab["[SEP]"]]
        ids[i, : len(t)] = t
        mask[i, : len(t)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _speech(rng, length, sr=16000):
    """Speech-like audio: voiced segments (harmonics of a gliding pitch, formant-shaped, syllable
    envelope) separated by pauses with background noise."""
    t = np.arange(length) / sr
    out = rng.normal(0, 0.003, length)
    pos = 0
    while pos < length:
        seg = int(rng.integers(sr // 5, sr // 2))
        if rng.random() < 0.65:
            tt = t[: min(seg, length - pos)]
            f0 = rng.uniform(90, 240) * (1 + 0.1 * np.sin(2 * np.pi * rng.uniform(1, 4) * tt))
            ph = 2 * np.pi * np.cumsum(f0) / sr
            formants = rng.uniform([300, 900, 2200], [900, 2200, 3200])
            v = sum(np.sin(k * ph) / k * sum(np.exp(-((k * f0 - f) / 200) ** 2) for f in formants)
                    for k in range(1, 25))
            env = np.sin(np.pi * np.linspace(0, 1, len(tt))) ** 0.5
            env *= 0.5 + 0.5 * np.abs(np.sin(2 * np.pi * rng.uniform(3, 6) * tt))
            v = v / (np.abs(v).max() + 1e-9) * rng.uniform(0.05, 0.5) * env
            out[pos: pos + len(tt)] += v + rng.normal(0, 0.01, len(tt)) * env
        pos += seg
    return out.astype(np.float32)


VAD_CHUNK = 576  # 512 new samples + 64 samples of context (silero-vad >= 5 at 16 kHz)


def vad_sequences(n_streams, steps, seed):
    """Chunks [steps, B, 576] of speech-like audio, and the recurrent state [steps, 2, B, 128] that the
    FP32 model produces when it runs over them (state fed to step t = state after step t-1)."""
    rng = np.random.default_rng(seed)
    audio = np.stack([_speech(rng, 512 * steps + 64) for _ in range(n_streams)])
    chunks = np.stack([audio[:, 512 * s: 512 * s + VAD_CHUNK] for s in range(steps)])
    sess = session(path("vad/silero_vad.onnx"), basic=True)
    state = np.zeros((2, n_streams, 128), np.float32)
    states = []
    for s in range(steps):
        states.append(state)
        _, state = sess.run(None, {"input": chunks[s], "state": state, "sr": np.array(16000, np.int64)})
    return chunks, np.stack(states)


def vad_inputs(n, seed):
    """n (chunk, state) samples: chunks along axis 0, state along its batch axis 1, sr a scalar."""
    chunks, states = vad_sequences(4, n // 4, seed)
    x = chunks.reshape(-1, VAD_CHUNK)
    st = states.transpose(1, 0, 2, 3).reshape(2, -1, 128)
    return {"input": x, "state": np.ascontiguousarray(st), "sr": np.array(16000, np.int64)}


# ---------------------------------------------------------------------------------------------
# running and metrics
def session(model, basic):
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC if basic
                                   else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    so.log_severity_level = 3
    return ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])


def run(model, inputs, basic, batch=8):
    sess = session(model, basic)
    if "image" in inputs:  # layout detector: fixed batch 1, 8 raw head outputs -> a list of [n, ...] arrays
        n = inputs["image"].shape[0]
        per_sample = [sess.run(None, {"image": inputs["image"][i:i + 1]}) for i in range(n)]
        return [np.concatenate([o[k] for o in per_sample]) for k in range(len(per_sample[0]))]
    if "sr" in inputs:  # VAD: one call per sample group, state batch axis 1
        n = inputs["input"].shape[0]
        outs = []
        for i in range(0, n, batch):
            outs.append(sess.run(None, {"input": inputs["input"][i:i + batch],
                                        "state": inputs["state"][:, i:i + batch],
                                        "sr": inputs["sr"]})[0])
        return np.concatenate(outs)
    n = next(iter(inputs.values())).shape[0]
    outs = [sess.run(None, {k: v[i:i + batch] for k, v in inputs.items()})[0] for i in range(0, n, batch)]
    return np.concatenate(outs)


def _ctc(probs, keys):
    idx = probs.argmax(-1)
    res = []
    for row in idx:
        s, prev = [], 0
        for c in row:
            if c != prev and c != 0:
                s.append(keys[c - 1] if c - 1 < len(keys) else " ")
            prev = c
        res.append("".join(s))
    return res


def _edit(a, b):
    d = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        p, d[0] = d[0], i
        for j, cb in enumerate(b, 1):
            p, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, p + (ca != cb))
    return d[-1]


# Every metric compares the quantized model's output `q` with FP32's `ref` on the same held-out
# inputs. samples_* give one value per held-out sample (what the benchmark's paired bootstrap of
# "method A - method B" resamples); metric_* aggregate them (plus whole-set extras).
def samples_rec(ref, q, inputs):
    """PaddleOCR's own recognition metric (ppocr RecMetric, ignore_space=True by default): lines and
    edits compared with spaces removed. A space the CTC head adds before or after a line (most of the
    raw-string disagreements) changes no word a user reads."""
    keys = path("ocr/ppocr_keys_v1.txt").read_text(encoding="utf-8").splitlines() + [" "]
    a = [t.replace(" ", "") for t in _ctc(ref, keys)]
    b = [t.replace(" ", "") for t in _ctc(q, keys)]
    return {"line_agree": np.array([float(x == y) for x, y in zip(a, b)]),
            "edits": np.array([float(_edit(x, y)) for x, y in zip(a, b)]),
            "chars": np.array([float(len(x)) for x in a])}


def metric_rec(ref, q, inputs):
    s = samples_rec(ref, q, inputs)
    return {"line_agree": float(np.mean(s["line_agree"])),
            "char_agree": 1.0 - float(s["edits"].sum()) / max(1.0, float(s["chars"].sum()))}


def _probabilities(x):
    """Rows of class probabilities: `x` itself when it already is (a softmax output), else softmax(x)."""
    x = x.reshape(len(x), -1).astype(np.float64)
    if (x >= 0).all() and np.allclose(x.sum(1), 1.0, atol=1e-3):
        return np.clip(x, 1e-12, 1.0)
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def samples_top1(ref, q, inputs):
    p, pq = _probabilities(ref), _probabilities(q)
    return {"top1_agree": (ref.argmax(-1) == q.argmax(-1)).astype(np.float64).reshape(len(ref), -1).mean(1),
            "kl": (p * np.log(p / np.clip(pq, 1e-12, 1.0))).sum(1)}


def metric_top1(ref, q, inputs):
    s = samples_top1(ref, q, inputs)
    # kl: mean KL(FP32 || quantized) of the class probabilities, a continuous companion of top-1
    # agreement (which moves by whole near-tie samples)
    return {"top1_agree": float(np.mean(s["top1_agree"])), "max_prob_diff": float(np.abs(ref - q).max()),
            "kl": float(np.mean(s["kl"]))}


def samples_det(ref, q, inputs):
    a, b = ref > 0.3, q > 0.3
    inter = (a & b).reshape(len(a), -1).sum(1)
    union = (a | b).reshape(len(a), -1).sum(1)
    return {"mask_iou": np.where(union > 0, inter / np.maximum(union, 1), 1.0)}


def metric_det(ref, q, inputs):
    return {"mask_iou": float(np.mean(samples_det(ref, q, inputs)["mask_iou"]))}


def layout_inputs(n, seed):
    import detector_boxes as db
    return {"image": np.concatenate([db.preprocess(db.render_page(1000 * seed + i))["image"] for i in range(n)])}


def samples_layout(ref, q, inputs):
    """Per page: recall of the FP32 boxes by the quantized model's boxes and precision of the latter
    (same class, IoU >= 0.5, one-to-one, score > 0.5 on both sides: strict, no near-tie margin)."""
    import detector_boxes as db
    n = ref[0].shape[0]
    rows = [db.box_agreement_outputs([o[i:i + 1] for o in ref], [o[i:i + 1] for o in q], margin=0.0) for i in range(n)]
    return {"box_recall": np.array([r["recall"] for r in rows]), "box_precision": np.array([r["precision"] for r in rows])}


def metric_layout(ref, q, inputs):
    s = samples_layout(ref, q, inputs)
    return {"box_recall": float(np.mean(s["box_recall"])), "box_precision": float(np.mean(s["box_precision"]))}


def _pooled(h, inputs):
    m = inputs["attention_mask"][..., None].astype(np.float32)
    e = (h * m).sum(1) / m.sum(1)
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def samples_minilm(ref, q, inputs):
    a, b = _pooled(ref, inputs), _pooled(q, inputs)
    return {"mean_cos": (a * b).sum(1)}


def metric_minilm(ref, q, inputs):
    a, b = _pooled(ref, inputs), _pooled(q, inputs)
    sa, sb = a @ a.T, b @ b.T
    np.fill_diagonal(sa, -2)
    np.fill_diagonal(sb, -2)
    return {"mean_cos": float(np.mean(samples_minilm(ref, q, inputs)["mean_cos"])),
            "nn_agree": float(np.mean(sa.argmax(1) == sb.argmax(1)))}


def samples_vad(ref, q, inputs):
    return {"mean_abs_diff": np.abs(ref - q).reshape(len(ref), -1).mean(1)}


def metric_vad(ref, q, inputs):
    d = np.abs(ref - q)
    return {"max_abs_diff": float(d.max()), "mean_abs_diff": float(np.mean(samples_vad(ref, q, inputs)["mean_abs_diff"]))}


@dataclass
class Model:
    name: str
    rel: str
    build: Callable
    metric: Callable
    samples: Callable  # per-sample values of the metric (see samples_*)
    n_calib: int
    n_test: int
    int4: bool = False  # has MatMul/Gemm weights


MODELS = [
    Model("ocr_det", "ocr/det.onnx", det_inputs, metric_det, samples_det, 8, 8),
    Model("ocr_rec", "ocr/rec.onnx", rec_inputs, metric_rec, samples_rec, 32, 48, int4=True),
    Model("ocr_cls", "ocr/cls.onnx", cls_inputs, metric_top1, samples_top1, 32, 64),
    Model("orientation", "orientation/model.onnx", orientation_inputs, metric_top1, samples_top1, 32, 64),
    Model("nsfw_resnet50", "nsfw/model.onnx", nsfw_inputs, metric_top1, samples_top1, 16, 32),
    Model("efficientnet_lite0", "mobile/efficientnet_lite0.onnx", mobile_inputs, metric_top1, samples_top1, 32, 128),
    Model("minilm", "minilm/model.onnx", minilm_inputs, metric_minilm, samples_minilm, 32, 64, int4=True),
    Model("silero_vad", "vad/silero_vad.onnx", vad_inputs, metric_vad, samples_vad, 32, 64),
    Model("layout_det", "layout/layout_cdla.onnx", layout_inputs, metric_layout, samples_layout, 16, 24),
]
BY_NAME = {m.name: m for m in MODELS}


def save_calib(inputs, file):
    np.savez(file, **inputs)


def count_qdq(model_path):
    m = onnx.load(str(model_path), load_external_data=False)
    n = {"top": 0, "sub": 0}

    def walk(g, key):
        for node in g.node:
            if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
                n[key] += 1
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, "sub")
                for sg in a.graphs:
                    walk(sg, "sub")
    walk(m.graph, "top")
    return n
