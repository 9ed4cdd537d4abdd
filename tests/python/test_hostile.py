"""Hostile inputs: what the module raises for data the command line refuses
is the same kind of error (kpl.InputError, a ValueError, where `kpl` exits
2 with `bad input`; ValueError where it exits 1) with the same message after
the name of the dataset or argument; dtypes and ranks are named."""
import numpy as np
import pytest

import kpl

RNG = np.random.default_rng(21)
A = RNG.standard_normal((40, 25))
B = RNG.standard_normal((3, 40))
X = RNG.uniform(size=(200, 3))
Y = np.sin(6 * X[:, 0])


def tail(message, dataset):
    """The message after the dataset's or argument's name."""
    marker = f"{dataset} "
    assert marker in message, (dataset, message)
    return message[message.index(marker) + len(marker):]


def nan_at(array, index, value=np.nan):
    array = array.copy()
    array[index] = value
    return array


@pytest.mark.parametrize("name,index,value", [("A", (1, 2), np.nan), ("b", (2, 39), np.inf)])
def test_nnls_nan_is_the_cli_bad_input(cli_error, name, index, value):
    inputs = {"A": A, "b": B}
    inputs[name] = nan_at(inputs[name], index, value)
    with pytest.raises(kpl.InputError) as raised:
        kpl.nnls(inputs["A"], inputs["b"])
    status, message = cli_error("nnls", inputs)
    assert status == 2 and "bad input" in message
    expected = f"holds NaN or Inf at [{index[0]}, {index[1]}]; finite values are required"
    assert tail(message, "/" + name) == expected
    assert tail(str(raised.value), "kpl.nnls: " + name) == expected


@pytest.mark.parametrize("inputs,dataset", [
    ({"A": A, "b": np.zeros((0, 40))}, "b"),
    ({"A": np.zeros((40, 0)), "b": B}, "A"),
])
def test_nnls_empty_is_the_cli_bad_input(cli_error, inputs, dataset):
    with pytest.raises(kpl.InputError) as raised:
        kpl.nnls(inputs["A"], inputs["b"])
    status, message = cli_error("nnls", inputs)
    assert status == 2
    assert tail(str(raised.value), dataset) == tail(message, "/" + dataset)
    assert "is empty (shape [" in str(raised.value)


def test_nnls_mismatched_rows_are_the_cli_bad_input(cli_error):
    b = RNG.standard_normal((3, 30))
    with pytest.raises(kpl.InputError) as raised:
        kpl.nnls(A, b)
    status, message = cli_error("nnls", {"A": A, "b": b})
    assert status == 2
    ours = str(raised.value)
    assert ours.startswith("kpl.nnls: dimension mismatch: dimension 0 of A (shape [40, 25]) is 40")
    assert ours[ours.index("dimension mismatch"):] == \
        message[message.index("dimension mismatch"):].replace("/", "")


@pytest.mark.parametrize("args,kind,match", [
    ((A[0], B), kpl.InputError, r"kpl.nnls: A must be \[m, n\] .* not of rank 1"),
    ((A, B[None]), kpl.InputError, r"kpl.nnls: b must be .* not of rank 3"),
    ((A.astype(np.int64), B), TypeError, r"kpl.nnls: A must be a float32 or float64 .* int64"),
    ((A, B.astype(np.float32)), TypeError, r"A and b must have the same dtype"),
    ((A, B.astype(np.float16)), TypeError, r"kpl.nnls: b must be a float32 or float64"),
    ((A.astype(">f8"), B), TypeError, r"kpl.nnls: A must be a float32 or float64 .*>f8"),
])
def test_nnls_wrong_arrays_are_named(args, kind, match):
    with pytest.raises(kind, match=match):
        kpl.nnls(*args)


@pytest.mark.parametrize("keywords,flags,match", [
    ({"tolerance": 2.0}, ["--tolerance", 2], "tolerance 2 is outside"),
    ({"max_iterations": 0}, ["--max-iterations", 0], "max_iterations 0 is outside"),
    ({"orthogonalization": "householder"}, ["--orthogonalization", "householder"],
     "orthogonalization must be one of"),
    ({"gradient": "exact"}, ["--gradient", "exact"], "gradient must be one of"),
])
def test_nnls_bad_options_are_usage_errors(cli_error, keywords, flags, match):
    with pytest.raises(ValueError, match=match) as raised:
        kpl.nnls(A, B, **keywords)
    assert not isinstance(raised.value, kpl.InputError)
    status, _ = cli_error("nnls", {"A": A, "b": B}, *flags)
    assert status == 1


def test_cross_products_need_a_shared_a(cli_error):
    A3 = RNG.standard_normal((3, 40, 25))
    with pytest.raises(kpl.InputError, match="needs one A .m, n. shared by all systems"):
        kpl.nnls(A3, B, gradient="cross-products")
    status, message = cli_error("nnls", {"A": A3, "b": B}, "--gradient", "cross-products")
    assert status == 2 and "needs one /A [m, n] shared by all systems" in message


def test_deconvolve_hostile_inputs_are_the_cli_errors(cli_error):
    pulse, waveforms = RNG.uniform(size=(2, 10)), RNG.uniform(size=(2, 30))
    bad = nan_at(waveforms, (1, 7))
    with pytest.raises(kpl.InputError) as raised:
        kpl.deconvolve(pulse, bad)
    status, message = cli_error("deconv", {"pulse": pulse, "waveforms": bad})
    assert status == 2
    assert tail(str(raised.value), "waveforms") == tail(message, "/waveforms") == \
        "holds NaN or Inf at [1, 7]; finite values are required"
    long_pulse = RNG.uniform(size=(2, 31))
    with pytest.raises(kpl.InputError) as raised:
        kpl.deconvolve(long_pulse, waveforms)
    status, message = cli_error("deconv", {"pulse": long_pulse, "waveforms": waveforms})
    assert status == 2
    expected = "the pulse (31 samples) is longer than the waveforms (30 samples)"
    assert str(raised.value).endswith(expected) and message.endswith(expected)
    with pytest.raises(kpl.InputError, match="dimension mismatch"):
        kpl.deconvolve(pulse[:1].repeat(3, axis=0), waveforms)
    with pytest.raises(ValueError, match="pulse_origin must be one of 'start', 'center'"):
        kpl.deconvolve(pulse, waveforms, pulse_origin="middle")
    with pytest.raises(kpl.InputError, match="waveforms is empty"):
        kpl.deconvolve(pulse, np.zeros((0, 30)))


@pytest.mark.parametrize("name,index", [("X", (5, 2)), ("y", (7,))])
def test_gam_nan_is_the_cli_bad_input(cli_error, name, index):
    inputs = {"X": X, "y": Y}
    inputs[name] = nan_at(inputs[name], index)
    with pytest.raises(kpl.InputError) as raised:
        kpl.gam.fit(inputs["X"], inputs["y"])
    status, message = cli_error("gam fit", inputs)
    assert status == 2
    assert tail(str(raised.value), name) == tail(message, "/" + name)


@pytest.mark.parametrize("inputs,flags,keywords,status,match", [
    ({"X": X, "y": Y}, ["--family", "binomial"], {"family": "binomial"}, 2,
     "values of y are not 0 or 1 (Binomial family)"),
    ({"X": X, "y": -np.abs(Y)}, ["--family", "poisson"], {"family": "poisson"}, 2,
     "values of y are negative (Poisson family)"),
    ({"X": np.column_stack([X, np.ones(200)]), "y": Y}, [], {}, 2,
     "covariate 3 (0-based column of X) is constant"),
    ({"X": X[:0], "y": Y[:0]}, [], {}, 2, None),
    ({"X": X, "y": Y}, ["--df", 30], {"df": 30}, 1, "outside (0, basis size 24]"),
    ({"X": X, "y": Y}, ["--family", "poisson", "--mode", "gram"],
     {"family": "poisson", "mode": "gram"}, 1, "Gram mode needs the Gaussian family"),
])
def test_gam_errors_are_the_cli_errors(cli_error, inputs, flags, keywords, status, match):
    expected_kind = kpl.InputError if status == 2 else ValueError
    with pytest.raises(ValueError) as raised:
        kpl.gam.fit(inputs["X"], inputs["y"], **keywords)
    assert isinstance(raised.value, kpl.InputError) == (status == 2), raised.value
    assert isinstance(raised.value, expected_kind)
    cli_status, message = cli_error("gam fit", inputs, *flags)
    assert cli_status == status
    ours = str(raised.value)
    if match is not None:
        assert match in ours and match in message
    # The same words after the command line's file name.
    assert message.endswith(ours[ours.index("kpl::fit_gam"):]) if "kpl::fit_gam" in ours else True


def test_gam_wrong_arguments_are_named():
    with pytest.raises(kpl.InputError, match=r"kpl.gam.fit: X must be \[n, p\]"):
        kpl.gam.fit(X[:, 0], Y)
    with pytest.raises(TypeError, match="X and y must have the same dtype"):
        kpl.gam.fit(X.astype(np.float32), Y)
    with pytest.raises(kpl.InputError, match="dimension mismatch: dimension 0 of X"):
        kpl.gam.fit(X, Y[:-1])
    with pytest.raises(ValueError, match="family must be one of 'gaussian', 'binomial', 'poisson'"):
        kpl.gam.fit(X, Y, family="gamma")
    with pytest.raises(ValueError, match="cv_seed must be a non-negative integer"):
        kpl.gam.fit(X, Y, cv=3, cv_seed=-1)
    model = kpl.gam.fit(X, Y, mstop=5)
    with pytest.raises(kpl.InputError, match="X has 2 covariates, the model 3"):
        model.predict(X[:, :2])
    with pytest.raises(kpl.InputError, match=r"X holds NaN or Inf at \[0, 1\]"):
        model.predict(nan_at(X, (0, 1)))
    with pytest.raises(kpl.InputError, match="the prediction for row 1 of X is not finite"):
        model.predict(nan_at(X[:3], (1, 0), 1e308))
