#!/usr/bin/env bash
# The main job: builds inplace, then
#  0. `inplace demo`: the built-in Llama-style model at `small` size (111 MB of weights) prefills
#     a prompt and decodes 256 greedy tokens into caches the caller owns, checked against the
#     eager interpreter (a few seconds once built; docs/models.md);
#  1. the streaming decoder (examples/streaming_decoder): greedy decoding with a tiny GPT whose
#     KV caches the caller owns, run by the eager interpreter, the copy-back engine and the
#     aliased engine, checked against PyTorch's own decoding and timed per step;
#  2. the same decoder as a program (examples/streaming_decoder/program_decoder.cpp): prefill and
#     decode methods over runtime-owned caches, two sessions interleaved, against PyTorch;
#  3. every small example through `inplace exec`: eager (the reference), then compiled with
#     aliased I/O and with the copy-back engine, checking both leave exactly what eager leaves.
# Extra args go to the streaming decoder (--steps N, --reps R).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
BUILD=${BUILD_DIR:-build}
echo "=== inplace demo: the built-in Llama-style model, small"
"$BUILD/inplace" demo
echo
echo "=== streaming decoder"
"$BUILD/examples/streaming_decoder" --dir examples/streaming_decoder "$@"
echo
echo "=== the streaming decoder as a program (prefill + decode methods, two sessions)"
"$BUILD/examples/program_decoder" --dir examples/streaming_decoder
echo
echo "=== small examples through inplace exec"
BIN=$BUILD/inplace
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for dir in examples/*/; do
  name=$(basename "$dir")
  [ -f "$dir/graph.json" ] && [ "$name" != streaming_decoder ] || continue
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
