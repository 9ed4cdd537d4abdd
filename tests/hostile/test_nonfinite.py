"""Case 2: NaN / +Inf / -Inf anywhere in the inputs -> exit 2 naming file, dataset and
the first bad index; no output file left."""
import re

import numpy as np
import pytest

from conftest import INPUTS, assert_no_output, bad_input, check, make_deconv, make_nnls, read_h5

BAD = {"nan": np.nan, "+inf": np.inf, "-inf": -np.inf}


def _idx(pos):
    return re.escape("[" + ", ".join(str(p) for p in pos) + "]")


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("dataset,shape_of,pos", [
    ("A", "A", (3, 7)), ("b", "b", (2, 5)), ("A", "A3", (1, 4, 2)), ("b", "b1", (29,))])
def test_nnls_nonfinite(run, h5, tmp_path, value, dataset, shape_of, pos):
    A, b = make_nnls()
    data = {"A": A.copy(), "b": b.copy()}
    if shape_of == "A3":
        data["A"] = np.stack([A, A])
        data["b"] = b[:2].copy()
    if shape_of == "b1":
        data["b"] = b[0].copy()
    data[dataset][pos] = BAD[value]
    h5("bad.h5", **data)
    res = run("nnls", "--input", "bad.h5", "--output", "out.h5")
    check(res, 2, bad_input("bad.h5", rf"dataset /{dataset}\b.*{_idx(pos)}"))
    assert_no_output(tmp_path / "out.h5")


@pytest.mark.parametrize("precision", ["double", "float"])
@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("dataset,pos", [("pulse", (4,)), ("waveforms", (7, 13)), ("waveforms", (19, 63))])
def test_deconv_nonfinite(run, h5, tmp_path, precision, value, dataset, pos):
    pulse, wf = make_deconv()
    data = {"pulse": pulse.copy(), "waveforms": wf.copy()}
    data[dataset][pos] = BAD[value]
    h5("bad.h5", **data)
    res = run("deconv", "--input", "bad.h5", "--output", "out.h5", "--precision", precision)
    check(res, 2, bad_input("bad.h5", rf"dataset /{dataset}\b.*{_idx(pos)}"))
    assert_no_output(tmp_path / "out.h5")


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("dataset,pos", [("waveforms", (99, 431)), ("pulse", (99, 24))])
def test_deconv_nonfinite_in_last_chunk(run, h5, tmp_path, value, dataset, pos):
    """Only the last of 100 chunks (one waveform each) is bad: no output at all."""
    data = read_h5(INPUTS / "deconv_lvis_small.h5")
    data = {"pulse": data["pulse"], "waveforms": data["waveforms"]}
    data[dataset][pos] = BAD[value]
    h5("bad.h5", **data)
    res = run("deconv", "--input", "bad.h5", "--output", "out.h5", "--memory-budget", "300kb")
    check(res, 2, bad_input("bad.h5", rf"dataset /{dataset}\b.*{_idx(pos)}"))
    assert_no_output(tmp_path / "out.h5")


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("dataset,pos", [("X", (5, 2)), ("X", (199, 0)), ("y", (7,)), ("y", (199,))])
def test_gam_fit_nonfinite(run, h5, tmp_path, gam_data, value, dataset, pos):
    data = {"X": gam_data["X"].copy(), "y": gam_data["y"].copy()}
    data[dataset][pos] = BAD[value]
    h5("bad.h5", **data)
    res = run("gam", "fit", "--input", "bad.h5", "--output", "model.h5")
    check(res, 2, bad_input("bad.h5", rf"dataset /{dataset}\b.*{_idx(pos)}"))
    assert_no_output(tmp_path / "model.h5")


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("pos", [(0, 0), (2, 1), (9, 2)])
def test_gam_predict_nonfinite(run, h5, tmp_path, gam_data, gam_model, value, pos):
    X = gam_data["X"][:10].copy()
    X[pos] = BAD[value]
    h5("bad.h5", X=X)
    res = run("gam", "predict", "--model", gam_model, "--input", "bad.h5", "--output", "pred.h5")
    check(res, 2, bad_input("bad.h5", rf"dataset /X\b.*{_idx(pos)}"))
    assert_no_output(tmp_path / "pred.h5")
