#!/usr/bin/env bash
# Fails when an include runs back up a layer (docs/extending.md, "Layers"). The table is
# cmake/layers.txt, the one the build's targets are made from: every file (.cpp .h .cu .cuh) of a
# layer's folder may include only from its own folder and the folders of the layers below it,
# all the way down; an include of a file next to it (or under its folder) is its own. The build
# enforces the same for src/ (each layer compiles against only the headers it may use); this
# check also covers the public headers, tools/ and python/src, and runs without a build.
# The Python package: no two modules of python/inplace import each other, even through others.
# The files that still break a rule are listed below with the reason; one that no longer does is
# reported, so the list shrinks.
set -euo pipefail
cd "$(dirname "$0")/.."

# "FILE INCLUDE-PREFIX: why", each to be removed by the change named.
KNOWN_EXCEPTIONS=()

status=0
TABLE=cmake/layers.txt
declare -A folder_of uses_of closure_of
names=()
while read -r name folder uses; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  names+=("$name")
  folder_of[$name]=$folder
  uses_of[$name]=$uses
done < "$TABLE"

# The include prefix a folder's headers are reached by: src/ops -> ops/, include/inplace ->
# inplace/; tools/ and python/src are not included by anything.
prefix_of() {
  case $1 in
    src/*) echo "${1#src/}/" ;;
    include/*) echo "${1#include/}/" ;;
    *) echo "" ;;
  esac
}
for name in "${names[@]}"; do  # rows come after the rows they use
  c="${folder_of[$name]}"
  for u in ${uses_of[$name]}; do
    [ -n "${closure_of[$u]:-}" ] || { echo "[layers] $TABLE: $name uses '$u', not defined above it"; exit 1; }
    c="$c ${closure_of[$u]}"
  done
  closure_of[$name]=$(tr ' ' '\n' <<< "$c" | sort -u | tr '\n' ' ')
done

# The layer of a file: the row whose folder is the longest prefix of its path.
layer_of() {
  local best="" best_len=0 name f
  for name in "${names[@]}"; do
    f=${folder_of[$name]}
    if [[ "$1" == "$f/"* && ${#f} -gt $best_len ]]; then best=$name; best_len=${#f}; fi
  done
  echo "$best"
}

declare -A excepted used_exception
for e in "${KNOWN_EXCEPTIONS[@]}"; do
  key=${e%%:*}
  excepted[$key]=1
done

all_prefixes=""
for name in "${names[@]}"; do
  p=$(prefix_of "${folder_of[$name]}")
  [ -n "$p" ] && all_prefixes="$all_prefixes $p"
done

files=$(find src include tools python/src -type f \
  \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
checked=0
for file in $files; do
  layer=$(layer_of "$file")
  if [ -z "$layer" ]; then
    echo "[layers] $file: its folder is no layer of $TABLE (add a line there)"
    status=1
    continue
  fi
  allowed=""
  for f in ${closure_of[$layer]}; do
    p=$(prefix_of "$f")
    [ -n "$p" ] && allowed="$allowed $p"
  done
  dir=$(dirname "$file")
  # Quoted includes, and angle includes that name a project folder (<engine/engine.h>).
  while IFS=$'\t' read -r line inc; do
    [ -z "$inc" ] && continue
    checked=$((checked + 1))
    if [[ "$inc" != *..* && -f "$dir/$inc" ]]; then continue; fi  # next to the includer
    ok=0
    for p in $allowed; do [[ "$inc" == "$p"* ]] && ok=1 && break; done
    [ $ok = 1 ] && continue
    if [[ "$line" == *\<* ]]; then  # an angle include of a system header
      project=0
      for p in $all_prefixes; do [[ "$inc" == "$p"* ]] && project=1 && break; done
      [ $project = 0 ] && continue
    fi
    hit=""
    for p in $all_prefixes; do [[ "$inc" == "$p"* ]] && hit=$p && break; done
    if [ -n "${excepted["$file ${hit:-?}"]:-}" ]; then
      used_exception["$file ${hit:-?}"]=1
      continue
    fi
    echo "[layers] $file ($layer: may include ${allowed:-nothing but its own files}): $line"
    status=1
  done < <(grep -nE '^\s*#\s*include\s*[<"]' "$file" |
    sed -E 's/^([0-9]+):(\s*#\s*include\s*[<"]([^">]*)[">].*)$/\1: \2\t\3/')
done
for key in "${!excepted[@]}"; do
  if [ -z "${used_exception[$key]:-}" ]; then
    echo "[layers] '$key' no longer breaks a rule: remove it from KNOWN_EXCEPTIONS in $0"
    status=1
  fi
done

# python/inplace: the graph of the package's own imports (top level and inside functions) has
# no cycle.
py_out=$(python3 - python/inplace <<'PY'
import ast, os, sys
pkg = sys.argv[1]
mods = {f[:-3] for f in os.listdir(pkg) if f.endswith(".py")}
graph = {}
for m in mods:
    tree = ast.parse(open(os.path.join(pkg, m + ".py")).read())
    deps = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                deps.add(node.module.split(".")[0])
            else:
                deps.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("inplace."):
            deps.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            deps.update(a.name.split(".")[1] for a in node.names if a.name.startswith("inplace."))
    graph[m] = sorted(d for d in deps if d in mods and d != m)
state = {}
def visit(m, path):
    state[m] = 1
    for d in graph[m]:
        if state.get(d) == 1:
            print("python/inplace imports run in a circle: " + " -> ".join(path[path.index(d):] + [d]))
            return True
        if d not in state and visit(d, path + [d]):
            return True
    state[m] = 2
    return False
for m in sorted(mods):
    if m not in state and visit(m, [m]):
        sys.exit(1)
print(len(mods))
PY
) || { echo "[layers] $py_out"; status=1; }

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
  echo "[layers] no include runs back up ($checked includes of $(wc -w <<< "$files") files," \
    "${#KNOWN_EXCEPTIONS[@]} known exceptions); python/inplace: no import cycle ($py_out modules)"
fi
exit $status
