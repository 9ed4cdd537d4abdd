"""The kpl command line under mpiexec.

Run with Debian's interpreter (ctest does, with KPL_BINARY and KPL_MPIEXEC):
    KPL_BINARY=build/algorithms/kpl /usr/bin/python3 -m pytest -q tests/mpi

run_kpl(ranks, *args) runs `mpiexec -n ranks kpl args` (ranks = 0: kpl
alone, no launcher) with a timeout, and returns (status, stdout, stderr).
same_file(a, b) asserts two HDF5 files hold the same datasets, bit for bit,
and the same attributes (names in `except_attributes` aside).
"""
import os
import pathlib
import subprocess

import h5py
import numpy as np
import pytest

KPL = os.environ.get("KPL_BINARY", "build/algorithms/kpl")
MPIEXEC = os.environ.get("KPL_MPIEXEC", "mpiexec")
REPO = pathlib.Path(__file__).resolve().parents[2]
INPUTS = REPO / "inputs"


def mpi_environment():
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    # CI runs as root; OpenMPI refuses that unless told (these tests only).
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    return env


def mpi_command(ranks, *args):
    return [MPIEXEC, "-n", str(ranks), KPL, *[str(a) for a in args]]


def _run(argv, timeout, cwd):
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, cwd=cwd,
                           env=mpi_environment())
    except subprocess.TimeoutExpired:
        pytest.fail(f"hang: {' '.join(argv)} did not finish within {timeout} s")
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def run_kpl(ranks, *args, timeout=300, cwd=None):
    argv = mpi_command(ranks, *args) if ranks > 0 else [KPL, *[str(a) for a in args]]
    return _run(argv, timeout, cwd)


def run_mpmd(parts, timeout=300, cwd=None):
    """mpiexec -n 1 kpl ARGS0 : -n 1 kpl ARGS1 ... (one rank per part): ranks
    that see different arguments, as ranks on different nodes see different
    files."""
    argv = [MPIEXEC]
    for i, args in enumerate(parts):
        if i:
            argv.append(":")
        argv += ["-n", "1", KPL, *[str(a) for a in args]]
    return _run(argv, timeout, cwd)


def datasets(path):
    found = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: found.__setitem__(name, obj[()])
                     if isinstance(obj, h5py.Dataset) else None)
    return found


def attributes(path):
    found = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            for key, value in obj.attrs.items():
                found[(name, key)] = value
        visit("/", f)
        f.visititems(visit)
    return found


def same_file(a, b, except_attributes=()):
    da, db = datasets(a), datasets(b)
    assert sorted(da) == sorted(db), f"{a} and {b} hold different datasets"
    for name in da:
        x, y = np.asarray(da[name]), np.asarray(db[name])
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), f"dataset /{name} differs between {a} and {b}"
    aa, ab = attributes(a), attributes(b)
    for key in set(aa) | set(ab):
        if key[1] in except_attributes:
            continue
        assert key in aa and key in ab, f"attribute {key} only in one file"
        assert np.array_equal(np.asarray(aa[key]), np.asarray(ab[key])), f"attribute {key}"


def no_partials(directory):
    left = [p.name for p in pathlib.Path(directory).iterdir() if ".partial-" in p.name]
    assert not left, f"partial files left behind: {left}"
