"""Case 8: signals during a run -> exit 128 + n and no output. kpl deconv (and
only it) keeps its partial output, named OUTPUT.partial-PID and said so on
stderr, for --resume; every other command leaves no *.partial-* file. A run
without --resume removes what an interrupted one left."""
import glob
import os
import re
import resource
import signal
import subprocess
import time

import h5py
import pytest

from conftest import KPL, check, datasets, run_kpl


# Under AddressSanitizer kpl solves some 50 times slower: smaller inputs
# last as long.
SANITIZED = "address" in os.environ.get("KPL_SANITIZERS", "")
BIG = 1000 if SANITIZED else 8000
RESUMABLE = 500 if SANITIZED else 2000


@pytest.fixture(scope="module")
def big_deconv(tmp_path_factory):
    """~8000 waveforms of 432 samples: kpl deconv needs ~7 s on 2 cores."""
    d = tmp_path_factory.mktemp("big")
    res = run_kpl("simulate", "deconv", "--waveforms", BIG, "--samples", 432, "--seed", 3,
                  "--output", d / "big.h5")
    check(res, 0, rf"wrote {BIG} waveforms")
    return d / "big.h5"


def _interrupt(tmp_path, big, sig, after=0.2, preexec_fn=None):
    """Signals kpl `after` s after its partial output appeared (Kokkos' and a
    GPU's start-up take a machine-dependent time before that)."""
    out = tmp_path / "out.h5"
    p = subprocess.Popen([KPL, "deconv", "--input", str(big), "--output", str(out), "--memory-budget", "2mb"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec_fn)
    deadline = time.monotonic() + 30
    while not glob.glob(str(out) + ".partial-*") and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(after)
    assert p.poll() is None, "kpl finished before the signal; the input is too small for this machine"
    partial_seen = bool(glob.glob(str(out) + ".partial-*"))
    p.send_signal(sig)
    try:
        stdout, stderr = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"kpl did not stop within 30 s of {sig.name}")
    return p.returncode, stdout.decode(), stderr.decode(), out, partial_seen


def _assert_clean(out):
    assert not os.path.lexists(out), "output file left after a signal"
    left = glob.glob(str(out) + ".partial-*")
    assert not left, f"partial output left after a signal: {left}"


def _assert_kept(out, err):
    """The interrupted deconv's partial file, and only it, is there and named."""
    assert not os.path.lexists(out), "output file left after a signal"
    left = glob.glob(str(out) + ".partial-*")
    assert len(left) == 1 and re.fullmatch(r".*out\.h5\.partial-\d+", left[0]), left
    assert re.search(r"interrupted; the partial output is kept as '[^']*out\.h5\.partial-\d+' "
                     r"\(--resume goes on from it; a run without --resume removes it\)", err), err
    return left[0]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_signal_exit_status_and_kept_partial(tmp_path, big_deconv, sig):
    rc, out_text, err, out, partial_seen = _interrupt(tmp_path, big_deconv, sig)
    assert rc == 128 + sig, f"expected exit {128 + sig} after {sig.name}, got {rc}; stderr: {err!r}"
    assert out_text == ""
    assert partial_seen, "no partial file was being written when the signal came (test not meaningful)"
    kept = _assert_kept(out, err)
    # A run without --resume starts again and removes it.
    res = run_kpl("deconv", "--input", big_deconv, "--output", out, "--memory-budget", "64mb",
                  "--max-iterations", "1")  # quick: the files are what is tested
    check(res, 0, r"removed '.*" + re.escape(os.path.basename(kept)) + r"', left by an interrupted run")
    assert os.path.exists(out) and not glob.glob(str(out) + ".partial-*")


# The other signals whose default action ends a process are handled the
# same way: exit 128 + n, no output.
@pytest.mark.parametrize("sig", [signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM, signal.SIGPIPE],
                         ids=lambda s: s.name)
def test_other_terminating_signals(tmp_path, big_deconv, sig):
    rc, _, err, out, _ = _interrupt(tmp_path, big_deconv, sig)
    assert rc == 128 + sig, f"expected exit {128 + sig} after {sig.name}, got {rc}; stderr: {err!r}"
    _assert_kept(out, err)


@pytest.fixture(scope="module")
def resumable(tmp_path_factory):
    """2000 waveforms in chunks of 7: a run long enough to interrupt when its
    partial file says so, short enough under the sanitizers; with the output
    of a run that was never interrupted."""
    d = tmp_path_factory.mktemp("resumable")
    check(run_kpl("simulate", "deconv", "--waveforms", RESUMABLE, "--samples", 432, "--seed", 5,
                  "--output", d / "in.h5"), 0, rf"wrote {RESUMABLE} waveforms")
    check(run_kpl("deconv", "--input", d / "in.h5", "--output", d / "whole.h5",
                  "--memory-budget", "2mb", timeout=300), 0, rf"{RESUMABLE} converged")
    return d / "in.h5", datasets(d / "whole.h5")


def _interrupt_when(out, source, sig, ready):
    """Runs kpl deconv and sends `sig` once its partial file (as its last
    flush left it) has attributes for which ready(attrs) holds."""
    p = subprocess.Popen([KPL, "deconv", "--input", str(source), "--output", str(out),
                          "--memory-budget", "2mb"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    seen = False
    while not seen and p.poll() is None and time.monotonic() < deadline:
        for partial in glob.glob(str(out) + ".partial-*"):
            try:  # the file kpl is writing, read without HDF5's lock
                with h5py.File(partial, "r", locking=False) as f:
                    seen = ready(dict(f.attrs))
            except (OSError, KeyError):
                pass
        time.sleep(0.02)
    assert seen and p.poll() is None, "the moment to interrupt never came (test not meaningful)"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode in (128 + sig, -sig), f"status {p.returncode}, stderr {err!r}"
    assert len(glob.glob(str(out) + ".partial-*")) == 1


def _resume_and_compare(out, source, whole):
    res = run_kpl("deconv", "--input", source, "--output", out, "--memory-budget", "2mb",
                  "--resume", timeout=300)
    check(res, 0, r"resumed an interrupted run: [1-9]\d* waveforms were already written")
    assert not glob.glob(str(out) + ".partial-*")
    resumed = datasets(out)
    assert sorted(resumed) == sorted(whole)
    for name, values in whole.items():
        assert resumed[name].tobytes() == values.tobytes(), f"/{name} differs after --resume"


# --resume after a signal (a clean stop) and after SIGKILL (as a crash: no
# handler runs, the file is as its last flush left it): the same datasets,
# bit for bit, as a run that was never interrupted, and the resumed run says
# how many waveforms it took over.
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_resume_gives_the_uninterrupted_output(tmp_path, resumable, sig):
    source, whole = resumable
    out = tmp_path / "out.h5"
    _interrupt_when(out, source, sig, lambda attrs: attrs["chunks_written"] >= 40)
    _resume_and_compare(out, source, whole)


def test_resume_finds_the_returns_not_yet_stored(tmp_path, resumable):
    """Returns are stored a whole compressed chunk at a time; those of the
    chunks written since are found again from the partial file's x by the
    resumed run. Killed once a chunk of returns is stored and more are
    pending, the resumed output is still the uninterrupted one."""
    source, whole = resumable
    out = tmp_path / "out.h5"
    _interrupt_when(out, source, signal.SIGKILL,
                    lambda a: 0 < a["returns_stored"] < a["returns_written"])
    _resume_and_compare(out, source, whole)


def test_resume_of_other_options_starts_again(tmp_path, resumable):
    """A partial file made with other options is not resumed: the run starts
    again (and says so) rather than mixing two runs in one output."""
    source, whole = resumable
    out = tmp_path / "out.h5"
    _interrupt_when(out, source, signal.SIGTERM, lambda attrs: attrs["chunks_written"] >= 10)
    kept = glob.glob(str(out) + ".partial-*")[0]
    res = run_kpl("deconv", "--input", source, "--output", out, "--memory-budget", "2mb",
                  "--resume", "--return-threshold", "2.5", timeout=300)
    check(res, 0, r"--resume: '[^']*" + re.escape(os.path.basename(kept)) +
          r"' was made by another input or other options; removed it\n"
          r".*--resume: no interrupted run of '[^']*out\.h5' to go on from; starting again")
    assert "resumed an interrupted run" not in res[2]
    assert not glob.glob(str(out) + ".partial-*")
    for name in ("x", "fit", "status"):
        assert datasets(out)[name].tobytes() == whole[name].tobytes()


def test_resume_without_an_interrupted_run_starts_fresh(tmp_path, big_deconv):
    out = tmp_path / "fresh.h5"
    res = run_kpl("deconv", "--input", big_deconv, "--output", out, "--memory-budget", "64mb",
                  "--resume", "--max-iterations", "1")
    check(res, 0, r"--resume: no interrupted run of '[^']*fresh\.h5' to go on from; starting again")
    assert os.path.exists(out)


def test_sigkill_leftover_removed_by_next_run(tmp_path, big_deconv):
    """SIGKILL cannot be caught: the next run on the same output cleans up."""
    rc, _, _, out, _ = _interrupt(tmp_path, big_deconv, signal.SIGKILL)
    assert rc == -signal.SIGKILL
    left = glob.glob(str(out) + ".partial-*")
    assert left, "expected the killed run's partial file"
    res = run_kpl("simulate", "gam", "--n", 20, "--p", 2, "--informative", 1, "--output", out)
    check(res, 0, r"removed '.*out\.h5\.partial-\d+', left by an interrupted run")
    assert not glob.glob(str(out) + ".partial-*")


# Exceeding RLIMIT_FSIZE raises SIGXFSZ: handled like SIGTERM.
def test_file_size_limit_default_sigxfsz(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
    res = run_kpl("simulate", "deconv", "--waveforms", 1000, "--output", tmp_path / "out.h5", preexec_fn=limit)
    assert res[0] == 128 + signal.SIGXFSZ, f"status {res[0]}, stderr {res[2]!r}"
    _assert_clean(tmp_path / "out.h5")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_signal_during_gam_fit(tmp_path, sig):
    check(run_kpl("simulate", "gam", "--n", 20000, "--p", 20, "--informative", 5, "--output",
                  tmp_path / "in.h5"), 0, r"wrote 20000 x 20")
    out = tmp_path / "model.h5"
    p = subprocess.Popen([KPL, "gam", "fit", "--input", str(tmp_path / "in.h5"), "--output", str(out),
                          "--mstop", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)
    assert p.poll() is None, "gam fit finished before the signal"
    p.send_signal(sig)
    try:
        stdout, stderr = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"kpl gam fit did not stop within 30 s of {sig.name}")
    assert p.returncode == 128 + sig, f"exit {p.returncode}; stderr {stderr.decode()!r}"
    assert stdout == b""
    _assert_clean(out)

