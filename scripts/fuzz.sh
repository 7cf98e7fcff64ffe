#!/usr/bin/env bash
# Builds the engine file fuzzer with clang (libFuzzer + ASan + UBSan) into build-fuzz and runs it
# for ${FUZZ_SECONDS:-60} s from the checked-in corpus tests/fuzz/corpus (new inputs go to
# build-fuzz/corpus, so the checked-in one stays as it is). Extra args go to the fuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DINPLACE_FUZZ=ON -DINPLACE_BUILD_TESTS=OFF -DINPLACE_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD_DIR" -j"${JOBS:-$(nproc)}" --target engine_file_fuzzer
mkdir -p "$BUILD_DIR/corpus"
"$BUILD_DIR/tests/fuzz/engine_file_fuzzer" -max_total_time="${FUZZ_SECONDS:-60}" -max_len=65536 \
  -print_final_stats=1 "$@" "$BUILD_DIR/corpus" tests/fuzz/corpus
