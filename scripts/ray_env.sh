#!/usr/bin/env bash
# The Ray Serve tests' venv (tests/python/test_ray_serve.py): PyPI's ray[serve] (Ray Serve with its
# FastAPI ingress), tritonclient 2.51.0's HTTP client (the Open Inference Protocol client of
# scripts/triton_env.sh's tests, written elsewhere), and onnx / ONNX Runtime to make the test models
# and their reference outputs. tritonclient needs numpy < 2, and ray[serve] pulls in a web stack of
# its own, so it lives apart from the venvs of scripts/python_env.sh and scripts/triton_env.sh. The
# kiln package comes from the build tree (PYTHONPATH=build/python; the extension is built for the
# same /usr/bin/python3). Idempotent and quiet when everything is in place.
#   scripts/ray_env.sh                  set up (if needed)
#   scripts/ray_env.sh --print-python   set up (if needed), then print the venv's python
# The venv lives at ${KILN_RAY_VENV:-$HOME/.cache/kiln/ray-venv}.
set -euo pipefail

venv=${KILN_RAY_VENV:-$HOME/.cache/kiln/ray-venv}
# Ray Serve's web stack is pinned to releases of Ray 2.49's time: later FastAPI apps do not pickle
# (Serve pickles the ingress app), and later protobuf releases lack what Serve reads.
pins=("ray[serve]==2.49.2" fastapi==0.116.1 starlette==0.47.3 pydantic==2.11.7 uvicorn==0.35.0 protobuf==5.29.5
      "tritonclient[http]==2.51.0" numpy==1.26.4 onnx==1.16.2 onnxruntime==1.19.2 xxhash==3.5.0 pytest==8.3.3)

source "$(dirname "${BASH_SOURCE[0]}")/pinned_venv.sh"
ensure_pinned_venv ray_env "$venv" /usr/bin/python3 "" 'ray, ray.serve, fastapi, tritonclient.http, onnx, onnxruntime' "${pins[@]}"

case "${1:-}" in
  --print-python) echo "$venv/bin/python" ;;
esac
