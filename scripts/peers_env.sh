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

stamp="$venv/.kiln-pins"
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]]; then
  echo "peers_env: setting up $venv (${pins[*]})" >&2
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}" >&2
  "$venv/bin/python" -c 'import onnxruntime, openvino, numpy' >&2
  echo "${pins[*]}" >"$stamp"
fi

if [[ "${1:-}" == "--print-python" ]]; then
  echo "$venv/bin/python"
fi
