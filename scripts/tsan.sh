#!/usr/bin/env bash
# Builds the concurrency tests with clang and ThreadSanitizer into ${TSAN_BUILD_DIR:-build-tsan}
# (the library and one test binary only) and runs them: contexts on one engine from many
# threads, compiles from several threads, the refusal of a second concurrent call on one
# context, and program sessions on several threads (tests/program/session_concurrency_test.cpp).
# Any data race report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/sanitized_build.sh
./scripts/setup.sh
echo "[tsan] building $TSAN_BUILD_DIR (clang, ThreadSanitizer, concurrency tests only)"
configure_tsan_build
cmake --build "$TSAN_BUILD_DIR" -j"$(nproc)" --target inplace_concurrency_tests
echo "[tsan] running the concurrency tests under ThreadSanitizer"
"$TSAN_BUILD_DIR/tests/inplace_concurrency_tests" --gtest_filter='*Concurrency*'
