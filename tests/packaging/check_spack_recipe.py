#!/usr/bin/env python3
"""Checks packaging/spack/packages/kpl/package.py without Spack: loads it with
small stand-ins for Spack's directives and builder helpers, then, for every
combination of its variants (and of `--test` and the two ways Kokkos builds
CUDA), compares cmake_args() and the dependencies with what is expected here,
and every -D it passes with kpl's CMake sources.

Usage: check_spack_recipe.py <kpl source dir>
"""

import itertools
import pathlib
import re
import sys
import types

from cmake_sources import CMakeSources

FAILURES = []


def fail(message):
    FAILURES.append(message)


# ----------------------------------------------------------- Spack stand-ins
class Directive:
    def __init__(self, kind, *args, **kwargs):
        self.kind, self.args, self.kwargs = kind, args, kwargs


RECORDED = []


def directive(kind):
    def record(*args, **kwargs):
        RECORDED.append(Directive(kind, *args, **kwargs))

    return record


class Prefix(str):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Prefix(f"{self}/{name}")


class Variant:
    def __init__(self, value):
        self.value = value


class Dependency:
    def __init__(self, name):
        self.prefix = Prefix(f"/spack/opt/{name}")
        self.command = types.SimpleNamespace(path=f"{self.prefix}/bin/{name}")
        self.package = types.SimpleNamespace(kokkos_cxx=f"{self.prefix}/bin/nvcc_wrapper")


def parse_constraint(text):
    """'+a~b c=d ^dep+e' -> ({'a': True, 'b': False, 'c': 'd'}, {'dep': {...}})."""
    own, dependencies, target = {}, {}, None
    for token in text.split():
        if token.startswith("^"):
            match = re.match(r"\^([\w-]+)(.*)", token)
            target = dependencies.setdefault(match.group(1), {})
            token = match.group(2)
        else:
            target = own
        for sign, name in re.findall(r"([+~])(\w+)", token):
            target[name] = sign == "+"
        for name, value in re.findall(r"(\w+)=(\S+)", token):
            target[name] = value
        if re.sub(r"([+~]\w+|\w+=\S+|@\S+)", "", token):
            raise ValueError(f"constraint {text!r}: the stand-in cannot read {token!r}")
    return own, dependencies


class Spec:
    def __init__(self, variants, kokkos, active_dependencies):
        self.variants = {name: Variant(value) for name, value in variants.items()}
        self._values = variants
        self._kokkos = kokkos
        self._active = active_dependencies

    def satisfies(self, constraint):
        own, dependencies = parse_constraint(constraint)
        for name, wanted in own.items():
            value = self._values[name]
            if isinstance(value, tuple):
                if wanted not in value:
                    return False
            elif value != wanted:
                return False
        for dependency, wanted in dependencies.items():
            if dependency != "kokkos":
                raise ValueError(f"the stand-in knows only ^kokkos, not ^{dependency}")
            if any(self._kokkos.get(name, False) != value for name, value in wanted.items()):
                return False
        return True

    def __getitem__(self, name):
        if name not in self._active:
            raise KeyError(f"spec[{name!r}]: {name} is no dependency of this spec")
        return Dependency(name)


class CMakePackage:
    run_tests = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.directives = list(getattr(cls, "directives", [])) + RECORDED[:]
        RECORDED.clear()

    def define(self, name, value):
        if isinstance(value, bool):
            return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
        if isinstance(value, (list, tuple)):
            value = ";".join(str(v) for v in value)
        return f"-D{name}:STRING={value}"

    def define_from_variant(self, name, variant):
        if variant not in self.spec.variants:
            raise KeyError(f"define_from_variant({name!r}, {variant!r}): no such variant")
        return self.define(name, self.spec.variants[variant].value)


CUDA_ARCH_VALUES = ("70", "80", "90")


class CudaPackage:
    cuda_arch_values = CUDA_ARCH_VALUES
    directives = [
        Directive("variant", "cuda", default=False, description="CUDA"),
        Directive("variant", "cuda_arch", default="none", multi=True,
                  values=("none",) + CUDA_ARCH_VALUES, description="CUDA architecture"),
        Directive("depends_on", "cuda", when="+cuda"),
    ]


def install_stand_ins():
    package = types.ModuleType("spack.package")
    for kind in ("version", "variant", "depends_on", "conflicts", "license", "generator",
                 "maintainers", "requires"):
        setattr(package, kind, directive(kind))
    package.CMakePackage = CMakePackage
    package.CudaPackage = CudaPackage
    package.join_path = lambda *parts: "/".join(parts)
    package.working_dir = None
    package.Executable = None
    spack = types.ModuleType("spack")
    spack.package = package
    sys.modules["spack"] = spack
    sys.modules["spack.package"] = package


def load_recipe(path):
    install_stand_ins()
    namespace = {"__name__": "kpl_recipe"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["Kpl"]


# ----------------------------------------------------------------- checking
def when_holds(spec, directive_):
    when = directive_.kwargs.get("when")
    return when is None or spec.satisfies(when)


def combinations(recipe):
    """Every combination of the boolean variants, --test on and off, and for
    +cuda both Kokkos CUDA routes (cmake_lang, nvcc_wrapper)."""
    variants = {d.args[0]: d for d in recipe.directives if d.kind == "variant"}
    booleans = sorted(n for n, d in variants.items() if isinstance(d.kwargs["default"], bool))
    for values in itertools.product((False, True), repeat=len(booleans)):
        chosen = dict(zip(booleans, values))
        chosen["cuda_arch"] = ("90",) if chosen.get("cuda") else ("none",)
        routes = ({"cmake_lang": True}, {"wrapper": True}) if chosen.get("cuda") else ({},)
        for run_tests in (False, True):
            for kokkos in routes:
                yield chosen, run_tests, kokkos


def instantiate(recipe, chosen, run_tests, kokkos):
    probe = Spec(chosen, kokkos, set())
    active = [d for d in recipe.directives if d.kind == "depends_on" and when_holds(probe, d)]
    if not run_tests:
        active = [d for d in active if d.kwargs.get("type") != "test"]
    names = {re.match(r"[\w-]+", d.args[0]).group(0) for d in active}
    names.add("cmake")  # depends_on("cmake...", type="build") is checked below
    package = recipe()
    package.spec = Spec(chosen, kokkos, names)
    package.run_tests = run_tests
    return package, active


def conflicted(recipe, chosen, kokkos):
    probe = Spec(chosen, kokkos, set())
    return any(
        d.kind == "conflicts" and probe.satisfies(d.args[0]) and when_holds(probe, d)
        for d in recipe.directives
    )


def parse_defines(arguments):
    defines = {}
    for argument in arguments:
        match = re.fullmatch(r"-D(\w+):(BOOL|STRING|PATH)=(.*)", argument)
        if not match:
            fail(f"cmake_args(): {argument!r} is not -D<name>:<type>=<value>")
            continue
        name, kind, value = match.groups()
        if name in defines:
            fail(f"cmake_args(): {name} given twice")
        defines[name] = value
    return defines


def expected_defines(chosen, run_tests, kokkos):
    """What kpl's README and CMake need for this combination, written out
    independently of the recipe."""
    on = {True: "ON", False: "OFF"}
    hdf5 = "/spack/opt/hdf5/bin/" + ("h5pcc" if chosen["mpi"] else "h5cc")
    expected = {
        "Kokkos_ROOT": "/spack/opt/kokkos",
        "KokkosKernels_ROOT": "/spack/opt/kokkos-kernels",
        "HDF5_C_COMPILER_EXECUTABLE": hdf5,
        "KPL_ENABLE_MPI": on[chosen["mpi"]],
        "KPL_ENABLE_PYTHON": on[chosen["python"]],
        "KPL_ENABLE_BENCHMARKS": on[chosen["benchmarks"]],
        "KPL_ENABLE_TESTS": on[run_tests],
    }
    if chosen["python"]:
        expected["Python_EXECUTABLE"] = "/spack/opt/python/bin/python"
    if chosen["cuda"] and kokkos.get("cmake_lang"):
        expected["CMAKE_CUDA_ARCHITECTURES"] = "90"
        expected["CMAKE_CUDA_COMPILER"] = "/spack/opt/cuda/bin/nvcc"
    if chosen["cuda"] and kokkos.get("wrapper"):
        expected["CMAKE_CXX_COMPILER"] = "/spack/opt/kokkos/bin/nvcc_wrapper"
        expected["CMAKE_CXX_FLAGS"] = "-arch=sm_90"
    return expected


def expected_dependencies(chosen, run_tests):
    """dependency -> constraints every matching depends_on must add up to."""
    plus = {True: "+", False: "~"}
    kokkos = {f"{plus[chosen['serial']]}serial", f"{plus[chosen['openmp']]}openmp",
              f"{plus[chosen['cuda']]}cuda"}
    if chosen["cuda"]:
        kokkos |= {"+cuda_lambda", "cuda_arch=90"}
    expected = {
        "kokkos": kokkos,
        "kokkos-kernels": set(),
        "hdf5": {f"{plus[chosen['mpi']]}mpi"},
        "cli11": set(),
        "zlib-api": set(),
        "libdeflate": set(),
        "cmake": set(),
        "ninja": set(),
        "c": set(),
        "cxx": set(),
    }
    if chosen["mpi"]:
        expected["mpi"] = set()
    if chosen["cuda"]:
        expected["cuda"] = set()
    if chosen["python"]:
        expected["python"] = set()
        expected["py-pybind11"] = set()
        expected["py-numpy"] = set()
    if chosen["benchmarks"]:
        expected["benchmark"] = set()
    if run_tests:
        expected["googletest"] = set()
    return expected


KNOWN_VARIANTS = {"serial", "openmp", "cuda", "cuda_arch", "mpi", "python", "benchmarks"}


def check_combination(recipe, sources, chosen, run_tests, kokkos, reached):
    label = " ".join(f"{'+' if v else '~'}{n}" for n, v in sorted(chosen.items())
                     if isinstance(v, bool))
    label += f" tests={run_tests} kokkos={kokkos or '-'}"
    package, active = instantiate(recipe, chosen, run_tests, kokkos)
    try:
        defines = parse_defines(package.cmake_args())
    except Exception as error:  # a KeyError from spec[...] names the bad dependency
        fail(f"{label}: cmake_args() raised {type(error).__name__}: {error}")
        return
    for name, value in defines.items():
        reason = sources.why_unknown(name)
        if reason:
            fail(f"{label}: {reason}")
        reached.setdefault(name, set()).add(value)
    expected = expected_defines(chosen, run_tests, kokkos)
    if defines != expected:
        for name in sorted(set(defines) | set(expected)):
            if defines.get(name) != expected.get(name):
                fail(f"{label}: -D{name} is {defines.get(name)!r}, "
                     f"expected {expected.get(name)!r}")

    got = {}
    for d in active:
        own = re.match(r"([\w-]+)(.*)", d.args[0])
        constraints = set(re.findall(r"[+~]\w+|\w+=\S+", own.group(2)))
        got.setdefault(own.group(1), set()).update(constraints)
    for name, constraints in expected_dependencies(chosen, run_tests).items():
        if name not in got:
            fail(f"{label}: no dependency on {name}")
        elif got[name] != constraints:
            fail(f"{label}: {name} with {sorted(got[name])}, expected {sorted(constraints)}")
    for name in set(got) - set(expected_dependencies(chosen, run_tests)):
        fail(f"{label}: unexpected dependency on {name}")


def main():
    source_dir = pathlib.Path(sys.argv[1]).resolve()
    sources = CMakeSources(source_dir)
    recipe = load_recipe(source_dir / "packaging/spack/packages/kpl/package.py")

    variants = {d.args[0] for d in recipe.directives if d.kind == "variant"}
    if variants != KNOWN_VARIANTS:
        fail(f"the recipe's variants {sorted(variants)} are not those this check knows "
             f"{sorted(KNOWN_VARIANTS)}: teach expected_defines() the new ones")

    versions = [d.args[0] for d in recipe.directives if d.kind == "version"]
    if versions != [sources.project_version()]:
        fail(f"recipe versions {versions}, project(kpl VERSION {sources.project_version()})")
    licenses = [d.args[0] for d in recipe.directives if d.kind == "license"]
    if licenses != ["BSD-3-Clause"] or "BSD 3-Clause" not in (source_dir / "LICENSE").read_text():
        fail(f"recipe licence {licenses}, LICENSE says BSD 3-Clause")

    reached, checked = {}, 0
    for chosen, run_tests, kokkos in combinations(recipe):
        if conflicted(recipe, chosen, kokkos):
            continue
        check_combination(recipe, sources, chosen, run_tests, kokkos, reached)
        checked += 1
    # Conflicts that must be there: no host backend; +cuda without an arch.
    base = {"serial": True, "openmp": True, "cuda": False, "cuda_arch": ("none",),
            "mpi": False, "python": False, "benchmarks": False}
    for change, why in (({"serial": False, "openmp": False}, "no host backend"),
                        ({"cuda": True}, "+cuda with cuda_arch=none")):
        if not conflicted(recipe, {**base, **change}, {}):
            fail(f"the recipe accepts {why}")

    for option in sorted(sources.enable_options()):
        if reached.get(option) != {"ON", "OFF"}:
            fail(f"{option}: no variant turns it both ON and OFF "
                 f"(values reached: {sorted(reached.get(option, []))})")
    for message in FAILURES[:40]:
        print("FAIL:", message)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s) over {checked} variant combinations")
        return 1
    print(f"package.py: {checked} variant combinations, every -D known to kpl's CMake "
          f"version {versions[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
