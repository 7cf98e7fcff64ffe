#!/usr/bin/env bash
# Installs the system packages inplace builds with (Debian). Idempotent; needs root or sudo.
set -euo pipefail
PKGS=(cmake ninja-build g++ clang clang-format libclang-rt-14-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libxxhash-dev  # xxhash.h: the engine/program file checksum (header-only, nothing linked)
      libopenblas-dev python3-numpy python3-torch  # torch: the PyTorch comparison tests
      python3-dev pybind11-dev)  # the Python extension inplace._C
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
