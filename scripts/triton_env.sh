#!/usr/bin/env bash
# The Triton Inference Server tests' venv (tests/python/test_triton_backend.py): the real
# `tritonserver` (2.51.0, backend API 1.19) inside PyPI's nvidia-pytriton 0.7.0, the matching
# tritonclient 2.51.0 (HTTP and gRPC), and onnx / ONNX Runtime to make the test models and their
# reference outputs. tritonclient and nvidia-pytriton need numpy < 2, so they live apart from the
# test venv of scripts/python_env.sh. Idempotent and quiet when everything is in place.
#   scripts/triton_env.sh                  set up (if needed)
#   scripts/triton_env.sh --print-python   set up (if needed), then print the venv's python
#   scripts/triton_env.sh --print-server   set up (if needed), then print the tritonserver binary
# The venv lives at ${KILN_TRITON_VENV:-$HOME/.cache/kiln/triton-venv}.
set -euo pipefail

venv=${KILN_TRITON_VENV:-$HOME/.cache/kiln/triton-venv}
pins=(nvidia-pytriton==0.7.0 "tritonclient[all]==2.51.0" numpy==1.26.4 onnx==1.16.2
      onnxruntime==1.19.2 pytest==8.3.3)

source "$(dirname "${BASH_SOURCE[0]}")/pinned_venv.sh"
ensure_pinned_venv triton_env "$venv" /usr/bin/python3 "" 'tritonclient.http, tritonclient.grpc, pytriton, onnx, onnxruntime' "${pins[@]}"

case "${1:-}" in
  --print-python) echo "$venv/bin/python" ;;
  --print-server)
    "$venv/bin/python" -c 'import pathlib, pytriton
print(pathlib.Path(pytriton.__file__).parent / "tritonserver" / "bin" / "tritonserver")' ;;
esac
