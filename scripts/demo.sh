#!/usr/bin/env bash
# The main job: builds inplace and runs every example program through `inplace exec` in eager
# mode (the reference), then compiled with aliased I/O and with the copy-back engine, checking
# that both leave exactly what eager leaves (outputs, inputs after the call, buffers).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
BIN=${BUILD_DIR:-build}/inplace
OUT=$(mktemp -d)
for dir in examples/*/; do
  name=$(basename "$dir")
  [ -f "$dir/graph.json" ] || continue
  echo "== $name: $(head -1 "$dir/README.md" 2>/dev/null)"
  args=("$dir/graph.json" --inputs "$dir/inputs.safetensors")
  "$BIN" exec "${args[@]}" --out "$OUT/$name.eager.safetensors" --mode eager --print
  "$BIN" plan "${args[@]}" | sed -n '/^aliased_io/,/^steps/p' | grep -v '^steps' | sed 's/^/  /'
  for mode in "compiled" "compiled --no-alias"; do
    # shellcheck disable=SC2086
    "$BIN" exec "${args[@]}" --out "$OUT/$name.c.safetensors" --mode $mode
    printf '  %-22s ' "$mode == eager:"
    "$BIN" compare "$OUT/$name.c.safetensors" "$OUT/$name.eager.safetensors" --tol 1e-6
  done
done
