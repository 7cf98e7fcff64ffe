#!/usr/bin/env bash
# The install tree as a user gets it: `cmake --install` of a built tree (default build/) into a
# fresh prefix; every installed file lies under that prefix (the Python package included, and it
# imports from there); this consumer project configures with find_package(inplace) alone, builds
# (one small compile) and runs. scripts/test.sh runs it after the release build's tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD_DIR:-build}
TMP=$(mktemp -d -t inplace_install_XXXXXX)
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix
cmake --install "$BUILD" --prefix "$PREFIX" > "$TMP/install.log"
if grep -E '^-- (Installing|Up-to-date): ' "$TMP/install.log" | grep -v -F ": $PREFIX/"; then
  echo "install_consumer: files installed outside the prefix $PREFIX (above)" >&2
  exit 1
fi
LAUNCHER=()
if command -v ccache > /dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CXX_COMPILER=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
cmake -S tests/install_consumer -B "$TMP/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" ${CXX_COMPILER:+-DCMAKE_CXX_COMPILER="$CXX_COMPILER"} \
  "${LAUNCHER[@]}" > "$TMP/configure.log" || { cat "$TMP/configure.log"; exit 1; }
cmake --build "$TMP/consumer"
"$TMP/consumer/consumer"
PYPKG=$(dirname "$(find "$PREFIX" -path '*/inplace/_C*.so' | head -1)")
if [ "$PYPKG" = . ] && [ -n "$(find "$BUILD" -path '*/inplace/_C*.so' | head -1)" ]; then
  echo "install_consumer: the build has the Python extension but nothing put it under $PREFIX" >&2
  exit 1
fi
if [ "$PYPKG" != . ] && [ -x /usr/bin/python3 ]; then
  (cd "$TMP" && PYTHONPATH=$(dirname "$PYPKG") INPLACE_BUILD_DIR=/nonexistent /usr/bin/python3 -c \
    "import inplace; inplace.native(); assert inplace.__file__.startswith('$PREFIX'); print('install_consumer: python package', inplace.__file__)")
fi
echo "install_consumer: ok"
