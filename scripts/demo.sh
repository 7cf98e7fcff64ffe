#!/usr/bin/env bash
# The main job: builds inplace and runs every example program through `inplace exec`,
# printing the outputs and the state each example mutates.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
BIN=${BUILD_DIR:-build}/inplace
OUT=$(mktemp -d)
for dir in examples/*/; do
  name=$(basename "$dir")
  [ -f "$dir/graph.json" ] || continue
  echo "== $name: $(head -c 200 "$dir/README.md" 2>/dev/null | head -1)"
  "$BIN" exec "$dir/graph.json" --inputs "$dir/inputs.safetensors" --out "$OUT/$name.safetensors" \
    --mode eager --print
done
