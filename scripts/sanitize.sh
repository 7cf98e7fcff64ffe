#!/usr/bin/env bash
# Builds inplace and its tests with clang, AddressSanitizer and UndefinedBehaviorSanitizer into
# ${SAN_BUILD_DIR:-build-san} and runs the whole test suite there (with the Python memory tests,
# ctest python_memory_under_asan: the ASan extension in python3 with the ASan runtime
# preloaded). Any report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/sanitized_build.sh
./scripts/setup.sh
echo "[sanitize] building $SAN_BUILD_DIR (clang, ASan + UBSan)"
configure_sanitized_build
cmake --build "$SAN_BUILD_DIR" -j"$(nproc)"
echo "[sanitize] running the test suite under ASan + UBSan"
ctest --test-dir "$SAN_BUILD_DIR" --output-on-failure -j"$(nproc)"
