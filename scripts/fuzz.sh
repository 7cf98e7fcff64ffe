#!/usr/bin/env bash
# Builds the engine file fuzzer with clang (libFuzzer + ASan + UBSan) into build-fuzz and runs it
# for ${FUZZ_SECONDS:-60} s from the checked-in corpus tests/fuzz/corpus (new inputs go to
# build-fuzz/corpus, so the checked-in one stays as it is). Extra args go to the fuzzer.
#
# FUZZ_QUICK=1 instruments only the engine file sources and links the rest from an existing
# Release build (${RELEASE_BUILD:-build}/libinplace.a): a minute instead of a full sanitized
# build, with coverage guidance and sanitizers on the decoder itself.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
if [[ "${FUZZ_QUICK:-0}" == 1 ]]; then
  mkdir -p "$BUILD_DIR/tests/fuzz"
  clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Isrc -Iinclude -DINPLACE_VERSION=\"quick\" tests/fuzz/engine_file_fuzzer.cpp \
    src/engine/engine_file.cpp src/engine/engine_file_plan.cpp src/engine/engine.cpp \
    src/engine/plan.cpp "${RELEASE_BUILD:-build}/libinplace.a" -lopenblas -lpthread \
    -o "$BUILD_DIR/tests/fuzz/engine_file_fuzzer"
else
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DINPLACE_FUZZ=ON -DINPLACE_BUILD_TESTS=OFF -DINPLACE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$BUILD_DIR" -j"${JOBS:-$(nproc)}" --target engine_file_fuzzer
fi
mkdir -p "$BUILD_DIR/corpus"
"$BUILD_DIR/tests/fuzz/engine_file_fuzzer" -max_total_time="${FUZZ_SECONDS:-60}" -max_len=65536 \
  -print_final_stats=1 "$@" "$BUILD_DIR/corpus" tests/fuzz/corpus
