#!/usr/bin/env python3
"""Checks CMakePresets.json against kpl's CMake sources and README: a schema
the project's minimum CMake reads; configure, build, test and workflow
presets serial, openmp and cuda; build trees under build/<preset>; every
cache variable one kpl's configure reads; each preset pointing Kokkos_ROOT
and KokkosKernels_ROOT at its own Kokkos through an environment variable;
the CUDA architecture set for cuda only.

Usage: check_presets.py <kpl source dir>
"""

import json
import pathlib
import re
import sys

from cmake_sources import CMakeSources

PRESETS = ("serial", "openmp", "cuda")
# The newest presets schema each CMake reads (cmake-presets(7)).
SCHEMA_OF_CMAKE = {(3, 19): 1, (3, 20): 2, (3, 21): 3, (3, 23): 4, (3, 24): 5, (3, 25): 6,
                   (3, 26): 6, (3, 27): 7, (3, 28): 8}


def resolved(presets, name, key):
    """A configure preset's `key`, following `inherits` (its own value first)."""
    preset = presets[name]
    if key in preset:
        return preset[key]
    inherits = preset.get("inherits", [])
    for parent in [inherits] if isinstance(inherits, str) else inherits:
        value = resolved(presets, parent, key)
        if value is not None:
            return value
    return None


def cache_variables(presets, name):
    preset = presets[name]
    merged = {}
    inherits = preset.get("inherits", [])
    for parent in reversed([inherits] if isinstance(inherits, str) else inherits):
        merged.update(cache_variables(presets, parent))
    merged.update(preset.get("cacheVariables", {}))
    return merged


def main():
    source_dir = pathlib.Path(sys.argv[1]).resolve()
    sources = CMakeSources(source_dir)
    document = json.loads((source_dir / "CMakePresets.json").read_text())
    failures = []

    minimum = sources.minimum_cmake()
    readable = SCHEMA_OF_CMAKE.get(minimum)
    if readable is None or document.get("version", 99) > readable:
        failures.append(f"presets schema {document.get('version')}: CMake "
                        f"{minimum[0]}.{minimum[1]} (cmake_minimum_required) reads up to "
                        f"{readable}")
    required = document.get("cmakeMinimumRequired", {})
    if (required.get("major", 0), required.get("minor", 0)) > minimum:
        failures.append(f"cmakeMinimumRequired {required} above cmake_minimum_required {minimum}")

    configure = {p["name"]: p for p in document.get("configurePresets", [])}
    for kind in ("buildPresets", "testPresets"):
        listed = {p["name"]: p for p in document.get(kind, []) if not p.get("hidden")}
        for name in PRESETS:
            if listed.get(name, {}).get("configurePreset") != name:
                failures.append(f"{kind}: no {name!r} on configure preset {name!r}")
    workflows = {p["name"]: p for p in document.get("workflowPresets", [])}
    for name in PRESETS:
        steps = [(s["type"], s["name"]) for s in workflows.get(name, {}).get("steps", [])]
        if steps != [("configure", name), ("build", name), ("test", name)]:
            failures.append(f"workflow {name!r}: steps {steps}")

    environment_of = {}
    for name in PRESETS:
        if name not in configure or configure[name].get("hidden"):
            failures.append(f"no visible configure preset {name!r}")
            continue
        binary_dir = resolved(configure, name, "binaryDir")
        if binary_dir != "${sourceDir}/build/${presetName}":
            failures.append(f"{name}: binaryDir {binary_dir!r}, not ${{sourceDir}}/build/<preset>")
        if resolved(configure, name, "generator") != "Ninja":
            failures.append(f"{name}: generator is not Ninja (as the README's commands)")
        variables = cache_variables(configure, name)
        for variable in variables:
            reason = sources.why_unknown(variable)
            if reason:
                failures.append(f"{name}: cache variable {reason}")
        roots = {variables.get("Kokkos_ROOT"), variables.get("KokkosKernels_ROOT")}
        match = re.fullmatch(r"\$env\{(\w+)\}", str(variables.get("Kokkos_ROOT")))
        if not match or len(roots) != 1:
            failures.append(f"{name}: Kokkos_ROOT and KokkosKernels_ROOT are not one $env{{...}}: "
                            f"{sorted(map(str, roots))}")
        else:
            environment_of[name] = match.group(1)
        if variables.get("CMAKE_BUILD_TYPE") != "Release":
            failures.append(f"{name}: CMAKE_BUILD_TYPE {variables.get('CMAKE_BUILD_TYPE')!r}")
        has_arch = "CMAKE_CUDA_ARCHITECTURES" in variables
        if has_arch != (name == "cuda"):
            failures.append(f"{name}: CMAKE_CUDA_ARCHITECTURES {'set' if has_arch else 'missing'}")
    if len(set(environment_of.values())) != len(environment_of):
        failures.append(f"presets share a Kokkos: {environment_of}")

    for message in failures:
        print("FAIL:", message)
    if failures:
        return 1
    described = (f"{n} (Kokkos at ${v})" for n, v in environment_of.items())
    print("CMakePresets.json: " + ", ".join(described))
    return 0


if __name__ == "__main__":
    sys.exit(main())
