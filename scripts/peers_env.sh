#!/usr/bin/env bash
# The benchmark's peers in a venv of their own (`make benchmark`): ONNX Runtime and OpenVINO at
# the versions the README's table names, on pyenv's or the system's python3, apart from the test
# venv (scripts/python_env.sh), whose ONNX Runtime 1.19.2 stays the correctness reference.
# Idempotent and quiet when everything is in place.
#   scripts/peers_env.sh                  set up (if needed)
#   scripts/peers_env.sh --print-python   set up (if needed), then print the venv's python
# The venv lives at ${KILN_PEERS_VENV:-$HOME/.cache/kiln/peers-venv}.
set -euo pipefail

venv=${KILN_PEERS_VENV:-$HOME/.cache/kiln/peers-venv}
pins=(onnxruntime==1.32.0 openvino==2026.4.1 numpy==2.2.6)

source "$(dirname "${BASH_SOURCE[0]}")/pinned_venv.sh"
ensure_pinned_venv peers_env "$venv" python3 "" 'onnxruntime, openvino, numpy' "${pins[@]}"

if [[ "${1:-}" == "--print-python" ]]; then
  echo "$venv/bin/python"
fi
