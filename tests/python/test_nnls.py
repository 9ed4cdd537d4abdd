"""kpl.nnls against `kpl nnls` on the same systems: bit for bit (the same
kernel on the same values, the gradient chosen for the same batch)."""
import numpy as np
import pytest

import kpl
from conftest import REPO, assert_same, read_h5

FIELDS = ("x", "rnorm", "iterations", "status", "kkt_residual")


def systems(shape_a, systems, seed):
    """Random systems whose solutions have active and inactive bounds."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape_a)
    m = shape_a[-2]
    b = rng.standard_normal((systems, m))
    return A, b


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("gradient", ["automatic", "residual", "cross-products"])
def test_shared_a_equals_the_cli(cli, dtype, gradient):
    A, b = systems((40, 25), 7, seed=1)
    A, b = A.astype(dtype), b.astype(dtype)
    ours = kpl.nnls(A, b, gradient=gradient)
    theirs = cli("nnls", {"A": A, "b": b}, "--gradient", gradient,
                 "--precision", "float" if dtype == np.float32 else "double")
    assert_same(ours, theirs, FIELDS)
    assert ours.x.dtype == dtype and ours.x.shape == (7, 25)
    assert np.all(ours.status == 0) and np.all(ours.x >= 0)
    assert np.count_nonzero(ours.x == 0) > 0  # some bounds are active: not a plain lstsq


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_one_a_per_system_equals_the_cli(cli, dtype):
    A, b = systems((5, 30, 12), 5, seed=2)
    A, b = A.astype(dtype), b.astype(dtype)
    ours = kpl.nnls(A, b, orthogonalization="classical-twice")
    theirs = cli("nnls", {"A": A, "b": b}, "--orthogonalization", "classical-twice",
                 "--precision", "float" if dtype == np.float32 else "double")
    assert_same(ours, theirs, FIELDS)


def test_options_reach_the_solver_as_the_cli_options(cli):
    A, b = systems((50, 40), 4, seed=3)
    options = dict(max_iterations=3, tolerance=1e-10, kkt_tolerance=1e-9, max_passive=20)
    ours = kpl.nnls(A, b, **options)
    theirs = cli("nnls", {"A": A, "b": b}, "--max-iterations", 3, "--tolerance", 1e-10,
                 "--kkt-tolerance", 1e-9, "--max-passive", 20)
    assert_same(ours, theirs, FIELDS)
    assert np.all(ours.status == 1)  # max_iterations: the cap of 3 reached
    assert np.all(ours.iterations == 3)


def test_shipped_input_equals_the_cli(cli):
    data = read_h5(REPO / "inputs" / "nnls_gauss_small.h5")
    ours = kpl.nnls(data["A"], data["b"])
    assert_same(ours, cli("nnls", data), FIELDS)


def test_one_system_gives_its_values(cli):
    A, b = systems((20, 8), 1, seed=4)
    ours = kpl.nnls(A, b[0])
    theirs = cli("nnls", {"A": A, "b": b[0]})  # /b [m]: a batch of one
    assert ours.x.shape == (8,) and isinstance(ours.rnorm, float)
    assert np.array_equal(ours.x, theirs["x"][0])
    assert ours.rnorm == theirs["rnorm"][0] and ours.status == theirs["status"][0]


def test_non_contiguous_arrays_are_copied():
    A, b = systems((30, 10), 6, seed=5)
    wide = np.zeros((30, 20))
    wide[:, ::2] = A  # every other column: a strided view
    ours = kpl.nnls(wide[:, ::2], np.asfortranarray(b))
    assert_same(ours, kpl.nnls(A, b)._asdict(), FIELDS)


def test_strict_raises_when_a_system_did_not_converge():
    A, b = systems((50, 40), 2, seed=3)
    with pytest.raises(kpl.NotConvergedError, match="2 of 2 systems did not converge"):
        kpl.nnls(A, b, max_iterations=1, strict=True)
