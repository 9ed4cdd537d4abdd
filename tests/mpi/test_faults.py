"""Faults of one rank in kpl deconv and kpl nnls under mpiexec: a rank that
cannot open its input, a rank whose copy of the input holds a NaN, a rank
killed mid-run. Every time mpiexec exits non-zero (with the exit status one
process gives for the same fault), kpl's message appears once, and nothing
is left under the output's name, partial files included.
"""
import os
import pathlib
import shutil
import signal
import subprocess
import time

import h5py
import pytest

from conftest import INPUTS, mpi_command, mpi_environment, no_partials, run_kpl, run_mpmd

GOOD = {"deconv": INPUTS / "deconv_lvis_small.h5", "nnls": INPUTS / "nnls_gauss_small.h5"}
EXIT_BAD_INPUT = 2


def assert_failed_once(tmp_path, status, err, output, expected_status, *words):
    assert status == expected_status, err
    messages = [line for line in err.splitlines() if line.startswith("kpl: ")]
    assert len(messages) == 1, err
    for word in words:
        assert word in messages[0], err
    assert not output.exists()
    no_partials(tmp_path)


def alone_status(command, input_path, output):
    """The exit status of one process given the faulty input."""
    status, _, _ = run_kpl(0, command, "--input", input_path, "--output", output)
    assert not output.exists()
    return status


def not_hdf5(tmp_path):
    path = tmp_path / "not_hdf5.h5"
    path.write_text("not an HDF5 file\n")
    return path


# ------------------------------------------------- a rank cannot open its input

@pytest.mark.parametrize("command", ["deconv", "nnls"])
@pytest.mark.parametrize("kind", ["missing", "not_hdf5"])
def test_one_rank_cannot_open_its_input(tmp_path, command, kind):
    bad = tmp_path / "missing.h5" if kind == "missing" else not_hdf5(tmp_path)
    output = tmp_path / "out.h5"
    expected = alone_status(command, bad, output)
    assert expected == EXIT_BAD_INPUT
    status, _, err = run_mpmd([[command, "--input", GOOD[command], "--output", output],
                               [command, "--input", bad, "--output", output]])
    assert_failed_once(tmp_path, status, err, output, expected, bad.name, "(on process 1)")


def test_last_of_three_ranks_cannot_open_its_input(tmp_path):
    output, bad = tmp_path / "out.h5", tmp_path / "missing.h5"
    good = ["deconv", "--input", GOOD["deconv"], "--output", output]
    status, _, err = run_mpmd([good, good, ["deconv", "--input", bad, "--output", output]])
    assert_failed_once(tmp_path, status, err, output, EXIT_BAD_INPUT, bad.name, "(on process 2)")


@pytest.mark.parametrize("command", ["deconv", "nnls"])
def test_one_rank_given_another_input(tmp_path, command):
    """A valid input of another shape on rank 1: the processes would write
    one output inconsistently, so they refuse it together."""
    other = tmp_path / "other.h5"
    with h5py.File(GOOD[command], "r") as source, h5py.File(other, "w") as f:
        for name in source:  # half the systems; a shared /A as it is
            data = source[name][()]
            f[name] = data if name == "A" else data[: data.shape[0] // 2]
    output = tmp_path / "out.h5"
    status, _, err = run_mpmd([[command, "--input", GOOD[command], "--output", output],
                               [command, "--input", other, "--output", output]])
    assert_failed_once(tmp_path, status, err, output, EXIT_BAD_INPUT,
                       "do not all see the same input")


# ------------------------------------------------- a bad file on one rank only

def copy_with_nan(tmp_path, command):
    """The shipped input with a NaN in the last system: in the block that
    rank 1 of 2 checks before anything is solved."""
    bad = tmp_path / "nan.h5"
    shutil.copy(GOOD[command], bad)
    with h5py.File(bad, "r+") as f:
        dataset = f["waveforms" if command == "deconv" else "b"]
        dataset[dataset.shape[0] - 1, 7] = float("nan")
    return bad


@pytest.mark.parametrize("command", ["deconv", "nnls"])
def test_nan_in_the_copy_of_one_rank(tmp_path, command):
    bad, output = copy_with_nan(tmp_path, command), tmp_path / "out.h5"
    expected = alone_status(command, bad, output)
    assert expected == EXIT_BAD_INPUT
    status, _, err = run_mpmd([[command, "--input", GOOD[command], "--output", output],
                               [command, "--input", bad, "--output", output]])
    assert_failed_once(tmp_path, status, err, output, expected, bad.name, "NaN or Inf",
                       "(on process 1)")


def test_nan_met_mid_run_with_collective_io(tmp_path):
    """--collective-io deals chunk 1 (waveforms 3-5 at a budget of 1MB) to
    rank 1, whose copy has a NaN there, outside the half it checks before
    solving: it fails in round 1 and takes part in the remaining rounds'
    collective writes with no rows, so rank 0 finishes them; then both exit
    with the error, and nothing is left behind."""
    bad, output = tmp_path / "nan.h5", tmp_path / "out.h5"
    shutil.copy(GOOD["deconv"], bad)
    with h5py.File(bad, "r+") as f:
        f["waveforms"][4, 7] = float("nan")
    options = ["--memory-budget", "1MB", "--collective-io"]
    status, _, err = run_mpmd([["deconv", "--input", GOOD["deconv"], "--output", output, *options],
                               ["deconv", "--input", bad, "--output", output, *options]])
    assert_failed_once(tmp_path, status, err, output, EXIT_BAD_INPUT, bad.name, "NaN or Inf",
                       "(on process 1)")


# ------------------------------------------------- a rank killed mid-run

def kpl_processes(unique):
    """Process ids of the kpl ranks whose command line names `unique`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = pathlib.Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"kpl") and unique.encode() in argv:
            found.append(int(entry))
    return found


def wait_for_partial(output, launched, limit=60):
    """The run's partial file, output.partial-<pid>. Not the files that MPI-IO
    may create beside it for a moment (OpenMPI's lock test: <partial>.locktest.<n>)."""
    deadline = time.time() + limit
    while time.time() < deadline:
        partials = [path for path in output.parent.glob(output.name + ".partial-*")
                    if path.name.rsplit("-", 1)[1].isdigit()]
        if partials:
            return partials[0]
        assert launched.poll() is None, "the run ended before its partial file appeared"
        time.sleep(0.02)
    pytest.fail(f"no partial file of {output} within {limit} s")


@pytest.mark.parametrize("victim", ["rank0", "rank1"])
def test_rank_killed_mid_run(tmp_path, victim):
    """Rank 0 names the partial file after its process; the other rank's
    SIGTERM handler (mpiexec ends the survivors with SIGTERM, then SIGKILL)
    removes it."""
    big = tmp_path / "big.h5"
    status, _, err = run_kpl(0, "simulate", "deconv", "--waveforms", 8000, "--samples", 432,
                             "--output", big)
    assert status == 0, err
    output = tmp_path / f"killed-{os.getpid()}-{victim}.h5"
    launched = subprocess.Popen(mpi_command(2, "deconv", "--input", big, "--output", output),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=mpi_environment())
    try:
        partial = wait_for_partial(output, launched)
        leader = int(partial.name.rsplit("-", 1)[1])
        ranks = kpl_processes(str(output))
        assert len(ranks) == 2 and leader in ranks, ranks
        os.kill(leader if victim == "rank0" else next(p for p in ranks if p != leader),
                signal.SIGKILL)
        assert not output.exists(), "the run ended before the kill: make the input larger"
        _, err = launched.communicate(timeout=60)
    finally:
        if launched.poll() is None:
            launched.kill()
            launched.wait()
    assert launched.returncode != 0, err
    assert not output.exists()
    no_partials(tmp_path)
