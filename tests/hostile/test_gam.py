"""Cases 3 and 4 (gam): divergence, tampered model files, extrapolation overflow,
extreme covariates."""
import shutil

import h5py
import numpy as np
import pytest

from conftest import assert_no_output, bad_input, check, file_bytes, read_h5, rel_err


def test_poisson_huge_y_diverges(run, h5, tmp_path, gam_data):
    y = np.full(len(gam_data["y"]), 1e302)
    y[::3] = 3e302
    h5("in.h5", X=gam_data["X"], y=y)
    res = run("gam", "fit", "--input", "in.h5", "--output", "model.h5", "--family", "poisson", "--mstop", "5")
    check(res, 2, r"kpl: bad input: '?in\.h5'?: .*diverged")
    assert_no_output(tmp_path / "model.h5")


def _tampered(tmp_path, model, edit):
    path = tmp_path / "model.h5"
    shutil.copy(model, path)
    with h5py.File(path, "a") as f:
        edit(f)
    return path


TAMPER = {
    "family_gamma": (lambda f: f.attrs.__setitem__("family", "gamma"), r"attribute 'family'.*gamma"),
    "family_missing": (lambda f: f.attrs.__delitem__("family"), r"attribute 'family'.*missing"),
    "family_int": (lambda f: f.attrs.__setitem__("family", 5), r"attribute 'family'.*type"),
    "penalty_weird": (lambda f: f.attrs.__setitem__("penalty", "weird"), r"attribute 'penalty'.*weird"),
    "penalty_missing": (lambda f: f.attrs.__delitem__("penalty"), r"attribute 'penalty'.*missing"),
    "degree_missing": (lambda f: f.attrs.__delitem__("degree"), r"attribute 'degree'.*missing"),
    "degree_100": (lambda f: f.attrs.__setitem__("degree", 100), r"attribute 'degree'.*100"),
    "basis_size_1000": (lambda f: f.attrs.__setitem__("basis_size", 1000), r"attribute 'basis_size'.*1000"),
    "coefficients_missing": (lambda f: f.__delitem__("coefficients"), r"/coefficients.*missing"),
    "coefficients_nan": (lambda f: f["coefficients"].__setitem__((0, 0), np.nan),
                         r"/coefficients.*NaN or Inf.*\[0, 0\]"),
}


@pytest.mark.parametrize("case", TAMPER)
def test_predict_tampered_model(run, h5, tmp_path, gam_data, gam_model, case):
    edit, regex = TAMPER[case]
    model = _tampered(tmp_path, gam_model, edit)
    h5("x.h5", X=gam_data["X"][:5])
    res = run("gam", "predict", "--model", "model.h5", "--input", "x.h5", "--output", "pred.h5")
    check(res, 2, r"kpl: bad input: '?model\.h5'?: .*" + regex)
    assert_no_output(tmp_path / "pred.h5")


def _selected(model):
    """The covariate the model selected most often (it has a non-zero effect)."""
    return int(np.bincount(read_h5(model)["selected"]).argmax())


@pytest.mark.parametrize("value", [1e308, -1e308, 1.7976931348623157e308])
def test_predict_overflowing_extrapolation(run, h5, tmp_path, gam_data, gam_model, value):
    """Observed and asserted: a far-out covariate makes the linear extrapolation overflow,
    which is exit 2 'not finite' naming the row (not an Inf in the output)."""
    j = _selected(gam_model)
    X = gam_data["X"][:3].copy()
    X[1, j] = value
    h5("x.h5", X=X)
    res = run("gam", "predict", "--model", gam_model, "--input", "x.h5", "--output", "pred.h5")
    check(res, 2, bad_input("x.h5", r"row 1 of /X.*not finite"))
    assert_no_output(tmp_path / "pred.h5")


def test_predict_far_but_finite_extrapolation(run, h5, tmp_path, gam_data, gam_model):
    """x = 1e200 extrapolates linearly: prediction finite, f_0 linear in x."""
    j = _selected(gam_model)
    X = np.repeat(gam_data["X"][:1], 3, axis=0)
    X[1, j], X[2, j] = 1e200, 2e200
    h5("x.h5", X=X)
    res = run("gam", "predict", "--model", gam_model, "--input", "x.h5", "--output", "pred.h5",
              "--partial-effects")
    check(res, 0, r"kpl gam predict: 3 predictions")
    out = read_h5(tmp_path / "pred.h5")
    pe = out["partial_effects"]
    assert np.all(np.isfinite(out["prediction"])) and np.all(np.isfinite(pe))
    assert pe[1, j] != 0 and abs(pe[2, j] / pe[1, j] - 2.0) < 1e-9
    others = [k for k in range(X.shape[1]) if k != j]
    np.testing.assert_allclose(pe[1:, others], pe[:1, others].repeat(2, axis=0), rtol=1e-12)


def _fit(run, h5, X, y, *extra):
    h5("in.h5", X=X, y=y)
    return run("gam", "fit", "--input", "in.h5", "--output", "model.h5", *extra)


def test_fit_pm_1e308_column(run, h5, tmp_path, gam_data):
    X = gam_data["X"].copy()
    X[:, 1] = np.where(np.arange(len(X)) % 2, 1e308, -1e308)
    check(_fit(run, h5, X, gam_data["y"]), 2,
          r"kpl: bad input: '?in\.h5'?: .*covariate 1\b.*knot spacing overflows")
    assert_no_output(tmp_path / "model.h5")


@pytest.mark.parametrize("scale", [1e-310, 2.0 ** -1070])
def test_fit_denormal_column(run, h5, tmp_path, gam_data, scale):
    """Observed and asserted: a covariate whose whole range is subnormal is refused (exit 2)."""
    X = gam_data["X"].copy()
    X[:, 2] *= scale
    check(_fit(run, h5, X, gam_data["y"]), 2,
          r"kpl: bad input: '?in\.h5'?: .*covariate 2\b.*knot spacing underflows")
    assert_no_output(tmp_path / "model.h5")


def test_fit_huge_positive_column_is_unit_free(run, h5, tmp_path, gam_data):
    """A covariate scaled to [0, 1.7e308] fits and predicts like the unscaled one."""
    X, y = gam_data["X"], gam_data["y"]
    s = 1.7e308 / X[:, 1].max()
    Xs = X.copy()
    Xs[:, 1] *= s
    preds = []
    for tag, data in (("ref", X), ("scaled", Xs)):
        h5(f"in{tag}.h5", X=data, y=y)
        check(run("gam", "fit", "--input", f"in{tag}.h5", "--output", f"m{tag}.h5", "--mstop", 10),
              0, r"kpl gam fit: 200 observations")
        check(run("gam", "predict", "--model", f"m{tag}.h5", "--input", f"in{tag}.h5",
                  "--output", f"p{tag}.h5"), 0, r"200 predictions")
        preds.append(read_h5(tmp_path / f"p{tag}.h5")["prediction"])
    assert np.all(np.isfinite(preds[1]))
    assert rel_err(preds[1], preds[0]) < 1e-9


def test_fit_constant_column(run, h5, tmp_path, gam_data):
    X = gam_data["X"].copy()
    X[:, 2] = 3.0
    check(_fit(run, h5, X, gam_data["y"]), 2, r"kpl: bad input: '?in\.h5'?: .*covariate 2\b.*constant")
    assert_no_output(tmp_path / "model.h5")


@pytest.mark.parametrize("n", [1, 2, 23])
def test_fit_too_few_rows(run, h5, tmp_path, gam_data, n):
    check(_fit(run, h5, gam_data["X"][:n], gam_data["y"][:n]), 2,
          rf"kpl: bad input: '?in\.h5'?: .*\b{n} observations are fewer than the basis size 24")
    assert_no_output(tmp_path / "model.h5")


def test_fit_y_length_mismatch(run, h5, tmp_path, gam_data):
    check(_fit(run, h5, gam_data["X"], gam_data["y"][:-1]), 2,
          r"kpl: bad input: '?in\.h5'?: .*(/X|/y).*(199|200)")
    assert_no_output(tmp_path / "model.h5")


def test_predict_model_is_input_file(run, h5, tmp_path, gam_data, gam_model):
    """--output naming the model file is refused; the model is unchanged."""
    shutil.copy(gam_model, tmp_path / "model.h5")
    before = file_bytes(tmp_path / "model.h5")
    h5("x.h5", X=gam_data["X"][:5])
    res = run("gam", "predict", "--model", "model.h5", "--input", "x.h5", "--output", "model.h5")
    check(res, 2, r"kpl: bad input: cannot write 'model\.h5': it is the input")
    assert file_bytes(tmp_path / "model.h5") == before


def test_basis_choices_record_the_basis_used_and_agree(run, h5, tmp_path, gam_data):
    """--basis automatic (the default) records the basis it resolved to (compact on
    CPUs, evaluated on GPUs); the evaluated basis selects the same covariates with
    the same risks as the compact one; a basis kpl does not have is a usage error."""
    h5("in.h5", X=gam_data["X"], y=gam_data["y"])
    fits = {}
    for basis in ["automatic", "compact", "evaluated"]:
        res = run("gam", "fit", "--input", "in.h5", "--output", f"{basis}.h5", "--basis", basis,
                  "--mstop", "30")
        check(res, 0)
        with h5py.File(tmp_path / f"{basis}.h5", "r") as f:
            recorded = f.attrs["basis"]
            recorded = recorded.decode() if isinstance(recorded, bytes) else recorded
            on = f.attrs["execution_space"]
            on = on.decode() if isinstance(on, bytes) else on
        fits[basis] = (recorded, read_h5(tmp_path / f"{basis}.h5"))
    on_host = on in ("Serial", "OpenMP", "Threads")
    assert fits["automatic"][0] == ("compact" if on_host else "evaluated")
    assert fits["compact"][0] == "compact" and fits["evaluated"][0] == "evaluated"
    compact, evaluated = fits["compact"][1], fits["evaluated"][1]
    assert np.array_equal(compact["selected"], evaluated["selected"])
    assert rel_err(evaluated["risk"], compact["risk"]) < 1e-12
    check(run("gam", "fit", "--input", "in.h5", "--output", "x.h5", "--basis", "matrix-free"), 1,
          r"--basis")
    assert_no_output(tmp_path / "x.h5")


@pytest.mark.parametrize("dataset,at", [("X", (123, 2)), ("y", (7,))])
def test_float_fit_refuses_values_beyond_float(run, h5, tmp_path, gam_data, dataset, at):
    """A finite double beyond float's range is named (file, dataset, index) in a float fit,
    not reported as a non-finite value after it became infinite; a double fit takes it."""
    data = {"X": gam_data["X"].copy(), "y": gam_data["y"].copy()}
    data[dataset][at] = 1e39
    h5("in.h5", **data)
    res = run("gam", "fit", "--input", "in.h5", "--output", "model.h5", "--precision", "float",
              "--mstop", "5")
    where = r"\[" + r", ".join(str(i) for i in at) + r"\]"
    check(res, 2, r"kpl: bad input: '?in\.h5'?: dataset /" + dataset + r" holds 1e\+39 at "
          + where + r", beyond the range of float")
    assert_no_output(tmp_path / "model.h5")
    if dataset == "y":
        res = run("gam", "fit", "--input", "in.h5", "--output", "model.h5", "--mstop", "5")
        check(res, 0, r"wrote")
