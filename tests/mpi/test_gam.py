"""kpl gam fit and gam predict under mpiexec -n 1, 2, 3 against kpl alone.

The model of R ranks must hold the same /selected and /boundary, /offset
within 1e-12 relative, and the same attributes (timings aside, cv_mstop
included). /lambda and what follows it (/coefficients, /risk, /df, /cv_risk,
predictions) within LAMBDA_TOLERANCE: B^T W B's sums round differently when
the rows are split, and lambda's search from the Demmler-Reinsch eigenvalues
amplifies that (tests/mpi/gam_mpi_test.cpp says how). Predictions of one
model are the same bits whatever the split. Inputs: inputs/gam_small.h5
(n = 1000) and a simulated n = 1001 (divides by neither 2 nor 3). A NaN in
the rows of one rank only fails every rank.
"""
import shutil

import h5py
import numpy as np
import pytest

from conftest import INPUTS, attributes, datasets, no_partials, run_kpl, run_mpmd, same_file

RANKS = [1, 2, 3]
EXACT = {"selected", "boundary"}
LAMBDA_TOLERANCE = 1e-9
TOLERANCE = {"offset": 1e-12}
TIMINGS = {"seconds_basis", "seconds_penalty", "seconds_boosting"}

VARIANTS = {
    "direct": ["--mstop", "60"],
    "gram": ["--mstop", "60", "--mode", "gram", "--gram-refresh", "25"],
    "cv3": ["--mstop", "40", "--cv", "3", "--cv-seed", "4"],
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("inputs")
    odd = directory / "odd.h5"
    status, _, err = run_kpl(0, "simulate", "gam", "--n", 1001, "--p", 7, "--informative", 3,
                             "--seed", 9, "--noise-variance", 0.3, "--output", odd)
    assert status == 0, err
    return {"small": INPUTS / "gam_small.h5", "odd": odd}


def relative_difference(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    scale = np.max(np.abs(a)) if a.size else 0.0
    return np.max(np.abs(a - b)) / scale if scale > 0 else np.max(np.abs(a - b), initial=0.0)


def same_model(alone, ranks_file):
    da, db = datasets(alone), datasets(ranks_file)
    assert sorted(da) == sorted(db)
    for name in da:
        if name in EXACT:
            assert np.array_equal(da[name], db[name]), f"/{name} differs"
        else:
            tolerance = TOLERANCE.get(name, LAMBDA_TOLERANCE)
            assert relative_difference(da[name], db[name]) <= tolerance, f"/{name} differs"
    aa, ab = attributes(alone), attributes(ranks_file)
    assert set(aa) == set(ab)
    for key in aa:
        if key[1] not in TIMINGS:
            assert np.array_equal(np.asarray(aa[key]), np.asarray(ab[key])), f"attribute {key}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("data", ["small", "odd"])
def test_fit_matches_one_process(inputs, tmp_path, data, variant):
    args = ["gam", "fit", "--input", inputs[data], *VARIANTS[variant]]
    alone = tmp_path / "alone.h5"
    status, _, err = run_kpl(0, *args, "--output", alone)
    assert status == 0, err
    for ranks in RANKS:
        out = tmp_path / f"ranks{ranks}.h5"
        status, _, err = run_kpl(ranks, *args, "--output", out)
        assert status == 0, err
        assert err.count("kpl gam fit:") == 1, err  # the summary once, from rank 0
        same_model(alone, out)
    no_partials(tmp_path)


@pytest.mark.parametrize("data", ["small", "odd"])
def test_predict_matches_one_process(inputs, tmp_path, data):
    model = tmp_path / "model.h5"
    status, _, err = run_kpl(0, "gam", "fit", "--input", inputs[data], "--output", model,
                             "--mstop", "50")
    assert status == 0, err
    args = ["gam", "predict", "--model", model, "--input", inputs[data], "--partial-effects"]
    alone = tmp_path / "alone.h5"
    status, _, err = run_kpl(0, *args, "--output", alone)
    assert status == 0, err
    for ranks in RANKS:
        out = tmp_path / f"ranks{ranks}.h5"
        status, _, err = run_kpl(ranks, *args, "--output", out)
        assert status == 0, err
        assert err.count("kpl gam predict:") == 1, err
        same_file(alone, out)
    no_partials(tmp_path)


def nan_copy(source, target, row):
    shutil.copy(source, target)
    with h5py.File(target, "a") as f:
        X = f["X"][()]
        X[row, 1] = np.nan
        f["X"][...] = X


def test_nan_on_one_rank_fails_every_rank(inputs, tmp_path):
    bad = tmp_path / "bad.h5"
    nan_copy(inputs["small"], bad, 900)  # in rank 1's rows of two
    out = tmp_path / "model.h5"
    common = ["gam", "fit", "--output", out, "--mstop", "20"]
    status, _, err = run_mpmd([common + ["--input", inputs["small"]],
                               common + ["--input", bad]])
    assert status == 2, err
    assert err.count("kpl: bad input:") == 1, err
    assert "NaN" in err and "[900, 1]" in err, err
    assert not out.exists()
    no_partials(tmp_path)


def test_predict_nan_on_one_rank_fails_every_rank(inputs, tmp_path):
    model = tmp_path / "model.h5"
    status, _, err = run_kpl(0, "gam", "fit", "--input", inputs["small"], "--output", model,
                             "--mstop", "20")
    assert status == 0, err
    bad = tmp_path / "bad.h5"
    nan_copy(inputs["small"], bad, 700)
    out = tmp_path / "prediction.h5"
    common = ["gam", "predict", "--model", model, "--output", out]
    status, _, err = run_mpmd([common + ["--input", inputs["small"]],
                               common + ["--input", bad]])
    assert status == 2, err
    assert err.count("kpl: bad input:") == 1, err
    assert not out.exists()
    no_partials(tmp_path)


def test_predict_names_the_global_row(inputs, tmp_path):
    """A prediction that overflows in the last rank's rows names its row in /X."""
    model = tmp_path / "model.h5"
    status, _, err = run_kpl(0, "gam", "fit", "--input", inputs["small"], "--output", model,
                             "--mstop", "30")
    assert status == 0, err
    selected = int(np.bincount(datasets(model)["selected"]).argmax())
    X = datasets(inputs["small"])["X"].copy()
    X[950, selected] = 1e308
    far = tmp_path / "far.h5"
    with h5py.File(far, "w") as f:
        f["X"] = X
    out = tmp_path / "prediction.h5"
    args = ["gam", "predict", "--model", model, "--input", far, "--output", out]
    status0, _, err0 = run_kpl(0, *args)
    status3, _, err3 = run_kpl(3, *args)
    assert status0 == status3 == 2, err3
    assert "row 950 of /X" in err0 and "row 950 of /X" in err3, err3
    assert err3.count("kpl: bad input:") == 1, err3
    assert not out.exists()
    no_partials(tmp_path)


@pytest.mark.parametrize("command", ["fit", "predict"])
def test_one_rank_given_another_input(inputs, tmp_path, command):
    """A valid input of another shape on rank 1 would split other rows: the
    processes refuse it together, and the attributes of a good run name rank
    0's input even where another rank read a copy at another path."""
    model = tmp_path / "model.h5"
    status, _, err = run_kpl(0, "gam", "fit", "--input", inputs["small"], "--output", model,
                             "--mstop", "20")
    assert status == 0, err
    other = tmp_path / "other.h5"
    with h5py.File(inputs["small"], "r") as source, h5py.File(other, "w") as f:
        f["X"], f["y"] = source["X"][:500], source["y"][:500]
    copy = tmp_path / "copy.h5"
    shutil.copy(inputs["small"], copy)
    out = tmp_path / "out.h5"
    common = (["gam", "fit", "--mstop", "20"] if command == "fit"
              else ["gam", "predict", "--model", model]) + ["--output", out]
    status, _, err = run_mpmd([common + ["--input", inputs["small"]],
                               common + ["--input", other]])
    assert status == 2, err
    assert err.count("do not all see the same input") == 1, err
    assert not out.exists()
    no_partials(tmp_path)
    status, _, err = run_mpmd([common + ["--input", inputs["small"]],
                               common + ["--input", copy]])
    assert status == 0, err
    with h5py.File(out, "r") as f:
        assert f.attrs["input"] == str(inputs["small"])


# Observation weights, per-row offsets and the bootstrap's own draws (made over
# the global row count, so the same resamples whatever the split) or given
# resamples: the model of R ranks as one process's. Input: R mboost's weighted
# bootstrap reference (n = 300, 30 zero weights) with a per-row offset added.
WEIGHTED_VARIANTS = {
    "weights_offset": ["--mstop", "40", "--weights", "/weights", "--offset", "/o"],
    "bootstrap": ["--mstop", "30", "--weights", "/weights", "--bootstrap", "4", "--cv-seed", "3"],
    "cv_weights": ["--mstop", "30", "--weights", "/weights", "--cv-weights", "{input}:/folds"],
}


@pytest.mark.parametrize("variant", WEIGHTED_VARIANTS)
def test_weighted_fit_matches_one_process(tmp_path, variant):
    reference = INPUTS.parent / "tests" / "data" / "gam" / "mboost_cvrisk_bootstrap_weighted.h5"
    data = tmp_path / "weighted.h5"
    with h5py.File(reference) as source, h5py.File(data, "w") as target:
        for name in ("X", "y", "weights", "folds"):
            target[name] = source[name][...]
        target["o"] = 0.1 * np.sin(np.arange(source["y"].shape[0]))
    args = ["gam", "fit", "--input", data,
            *[a.format(input=data) for a in WEIGHTED_VARIANTS[variant]]]
    alone = tmp_path / "alone.h5"
    status, _, err = run_kpl(0, *args, "--output", alone)
    assert status == 0, err
    for ranks in RANKS:
        out = tmp_path / f"ranks{ranks}.h5"
        status, _, err = run_kpl(ranks, *args, "--output", out)
        assert status == 0, err
        same_model(alone, out)
    no_partials(tmp_path)
