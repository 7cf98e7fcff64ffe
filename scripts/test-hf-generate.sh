#!/usr/bin/env bash
# Issue 30's generation check on a GPU (scripts/hf_generate_check.py): a Hugging Face Llama
# (random weights, float32, the `medium` shape) compiled as a program; prefill of 128 tokens and
# generate of 256 in one call must equal transformers' greedy generate(), from the saved file
# too and through `inplace generate`, at >= 0.9 / (the benchmark's decode step) tokens/s.
# Needs a Python with torch >= 2.5, transformers and CUDA (PYTHON, default python3); builds the
# extension and the CLI for that Python into ${BUILD_DIR:-build-hf} first. Extra arguments go to
# the script (--device cpu --shape tiny for a quick run).
#   PYTHON=/path/to/python ./scripts/test-hf-generate.sh [--shape medium] [--device cuda]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/python_build.sh  # PYTHON, BUILD_DIR, build_for_python
"$PYTHON" -c "import torch, transformers; print('using', torch.__file__)" || {
  echo "[test-hf-generate] $PYTHON needs torch and transformers"; exit 2; }
build_for_python inplace_python inplace_cli
INPLACE_BUILD_DIR="$BUILD_DIR" INPLACE_BIN="$BUILD_DIR/inplace" "$PYTHON" scripts/hf_generate_check.py "$@"
