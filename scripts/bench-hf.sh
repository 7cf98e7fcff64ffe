#!/usr/bin/env bash
# Hugging Face decoders on the GPU (docs/performance.md, "Hugging Face decoders on a GPU"):
# Llama, Mistral, Qwen2, Phi-3, Gemma and GPT-2 with random weights at the benchmark's medium
# shape and at Llama-3.2-1B's, bf16, s_max 4096 and 16384: PyTorch eager, torch.compile
# (reduce-overhead), inplace.compile of the torch.export'ed module, the built-in model and the
# HBM floor; greedy tokens against eager in float32. Builds the extension and the inplace CLI
# for $PYTHON (torch >= 2.5 with transformers, default python3) into ${BUILD_DIR:-build-hf}
# (with the CUDA backend when nvcc is found; INPLACE_SYSROOT as in scripts/lib/sysroot.sh),
# then runs bench/hf_decode.py with the arguments given, into ${HF_BENCH_OUT:-hf-bench}:
#   ./scripts/bench-hf.sh                     the whole benchmark, at most --max-seconds 480
#   ./scripts/bench-hf.sh --quick             a smoke run: llama, medium, s_max 4096, 8 steps
#   ./scripts/bench-hf.sh --resume            continue where the time budget stopped
# HF_BENCH_SECONDS (default 480) bounds the whole script: the benchmark gets what the build
# left of it as --max-seconds (an explicit --max-seconds wins).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
source scripts/lib/python_build.sh  # PYTHON, BUILD_DIR, build_for_python
"$PYTHON" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" || {
  echo "[bench-hf] $PYTHON needs torch and transformers"; exit 2; }
build_for_python inplace_python inplace_cli
left=$(( ${HF_BENCH_SECONDS:-480} - ($(date +%s) - start) ))
[ "$left" -lt 60 ] && left=60
echo "[bench-hf] build: $(( $(date +%s) - start )) s; the benchmark gets ${left} s"
build_abs=$(cd "$BUILD_DIR" && pwd)
INPLACE_BUILD_DIR="$build_abs" exec "$PYTHON" bench/hf_decode.py --out "${HF_BENCH_OUT:-hf-bench}" \
  --inplace-bin "$build_abs/inplace" --max-seconds "$left" "$@"
