#!/usr/bin/env bash
# The install a user does: a brand-new virtual environment, `pip install <repo>` (an isolated
# build: scikit-build-core and pybind11 come from PyPI, the C++ dependencies from scripts/setup),
# then, outside the source tree and without LD_LIBRARY_PATH, `import ptqkit`, quantize a fixture
# through the API and through `python -m ptqkit`, and check that ONNX Runtime was loaded from the
# installed package (not from .deps) and that both outputs equal the CLI's.
# Usage: tests/python_api/fresh_venv_install.sh [path/to/ptqkit-binary]   (default build/ptqkit)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cli="$(realpath -m "${1:-$root/build/ptqkit}")"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH PYTHONPATH

"$python" -m venv "$work/venv"
start=$(date +%s)
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$root"
echo "fresh venv: pip install took $(( $(date +%s) - start )) s"

# The fixture comes from the test generators, which need onnx: the test venv makes it.
cd "$work"
"$root/.deps/venv/bin/python" - "$root" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/tests/python")
import models
models.make_small_cnn("small_cnn.onnx")
models.make_calibration("small_cnn", "calib.npy", n=32)
PY

"$work/venv/bin/python" - "$work" <<'PY'
import sys
from pathlib import Path

import numpy as np
import ptqkit

venv = Path(sys.argv[1]) / "venv"
package = Path(ptqkit.__file__).resolve().parent
assert venv.resolve() in package.parents, f"ptqkit imported from {package}, not from the fresh venv"
report = ptqkit.quantize(onnx_path="small_cnn.onnx", calibration_data=np.load("calib.npy"),
                         output_path="api.quant.onnx", quantize_mode="int8")
assert sum(report["quantized_by_op_type"].values()) > 0, report
ort = [line.split()[-1] for line in open("/proc/self/maps") if "libonnxruntime.so" in line]
assert ort and all(Path(p).parent == package for p in ort), f"libonnxruntime loaded from {set(ort)}"
try:
    ptqkit.quantize(onnx_path="missing.onnx")
    raise AssertionError("no error for a missing model")
except ptqkit.Error as e:
    assert isinstance(e, ValueError) and "missing.onnx" in str(e)
print(f"fresh venv: import ptqkit from {package}, libonnxruntime from {sorted(set(ort))[0]}")
PY

"$work/venv/bin/python" -m ptqkit --onnx_path small_cnn.onnx --calibration_data_path calib.npy \
  --output_path cli_module.quant.onnx >/dev/null
cmp api.quant.onnx cli_module.quant.onnx
if [ -x "$cli" ]; then
  "$cli" quantize --onnx_path small_cnn.onnx --calibration_data_path calib.npy --output_path binary.quant.onnx >/dev/null
  cmp api.quant.onnx binary.quant.onnx
  echo "fresh venv: ptqkit.quantize, python -m ptqkit and $cli wrote the same bytes"
else
  echo "fresh venv: ptqkit.quantize and python -m ptqkit wrote the same bytes ($cli not built: not compared)"
fi
echo "fresh venv install: ok"
