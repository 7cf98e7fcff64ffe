#!/usr/bin/env bash
# Runs the loader fuzzers (libFuzzer + ASan + UBSan): scripts/fuzz.sh [TARGET...]
# TARGET is engine_file, engine_file_fields, graph_json, safetensors, program_file or
# loaded_file (default: all six).
# engine_file_fields is the engine-file fuzzer's mode that keeps the framing and the checksum
# valid (a custom mutator edits one field and re-fixes the checksum), so the loader's semantic
# checks are what it fuzzes; it starts from the engine_file corpus. loaded_file writes each input
# to a file, loads it from the path (load_program_or_engine), then truncates, rewrites or
# cp-overwrites the file and reads every weight: a loaded program must neither fault nor change;
# it starts from the engine_file and program_file corpora. Each runs for
# ${FUZZ_SECONDS:-60} s from its checked-in corpus tests/fuzz/corpus/TARGET; new inputs go to
# ${SAN_BUILD_DIR:-build-san}/corpus/TARGET so the checked-in corpus stays as it is. A finding
# (crash, sanitizer report, leak, timeout) fails the run and leaves a crash-* file to reproduce:
#   build-san/tests/fuzz/TARGET_fuzzer crash-...
# Extra libFuzzer flags go in FUZZ_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/sanitized_build.sh
./scripts/setup.sh
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(engine_file engine_file_fields graph_json safetensors program_file loaded_file)
declare -A max_len=([engine_file]=65536 [engine_file_fields]=65536 [graph_json]=16384 [safetensors]=8192 [program_file]=65536 [loaded_file]=65536)
declare -A corpus=([engine_file_fields]=engine_file [loaded_file]="engine_file program_file")
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz.sh: unknown target '$t' (engine_file, engine_file_fields, graph_json, safetensors, program_file, loaded_file)" >&2; exit 2; }
done
configure_sanitized_build
cmake --build "$SAN_BUILD_DIR" -j"$(nproc)" --target "${targets[@]/%/_fuzzer}"
for t in "${targets[@]}"; do
  seeds=()
  for c in ${corpus[$t]:-$t}; do seeds+=("tests/fuzz/corpus/$c"); done
  echo "[fuzz] $t: ${FUZZ_SECONDS:-60} s from ${seeds[*]}"
  mkdir -p "$SAN_BUILD_DIR/corpus/$t" "$SAN_BUILD_DIR/findings"
  # shellcheck disable=SC2086
  "$SAN_BUILD_DIR/tests/fuzz/${t}_fuzzer" -max_total_time="${FUZZ_SECONDS:-60}" \
    -max_len="${max_len[$t]}" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$SAN_BUILD_DIR/findings/$t-" ${FUZZ_ARGS:-} \
    "$SAN_BUILD_DIR/corpus/$t" "${seeds[@]}"
done
