#!/usr/bin/env bash
# Fails when an include runs back up a layer (docs/extending.md, "Layers"): a file of src/ops
# (op declarations) including from src/kernels, or a file of src/kernels (.cpp .h .cu .cuh)
# including from src/engine. The files that still do are listed below, each with the issue step
# that removes it; a listed file that no longer includes is reported so the list shrinks.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every op family declares only (issue 28 step 1): no file of src/ops may include a kernel.
OPS_INCLUDING_KERNELS=()
KERNELS_INCLUDING_ENGINE=()

status=0
# check RULE DIR PATTERN EXCEPTIONS...: every file of DIR with an include matching PATTERN must
# be an exception; every exception must still match.
check() {
  local rule=$1 dir=$2 pattern=$3
  shift 3
  local -A allowed=()
  for f in "$@"; do allowed[$f]=1; done
  local found
  found=$(grep -rlE --include='*.cpp' --include='*.h' --include='*.cu' --include='*.cuh' \
    "^\s*#\s*include\s+\"$pattern" "$dir" | sort || true)
  for f in $found; do
    if [ -z "${allowed[$f]:-}" ]; then
      echo "[layers] $f: $rule"
      grep -nE "^\s*#\s*include\s+\"$pattern" "$f" | sed 's/^/    /'
      status=1
    fi
  done
  for f in "$@"; do
    if ! grep -qE "^\s*#\s*include\s+\"$pattern" "$f" 2>/dev/null; then
      echo "[layers] $f no longer breaks '$rule': remove it from the exceptions in $0"
      status=1
    fi
  done
}

check "src/ops declares ops and includes nothing from src/kernels" src/ops 'kernels/' \
  "${OPS_INCLUDING_KERNELS[@]}"
check "src/kernels includes nothing from src/engine" src/kernels 'engine/' \
  "${KERNELS_INCLUDING_ENGINE[@]}"

# The engine and the public headers of src/backend name no device concept (issue 28): streams,
# graphs captured and replayed, launches joined, key counts and the like belong to a backend's
# own folder (src/kernels/<device>/), lent to the engine through backend/backend.h.
concept() {
  local rule=$1 pattern=$2
  shift 2
  local hits
  hits=$(grep -nwiE "$pattern" "$@" || true)
  if [ -n "$hits" ]; then
    echo "[layers] $rule:"
    echo "$hits" | sed 's/^/    /'
    status=1
  fi
}
concept "src/engine names no device concept" \
  'cuda|cudaStream_t|gpu|streams?|persistent|PairKernel|WritesKernel|captures?|captured|replays?|launch(es)?|key count' \
  $(find src/engine -name '*.h' -o -name '*.cpp')
concept "the public headers of src/backend name no device concept" \
  'cudaStream_t|streams?|persistent|PairKernel|WritesKernel|captures?|captured|key count|key_count|workspace' \
  src/backend/backend.h src/backend/kernel_table.h src/backend/plan.h src/backend/symbolic.h \
  src/backend/eager_call.h

if [ $status -eq 0 ]; then
  echo "[layers] no include runs back up (${#OPS_INCLUDING_KERNELS[@]} + ${#KERNELS_INCLUDING_ENGINE[@]} known exceptions)"
fi
exit $status
