"""Writes the demo's inputs, so `scripts/demo` needs no generation step:

  examples/resnet_tiny.onnx  ResNet-style CNN (Conv/BN/Relu/MaxPool, residual blocks, GAP, Gemm),
                             input images[N,3,16,16], 10 classes, weights fitted on synthetic images
  examples/calib.npy         128 calibration images, float32 [128,3,16,16] (its own seed)
  examples/eval.npz          500 held-out images ("images", stored as float16 to keep the repository
                             small; cast to float32 before use) and their "labels" (int64)

The images are the procedural 10-class set of tests/python/models.py (stripes at four angles,
colour blobs, checkerboards, rings, gradients). Re-running writes the same files on one machine;
other CPUs may differ in the last bits of the fitted weights.
Run: .deps/venv/bin/python examples/make_example.py
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
import models  # noqa: E402

SIZE = 16  # 16x16 images keep the three files under 2 MB together


def main():
    models.make_resnet(os.path.join(HERE, "resnet_tiny.onnx"), size=SIZE)
    calib, _ = models.resnet_data(128, models.CALIB_SEED, SIZE)
    np.save(os.path.join(HERE, "calib.npy"), calib)
    images, labels = models.resnet_data(500, models.EVAL_SEED, SIZE)
    np.savez_compressed(os.path.join(HERE, "eval.npz"), images=images.astype(np.float16), labels=labels)
    for name in ("resnet_tiny.onnx", "calib.npy", "eval.npz"):
        print(f"wrote examples/{name} ({os.path.getsize(os.path.join(HERE, name)) / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
