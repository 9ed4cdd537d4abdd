"""Case 5: crafted or damaged HDF5 inputs and inputs that are not regular files.
All must exit 2 at once, naming the file (and the dataset where one is at fault)."""
import os
import shutil
import socket
import time

import h5py
import numpy as np
import pytest

from conftest import INPUTS, assert_no_output, bad_input, check, make_nnls, read_h5


def _A_b():
    A, b = make_nnls(B=2, m=6, n=4)
    return A, b


def _plain(f, A):
    f["A"] = A


def _chunked_huge(shape):
    def make(f, A):
        f.create_dataset("A", shape=shape, dtype="f8", chunks=(1,) * len(shape))
    return make


# name: (writer of /A (f, A) -> None, regex after "'in.h5': ")
CRAFTED = {
    "fixed_strings": (lambda f, A: f.__setitem__("A", np.array([[b"x", b"y"]] * 6)),
                      r"dataset /A\b.*type.*string"),
    "vlen_strings": (lambda f, A: f.create_dataset("A", data=np.array([["x", "y"]] * 6, dtype=object),
                                                   dtype=h5py.string_dtype()),
                     r"dataset /A\b.*type.*string"),
    "compound": (lambda f, A: f.__setitem__("A", np.zeros((6, 4), dtype=[("re", "f8"), ("im", "f8")])),
                 r"dataset /A\b.*type.*compound"),
    "complex": (lambda f, A: f.__setitem__("A", A.astype("c16")), r"dataset /A\b.*type"),
    "bool_enum": (lambda f, A: f.__setitem__("A", A > 0), r"dataset /A\b.*type"),
    "rank0": (lambda f, A: f.__setitem__("A", 1.0), r"dataset /A\b.*rank 0"),
    "rank1": (lambda f, A: f.__setitem__("A", A[0]), r"dataset /A\b.*rank 1"),
    "rank4": (lambda f, A: f.__setitem__("A", A.reshape(1, 1, 6, 4)), r"dataset /A\b.*rank 4"),
    "rows_mismatch": (lambda f, A: f.__setitem__("A", A[:5]), r"dimension mismatch.*/A.*/b"),
    "zero_rows": (lambda f, A: f.__setitem__("A", np.zeros((0, 4))), r"/A.*empty|/b"),
    "zero_cols": (lambda f, A: f.__setitem__("A", np.zeros((6, 0))), r"dataset /A\b.*empty"),
    "missing": (lambda f, A: None, r"dataset /A\b.*missing"),
    # a group where a dataset is expected: "missing" would be misleading
    "group": (lambda f, A: f.create_group("A"), r"/A\b.*(group|not a dataset)"),
    "dangling_soft_link": (lambda f, A: f.__setitem__("A", h5py.SoftLink("/nowhere")),
                           r"/A\b.*(missing|link|nowhere)"),
    "soft_link_loop": (lambda f, A: (f.__setitem__("A", h5py.SoftLink("/B")),
                                     f.__setitem__("B", h5py.SoftLink("/A"))), r"/A\b.*(missing|loop|link)"),
    "object_references": (lambda f, A: (f.__setitem__("x", 1),
                                        f.create_dataset("A", data=np.array([[f["x"].ref] * 4] * 6),
                                                         dtype=h5py.ref_dtype)), r"dataset /A\b.*type"),
    "array_type": (lambda f, A: f.create_dataset("A", shape=(6, 4), dtype=np.dtype(("f8", (2,)))),
                   r"dataset /A\b.*type.*array"),
    "huge_dims_2^61": (_chunked_huge((2 ** 61, 4)), r"/A\b.*bytes"),
    "huge_dims_2^31x2^30": (_chunked_huge((2 ** 31, 2 ** 30)), r"/A\b.*bytes"),
    "external_raw": (lambda f, A: f.create_dataset("A", shape=A.shape, dtype="<f8",
                                                   external=[("A.raw", 0, A.nbytes)]),
                     r"dataset /A\b.*external"),
    "external_link": (lambda f, A: f.__setitem__("A", h5py.ExternalLink("other.h5", "/A")),
                      r"/A\b.*external link"),
    "external_link_missing": (lambda f, A: f.__setitem__("A", h5py.ExternalLink("nonexist.h5", "/A")),
                              r"/A\b.*external link"),
    "virtual": (lambda f, A: f.create_virtual_dataset("A", _layout(A, "other.h5")),
                r"dataset /A\b.*virtual"),
    "virtual_missing_source": (lambda f, A: f.create_virtual_dataset("A", _layout(A, "nonexist.h5"),
                                                                    fillvalue=0.0),
                               r"dataset /A\b.*virtual"),
    # the lzf filter is h5py's own: the message must say the filter is unavailable,
    # not suggest a damaged file
    "lzf_filter": (lambda f, A: f.create_dataset("A", data=np.rint(A), compression="lzf", chunks=A.shape),
                   r"dataset /A\b.*(filter|lzf|compress)"),
}


def _layout(A, source):
    lay = h5py.VirtualLayout(shape=A.shape, dtype="f8")
    lay[:] = h5py.VirtualSource(source, "A", shape=A.shape)
    return lay


@pytest.mark.parametrize("case", CRAFTED)
def test_nnls_crafted_A(run, tmp_path, case):
    writer, regex = CRAFTED[case]
    A, b = _A_b()
    A.astype("<f8").tofile(tmp_path / "A.raw")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["A"] = A
    with h5py.File(tmp_path / "in.h5", "w") as f:
        writer(f, A)
        if case.startswith("huge_dims"):
            rows = f["A"].shape[0]
            f.create_dataset("b", shape=(rows,), dtype="f8", chunks=(1,))
        else:
            f["b"] = b
    t0 = time.time()
    res = run("nnls", "--input", "in.h5", "--output", "out.h5", timeout=30)
    if case.startswith("huge_dims") and res[0] == 4:  # the machine cannot: also fine
        check(res, 4, r"in\.h5.*\d+ bytes.*\d+ bytes")
    else:
        check(res, 2, bad_input("in.h5", regex))
    assert time.time() - t0 < 10
    assert_no_output(tmp_path / "out.h5")


ACCEPTED = {
    "int32": lambda A: (np.rint(A * 10).astype("i4"), 10.0),
    "uint8": lambda A: (np.abs(np.rint(A * 10)).astype("u1"), 10.0),
    "float16": lambda A: (A.astype("f2"), 1.0),
    "float32_big_endian": lambda A: (A.astype(">f4"), 1.0),
    "float64_big_endian": lambda A: (A.astype(">f8"), 1.0),
    "gzip_chunked": lambda A: (A, 1.0),
    "soft_link_in_file": lambda A: (A, 1.0),
}


@pytest.mark.parametrize("case", ACCEPTED)
def test_nnls_convertible_types_are_accepted(run, tmp_path, case):
    """Integer and other real types where float is expected are converted (exit 0) and
    give the same x as the same values stored as float64."""
    A, b = _A_b()
    As, _ = ACCEPTED[case](A)
    with h5py.File(tmp_path / "in.h5", "w") as f:
        if case == "gzip_chunked":
            f.create_dataset("A", data=As, compression="gzip", chunks=(2, 2))
        elif case == "soft_link_in_file":
            f["data/A"] = As
            f["A"] = h5py.SoftLink("/data/A")
        else:
            f["A"] = As
        f["b"] = b
    with h5py.File(tmp_path / "ref.h5", "w") as f:
        f["A"] = np.asarray(As, dtype="f8")
        f["b"] = b
    check(run("nnls", "--input", "ref.h5", "--output", "outref.h5"), 0, r"2 systems: ")
    check(run("nnls", "--input", "in.h5", "--output", "out.h5"), 0, r"2 systems: ")
    out, ref = read_h5(tmp_path / "out.h5"), read_h5(tmp_path / "outref.h5")
    np.testing.assert_allclose(out["x"], ref["x"], rtol=1e-12, atol=1e-14)
    assert (out["status"] == ref["status"]).all()


COMMANDS = {
    "nnls": lambda src: ("nnls", "--input", src, "--output", "out.h5"),
    "deconv": lambda src: ("deconv", "--input", src, "--output", "out.h5"),
    "gam_fit": lambda src: ("gam", "fit", "--input", src, "--output", "out.h5"),
    "gam_predict_model": lambda src: ("gam", "predict", "--model", src, "--input",
                                      str(INPUTS / "gam_small.h5"), "--output", "out.h5"),
}
VALID = {"nnls": "nnls_gauss_small.h5", "deconv": "deconv_lvis_small.h5", "gam_fit": "gam_small.h5",
         "gam_predict_model": "gam_small.h5"}


def _damaged(tmp_path, kind, cmd):
    src = tmp_path / "in.h5"
    data = (INPUTS / VALID[cmd]).read_bytes()
    if kind == "truncated_half":
        src.write_bytes(data[: len(data) // 2])
    elif kind == "truncated_100":
        src.write_bytes(data[:100])
    elif kind == "truncated_last_byte":
        src.write_bytes(data[:-1])
    elif kind == "empty":
        src.write_bytes(b"")
    elif kind == "text":
        src.write_text("A,b\n1,2\n" * 50)
    elif kind == "zeros":
        src.write_bytes(b"\0" * 4096)
    return "in.h5"


DAMAGE = {
    "truncated_half": r"cannot open 'in\.h5'.*(truncated|damaged)",
    "truncated_100": r"cannot open 'in\.h5'.*(truncated|damaged)",
    "truncated_last_byte": r"cannot open 'in\.h5'.*(truncated|damaged)",
    "empty": r"cannot open 'in\.h5'.*not an HDF5 file",
    "text": r"cannot open 'in\.h5'.*not an HDF5 file",
    "zeros": r"cannot open 'in\.h5'.*not an HDF5 file",
}


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_files(run, tmp_path, cmd, kind):
    src = _damaged(tmp_path, kind, cmd)
    res = run(*COMMANDS[cmd](src), timeout=30)
    check(res, 2, r"kpl: bad input: " + DAMAGE[kind])
    assert_no_output(tmp_path / "out.h5")


def _special(tmp_path, kind):
    if kind == "directory":
        os.mkdir(tmp_path / "in.h5")
        return "in.h5", r"cannot open 'in\.h5'.*directory"
    if kind == "fifo":
        os.mkfifo(tmp_path / "in.h5")
        return "in.h5", r"cannot open 'in\.h5'.*FIFO"
    if kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(tmp_path / "in.h5"))
        s.close()
        return "in.h5", r"cannot open 'in\.h5'.*socket"
    if kind == "missing":
        return "in.h5", r"cannot open 'in\.h5'.*no such file"
    return kind, rf"cannot open '{kind}'.*(character device|not a regular)"


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("kind", ["directory", "fifo", "socket", "missing", "/dev/zero", "/dev/null"])
def test_input_not_a_regular_file(run, tmp_path, cmd, kind):
    src, regex = _special(tmp_path, kind)
    t0 = time.time()
    res = run(*COMMANDS[cmd](src), timeout=10)
    check(res, 2, r"kpl: bad input: " + regex)
    assert time.time() - t0 < 5, "not refused at once"
    assert_no_output(tmp_path / "out.h5")
    if kind == "fifo":
        assert os.path.exists(tmp_path / "in.h5")


def test_predict_input_fifo(run, tmp_path, gam_model):
    os.mkfifo(tmp_path / "x.h5")
    res = run("gam", "predict", "--model", gam_model, "--input", "x.h5", "--output", "out.h5", timeout=10)
    check(res, 2, r"kpl: bad input: cannot open 'x\.h5'.*FIFO")
    assert_no_output(tmp_path / "out.h5")


@pytest.mark.parametrize("case", ["L_longer_than_m", "pulse_rows_mismatch", "waveforms_rank1",
                                  "pulse_rank3", "pulse_empty", "waveforms_zero_rows",
                                  "waveforms_zero_samples", "pulse_strings"])
def test_deconv_shapes(run, h5, tmp_path, case):
    t = np.exp(-0.5 * ((np.arange(9) - 4) / 1.5) ** 2)
    wf = np.zeros((3, 64))
    wf[:, 20:29] = t
    pulse, waves, regex = {
        "L_longer_than_m": (np.ones(70), wf, r"pulse \(70 samples\) is longer than the waveforms \(64"),
        "pulse_rows_mismatch": (np.ones((2, 9)), wf, r"dimension mismatch.*/pulse.*/waveforms"),
        "waveforms_rank1": (t, wf[0], r"dataset /waveforms\b.*rank 1"),
        "pulse_rank3": (t[None, None], wf, r"dataset /pulse\b.*rank 3"),
        "pulse_empty": (np.ones(0), wf, r"dataset /pulse\b.*empty"),
        "waveforms_zero_rows": (t, np.zeros((0, 64)), r"dataset /waveforms\b.*empty"),
        "waveforms_zero_samples": (np.ones(0), np.zeros((3, 0)), r"dataset /(pulse|waveforms)\b.*empty"),
        "pulse_strings": (np.array([b"a"] * 9), wf, r"dataset /pulse\b.*type.*string"),
    }[case]
    h5("in.h5", pulse=pulse, waveforms=waves)
    check(run("deconv", "--input", "in.h5", "--output", "out.h5"), 2, bad_input("in.h5", regex))
    assert_no_output(tmp_path / "out.h5")


@pytest.mark.parametrize("case", ["X_rank1", "X_rank3", "X_zero_cols", "X_zero_rows", "y_rank2",
                                  "X_strings", "y_missing"])
def test_gam_fit_shapes(run, h5, tmp_path, gam_data, case):
    X, y = gam_data["X"], gam_data["y"]
    data, regex = {
        "X_rank1": ({"X": X[:, 0], "y": y}, r"dataset /X\b.*rank 1"),
        "X_rank3": ({"X": X[None], "y": y}, r"dataset /X\b.*rank 3"),
        "X_zero_cols": ({"X": X[:, :0], "y": y}, r"\bX\b.*(empty|no covariates)"),
        "X_zero_rows": ({"X": X[:0], "y": y[:0]}, r"(/X|/y|\b0 observations)\b.*(empty|fewer)"),
        "y_rank2": ({"X": X, "y": y[:, None]}, r"dataset /y\b.*(rank 2|must be \[n\])"),
        "X_strings": ({"X": np.array([[b"a"] * 3] * 200), "y": y}, r"dataset /X\b.*type.*string"),
        "y_missing": ({"X": X}, r"dataset /y\b.*missing"),
    }[case]
    h5("in.h5", **data)
    check(run("gam", "fit", "--input", "in.h5", "--output", "out.h5"), 2, bad_input("in.h5", regex))
    assert_no_output(tmp_path / "out.h5")


def test_gam_fit_integer_X_accepted(run, h5, tmp_path, gam_data):
    """Integer covariates are converted: same model as the float64 copy."""
    Xi = np.rint(gam_data["X"] * 1000).astype("i4")
    h5("in.h5", X=Xi, y=gam_data["y"])
    h5("ref.h5", X=Xi.astype("f8"), y=gam_data["y"])
    check(run("gam", "fit", "--input", "in.h5", "--output", "m.h5", "--mstop", 10), 0, r"200 observations")
    check(run("gam", "fit", "--input", "ref.h5", "--output", "mref.h5", "--mstop", 10), 0, r"200 observations")
    a, b = read_h5(tmp_path / "m.h5"), read_h5(tmp_path / "mref.h5")
    np.testing.assert_allclose(a["coefficients"], b["coefficients"], rtol=1e-12, atol=1e-12)
