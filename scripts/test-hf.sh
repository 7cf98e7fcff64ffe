#!/usr/bin/env bash
# Hugging Face Llama, Qwen2, GPT-2, Mistral, Phi-3, Gemma, Qwen3 and Gemma 3 (random weights,
# StaticCache; scripts/hf_models.py FAMILIES) exported by torch.export,
# compiled in process by inplace.compile and decoded for 16 steps; tokens must equal the
# model's own. Then, where torch has a GPU, the in-process CUDA tests
# (python/tests/test_compile_cuda.py: compiled on CUDA tensors, against eager torch on the GPU;
# python/tests/test_program_cuda.py: programs and sessions on CUDA, against eager copies).
# Needs a Python with torch >= 2.5 and transformers (PYTHON, default python3); builds the
# extension for that Python into ${BUILD_DIR:-build-hf} first (with the CUDA backend when nvcc
# is found).
#   PYTHON=/path/to/python ./scripts/test-hf.sh        (INPLACE_HF_TRACEBACK=1 for tracebacks)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/python_build.sh  # PYTHON, BUILD_DIR, build_for_python
"$PYTHON" -c "import torch, transformers; print('using', torch.__file__)" || {
  echo "[test-hf] $PYTHON needs torch and transformers"; exit 2; }
build_for_python inplace_python
status=0
INPLACE_BUILD_DIR="$BUILD_DIR" "$PYTHON" scripts/test_hf.py || status=$?
if "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  # On a GPU machine a skip would hide the comparison: the tests must run.
  build_abs=$(cd "$BUILD_DIR" && pwd)
  (cd python/tests && INPLACE_BUILD_DIR="$build_abs" INPLACE_REQUIRE_CUDA=1 \
    "$PYTHON" -m unittest -v test_compile_cuda test_program_cuda) || status=$?
else
  echo "[test-hf] no CUDA device for torch here: python/tests/test_compile_cuda.py and test_program_cuda.py not run"
fi
exit $status
