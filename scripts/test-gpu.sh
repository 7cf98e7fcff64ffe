#!/usr/bin/env bash
# The GPU suite, on a machine with an NVIDIA GPU (sm_90 or later) and nvcc: builds the CUDA
# backend and the tests, then runs every CUDA test (kernels against the cpu kernels, engines
# compiled for cuda against the cpu eager interpreter). CI has no GPU: there these tests skip,
# each saying so.
#   BUILD_DIR   build folder (default build-gpu)
#   INPLACE_SYSROOT  a folder holding unpacked packages (OpenBLAS, nlohmann-json, GoogleTest)
#                    for machines where they cannot be installed (see docs/cuda.md)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
source scripts/lib/sysroot.sh
source scripts/lib/unrecorded_objects.sh
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
start=$(date +%s)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DINPLACE_BUILD_EXAMPLES=OFF -DINPLACE_BUILD_TESTS=ON \
  -DINPLACE_BUILD_BENCH=OFF "${sysroot_cmake_args[@]}" >/dev/null
remake_unrecorded_objects "$BUILD_DIR"
cmake --build "$BUILD_DIR" -j"$(nproc)" --target inplace_tests inplace_cli
echo "[gpu] build: $(( $(date +%s) - start )) s"
"$BUILD_DIR"/inplace ops --device cuda >/dev/null
"$BUILD_DIR"/tests/inplace_tests --gtest_filter='Cuda*:Device*' --gtest_brief=0
# The one-row half GEMV picks its kernel by weight bytes, and the tests' products are small: the
# products' tests again with every product on the task-stream kernel.
INPLACE_CUDA_GEMV=stream "$BUILD_DIR"/tests/inplace_tests --gtest_brief=1 \
  --gtest_filter='CudaHalfEpilogues.*:CudaGatedForms.*:CudaGroupedProduct.*:CudaDecoder.*:CudaRotary*:CudaEngine.*:CudaFusedAddmm.*'
# The built-in model on the GPU, checked against the eager interpreter (graphs on).
"$BUILD_DIR"/inplace demo --device cuda --size small --steps 64 --check-steps 3
# INPLACE_GPU_BENCH=1: the decode benchmark too (scripts/bench-gpu.sh).
if [ "${INPLACE_GPU_BENCH:-0}" = 1 ]; then BUILD_DIR="$BUILD_DIR" ./scripts/bench-gpu.sh; fi
