"""Hostile-input tests for the kpl command-line tool.

Run with Debian's interpreter:
    KPL_BINARY=/work/main/build/algorithms/kpl /usr/bin/python3 -m pytest -q tests/hostile

Every kpl run goes through run_kpl(), which enforces a timeout (a hang is a
failure) and returns (status, stdout, stderr); status < 0 means kpl was killed
by signal -status.  Tests run kpl with the test's tmp_path as the working
directory and pass relative file names, so messages can be matched exactly.
"""
import glob
import os
import pathlib
import re
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

KPL = os.environ.get("KPL_BINARY", "/work/main/build/algorithms/kpl")
REPO = pathlib.Path(__file__).resolve().parents[2]
INPUTS = REPO / "inputs"
NCPU = os.cpu_count() or 1


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


# --------------------------------------------------------------------------
# running kpl

def _wait_for_binary(limit=180):
    """The binary may be rebuilt by someone else while the suite runs."""
    deadline = time.time() + limit
    while not (os.path.isfile(KPL) and os.access(KPL, os.X_OK)):
        if time.time() > deadline:
            pytest.fail(f"kpl binary {KPL} missing for {limit} s")
        time.sleep(1)


def run_kpl(*args, timeout=60, input=None, cwd=None, env=None, preexec_fn=None):
    """Run kpl; return (status, stdout, stderr).  A run past `timeout` fails the test."""
    argv = [KPL, *[str(a) for a in args]]
    if isinstance(input, str):
        input = input.encode()
    for attempt in range(5):
        _wait_for_binary()
        try:
            p = subprocess.run(argv, input=input, capture_output=True, timeout=timeout,
                               cwd=cwd, env=env, preexec_fn=preexec_fn)
        except subprocess.TimeoutExpired:
            pytest.fail(f"hang: {' '.join(argv)} did not finish within {timeout} s")
        except OSError:  # ENOENT / ETXTBSY while the binary is being replaced
            time.sleep(2)
            continue
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    pytest.fail(f"could not execute {KPL}")


def describe(res):
    rc, out, err = res
    how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"
    return f"{how}\n--- stdout:\n{out}\n--- stderr:\n{err}"


def check(res, status, err_regex=None, stdout_empty=True):
    """Exact exit status, a regex on stderr (re.S) and, by default, nothing on stdout."""
    rc, out, err = res
    assert rc == status, f"expected exit {status}, got {describe(res)}"
    if err_regex is not None:
        assert re.search(err_regex, err, re.S), f"stderr does not match {err_regex!r}: {describe(res)}"
    if stdout_empty:
        assert out == "", f"stdout not empty: {describe(res)}"


def one_line(res):
    lines = res[2].strip().splitlines()
    assert len(lines) == 1, f"expected a one-line message: {describe(res)}"


def bad_input(fname, rest):
    """Regex for "kpl: bad input: 'FILE': REST" (quotes optional)."""
    return rf"kpl: bad input: '?{re.escape(str(fname))}'?: .*{rest}"


def assert_no_output(path):
    path = str(path)
    assert not os.path.lexists(path), f"{path} exists after a failure"
    left = glob.glob(glob.escape(path) + ".partial-*")
    assert not left, f"partial output left behind: {left}"


# --------------------------------------------------------------------------
# HDF5 helpers

def write_h5(path, attrs=None, **datasets):
    with h5py.File(path, "w") as f:
        for name, data in datasets.items():
            f[name] = data
        for k, v in (attrs or {}).items():
            f.attrs[k] = v
    return pathlib.Path(path)


def read_h5(path):
    with h5py.File(path, "r") as f:
        return {k: f[k][...] for k in f if isinstance(f[k], h5py.Dataset)}


def datasets(path):
    """Every dataset of a file, groups' included, by path ("returns/sample")."""
    found = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: found.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) else None)
    return found


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def rel_err(x, ref):
    x, ref = np.asarray(x, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.max(np.abs(x - ref)) / np.max(np.abs(ref)))


# --------------------------------------------------------------------------
# small well-conditioned problems

def make_nnls(seed=2, B=8, m=30, n=12):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    xt = np.maximum(rng.standard_normal((B, n)), 0)
    b = xt @ A.T + 0.1 * rng.standard_normal((B, m))
    return A, b


def make_nnls_positive(seed=2, B=4, m=20, n=8):
    """Non-negative A and b, both scaled to a maximum of 1."""
    rng = np.random.default_rng(seed)
    A = np.abs(rng.standard_normal((m, n)))
    b = np.abs(rng.standard_normal((B, n))) @ A.T
    return A / A.max(), b / b.max()


def make_deconv(seed=1, W=20, m=64, L=9, sigma=1.5):
    """Narrow Gaussian pulse (9 taps, sigma 1.5), 3 returns per waveform, little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(L) - L // 2
    pulse = np.exp(-0.5 * (t / sigma) ** 2)
    xt = np.zeros((W, m))
    for w in range(W):
        idx = rng.choice(m - L, 3, replace=False)
        xt[w, idx] = rng.uniform(1, 5, 3)
    wf = np.array([np.convolve(xt[w], pulse)[:m] for w in range(W)])
    wf += 0.01 * rng.standard_normal((W, m))
    return pulse, wf / np.abs(wf).max()


# --------------------------------------------------------------------------
# fixtures

@pytest.fixture
def run(tmp_path):
    """run(*args, timeout=60, input=None, **kw) -> (status, stdout, stderr), cwd = tmp_path."""
    def _run(*args, timeout=60, input=None, cwd=None, **kw):
        return run_kpl(*args, timeout=timeout, input=input, cwd=cwd or tmp_path, **kw)
    return _run


@pytest.fixture
def h5(tmp_path):
    """h5(name, attrs=None, **datasets) writes tmp_path/name and returns its path."""
    def _h5(name, attrs=None, **datasets):
        return write_h5(tmp_path / name, attrs=attrs, **datasets)
    return _h5


@pytest.fixture(scope="session")
def gam_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("gam")
    res = run_kpl("simulate", "gam", "--n", 200, "--p", 3, "--informative", 2, "--seed", 1,
                  "--output", d / "g.h5")
    check(res, 0, r"kpl simulate gam: wrote 200 x 3")
    return read_h5(d / "g.h5")


@pytest.fixture(scope="session")
def gam_model(tmp_path_factory, gam_data):
    """A gaussian model fitted on gam_data: (model path, data)."""
    d = tmp_path_factory.mktemp("gammodel")
    write_h5(d / "in.h5", X=gam_data["X"], y=gam_data["y"])
    res = run_kpl("gam", "fit", "--input", d / "in.h5", "--output", d / "model.h5", "--mstop", 20)
    check(res, 0, r"kpl gam fit: 200 observations, 3 covariates")
    return d / "model.h5"
