# Sourced by sanitize.sh and fuzz.sh: configures ${SAN_BUILD_DIR:-build-san}, one clang build
# with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer coverage (INPLACE_FUZZ=ON), so
# the sanitized test suite and the fuzzers come from the same objects. -O1 -g1: fast to build,
# still line numbers in every report.
SAN_BUILD_DIR=${SAN_BUILD_DIR:-build-san}
configure_sanitized_build() {
  cmake -S . -B "$SAN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_COMPILER=clang++ \
    -DINPLACE_FUZZ=ON -DINPLACE_BUILD_BENCH=OFF "$@" >/dev/null
}
# Sanitizer reports are fatal and carry a stack trace.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
