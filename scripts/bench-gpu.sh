#!/usr/bin/env bash
# The H200 decode benchmark of docs/performance.md ("The decode step on a GPU"): the built-in
# model at issue 11's size (medium: d_model 1024, 12 layers, 16 heads, 4 kv heads, SwiGLU 2816,
# vocab 16384, bf16 weights) at s_max 4096 and 16384, the aliased and copy-back engines with
# CUDA graphs, PyTorch eager and torch.compile(mode="reduce-overhead") on the same weights, and
# the HBM floor. Needs a build with the CUDA backend (BUILD_DIR, default build-gpu) and a
# python3 with torch and the GPU. Writes $BENCH_OUT (default bench-gpu.json) and prints the
# markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
BENCH_OUT=${BENCH_OUT:-bench-gpu.json}
"$BUILD_DIR"/inplace bench --device cuda --size medium --kv-heads 4 --dtype bf16 \
  --s-max 4096,16384 --position 200 --steps 64 --reps 5 --cuda-graph on \
  --python "${PYTHON:-python3}" --out "$BENCH_OUT" ${BENCH_ARGS:-}
