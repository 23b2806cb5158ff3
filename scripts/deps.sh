#!/usr/bin/env bash
# Installs what kiln needs and is missing (Debian packages). Idempotent; does nothing and says
# nothing slow when everything is present.
set -euo pipefail

packages=(
  cmake g++ clang libclang-rt-14-dev  # compilers; clang for the fuzzers and its sanitizer runtimes
  libgtest-dev libgmock-dev           # tests
  nlohmann-json3-dev libdlpack-dev    # JSON, DLPack
  libxxhash-dev                       # the checksum of exported libraries (header-only use)
  libprotobuf-dev protobuf-compiler libonnx-dev  # the ONNX frontend
  libonnx-testdata                    # ONNX 1.12's backend node cases (make conformance, make test)
  libdnnl-dev                         # oneDNN 2.6, the dnnl external codegen's runtime (KILN_USE_DNNL)
  python3-dev                         # Python's headers for the bindings (python/; pybind11 comes from PyPI)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} > 0)); then
  echo "deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
