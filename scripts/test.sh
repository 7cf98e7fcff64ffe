#!/usr/bin/env bash
# Runs every test, what CI runs: a clang-format check of the tree (scripts/format_check.sh), the
# layer check (scripts/layer_check.sh: no include runs back up a layer), the Release build's
# test suite (CTest) and a consumer project built against its install tree
# (tests/install_consumer), then the same suite built with AddressSanitizer +
# UndefinedBehaviorSanitizer, then the concurrency tests under ThreadSanitizer, then the loader
# fuzzers (engine files 60 s, keeping the checksum valid 60 s, graph JSON, safetensors and
# program files 30 s each). Exits non-zero on any failure or finding.
# INPLACE_QUICK=1 runs only the first stage (for the edit-build-test loop).
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo; echo "=== $* ($(date +%T))"; }
stage "clang-format check"
./scripts/setup.sh
./scripts/format_check.sh
stage "layer check"
./scripts/layer_check.sh
stage "release build + tests"
./scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
stage "install tree + a consumer project (find_package(inplace) alone)"
./tests/install_consumer/run.sh
[ "${INPLACE_QUICK:-0}" = 1 ] && exit 0
stage "ASan + UBSan build + tests"
./scripts/sanitize.sh
stage "ThreadSanitizer build + concurrency tests"
./scripts/tsan.sh
stage "fuzzing the engine file loader"
FUZZ_SECONDS=${FUZZ_SECONDS:-60} ./scripts/fuzz.sh engine_file engine_file_fields
stage "fuzzing the graph JSON, safetensors and program file loaders"
FUZZ_SECONDS=${FUZZ_SECONDS_OTHERS:-30} ./scripts/fuzz.sh graph_json safetensors program_file loaded_file
stage "all passed"
