# Sourced by the scripts that build kernels for a GPU run (test-gpu.sh, and through
# python_build.sh test-hf.sh and bench-hf.sh): `remake_unrecorded_objects DIR` touches the source
# of every object in the Ninja build folder DIR whose dependencies Ninja recorded as none
# (`ninja -t deps`: "#deps 0", an object an interrupted or outside compile left), so that the
# build that follows remakes it. Ninja would not remake such an object when a header it includes
# changes, and a stale kernel would run: a device build once kept a gemv_half_layer.cu object from
# before a change of gemv_half_launch.cuh, and its "main" rows ran the old dispatch rule.
remake_unrecorded_objects() {
  local dir=$1 obj src
  [ -f "$dir/build.ninja" ] && command -v ninja >/dev/null || return 0
  # An object DIR/P/CMakeFiles/T.dir/R.o is made from the source P/R (P empty for the top folder's
  # targets, tests/ for the tests').
  { ninja -C "$dir" -t deps 2>/dev/null || true; } |
    sed -n 's/^\([^:]*CMakeFiles\/[^:]*\.o\): #deps 0,.*/\1/p' |
    while read -r obj; do
      src=${obj%%CMakeFiles/*}${obj#*CMakeFiles/*.dir/}
      src=${src%.o}
      if [ -f "$src" ]; then
        touch "$src"
        echo "[build] $src: no dependencies recorded for its object; it is remade"
      fi
    done
}
