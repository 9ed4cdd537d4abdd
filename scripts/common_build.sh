# Sourced by run.sh and test.sh: set up, then configure and build kpl.
# Settings (environment):
#   Kokkos_ROOT, KokkosKernels_ROOT  your Kokkos install (default: Kokkos 3.4.01
#                                    built by setup.sh into a cache)
#   KPL_BUILD_DIR     build directory (default: build)
#   KPL_BUILD_TYPE    CMake build type (default: Release, CMake's -O3: GCC 12
#                     at -O2 leaves the CPU kernels' short constant-trip loops
#                     loops and vectorises no loop that needs a remainder or
#                     alias check; the GAM's basis build takes a third less)
#   KPL_SANITIZERS    e.g. "address;undefined" (default: none)
#   KPL_CMAKE_ARGS    further CMake arguments, space-separated
kpl_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$kpl_root/scripts/setup.sh"

kpl_configure_and_build() {
  kpl_setup
  local build_dir=${KPL_BUILD_DIR:-$kpl_root/build}
  local kernels_root=${KokkosKernels_ROOT:-$KPL_KOKKOS_ROOT}
  local build_type=${KPL_BUILD_TYPE:-Release}
  # shellcheck disable=SC2086  # KPL_CMAKE_ARGS is a list of words
  cmake -S "$kpl_root" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG" \
    -DKokkos_ROOT="$KPL_KOKKOS_ROOT" -DKokkosKernels_ROOT="$kernels_root" \
    -DKPL_SANITIZERS="${KPL_SANITIZERS:-}" ${KPL_CMAKE_ARGS:-} >"$build_dir.configure.log" 2>&1 ||
    { cat "$build_dir.configure.log" >&2; kpl_die "configuring kpl failed"; }
  cmake --build "$build_dir" -j "$(nproc)"
  KPL_BUILD_DIR=$build_dir
}

# Prints the first Python 3 (Debian's /usr/bin/python3 first, then python3 on
# the PATH) that can import every module named; nothing if none can. A
# python3 earlier on the PATH (pyenv, conda) often lacks Debian's modules.
kpl_python_with() {
  local candidate
  for candidate in /usr/bin/python3 python3; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c "import $(IFS=,; echo "$*")" >/dev/null 2>&1; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
}
