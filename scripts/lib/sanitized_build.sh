# Sourced by sanitize.sh, fuzz.sh and tsan.sh: clang builds with a sanitizer.
#  - configure_sanitized_build: ${SAN_BUILD_DIR:-build-san}, AddressSanitizer +
#    UndefinedBehaviorSanitizer and libFuzzer coverage (INPLACE_FUZZ=ON), so the sanitized test
#    suite and the fuzzers come from the same objects. -O1 -g1: fast to build, still line
#    numbers in every report.
#  - configure_tsan_build: ${TSAN_BUILD_DIR:-build-tsan}, ThreadSanitizer (INPLACE_TSAN=ON) for
#    the concurrency tests only. -O1 -g0 and no examples: the cheapest build TSan accepts.
SAN_BUILD_DIR=${SAN_BUILD_DIR:-build-san}
TSAN_BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan}
# configure_clang_build DIR CXX_FLAGS [cmake args...]
configure_clang_build() {
  local dir=$1 flags=$2
  shift 2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_CXX_COMPILER=clang++ \
    -DINPLACE_BUILD_BENCH=OFF "$@" >/dev/null
}
configure_sanitized_build() {
  configure_clang_build "$SAN_BUILD_DIR" "-O1 -g1" -DINPLACE_FUZZ=ON "$@"
}
configure_tsan_build() {
  configure_clang_build "$TSAN_BUILD_DIR" "-O1 -g0" -DINPLACE_TSAN=ON \
    -DINPLACE_BUILD_EXAMPLES=OFF "$@"
}
# Sanitizer reports are fatal and carry a stack trace.
# detect_leaks=1: LeakSanitizer is on (a refused file load must free what it read).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
