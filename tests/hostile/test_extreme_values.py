"""Case 4 (nnls, deconv): huge (1e308) and subnormal but finite data.

Contract: exit 0 with finite, correct results, or exit 2 with a clear message.
Reference answers come from the same problem at unit scale; for subnormal data the
stored (rounded) values are scaled back up by an exact power of two first."""
import numpy as np
import pytest

from conftest import assert_no_output, check, make_deconv, make_nnls_positive, read_h5, rel_err

TWO_M1040 = 2.0 ** -1040  # subnormal: 34 significant bits left


def _solve(run, h5, tmp_path, cmd, data, tag):
    h5(f"in{tag}.h5", **data)
    res = run(cmd, "--input", f"in{tag}.h5", "--output", f"out{tag}.h5")
    out = read_h5(tmp_path / f"out{tag}.h5") if res[0] == 0 else None
    return res, out


def _finite_and_right(res, out, ref, factor, tol, what):
    """Exit 0: everything finite and x == ref * factor; or exit 2 naming the dataset."""
    rc = res[0]
    if rc == 2:
        check(res, 2, r"kpl: bad input: '?inscaled\.h5'?: .*/" + what)
        return
    check(res, 0, r"converged")
    # A true answer past the precision's range (x ~ 2^1040 in a double) is no
    # solution: its system must say numerical_issue (2) and the summary count
    # it; every other system's values are finite.
    flagged = out["status"] == 2
    for name in ("x", "fit", "rnorm", "kkt_residual"):
        if name not in out:
            continue
        rows_bad = ~np.isfinite(out[name].reshape(len(flagged), -1)).all(axis=1)
        assert not (rows_bad & ~flagged).any(), (
            f"non-finite /{name} in systems {np.flatnonzero(rows_bad & ~flagged)} whose status is "
            f"{out['status'][rows_bad & ~flagged]}; stderr: {res[2]}")
    if flagged.any():
        assert f"{int(flagged.sum())} numerical_issue" in res[2]
    conv = out["status"] == 0
    err = rel_err(out["x"][conv] / factor, ref["x"][conv]) if conv.any() else 0.0
    assert err < tol, f"x off by {err:.3g} (relative) although status 0; status {out['status']}"


NNLS_CASES = {
    # name: (A scale, b scale, relative tolerance on x)
    "A_b_1e308": (1e308, 1e308, 1e-9),
    "A_b_dblmax": (1.7976931348623157e308, 1.7976931348623157e308, 1e-9),
    "A_1e308_b_1": (1e308, 1.0, 1e-9),
    "A_1_b_1e308": (1.0, 1e308, 1e-9),
    "A_b_subnormal": (TWO_M1040, TWO_M1040, 1e-6),
    "A_1_b_subnormal": (1.0, TWO_M1040, 1e-6),
    # true x ~ 2^1040 does not fit in a double: exit 2, or exit 0 with finite x
    # and a non-converged status -- never Inf with status 0
    "A_subnormal_b_1": (TWO_M1040, 1.0, 1e-6),
}


@pytest.mark.parametrize("case", NNLS_CASES)
def test_nnls_extreme(run, h5, tmp_path, case):
    sa, sb, tol = NNLS_CASES[case]
    A, b = make_nnls_positive()
    As, bs = A * sa, b * sb
    # reference on the values actually stored, scaled back exactly where sa/sb are powers of 2
    Ar = As / sa if sa == TWO_M1040 else A
    br = bs / sb if sb == TWO_M1040 else b
    _, ref = _solve(run, h5, tmp_path, "nnls", {"A": Ar, "b": br}, "ref")
    res, out = _solve(run, h5, tmp_path, "nnls", {"A": As, "b": bs}, "scaled")
    _finite_and_right(res, out, ref, sb / sa, tol, r"(A|b)\b")
    if res[0] == 0:
        assert (out["status"] == ref["status"]).all() or case == "A_subnormal_b_1"
    else:
        assert_no_output(tmp_path / "outscaled.h5")


@pytest.mark.parametrize("precision", ["double", "float"])
def test_nnls_zero_problem(run, h5, tmp_path, precision):
    """A == 0 and b == 0: x = 0, rnorm = 0, converged; no 0/0."""
    h5("in.h5", A=np.zeros((5, 3)), b=np.zeros((2, 5)))
    res = run("nnls", "--input", "in.h5", "--output", "out.h5", "--precision", precision)
    check(res, 0, r"2 systems: 2 converged")
    out = read_h5(tmp_path / "out.h5")
    assert (out["x"] == 0).all() and (out["rnorm"] == 0).all() and (out["status"] == 0).all()
    assert np.isfinite(out["kkt_residual"]).all()


DECONV_CASES = {
    "pulse_1e308": (1e308, 1.0, 1e-9),
    "wave_1e308": (1.0, 1e308, 1e-9),
    "both_1e308": (1e308, 1e308, 1e-9),
    "both_dblmax": (1.7976931348623157e308, 1.7976931348623157e308, 1e-9),
    "wave_subnormal": (1.0, TWO_M1040, 1e-6),
    "both_subnormal": (TWO_M1040, TWO_M1040, 1e-6),
    # x ~ 2^1040 overflows: exit 2, or finite x with a non-converged status
    "pulse_subnormal": (TWO_M1040, 1.0, 1e-6),
}


@pytest.mark.parametrize("case", DECONV_CASES)
def test_deconv_extreme(run, h5, tmp_path, case):
    sp, sw, tol = DECONV_CASES[case]
    pulse, wf = make_deconv()
    ps, ws = pulse * sp, wf * sw
    pr = ps / sp if sp == TWO_M1040 else pulse
    wr = ws / sw if sw == TWO_M1040 else wf
    _, ref = _solve(run, h5, tmp_path, "deconv", {"pulse": pr, "waveforms": wr}, "ref")
    res, out = _solve(run, h5, tmp_path, "deconv", {"pulse": ps, "waveforms": ws}, "scaled")
    _finite_and_right(res, out, ref, sw / sp, tol, r"(pulse|waveforms)\b")
    if res[0] != 0:
        assert_no_output(tmp_path / "outscaled.h5")


@pytest.mark.parametrize("precision", ["double", "float"])
def test_deconv_zero_pulse(run, h5, tmp_path, precision):
    """An all-zero pulse: observed exit 0, x = 0, rnorm = ||waveform||, status converged."""
    pulse, wf = make_deconv()
    h5("in.h5", pulse=np.zeros_like(pulse), waveforms=wf)
    res = run("deconv", "--input", "in.h5", "--output", "out.h5", "--precision", precision)
    check(res, 0, r"20 waveforms: 20 converged")
    out = read_h5(tmp_path / "out.h5")
    assert (out["x"] == 0).all() and (out["fit"] == 0).all()
    np.testing.assert_allclose(out["rnorm"], np.linalg.norm(wf, axis=1), rtol=1e-6)
