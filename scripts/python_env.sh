#!/usr/bin/env bash
# Python environment for the model suite (export, ONNX Runtime reference, pytest): Debian's
# PyTorch 1.13 (apt, usable only from /usr/bin/python3) plus a venv that sees it
# (--system-site-packages) and holds pinned onnx / onnxruntime / numpy / pytest from PyPI.
# Idempotent and quiet when everything is in place.
#   scripts/python_env.sh                  set up (if needed)
#   scripts/python_env.sh --print-python   set up (if needed), then print the venv's python
# The venv lives at ${KILN_VENV:-$HOME/.cache/kiln/venv}.
set -euo pipefail

venv=${KILN_VENV:-$HOME/.cache/kiln/venv}
# numpy stays on 1.x: Debian's torch 1.13 is built against numpy 1.24's ABI.
pins=(onnx==1.16.2 onnxruntime==1.19.2 numpy==1.26.4 pytest==8.3.3)
# The bindings' pybind11 for `make` (>= 2.12 reads numpy 2's dtypes; pip's own builds fetch it).
pins+=(pybind11==3.1.0)
# sympy for ONNX Runtime's transformers optimizer (tests/python/test_contrib_ops.py imports it).
apt_packages=(python3-torch python3-torchvision python3-sympy libopenblas0-openmp python3-venv)

missing=()
for p in "${apt_packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "python_env: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

source "$(dirname "${BASH_SOURCE[0]}")/pinned_venv.sh"
ensure_pinned_venv python_env "$venv" /usr/bin/python3 "--system-site-packages" 'torch, torchvision, onnx, onnxruntime, numpy, sympy' "${pins[@]}"

if [[ "${1:-}" == "--print-python" ]]; then
  echo "$venv/bin/python"
fi
