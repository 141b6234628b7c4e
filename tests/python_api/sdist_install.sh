#!/usr/bin/env bash
# The install a user on a platform we ship no wheel for does (issue 22): `pip install ptqkit-*.tar.gz`
# on a machine with only a compiler, CMake and Python. This machine has the libraries scripts/setup
# installs, so the build runs in a private mount namespace where every file of those Debian
# packages (protobuf, protoc, RE2, fmt, CLI11, nlohmann-json, minizip, zlib headers, pybind11) reads
# as empty: a build that reached for one of them would fail. pip builds the sdist as a user's pip
# would (build isolation: the backend, pybind11 and a CMake >= 3.26 from PyPI); the build downloads
# its dependencies itself (cmake/FetchDependencies.cmake), keeping them in
# ${PTQKIT_CACHE_DIR:-~/.cache/ptqkit}/dependency-downloads (shared with scripts/build_wheel), where
# each is checked against its checksum.
# The wheel it built is then checked like the shipped one (wheel_install.sh: libraries, exported
# symbols, glibc floor, imports beside onnx and onnxruntime, the same bytes as the build tree's binary).
# Prints the build time. Usage: tests/python_api/sdist_install.sh SDIST [path/to/ptqkit-binary]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
sdist="$(realpath "$1")"
cli="$(realpath -m "${2:-$root/build/ptqkit}")"
python="${PYTHON:-python3}"
cache="${PTQKIT_CACHE_DIR:-$HOME/.cache/ptqkit}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH PYTHONPATH CMAKE_PREFIX_PATH

hidden_packages=(libprotobuf-dev protobuf-compiler libprotoc-dev libre2-dev libfmt-dev libcli11-dev
                 nlohmann-json3-dev libminizip-dev zlib1g-dev pybind11-dev)
"$python" -m venv "$work/venv"
mkdir -p "$cache/dependency-downloads"
start=$(date +%s)
PTQKIT_DOWNLOAD_DIR="$cache/dependency-downloads" unshare --mount --map-root-user bash -s -- \
  "$work" "$sdist" "${hidden_packages[@]}" <<'HIDE'
set -euo pipefail
work="$1"; sdist="$2"; shift 2
hidden=0
for package in "$@"; do
  dpkg-query -W "$package" >/dev/null 2>&1 || continue
  while read -r path; do
    if [ -f "$path" ] && [ ! -L "$path" ]; then mount --bind /dev/null "$path"; hidden=$((hidden + 1)); fi
  done < <(dpkg -L "$package")
done
[ -z "$(cat /usr/include/google/protobuf/message.h 2>/dev/null)" ] || { echo "sdist: protobuf's headers are still visible" >&2; exit 1; }
echo "sdist: hid $hidden files of the system's development packages"
"$work/venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$work/wheel" "$sdist"
HIDE
echo "sdist: pip built $(basename "$work"/wheel/ptqkit-*.whl) from $(basename "$sdist") in $(( $(date +%s) - start )) s"
"$root/tests/python_api/wheel_install.sh" "$work"/wheel/ptqkit-*.whl "$cli"
