"""Tests of the Python module `kpl` (python/): the same inputs go through the
module and through the `kpl` command line (written to a temporary HDF5 file
with h5py), and the results must agree: bit for bit where both run the same
code path. CTest runs them with PYTHONPATH at the build's python/ directory
and KPL_BINARY naming the build's `kpl`; by hand:

    PYTHONPATH=<build>/python KPL_BINARY=<build>/algorithms/kpl \\
        /usr/bin/python3 -m pytest -q tests/python
"""
import os
import pathlib
import subprocess

import h5py
import numpy as np
import pytest

import kpl

KPL = os.environ.get("KPL_BINARY", "")
REPO = pathlib.Path(__file__).resolve().parents[2]


def run_cli(*args, timeout=120):
    """Runs `kpl args...`; returns (exit status, stderr)."""
    assert KPL and os.access(KPL, os.X_OK), f"KPL_BINARY={KPL!r} is not the kpl binary"
    process = subprocess.run([KPL, *map(str, args)], capture_output=True, timeout=timeout)
    return process.returncode, process.stderr.decode(errors="replace")


def write_h5(path, **datasets):
    with h5py.File(path, "w") as file:
        for name, value in datasets.items():
            file[name] = value
    return path


def read_h5(path):
    """Every dataset, by its path ("x", "returns/sample")."""
    found = {}
    with h5py.File(path, "r") as file:
        file.visititems(lambda name, item: found.__setitem__(name, item[()])
                        if isinstance(item, h5py.Dataset) else None)
    return found


@pytest.fixture
def cli(tmp_path):
    """cli(command, inputs, *options) writes inputs (a dict of arrays) to a
    file, runs `kpl <command> --input in.h5 --output out.h5 options...`,
    requires exit status 0 and returns the output's datasets."""
    def run(command, inputs, *options):
        source = write_h5(tmp_path / "in.h5", **inputs)
        target = tmp_path / "out.h5"
        if target.exists():
            target.unlink()
        status, stderr = run_cli(*command.split(), "--input", source, "--output", target, *options)
        assert status == 0, stderr
        return read_h5(target)
    return run


@pytest.fixture
def cli_error(tmp_path):
    """cli_error(command, inputs, *options) -> (status, last line of stderr)
    for a run that must fail."""
    def run(command, inputs, *options):
        source = write_h5(tmp_path / "bad.h5", **inputs)
        status, stderr = run_cli(*command.split(), "--input", source,
                                 "--output", tmp_path / "never.h5", *options)
        assert status != 0
        assert not (tmp_path / "never.h5").exists()
        return status, stderr.strip().splitlines()[-1]
    return run


def assert_same(python, cli, names):
    """Every named result equal, bit for bit (NaN where NaN), same dtype."""
    for name in names:
        ours, theirs = np.asarray(getattr(python, name)), np.asarray(cli[name])
        assert ours.dtype == theirs.dtype, (name, ours.dtype, theirs.dtype)
        assert ours.shape == theirs.shape, (name, ours.shape, theirs.shape)
        assert np.array_equal(ours, theirs, equal_nan=True), (name, ours, theirs)
