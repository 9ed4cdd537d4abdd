#!/usr/bin/env bash
# Installs what kpl needs on a Debian 12 machine and makes Kokkos available.
#
#   bash scripts/setup.sh        # prints the Kokkos_ROOT to build against
#   source scripts/setup.sh      # also exports KPL_KOKKOS_ROOT
#
# - Debian packages: compilers, CMake, Ninja, HDF5, GoogleTest, Google
#   Benchmark, CLI11 and OpenBLAS, and Python 3 with matplotlib, h5py, NumPy
#   and pytest for the perf suite's runner and plots (perf/run_suite.py), the
#   GAM's partial-effect plots (scripts/plot_gam_effects.py) and the
#   hostile-input tests (tests/hostile); pybind11 and Python's headers for
#   the Python module (python/, `import kpl`); OpenMPI 4.1 and the parallel HDF5
#   built on it (libhdf5-openmpi-dev, beside the serial one) for kpl's MPI
#   layer; installed only where missing.
# - Kokkos: a caller's install is used as it is (Kokkos_ROOT, and
#   KokkosKernels_ROOT when Kokkos Kernels lives elsewhere). Without one,
#   Kokkos and Kokkos Kernels 3.4.01 are built with Serial and OpenMP from
#   Debian's trilinos *source* package (the binary packages are Serial-only and
#   their CMake files are broken) into a cache outside the checkout,
#   ${KPL_CACHE_DIR:-~/.cache/kpl}, reused by later runs. The source package
#   comes through a private, temporary apt configuration derived from this
#   machine's own apt sources; the machine's apt configuration is not changed.
set -euo pipefail

kpl_log() { printf 'kpl setup: %s\n' "$*" >&2; }
kpl_die() { printf 'kpl setup: error: %s\n' "$*" >&2; exit 1; }

kpl_as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else kpl_die "installing Debian packages needs root (or sudo): $*"
  fi
}

KPL_DEBIAN_PACKAGES=(g++ cmake ninja-build pkg-config libhdf5-dev zlib1g-dev libdeflate-dev libgtest-dev libgmock-dev
                     libbenchmark-dev libcli11-dev libopenblas-dev python3 python3-matplotlib
                     python3-h5py python3-numpy python3-pytest python3-dev pybind11-dev
                     libopenmpi-dev openmpi-bin libhdf5-openmpi-dev)

kpl_install_packages() {
  local missing=() package
  for package in "${KPL_DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  if [ "${#missing[@]}" -eq 0 ]; then return 0; fi
  kpl_log "installing Debian packages: ${missing[*]}"
  kpl_as_root apt-get update -qq
  kpl_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

# Writes deb-src entries for every deb entry of this machine's apt sources
# (one-line .list files and deb822 .sources files) into directory $1.
kpl_derive_source_entries() {
  local parts=$1 file
  mkdir -p "$parts"
  : > "$parts/sources.list"
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$file" >> "$parts/sources.list"
  done
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    sed -e 's/^Types:.*/Types: deb-src/' "$file" > "$parts/$(basename "$file")"
  done
}

# Fetches Debian's trilinos source package and unpacks only Kokkos and
# Kokkos Kernels from it into $1.
kpl_fetch_trilinos_kokkos() {
  local destination=$1 work
  work=$(mktemp -d)
  kpl_derive_source_entries "$work/etc"
  mkdir -p "$work/lists/partial" "$work/archives/partial"
  local apt_options=(-o "Dir::Etc::SourceList=$work/etc/sources.list"
                     -o "Dir::Etc::SourceParts=$work/etc"
                     -o "Dir::State::Lists=$work/lists"
                     -o "Dir::Cache::Archives=$work/archives"
                     -o "APT::Sandbox::User=root" -qq)
  kpl_log "fetching Debian's trilinos source package (Kokkos 3.4.01 inside, about 170 MB)"
  kpl_as_root apt-get "${apt_options[@]}" update >&2
  (cd "$work" && kpl_as_root apt-get "${apt_options[@]}" source --download-only trilinos) >&2
  local tarball
  tarball=$(ls "$work"/trilinos_*.orig.tar.* 2>/dev/null | head -n 1)
  [ -n "$tarball" ] || kpl_die "apt-get source trilinos produced no orig tarball"
  mkdir -p "$destination"
  tar -xf "$tarball" -C "$destination" --strip-components=2 --wildcards \
    '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
  grep -q 'set(Kokkos_VERSION_MAJOR 3)' "$destination/kokkos/CMakeLists.txt" &&
    grep -q 'set(Kokkos_VERSION_MINOR 4)' "$destination/kokkos/CMakeLists.txt" ||
    kpl_die "the trilinos source package does not hold Kokkos 3.4 (not Debian 12?)"
  rm -rf "$work"
}

kpl_build_kokkos() {
  local prefix=$1 sources=$2/source build=$2/build jobs
  jobs=$(nproc)
  kpl_log "building Kokkos 3.4.01 (Serial, OpenMP) into $prefix"
  cmake -S "$sources/kokkos" -B "$build/kokkos" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON >"$2/kokkos-configure.log" 2>&1 ||
    kpl_die "configuring Kokkos failed; see $2/kokkos-configure.log"
  cmake --build "$build/kokkos" --target install -j "$jobs" >"$2/kokkos-build.log" 2>&1 ||
    kpl_die "building Kokkos failed; see $2/kokkos-build.log"
  kpl_log "building Kokkos Kernels 3.4.01 (BLAS through OpenBLAS) into $prefix"
  # Explicit template instantiation off: kpl instantiates what it uses, and the
  # build stays under a minute on two cores.
  cmake -S "$sources/kokkos-kernels" -B "$build/kokkos-kernels" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DKokkosKernels_ENABLE_TPL_BLAS=ON \
    -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_ORDINAL_INT=OFF \
    -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF \
    -DKokkosKernels_INST_LAYOUTLEFT=OFF -DKokkosKernels_ENABLE_TESTS=OFF \
    >"$2/kokkos-kernels-configure.log" 2>&1 ||
    kpl_die "configuring Kokkos Kernels failed; see $2/kokkos-kernels-configure.log"
  cmake --build "$build/kokkos-kernels" --target install -j "$jobs" \
    >"$2/kokkos-kernels-build.log" 2>&1 ||
    kpl_die "building Kokkos Kernels failed; see $2/kokkos-kernels-build.log"
}

# Prints the prefix of a usable Kokkos (+ Kokkos Kernels) install.
kpl_kokkos_root() {
  if [ -n "${Kokkos_ROOT:-}" ]; then
    [ -d "$Kokkos_ROOT" ] || kpl_die "Kokkos_ROOT=$Kokkos_ROOT does not exist"
    printf '%s\n' "$Kokkos_ROOT"
    return 0
  fi
  local cache=${KPL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kpl}
  local compiler
  compiler=$(c++ -dumpfullversion 2>/dev/null || echo unknown)
  local prefix="$cache/kokkos-3.4.01-openmp-gcc$compiler"
  local stamp="$prefix/.kpl-complete"
  mkdir -p "$cache"
  # One build at a time; a second run waits and then reuses the first's.
  exec 9>"$cache/.lock"
  flock 9
  if [ ! -f "$stamp" ]; then
    rm -rf "$prefix" "$prefix.work"
    kpl_fetch_trilinos_kokkos "$prefix.work/source"
    kpl_build_kokkos "$prefix" "$prefix.work"
    rm -rf "$prefix.work"
    date -u +%FT%TZ > "$stamp"
  else
    kpl_log "reusing Kokkos 3.4.01 from $prefix"
  fi
  flock -u 9
  printf '%s\n' "$prefix"
}

kpl_setup() {
  kpl_install_packages
  KPL_KOKKOS_ROOT=$(kpl_kokkos_root)
  export KPL_KOKKOS_ROOT
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  kpl_setup
  printf 'Kokkos_ROOT=%s\n' "$KPL_KOKKOS_ROOT"
fi
