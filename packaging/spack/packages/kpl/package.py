# Spack recipe for kpl. The CMake options it sets are checked against kpl's
# CMake sources by tests/packaging/check_spack_recipe.py (CTest label
# `packaging`), which loads this file with stand-ins for Spack's directives.
try:  # Spack >= 1.0: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage, generator
    from spack_repo.builtin.build_systems.cuda import CudaPackage
except ImportError:  # Spack 0.x: spack.package exports them
    pass

from spack.package import *


class Kpl(CMakePackage, CudaPackage):
    """Portable performance kernels on Kokkos (gemv, broadcast, reductions,
    batched NNLS), boosted GAMs and waveform deconvolution, with a `kpl`
    command line that reads and writes HDF5."""

    license("BSD-3-Clause")

    # No public repository yet: build a checkout with `spack develop`
    # (packaging/spack/README.md). The version is project(kpl VERSION ...).
    version("0.1.0")

    generator("ninja")

    # kpl's execution spaces are those of the Kokkos it is built against;
    # these variants choose that Kokkos.
    variant("serial", default=True, description="Kokkos with the Serial backend")
    variant("openmp", default=True, description="Kokkos with the OpenMP backend")
    # +cuda and cuda_arch come from CudaPackage.
    variant("mpi", default=False, description="kpl's MPI layer (kpl/mpi.hpp), on a parallel HDF5")
    variant("python", default=False, description="The pybind11 Python module")
    variant("benchmarks", default=False, description="The Google Benchmark suite in perf/")
    # KPL_ENABLE_TESTS follows `spack install --test=root` (self.run_tests).

    depends_on("c", type="build")  # FindHDF5 probes the C compiler
    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("ninja", type="build")

    # Kokkos 3.4.01 for Serial and OpenMP, 4.6 or newer for everything (README).
    depends_on("kokkos@3.4.01:3.4,4.6:")
    depends_on("kokkos-kernels@3.4.01:3.4,4.6:")
    depends_on("kokkos+serial", when="+serial")
    depends_on("kokkos~serial", when="~serial")
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos~openmp", when="~openmp")
    depends_on("kokkos@4.6: +cuda +cuda_lambda", when="+cuda")
    depends_on("kokkos~cuda", when="~cuda")
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
    conflicts("cuda_arch=none", when="+cuda", msg="kpl+cuda needs the GPU's cuda_arch (90: H100)")
    conflicts("~serial~openmp", msg="Kokkos needs a host backend: +serial or +openmp")

    # kpl loads one HDF5 per process: the parallel one with MPI, else the serial
    # one (its CMake refuses a parallel HDF5 without KPL_ENABLE_MPI).
    # 1.10.3: direct chunk writes (kpl compresses output chunks itself, with zlib).
    depends_on("hdf5@1.10.3: ~mpi", when="~mpi")
    depends_on("hdf5@1.10.3: +mpi", when="+mpi")
    depends_on("zlib-api")
    depends_on("libdeflate")  # deflates output chunks faster than zlib, same streams
    depends_on("mpi", when="+mpi")
    depends_on("cli11", type="build")  # header-only, the command line only

    depends_on("python@3:", when="+python", type=("build", "link", "run"))
    depends_on("py-pybind11", when="+python", type="build")
    # The module imports NumPy, and kpl's CMake looks for its headers.
    depends_on("py-numpy", when="+python", type=("build", "run"))

    depends_on("googletest", type="test")
    depends_on("benchmark", when="+benchmarks")

    def cmake_args(self):
        spec = self.spec
        hdf5_wrapper = "h5pcc" if spec.satisfies("+mpi") else "h5cc"
        args = [
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            self.define("KokkosKernels_ROOT", spec["kokkos-kernels"].prefix),
            # kpl picks its HDF5 through the wrapper (README: HDF5).
            self.define(
                "HDF5_C_COMPILER_EXECUTABLE", join_path(spec["hdf5"].prefix.bin, hdf5_wrapper)
            ),
            self.define_from_variant("KPL_ENABLE_MPI", "mpi"),
            self.define_from_variant("KPL_ENABLE_PYTHON", "python"),
            self.define_from_variant("KPL_ENABLE_BENCHMARKS", "benchmarks"),
            self.define("KPL_ENABLE_TESTS", self.run_tests),
        ]
        if spec.satisfies("+python"):
            args.append(self.define("Python_EXECUTABLE", spec["python"].command.path))
        if spec.satisfies("+cuda"):
            archs = [a for a in spec.variants["cuda_arch"].value if a != "none"]
            if spec.satisfies("^kokkos+cmake_lang"):
                # kpl compiles its sources as CUDA itself and must be told the
                # architecture Kokkos was built for.
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)))
                args.append(self.define("CMAKE_CUDA_COMPILER", spec["cuda"].prefix.bin.nvcc))
            else:
                # Kokkos built with nvcc_wrapper: the same wrapper, with the
                # architecture named (its default is refused by CUDA 13).
                args.append(self.define("CMAKE_CXX_COMPILER", spec["kokkos"].package.kokkos_cxx))
                arch_flags = " ".join(f"-arch=sm_{a}" for a in archs)
                args.append(self.define("CMAKE_CXX_FLAGS", arch_flags))
        return args

    def check(self):
        # The unit and command-line tests; the others need Python with h5py
        # (hostile), 9 GB of memory (large), mpiexec (mpi) or a build tree
        # of their own (install).
        with working_dir(self.build_directory):
            ctest = Executable(self.spec["cmake"].prefix.bin.ctest)
            ctest("--output-on-failure", "-L", "unit|cli")
