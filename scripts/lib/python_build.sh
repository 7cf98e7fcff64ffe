# Sourced by the scripts that run Hugging Face models (test-hf.sh, bench-hf.sh): configures
# ${BUILD_DIR:-build-hf} for $PYTHON (with the CUDA backend when nvcc is found, and the sysroot
# of scripts/lib/sysroot.sh) and builds the targets given to `build_for_python`. The compiler is
# the system one, whose libstdc++ is the shared one torch loads (a toolchain that ships only a
# static libstdc++ would put a second C++ runtime into the extension); INPLACE_HF_CXX names
# another.
source scripts/lib/sysroot.sh  # INPLACE_SYSROOT: packages unpacked where none can be installed
source scripts/lib/unrecorded_objects.sh  # remake_unrecorded_objects
PYTHON=${PYTHON:-python3}
BUILD_DIR=${BUILD_DIR:-build-hf}
build_for_python() {
  local cxx=${INPLACE_HF_CXX:-}
  [ -z "$cxx" ] && [ -x /usr/bin/g++ ] && cxx=/usr/bin/g++
  local pybind_dir
  pybind_dir=$("$PYTHON" -c "import pybind11; print(pybind11.get_cmake_dir())" 2>/dev/null || true)
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DINPLACE_BUILD_TESTS=OFF \
    -DINPLACE_BUILD_BENCH=OFF -DINPLACE_BUILD_EXAMPLES=OFF "${sysroot_cmake_args[@]}" ${cxx:+-DCMAKE_CXX_COMPILER=$cxx} \
    -DPython3_EXECUTABLE="$(command -v "$PYTHON")" ${pybind_dir:+-Dpybind11_DIR=$pybind_dir} >/dev/null
  remake_unrecorded_objects "$BUILD_DIR"
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target "$@"
}
