"""gam fit --weights / --offset / --bootstrap / --cv-weights, gam predict --type and
--offset, and /varimp, against R mboost 2.9-11 (tests/data/gam/mboost_*.h5, made by
scripts/mboost_references.R; described in tests/data/README.md), and their hostile
inputs (exit status and one-line message).

Tolerances: the selections must be identical; risks, coefficients, predictions and
varimp agree with mboost to about 1e-11 (rounding of two independent fits), asserted
at 1e-9; lambda at 1e-8, since it comes from a root search of df(lambda) whose
stopping rule is mboost's and kpl's own. kpl's binomial link is the log-odds, twice
mboost's Binomial() link, and mboost's step nu is kpl's 4 nu / ln 2 (gam.hpp)."""
import math
import re

import h5py
import numpy as np
import pytest

from conftest import REPO, assert_no_output, bad_input, check, one_line, read_h5, rel_err

DATA = REPO / "tests" / "data" / "gam"
BINOMIAL_NU = 4 * 0.1 / math.log(2)


def fitted(run, tmp_path, reference, *options):
    res = run("gam", "fit", "--input", DATA / reference, "--output", "model.h5", *options)
    check(res, 0, r"kpl gam fit: 300 observations, 4 covariates")
    return read_h5(tmp_path / "model.h5"), read_h5(DATA / reference)


def assert_same_model(model, ref, coefficient_scale=1.0):
    np.testing.assert_array_equal(model["selected"], ref["selected"])
    assert rel_err(model["risk"], ref["risk"]) < 1e-9
    assert rel_err(model["coefficients"] / coefficient_scale, ref["coefficients"]) < 1e-9
    assert rel_err(model["varimp"], ref["varimp"]) < 1e-9
    assert rel_err(model["lambda"], ref["lambda"]) < 1e-8


def predicted(run, tmp_path, X, *options):
    with h5py.File(tmp_path / "new.h5", "w") as f:
        f["X"] = X
    res = run("gam", "predict", "--model", "model.h5", "--input", "new.h5", "--output", "p.h5",
              *options)
    check(res, 0, r"kpl gam predict: \d+ predictions")
    return read_h5(tmp_path / "p.h5")["prediction"]


# ------------------------------------------------------------- against mboost

def test_weights_match_mboost(run, tmp_path):
    model, ref = fitted(run, tmp_path, "mboost_weights.h5", "--weights", "/weights")
    assert_same_model(model, ref)
    assert rel_err(model["offset"], ref["offset"]) < 1e-12
    # The weights matter: unweighted, lambda and the risk are others.
    assert rel_err(read_h5(DATA / "mboost_gaussian.h5")["lambda"], ref["lambda"]) > 1e-3


def test_varimp_unweighted_matches_mboost_and_never_selected_is_zero(run, tmp_path):
    model, ref = fitted(run, tmp_path, "mboost_gaussian.h5")
    assert_same_model(model, ref)
    assert model["varimp"][3] == 0 and ref["varimp"][3] == 0
    assert model["varimp"].sum() == pytest.approx((model["risk"][0] - model["risk"][-1]) / 300,
                                                  rel=1e-12)


@pytest.mark.parametrize("reference,family,offset", [
    ("mboost_offset_scalar.h5", "gaussian", "1.5"),
    ("mboost_offset_poisson.h5", "poisson", "1"),
])
def test_scalar_offset_matches_mboost(run, tmp_path, reference, family, offset):
    model, ref = fitted(run, tmp_path, reference, "--family", family, "--offset", offset)
    assert_same_model(model, ref)
    assert model["offset"][0] == float(offset)
    assert rel_err(predicted(run, tmp_path, ref["X_test"]), ref["pred_test"]) < 1e-9
    if family == "poisson":
        response = predicted(run, tmp_path, ref["X_test"], "--type", "response")
        assert rel_err(response, ref["pred_response_test"]) < 1e-9


@pytest.mark.parametrize("reference,family", [
    ("mboost_offset_vector.h5", "gaussian"),
    ("mboost_offset_vector_poisson.h5", "poisson"),
])
def test_vector_offset_matches_mboost(run, tmp_path, reference, family):
    model, ref = fitted(run, tmp_path, reference, "--family", family, "--offset", "/offset")
    assert_same_model(model, ref)
    with h5py.File(tmp_path / "model.h5") as f:
        assert f.attrs["offset_type"] == "per_row"
    # Training rows with their own offsets: mboost's fitted values.
    with h5py.File(tmp_path / "train.h5", "w") as f:
        f["X"], f["offset"] = ref["X"], ref["offset"]
    res = run("gam", "predict", "--model", "model.h5", "--input", "train.h5", "--output",
              "t.h5", "--offset", "/offset")
    check(res, 0)
    assert rel_err(read_h5(tmp_path / "t.h5")["prediction"], ref["pred_train"]) < 1e-9
    if "pred_test_without_offset" in ref:  # mboost's predict(newdata): no offset at all
        got = predicted(run, tmp_path, ref["X_test"], "--offset", "0")
        assert rel_err(got, ref["pred_test_without_offset"]) < 1e-9


@pytest.mark.parametrize("reference,options,link_scale", [
    ("mboost_poisson.h5", ("--family", "poisson"), 1.0),
    ("mboost_binomial.h5", ("--family", "binomial", "--nu", repr(BINOMIAL_NU)), 2.0),
    ("mboost_binomial_glm.h5", ("--family", "binomial"), 1.0),
])
def test_predict_type_link_and_response_match_mboost(run, tmp_path, reference, options,
                                                     link_scale):
    model, ref = fitted(run, tmp_path, reference, *options)
    assert_same_model(model, ref, coefficient_scale=link_scale)
    for X, part in ((ref["X"], "train"), (ref["X_test"], "test")):
        link = predicted(run, tmp_path, X)
        assert rel_err(link, link_scale * ref[f"pred_link_{part}"]) < 1e-9
        response = predicted(run, tmp_path, X, "--type", "response")
        assert rel_err(response, ref[f"pred_response_{part}"]) < 1e-9
    with h5py.File(tmp_path / "p.h5") as f:
        assert f.attrs["scale"].startswith("response")


# Resample 14 of the weighted file leaves covariate 1's first basis function
# one row of positive weight: B^T W B is singular but for mboost's 1e-9 K, and
# lambda hangs on the small Demmler-Reinsch eigenvalues of a matrix whose
# largest is 1e9. It caught kpl's tridiagonal QL losing them (lambda off by
# 2e-5, out-of-bag risks by 5e-7); the one-sided Jacobi keeps them.
@pytest.mark.parametrize("reference,weights,best", [
    ("mboost_cvrisk_bootstrap.h5", (), 90),
    ("mboost_cvrisk_bootstrap_weighted.h5", ("--weights", "/weights"), 82),
])
def test_given_resamples_reproduce_mboost_cvrisk(run, tmp_path, reference, weights, best):
    tolerance = 1e-9
    res = run("gam", "fit", "--input", DATA / reference, "--output", "model.h5", "--mstop", 200,
              "--cv-weights", f"{DATA / reference}:/folds", *weights)
    check(res, 0, rf"mstop {best} \(chosen by the resamples of")
    ref = read_h5(DATA / reference)
    with h5py.File(tmp_path / "model.h5") as f:
        cv_risk = f["cv_risk"][...]
        assert f.attrs["cv_mstop"] == best == ref["best_mstop"][0]
        assert f.attrs["cv_folds"] == 25
    assert cv_risk.shape == (25, 201)
    assert rel_err(cv_risk, ref["cvrisk"]) < tolerance
    model = read_h5(tmp_path / "model.h5")
    np.testing.assert_array_equal(model["selected"], ref["selected"][:best])


def test_bootstrap_draws_are_seeded_and_choose_mstop(run, tmp_path):
    reference = DATA / "mboost_cvrisk_bootstrap_weighted.h5"
    risks = []
    for seed, output in ((1, "a.h5"), (1, "b.h5"), (2, "c.h5")):
        res = run("gam", "fit", "--input", reference, "--output", output, "--mstop", 60,
                  "--weights", "/weights", "--bootstrap", 5, "--cv-seed", seed)
        check(res, 0, r"chosen by 5 bootstrap resamples")
        with h5py.File(tmp_path / output) as f:
            risks.append(f["cv_risk"][...])
            assert f.attrs["cv_type"] == "bootstrap"
            mean = risks[-1].mean(axis=0)
            assert f.attrs["cv_mstop"] == int(np.argmin(mean))
    assert risks[0].shape == (5, 61)
    np.testing.assert_array_equal(risks[0], risks[1])
    assert not np.array_equal(risks[0], risks[2])


# ------------------------------------------------------------- hostile inputs

def small_input(h5, **extra):
    ref = read_h5(DATA / "mboost_weights.h5")
    return h5("in.h5", X=ref["X"], y=ref["y"], **extra)


@pytest.mark.parametrize("values,message", [
    ({17: -1.0}, r"dataset /w: weight 17 \(0-based row\) is -1; weights must be finite"),
    ({3: np.nan, 40: -2}, r"dataset /w: weight 3 \(0-based row\) is nan"),
    ({5: np.inf}, r"dataset /w: weight 5 \(0-based row\) is inf"),
])
def test_bad_weights(run, h5, tmp_path, values, message):
    w = np.ones(300)
    for i, v in values.items():
        w[i] = v
    small_input(h5, w=w)
    res = run("gam", "fit", "--input", "in.h5", "--output", "m.h5", "--weights", "/w")
    check(res, 2, bad_input("in.h5", message))
    one_line(res)
    assert_no_output(tmp_path / "m.h5")


def test_all_zero_weights(run, h5, tmp_path):
    small_input(h5, w=np.zeros(300))
    res = run("gam", "fit", "--input", "in.h5", "--output", "m.h5", "--weights", "/w")
    check(res, 2, bad_input("in.h5", r"dataset /w: every weight is 0"))
    one_line(res)


@pytest.mark.parametrize("name,data,message", [
    ("short", np.ones(299), r"/short"),
    ("matrix", np.ones((300, 2)), r"dataset /matrix must be \[n\]"),
    ("missing", None, r"/missing"),
])
def test_weights_of_the_wrong_shape(run, h5, tmp_path, name, data, message):
    small_input(h5, **({name: data} if data is not None else {}))
    res = run("gam", "fit", "--input", "in.h5", "--output", "m.h5", "--weights", "/" + name)
    check(res, 2, r"kpl: bad input: .*in\.h5.*" + message)
    one_line(res)
    assert_no_output(tmp_path / "m.h5")


def test_offset_not_finite(run, h5, tmp_path):
    offset = np.zeros(300)
    offset[12] = np.nan
    small_input(h5, o=offset)
    res = run("gam", "fit", "--input", "in.h5", "--output", "m.h5", "--offset", "/o")
    check(res, 2, bad_input("in.h5", r"dataset /o: offset 12 \(0-based row\) is nan"))
    one_line(res)


@pytest.mark.parametrize("option,value", [("--offset", "abc"), ("--offset", "nan"),
                                          ("--weights", "w"), ("--cv-weights", "file.h5")])
def test_bad_option_values_are_usage_errors(run, h5, option, value):
    small_input(h5)
    res = run("gam", "fit", "--input", "in.h5", "--output", "m.h5", option, value)
    check(res, 1, re.escape(f"'{value}'"))
    one_line(res)


def test_cv_choices_exclude_each_other(run, h5):
    small_input(h5)
    res = run("gam", "fit", "--input", "in.h5", "--output", "m.h5", "--cv", 3, "--bootstrap", 3)
    check(res, 1, r"excludes")


def nan_at(shape, i, b):
    counts = np.ones(shape)
    counts[i, b] = np.nan
    return counts


def zero_column(b):
    counts = np.ones((300, 3))
    counts[::2] = 0  # every resample holds rows out
    counts[:, b] = 0
    return counts


def negative_at(i, b):
    counts = np.ones((300, 3))
    counts[i, b] = -1
    return counts


# The resamples may lie in another file than the input: the message names
# theirs (cv.h5), the dataset and the 0-based row and column.
@pytest.mark.parametrize("counts,where,message", [
    (np.ones(300), "cv.h5:/folds",
     bad_input("cv.h5", r"dataset /folds must be \[n, B\] with n = 300 rows of /X")),
    (np.ones((301, 3)), "cv.h5:/folds",
     bad_input("cv.h5", r"dataset /folds must be \[n, B\] with n = 300 rows of /X")),
    (np.ones((300, 3)), "absent.h5:/folds",
     r"kpl: bad input: cannot open 'absent\.h5': no such file"),
    (np.ones((300, 3)), "cv.h5:/nothing", bad_input("cv.h5", r"dataset /nothing is missing")),
    (nan_at((300, 3), 4, 1), "cv.h5:/folds",
     bad_input("cv.h5", r"dataset /folds: value \(4, 1\) is nan; resample weights must be")),
    (negative_at(7, 2), "in.h5:/folds",
     bad_input("in.h5", r"dataset /folds: value \(7, 2\) is -1; resample weights must be")),
    (zero_column(1), "cv.h5:/folds",
     bad_input("cv.h5", r"dataset /folds: resample 1 \(0-based column\) has no row of "
                        r"positive weight to fit")),
])
def test_bad_resample_weights(run, h5, tmp_path, counts, where, message):
    if where.startswith("in.h5"):
        small_input(h5, folds=counts)
    else:
        small_input(h5)
        h5("cv.h5", folds=counts)
    res = run("gam", "fit", "--input", "in.h5", "--output", "m.h5", "--cv-weights", where,
              "--mstop", 5)
    check(res, 2, message)
    one_line(res)
    assert "kpl::" not in res[2]
    assert_no_output(tmp_path / "m.h5")


def test_resample_without_held_out_rows(run, h5):
    small_input(h5, folds=np.ones((300, 2)))
    res = run("gam", "fit", "--input", "in.h5", "--output", "m.h5", "--cv-weights",
              "in.h5:/folds", "--mstop", 5)
    check(res, 2, bad_input("in.h5", r"dataset /folds: resample 0 \(0-based column\) leaves "
                                     r"no row of positive weight out"))
    one_line(res)


def test_predict_offsets_must_match_the_model(run, h5, tmp_path):
    ref = read_h5(DATA / "mboost_offset_vector.h5")
    h5("in.h5", X=ref["X"], y=ref["y"], o=ref["offset"])
    check(run("gam", "fit", "--input", "in.h5", "--output", "rows.h5", "--offset", "/o",
              "--mstop", 5), 0)
    check(run("gam", "fit", "--input", "in.h5", "--output", "mean.h5", "--mstop", 5), 0)
    res = run("gam", "predict", "--model", "rows.h5", "--input", "in.h5", "--output", "p.h5")
    check(res, 2, bad_input("rows.h5", r"fitted with per-row offsets.*--offset /DATASET"))
    one_line(res)
    assert_no_output(tmp_path / "p.h5")
    res = run("gam", "predict", "--model", "mean.h5", "--input", "in.h5", "--output", "p.h5",
              "--offset", "/o")
    check(res, 2, bad_input("mean.h5", r"fitted without per-row offsets"))
    one_line(res)


@pytest.mark.parametrize("name,data,message", [
    ("short", np.zeros(299), r"dimension 0 of /X .* is 300 but dimension 0 of /short .* is 299"),
    ("matrix", np.zeros((300, 2)), r"dataset /matrix must be \[n\]"),
    ("holey", np.where(np.arange(300) == 9, np.nan, 0.0),
     r"dataset /holey holds NaN or Inf at \[9\]"),
])
def test_predict_offset_dataset_unusable(run, h5, tmp_path, name, data, message):
    ref = read_h5(DATA / "mboost_offset_vector.h5")
    h5("in.h5", X=ref["X"], y=ref["y"], o=ref["offset"], **{name: data})
    check(run("gam", "fit", "--input", "in.h5", "--output", "rows.h5", "--offset", "/o",
              "--mstop", 5), 0)
    res = run("gam", "predict", "--model", "rows.h5", "--input", "in.h5", "--output", "p.h5",
              "--offset", "/" + name)
    check(res, 2, bad_input("in.h5", message))
    one_line(res)
    assert_no_output(tmp_path / "p.h5")


@pytest.mark.parametrize("command,option,value,message", [
    ("predict", "--offset", "1e400",
     r"--offset: '1e400' is neither a finite number nor a dataset name"),
    ("predict", "--type", "resp", r"--type: resp not in \{link,response\}"),
    ("fit", "--bootstrap", "0", r"--bootstrap: Value 0 not in range 1 to 65536"),
    ("fit", "--bootstrap", "-3", r"--bootstrap: Value -3 not in range 1 to 65536"),
])
def test_bad_predict_and_bootstrap_values_are_usage_errors(run, h5, tmp_path, command, option,
                                                           value, message):
    small_input(h5)
    if command == "predict":
        args = ("--model", "in.h5", "--input", "in.h5", "--output", "p.h5")
    else:
        args = ("--input", "in.h5", "--output", "p.h5")
    res = run("gam", command, *args, option, value)
    check(res, 1, message)
    one_line(res)
    assert_no_output(tmp_path / "p.h5")
