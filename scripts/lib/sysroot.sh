# Sourced by the scripts that run on a machine where packages cannot be installed (the GPU
# machine): with INPLACE_SYSROOT naming a folder of unpacked Debian packages (OpenBLAS,
# nlohmann-json, GoogleTest, libxxhash-dev for xxhash.h; `dpkg -x PKG.deb "$INPLACE_SYSROOT"`
# for each), fills the array `sysroot_cmake_args` with what CMake needs to find them and puts
# their libraries on LD_LIBRARY_PATH. Without INPLACE_SYSROOT it does nothing.
sysroot_cmake_args=()
if [ -n "${INPLACE_SYSROOT:-}" ]; then
  sysroot_lib="$INPLACE_SYSROOT/usr/lib/x86_64-linux-gnu"
  sysroot_cmake_args+=(-DCMAKE_PREFIX_PATH="$INPLACE_SYSROOT/usr"
    -DCMAKE_LIBRARY_PATH="$sysroot_lib/openblas-pthread"
    -DINPLACE_CBLAS_INCLUDE="$INPLACE_SYSROOT/usr/include/x86_64-linux-gnu/openblas-pthread")
  export LD_LIBRARY_PATH="$sysroot_lib/openblas-pthread:$sysroot_lib:${LD_LIBRARY_PATH:-}"
fi
