"""Case 7 and the leftover half of case 8: kpl never loses or clobbers files."""
import os
import shutil
import socket
import stat

import pytest

from conftest import INPUTS, assert_no_output, check, file_bytes, read_h5

NNLS_IN = INPUTS / "nnls_gauss_small.h5"


@pytest.fixture
def nnls_input(tmp_path):
    shutil.copy(NNLS_IN, tmp_path / "in.h5")
    return tmp_path / "in.h5"


@pytest.mark.parametrize("kind", ["same", "dot_slash", "absolute", "symlink", "hardlink", "hardlink_other_dir"])
def test_output_is_the_input(run, tmp_path, nnls_input, kind):
    before = file_bytes(nnls_input)
    if kind == "same":
        out = "in.h5"
    elif kind == "dot_slash":
        out = "./in.h5"
    elif kind == "absolute":
        out = str(nnls_input)
    elif kind == "symlink":
        os.symlink("in.h5", tmp_path / "link.h5")
        out = "link.h5"
    elif kind == "hardlink":
        os.link(nnls_input, tmp_path / "hard.h5")
        out = "hard.h5"
    else:
        (tmp_path / "sub").mkdir()
        os.link(nnls_input, tmp_path / "sub" / "hard.h5")
        out = "sub/hard.h5"
    res = run("nnls", "--input", "in.h5", "--output", out)
    check(res, 2, r"kpl: bad input: cannot write .*it is the input")
    assert file_bytes(nnls_input) == before
    assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]


def _make_existing(tmp_path, kind):
    p = tmp_path / "out.h5"
    if kind == "directory":
        p.mkdir()
        (p / "keep").write_text("keep")
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "symlink":
        (tmp_path / "unrelated.txt").write_text("precious\n")
        os.symlink("unrelated.txt", p)
    elif kind == "dangling_symlink":
        os.symlink("nowhere/x.h5", p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    return p


def _snapshot(p):
    st = os.lstat(p)
    extra = os.readlink(p) if stat.S_ISLNK(st.st_mode) else (sorted(os.listdir(p)) if stat.S_ISDIR(st.st_mode) else None)
    return stat.S_IFMT(st.st_mode), st.st_ino, extra


@pytest.mark.parametrize("kind,what", [("directory", "directory"), ("fifo", "FIFO"), ("symlink", "symbolic link"),
                                       ("dangling_symlink", "symbolic link"), ("socket", "socket")])
def test_existing_output_not_a_regular_file(run, tmp_path, nnls_input, kind, what):
    p = _make_existing(tmp_path, kind)
    before = _snapshot(p)
    res = run("nnls", "--input", "in.h5", "--output", "out.h5", timeout=10)
    check(res, 2, rf"kpl: bad input: cannot write 'out\.h5': it is a {what}")
    assert _snapshot(p) == before
    if kind == "symlink":
        assert (tmp_path / "unrelated.txt").read_text() == "precious\n"
    assert not [q for q in os.listdir(tmp_path) if ".partial-" in q]


@pytest.mark.parametrize("dev", ["/dev/null", "/dev/full", "/dev/zero"])
@pytest.mark.parametrize("cmd", ["nnls", "simulate"])
def test_output_is_a_device(run, dev, cmd):
    st = os.stat(dev)
    if cmd == "nnls":
        res = run("nnls", "--input", str(NNLS_IN), "--output", dev)
    else:
        res = run("simulate", "gam", "--n", "20", "--p", "2", "--informative", "1", "--output", dev)
    check(res, 2, rf"kpl: bad input: cannot write '{dev}': it is a character device")
    st2 = os.stat(dev)
    assert stat.S_ISCHR(st2.st_mode) and st2.st_rdev == st.st_rdev


def test_output_in_missing_directory(run, tmp_path):
    """Refused before any compute: no solver summary on stderr."""
    res = run("deconv", "--input", str(INPUTS / "deconv_lvis_small.h5"), "--output", "missing/out.h5")
    check(res, 2, r"kpl: bad input: cannot write 'missing/out\.h5': directory 'missing' does not exist")
    assert "waveforms" not in res[2]
    assert not (tmp_path / "missing").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only directory")
def test_output_in_read_only_directory(run, tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        res = run("deconv", "--input", str(INPUTS / "deconv_lvis_small.h5"), "--output", "ro/out.h5")
        check(res, 2, r"kpl: bad input: cannot write 'ro/out\.h5'")
        assert "waveforms" not in res[2]
        assert os.listdir(d) == []
    finally:
        d.chmod(0o755)


def test_existing_regular_output_is_replaced(run, tmp_path):
    (tmp_path / "out.h5").write_text("old")
    check(run("nnls", "--input", str(NNLS_IN), "--output", "out.h5"), 0, r"16 converged")
    assert read_h5(tmp_path / "out.h5")["x"].shape == (16, 128)


def test_failed_run_keeps_existing_output(run, tmp_path, h5):
    """A run that fails on bad input leaves an existing output file as it was."""
    (tmp_path / "out.h5").write_text("previous result")
    h5("bad.h5", A=[[1.0, float("nan")]], b=[1.0])
    check(run("nnls", "--input", "bad.h5", "--output", "out.h5"), 2, r"NaN or Inf at \[0, 1\]")
    assert (tmp_path / "out.h5").read_text() == "previous result"
    assert not [q for q in os.listdir(tmp_path) if ".partial-" in q]


@pytest.mark.parametrize("cmd", ["nnls", "simulate"])
def test_stale_partial_is_removed(run, tmp_path, cmd):
    stale = tmp_path / "out.h5.partial-999999"  # no such pid (pid_max is far lower)
    stale.write_text("left by a killed run")
    if cmd == "nnls":
        res = run("nnls", "--input", str(NNLS_IN), "--output", "out.h5")
    else:
        res = run("simulate", "gam", "--n", "20", "--p", "2", "--informative", "1", "--output", "out.h5")
    check(res, 0, r"removed '(\./)?out\.h5\.partial-999999'.*left by an interrupted run")
    assert not stale.exists()
    assert (tmp_path / "out.h5").is_file()


def test_partial_of_a_live_process_is_kept(run, tmp_path):
    """A *.partial-PID whose PID is alive (this test) may be another kpl's: keep it."""
    live = tmp_path / f"out.h5.partial-{os.getpid()}"
    live.write_text("in use")
    check(run("nnls", "--input", str(NNLS_IN), "--output", "out.h5"), 0, r"16 converged")
    assert live.read_text() == "in use"
