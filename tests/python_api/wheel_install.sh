#!/usr/bin/env bash
# The install a user of the wheel does (issue 22): a brand-new virtual environment with the onnx and
# onnxruntime Python packages, `pip install ptqkit-*.whl`, then, outside the source tree and without
# LD_LIBRARY_PATH or PYTHONPATH:
#  - the extension resolves every library inside the installed package or from the system, none from
#    the build tree or .deps, and exports no protobuf or ONNX symbol;
#  - `import ptqkit` next to `import onnx, onnxruntime`, in both orders, and the three used together
#    in one process (ptqkit quantizes, onnx checks the output, onnxruntime runs it);
#  - the `ptqkit` command and the Python API write the same bytes as the build tree's binary, on the
#    README's example model and on the corpus's MiniLM (int64 inputs).
# Prints the import time. Usage: tests/python_api/wheel_install.sh WHEEL [path/to/ptqkit-binary]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
wheel="$(realpath "$1")"
cli="$(realpath -m "${2:-$root/build/ptqkit}")"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH PYTHONPATH

"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
# The same onnx and onnxruntime versions as scripts/setup's test venv.
"$py" -m pip install -q --disable-pip-version-check "$wheel" onnx==1.23.2 onnxruntime==1.32.0
cd "$work"
cp "$root/examples/resnet_tiny.onnx" "$root/examples/calib.npy" .

package="$("$py" -c 'import ptqkit, pathlib; print(pathlib.Path(ptqkit.__file__).resolve().parent)')"
case "$package" in "$work"/venv/*) ;; *) echo "wheel: ptqkit imported from $package, not the fresh venv" >&2; exit 1 ;; esac
extension="$(ls "$package"/_ptqkit*.so)"
# Every library the extension loads: from the installed package (or auditwheel's ptqkit.libs) or
# the system, never from the repository.
if ldd "$extension" | grep -E "not found|$root"; then echo "wheel: the extension reaches outside the wheel" >&2; exit 1; fi
if readelf -d "$extension" | grep -E "R(UN)?PATH" | grep -F "$root"; then
  echo "wheel: the extension's RPATH names the build tree" >&2; exit 1
fi
# The glibc floor stays at 2.34 (python/src/glibc_floor.cc): no symbol of a newer glibc.
newer="$(objdump -T "$extension" | grep -o -E 'GLIBC_2\.(3[5-9]|[4-9][0-9])' | sort -u | tr '\n' ' ' || true)"
[ -z "$newer" ] || { echo "wheel: the extension needs a newer glibc than 2.34: $newer" >&2; exit 1; }
leaked="$(nm -D --defined-only "$extension" | grep -c -E 'google|protobuf|onnx|re2|fmt' || true)"
[ "$leaked" = 0 ] || { echo "wheel: the extension exports $leaked protobuf/ONNX/RE2/fmt symbols" >&2; exit 1; }

for order in "onnx, onnxruntime, ptqkit" "ptqkit, onnx, onnxruntime" "onnxruntime, ptqkit, onnx"; do
  "$py" - "$order" <<'PY'
import sys
for name in sys.argv[1].split(", "):
    __import__(name)
import numpy as np
import onnx
import onnxruntime as ort
import ptqkit

report = ptqkit.quantize(onnx_path="resnet_tiny.onnx", calibration_data=np.load("calib.npy"),
                         output_path="together.quant.onnx")
assert sum(report["quantized_by_op_type"].values()) > 0, report
model = onnx.load("together.quant.onnx")
onnx.checker.check_model(model)
assert any(n.op_type == "QuantizeLinear" for n in model.graph.node)
session = ort.InferenceSession("together.quant.onnx", providers=["CPUExecutionProvider"])
feed = {session.get_inputs()[0].name: np.load("calib.npy")[:1]}
out = session.run(None, feed)[0]
assert np.isfinite(out).all()
print(f"wheel: import {sys.argv[1]}: quantized, checked by onnx and run by onnxruntime in one process")
PY
done

start=$(date +%s%N)
"$py" -c "import ptqkit"
echo "wheel: import ptqkit took $(( ($(date +%s%N) - start) / 1000000 )) ms (a fresh interpreter included)"

"$work/venv/bin/ptqkit" --version
"$work/venv/bin/ptqkit" quantize --onnx_path resnet_tiny.onnx --calibration_data_path calib.npy \
  --output_path command.quant.onnx >/dev/null
"$py" -c "import numpy as np, ptqkit; ptqkit.quantize(onnx_path='resnet_tiny.onnx', calibration_data=np.load('calib.npy'), output_path='api.quant.onnx')"
cmp command.quant.onnx api.quant.onnx
"$cli" quantize --onnx_path resnet_tiny.onnx --calibration_data_path calib.npy --output_path binary.quant.onnx >/dev/null
cmp command.quant.onnx binary.quant.onnx
echo "wheel: the ptqkit command, ptqkit.quantize and $cli wrote the same bytes (README example)"

# A corpus model (scripts/fetch_corpus): MiniLM, int64 token inputs made by the corpus harness.
minilm="${PTQKIT_CACHE_DIR:-$HOME/.cache/ptqkit}/corpus/minilm/model.onnx"
"$root/.deps/venv/bin/python" - "$root" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/tests/corpus")
import numpy as np
import corpus
np.savez("minilm_calib.npz", **corpus.minilm_inputs(32, 0))
PY
# Padding left out of the loss report (--eval_mask_input): the sentences are mostly padding.
"$work/venv/bin/ptqkit" quantize --onnx_path "$minilm" --calibration_data_path minilm_calib.npz \
  --eval_mask_input attention_mask --output_path minilm_command.quant.onnx >/dev/null 2>&1
"$py" - "$minilm" <<'PY'
import sys
import numpy as np
import ptqkit
report = ptqkit.quantize(onnx_path=sys.argv[1], calibration_data=np.load("minilm_calib.npz"),
                         output_path="minilm_api.quant.onnx", eval_mask_input="attention_mask")
assert report["loss"]["mask_input"] == "attention_mask", report["loss"]
PY
"$cli" quantize --onnx_path "$minilm" --calibration_data_path minilm_calib.npz \
  --eval_mask_input attention_mask --output_path minilm_binary.quant.onnx >/dev/null 2>&1
cmp minilm_command.quant.onnx minilm_api.quant.onnx
cmp minilm_command.quant.onnx minilm_binary.quant.onnx
echo "wheel: the same three wrote the same bytes for the corpus's MiniLM"
echo "wheel install: ok"
