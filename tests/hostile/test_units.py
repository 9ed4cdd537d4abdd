"""Case 1: NNLS and deconv results do not depend on the units of the data."""
import re

import numpy as np
import pytest

from conftest import check, make_deconv, make_nnls, read_h5, rel_err

TOL = {"double": 1e-9, "float": 1e-4}
SUMMARY = r"0 max_iterations, 0 numerical_issue, 0 passive_set_full, 0 dependent_columns, 0 kkt_not_met"


def _deconv(run, h5, pulse, wf, precision, tag):
    h5(f"in{tag}.h5", pulse=pulse, waveforms=wf)
    res = run("deconv", "--input", f"in{tag}.h5", "--output", f"out{tag}.h5", "--precision", precision)
    check(res, 0, r"kpl deconv: 20 waveforms: 20 converged, " + SUMMARY)
    return read_h5(_TMP[0] / f"out{tag}.h5")


_TMP = [None]  # the current test's tmp_path (kpl runs there)


@pytest.fixture(autouse=True)
def _remember_tmp(tmp_path):
    _TMP[0] = tmp_path


@pytest.mark.parametrize("precision", ["double", "float"])
@pytest.mark.parametrize("scale", [1e-3, 1e-12])
def test_deconv_scaled_waveforms(run, h5, precision, scale):
    pulse, wf = make_deconv()
    ref = _deconv(run, h5, pulse, wf, precision, "ref")
    out = _deconv(run, h5, pulse, wf * scale, precision, "scaled")
    assert np.array_equal(out["status"], ref["status"])
    assert rel_err(out["x"] / scale, ref["x"]) < TOL[precision]
    assert rel_err(out["fit"] / scale, ref["fit"]) < TOL[precision]
    assert rel_err(out["rnorm"] / scale, ref["rnorm"]) < 10 * TOL[precision]


@pytest.mark.parametrize("pscale,wscale", [(1.0, 1e-150), (1.0, 1e150), (1e-150, 1e150), (1e200, 1e-100)])
def test_deconv_scaled_extreme_double(run, h5, pscale, wscale):
    pulse, wf = make_deconv()
    ref = _deconv(run, h5, pulse, wf, "double", "ref")
    out = _deconv(run, h5, pulse * pscale, wf * wscale, "double", "scaled")
    assert np.array_equal(out["status"], ref["status"])
    assert rel_err(out["x"] * pscale / wscale, ref["x"]) < 1e-9


# Float cannot hold 1e-150 or 1e150: kpl refuses the data (exit 2) with a
# message naming the value, where it is and why, never "NaN or Inf" (the file
# holds finite values) and never a silent x = 0.
@pytest.mark.parametrize("scale,why", [(1e-150, "below the normal range of float"),
                                       (1e150, "beyond the range of float")])
def test_deconv_float_outside_float_range(run, h5, scale, why):
    pulse, wf = make_deconv()
    h5("in.h5", pulse=pulse, waveforms=wf * scale)
    res = run("deconv", "--input", "in.h5", "--output", "out.h5", "--precision", "float")
    check(res, 2, r"'in\.h5'.*dataset /waveforms holds \S+ at \[\d+, \d+\], " + why +
          r".*double precision")
    assert not re.search(r"NaN or Inf", res[2]), res[2]


def _nnls(run, h5, A, b, tag, *extra, B=8):
    h5(f"in{tag}.h5", A=A, b=b)
    res = run("nnls", "--input", f"in{tag}.h5", "--output", f"out{tag}.h5", *extra)
    check(res, 0, rf"kpl nnls: {B} systems: {B} converged, " + SUMMARY)
    return read_h5(_TMP[0] / f"out{tag}.h5")


@pytest.mark.parametrize("gradient", ["residual", "cross-products"])
@pytest.mark.parametrize("ascale,bscale", [(1e-150, 1e150), (1e150, 1e-150), (1e-300, 1e-300), (1e300, 1e300)])
def test_nnls_scaled_double(run, h5, gradient, ascale, bscale):
    A, b = make_nnls()
    ref = _nnls(run, h5, A, b, "ref", "--gradient", gradient)
    out = _nnls(run, h5, A * ascale, b * bscale, "scaled", "--gradient", gradient)
    assert np.array_equal(out["status"], ref["status"])
    assert np.array_equal(out["iterations"], ref["iterations"])
    assert rel_err(out["x"] * ascale / bscale, ref["x"]) < 1e-9
    assert rel_err(out["rnorm"] / bscale, ref["rnorm"]) < 1e-8


@pytest.mark.parametrize("ascale,bscale", [(1e-3, 1e-12), (1e6, 1e-6)])
def test_nnls_scaled_float(run, h5, ascale, bscale):
    A, b = make_nnls()
    ref = _nnls(run, h5, A, b, "ref", "--precision", "float")
    out = _nnls(run, h5, A * ascale, b * bscale, "scaled", "--precision", "float")
    assert np.array_equal(out["status"], ref["status"])
    assert rel_err(out["x"] * ascale / bscale, ref["x"]) < 1e-4


@pytest.mark.parametrize("col,scale", [(0, 1e150), (1, 1e-150), (0, 1e200), (1, 1e-200), (0, 1e300), (1, 1e-300)])
def test_nnls_column_scaling(run, h5, col, scale):
    """Scaling column j by s scales x_j by 1/s (the KKT test w_j > tol ||a_j|| ||b|| is
    invariant).  At the very least a system reported converged (status 0) must have
    the right answer."""
    A, b = make_nnls()
    ref = _nnls(run, h5, A, b, "ref")
    d = np.ones(A.shape[1])
    d[col] = scale
    h5("inscaled.h5", A=A * d, b=b)
    res = run("nnls", "--input", "inscaled.h5", "--output", "outscaled.h5")
    check(res, 0, r"kpl nnls: 8 systems: ")
    out = read_h5(_TMP[0] / "outscaled.h5")
    assert np.all(np.isfinite(out["x"]))
    wrong = [i for i in range(len(out["status"]))
             if out["status"][i] == 0 and rel_err(out["x"][i] * d, ref["x"][i]) > 1e-6]
    assert not wrong, (f"systems {wrong} reported converged with a wrong x "
                       f"(rel err {[rel_err(out['x'][i] * d, ref['x'][i]) for i in wrong]})")
    assert np.array_equal(out["status"], ref["status"]), f"status {out['status']} vs {ref['status']}"
