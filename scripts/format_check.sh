#!/usr/bin/env bash
# Checks that every C++ file of the tree is formatted as .clang-format says (what CI runs first:
# cheap, and it keeps diffs free of formatting noise). Fix with: clang-format -i FILE...
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
command -v "$CLANG_FORMAT" >/dev/null || { echo "[format] $CLANG_FORMAT is not installed (apt-get install clang-format)"; exit 1; }
mapfile -t files < <(git ls-files -- 'src/*.cpp' 'src/*.h' 'tools/*.cpp' 'tools/*.h' 'tests/*.cpp' \
  'tests/*.h' 'src/*.cu' 'src/*.cuh' 'bench/*.cpp' 'bench/*.h' 'bench/*.cu' 'bench/*.cuh' \
  'examples/*.cpp' 'examples/*.h' \
  'include/*.h' 'python/*.cpp' 'python/*.h')
[ ${#files[@]} -gt 0 ] || { echo "[format] no files to check"; exit 1; }
if ! "$CLANG_FORMAT" --style=file --dry-run --Werror "${files[@]}"; then
  echo "[format] the files above are not clang-formatted; run: $CLANG_FORMAT -i <file>"
  exit 1
fi
echo "[format] ${#files[@]} files are clang-formatted"
