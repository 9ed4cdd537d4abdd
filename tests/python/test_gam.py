"""kpl.gam.fit and Model.predict against `kpl gam fit` and `kpl gam predict`
on the same data: bit for bit (the same fit_gam and predict_gam calls on the
same values, with as many threads)."""
import numpy as np
import pytest

import kpl
from conftest import REPO, read_h5, run_cli, write_h5

MODEL = {"offset": "offset", "coefficients": "coefficients", "lambda_": "lambda", "df": "df",
         "selected": "selected", "risk": "risk", "boundary": "boundary", "varimp": "varimp"}


def data(family, n=400, p=5, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    f = 2 * np.sin(2 * np.pi * X[:, 0]) + (X[:, 2] - 0.5) ** 2
    if family == "gaussian":
        y = 1 + f + rng.normal(scale=0.3, size=n)
    elif family == "binomial":
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-f))).astype(np.float64)
    else:
        y = rng.poisson(np.exp(0.5 * f)).astype(np.float64)
    return X, y


def assert_model_equals_file(model, written):
    for attribute, dataset in MODEL.items():
        ours = np.atleast_1d(getattr(model, attribute))
        assert ours.dtype == written[dataset].dtype, attribute
        assert np.array_equal(ours, written[dataset]), (attribute, ours, written[dataset])


@pytest.mark.parametrize("family,dtype,options", [
    ("gaussian", np.float64, []),
    ("gaussian", np.float32, ["--basis-size", 16, "--df", 3, "--nu", 0.2]),
    ("binomial", np.float64, ["--mstop", 60]),
    ("poisson", np.float32, ["--penalty", "ridge", "--df", 2, "--df-definition", "trace"]),
])
def test_fit_equals_the_cli(cli, family, dtype, options):
    X, y = data(family)
    keywords = {}
    for flag, value in zip(options[::2], options[1::2]):
        keywords[flag[2:].replace("-", "_")] = value
    model = kpl.gam.fit(X.astype(dtype), y.astype(dtype), family=family, **keywords)
    written = cli("gam fit", {"X": X.astype(dtype), "y": y.astype(dtype)}, "--family", family,
                  "--precision", "float" if dtype == np.float32 else "double", *options)
    assert_model_equals_file(model, written)
    assert model.options["family"] == family
    assert model.coefficients.shape == (5, keywords.get("basis_size", 24))
    # The informative covariates are the ones boosting picks most.
    assert set(np.bincount(model.selected, minlength=5).argsort()[-2:]) >= {0}


def test_gram_mode_and_dense_basis_equal_the_cli(cli):
    X, y = data("gaussian", seed=12)
    for keywords, options in [({"mode": "gram", "gram_refresh": 7}, ["--mode", "gram",
                                                                      "--gram-refresh", 7]),
                              ({"gemv": "partial-rows"}, ["--gemv", "partial-rows"])]:
        model = kpl.gam.fit(X, y, mstop=40, **keywords)
        assert_model_equals_file(model, cli("gam fit", {"X": X, "y": y}, "--mstop", 40, *options))


def test_cross_validation_equals_the_cli(cli):
    X, y = data("gaussian", seed=13)
    model = kpl.gam.fit(X, y, cv=3, cv_seed=5, mstop=60, nu=0.3)
    written = cli("gam fit", {"X": X, "y": y}, "--cv", 3, "--cv-seed", 5, "--mstop", 60,
                  "--nu", 0.3)
    assert_model_equals_file(model, written)
    assert np.array_equal(model.cv_risk, written["cv_risk"])
    assert model.cv_risk.shape == (3, 61)
    assert model.options["mstop"] == len(model.selected) <= 60


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predict_equals_the_cli(tmp_path, dtype):
    X, y = data("binomial", seed=14)
    write_h5(tmp_path / "train.h5", X=X, y=y)
    status, stderr = run_cli("gam", "fit", "--input", tmp_path / "train.h5", "--output",
                             tmp_path / "model.h5", "--family", "binomial", "--mstop", 50)
    assert status == 0, stderr
    rng = np.random.default_rng(15)
    X_new = rng.uniform(-0.2, 1.2, size=(100, 5))  # beyond the range: linear extrapolation
    write_h5(tmp_path / "new.h5", X=X_new.astype(dtype))
    status, stderr = run_cli("gam", "predict", "--model", tmp_path / "model.h5", "--input",
                             tmp_path / "new.h5", "--output", tmp_path / "pred.h5",
                             "--partial-effects")
    assert status == 0, stderr
    written = read_h5(tmp_path / "pred.h5")
    fitted = kpl.gam.fit(X, y, family="binomial", mstop=50)
    for model in (fitted, kpl.gam.load(tmp_path / "model.h5")):
        prediction, partial = model.predict(X_new.astype(dtype), partial_effects=True)
        assert np.array_equal(prediction, written["prediction"])
        assert np.array_equal(partial, written["partial_effects"])
        assert np.array_equal(model.predict(X_new.astype(dtype)), prediction)
    # prediction = offset + the partial effects (the model's definition)
    assert np.allclose(prediction, fitted.offset + partial.sum(axis=1), rtol=1e-13, atol=1e-13)


def test_shipped_model_predicts_as_the_cli(tmp_path):
    model_path = REPO / "tests" / "data" / "gam" / "model_small.h5"
    X = read_h5(REPO / "tests" / "data" / "gam" / "gam_small.h5")["X"][:300, :20]
    write_h5(tmp_path / "x.h5", X=X)
    status, stderr = run_cli("gam", "predict", "--model", model_path, "--input",
                             tmp_path / "x.h5", "--output", tmp_path / "pred.h5")
    assert status == 0, stderr
    model = kpl.gam.load(model_path)
    assert np.array_equal(model.predict(X), read_h5(tmp_path / "pred.h5")["prediction"])
    assert model.risk.size == 0  # the file reader reads what prediction needs


def test_a_model_with_row_offsets_is_not_predicted_without_them(tmp_path):
    X, y = data("poisson", seed=21)
    write_h5(tmp_path / "train.h5", X=X, y=y, exposure=np.full(len(y), 0.5))
    status, stderr = run_cli("gam", "fit", "--input", tmp_path / "train.h5", "--output",
                             tmp_path / "model.h5", "--family", "poisson", "--mstop", 20,
                             "--offset", "/exposure")
    assert status == 0, stderr
    model = kpl.gam.load(tmp_path / "model.h5")
    with pytest.raises(kpl.InputError, match=r"fitted with per-row offsets.*--offset"):
        model.predict(X)
