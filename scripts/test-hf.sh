#!/usr/bin/env bash
# Hugging Face Llama, Qwen2, GPT-2, Mistral, Phi-3 and Gemma (random weights, StaticCache) exported by torch.export,
# compiled in process by inplace.compile and decoded for 16 steps; tokens must equal the
# model's own. Then, where torch has a GPU, the in-process CUDA tests
# (python/tests/test_compile_cuda.py: compiled on CUDA tensors, against eager torch on the GPU).
# Needs a Python with torch >= 2.5 and transformers (PYTHON, default python3); builds the
# extension for that Python into ${BUILD_DIR:-build-hf} first (with the CUDA backend when nvcc
# is found).
#   PYTHON=/path/to/python ./scripts/test-hf.sh        (INPLACE_HF_TRACEBACK=1 for tracebacks)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
source scripts/lib/sysroot.sh  # INPLACE_SYSROOT: packages unpacked where none can be installed
BUILD_DIR=${BUILD_DIR:-build-hf}
# The system compiler, whose libstdc++ is the shared one torch loads (a toolchain that ships
# only a static libstdc++ would put a second C++ runtime into the extension). INPLACE_HF_CXX
# names another compiler.
CXX=${INPLACE_HF_CXX:-}
[ -z "$CXX" ] && [ -x /usr/bin/g++ ] && CXX=/usr/bin/g++
"$PYTHON" -c "import torch, transformers; print('using', torch.__file__)" || {
  echo "[test-hf] $PYTHON needs torch and transformers"; exit 2; }
PYBIND_DIR=$("$PYTHON" -c "import pybind11; print(pybind11.get_cmake_dir())" 2>/dev/null || true)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DINPLACE_BUILD_TESTS=OFF \
  -DINPLACE_BUILD_BENCH=OFF -DINPLACE_BUILD_EXAMPLES=OFF "${sysroot_cmake_args[@]}" ${CXX:+-DCMAKE_CXX_COMPILER=$CXX} \
  -DPython3_EXECUTABLE="$(command -v "$PYTHON")" ${PYBIND_DIR:+-Dpybind11_DIR=$PYBIND_DIR} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target inplace_python
status=0
INPLACE_BUILD_DIR="$BUILD_DIR" "$PYTHON" scripts/test_hf.py || status=$?
if "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  # On a GPU machine a skip would hide the comparison: the tests must run.
  build_abs=$(cd "$BUILD_DIR" && pwd)
  (cd python/tests && INPLACE_BUILD_DIR="$build_abs" INPLACE_REQUIRE_CUDA=1 \
    "$PYTHON" -m unittest -v test_compile_cuda) || status=$?
else
  echo "[test-hf] no CUDA device for torch here: python/tests/test_compile_cuda.py not run"
fi
exit $status
