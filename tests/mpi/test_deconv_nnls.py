"""kpl deconv and kpl nnls under mpiexec -n 1, 2, 3: the output file is the
one process's (kpl without a launcher), bit for bit, on the shipped inputs
and on inputs made here whose systems do not divide evenly over the ranks,
with fewer systems than ranks, in float and double, with a pulse per
waveform and a shared one, and in many small chunks. Where a run could go
wrong by grouping systems differently (the passive-cap retries of deconv,
the gradient nnls picks from the number of systems), the test first shows
that the input exercises it.
"""
import re
import shutil

import h5py
import numpy as np
import pytest

from conftest import INPUTS, REPO, no_partials, run_kpl, run_mpmd, same_file

RANKS = [1, 2, 3]
# The only attributes that may differ between rank counts: several chunks per
# rank, and the storage (one process compresses by default, several cannot).
CHUNK_ATTRIBUTE = ("waveforms_per_chunk", "deflate_level")


def run_ok(ranks, *args):
    status, out, err = run_kpl(ranks, *args)
    assert status == 0, f"ranks={ranks}: status {status}\n{err}"
    return err


def compare_with_one_process(tmp_path, command, input_path, *options, ranks):
    """Runs `command` without a launcher and under mpiexec -n ranks; returns
    the launched run's stderr after comparing the files."""
    alone, launched = tmp_path / "alone.h5", tmp_path / f"ranks{ranks}.h5"
    run_ok(0, command, "--input", input_path, "--output", alone, *options)
    err = run_ok(ranks, command, "--input", input_path, "--output", launched, *options)
    same_file(alone, launched, except_attributes=CHUNK_ATTRIBUTE)
    no_partials(tmp_path)
    return err


# ------------------------------------------------------------------ inputs

def write_deconv(path, waveforms, pulse):
    with h5py.File(path, "w") as f:
        f["waveforms"] = waveforms
        f["pulse"] = pulse


def sparse_and_dense_waveforms(count, samples, seed, per_waveform_pulse):
    """Every third waveform dense (a return at nearly every sample: its passive
    set grows past the first cap of 64, so it is retried at 128 and m), the
    others a few returns with noise."""
    rng = np.random.default_rng(seed)
    pulses = rng.uniform(0.2, 1.0, (count, 5)) if per_waveform_pulse else np.array([1.0, 0.6, 0.3])
    waveforms = np.empty((count, samples))
    for w in range(count):
        if w % 3 == 0:
            x = rng.uniform(0.1, 1.0, samples)
        else:
            x = np.zeros(samples)
            x[rng.integers(0, samples, 3)] = rng.uniform(0.2, 1.0, 3)
        pulse = pulses[w] if per_waveform_pulse else pulses
        waveforms[w] = np.convolve(x, pulse)[:samples] + 1e-3 * rng.standard_normal(samples)
    return waveforms, pulses


def write_nnls(path, A, b):
    with h5py.File(path, "w") as f:
        f["A"] = A
        f["b"] = b


def shared_matrix_batch(systems, rows, columns, seed=0):
    """A shared A whose columns come in pairs equal but for rounding-level
    differences: the gradient's entries of a pair nearly tie, and the two
    ways of computing it (from the residual, from cross products) break the
    tie differently, so the choice between them shows in the bits."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((rows, columns))
    for j in range(0, columns - 1, 2):
        A[:, j + 1] = A[:, j] * (1 + 1e-13 * rng.standard_normal(rows))
    x = np.maximum(rng.standard_normal((systems, columns)), 0)
    b = x @ A.T + 0.1 * rng.standard_normal((systems, rows))
    return A, b


# ------------------------------------------------------------------ deconv

@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("precision", ["double", "float"])
def test_deconv_shipped_input(tmp_path, ranks, precision):
    compare_with_one_process(tmp_path, "deconv", INPUTS / "deconv_lvis_small.h5",
                             "--precision", precision, ranks=ranks)


@pytest.mark.parametrize("ranks", RANKS)
def test_deconv_shipped_input_many_chunks(tmp_path, ranks):
    # About 3 waveforms per chunk: 100 waveforms in some 34 chunks.
    compare_with_one_process(tmp_path, "deconv", INPUTS / "deconv_lvis_small.h5",
                             "--memory-budget", "1MB", ranks=ranks)


@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("per_waveform_pulse", [True, False], ids=["own_pulse", "shared_pulse"])
@pytest.mark.parametrize("precision", ["double", "float"])
@pytest.mark.parametrize("count", [2, 7, 23])
def test_deconv_uneven_batches_with_retries(tmp_path, ranks, per_waveform_pulse, precision, count):
    """7 and 23 waveforms divide evenly over no rank count but 1; 2 leaves a
    rank of 3 with nothing to do. A budget of a few waveforms per chunk puts
    dense (retried) and sparse waveforms together, grouped differently at
    each rank count."""
    waveforms, pulses = sparse_and_dense_waveforms(count, 150, count, per_waveform_pulse)
    write_deconv(tmp_path / "in.h5", waveforms, pulses)
    err = compare_with_one_process(tmp_path, "deconv", tmp_path / "in.h5", "--precision",
                                   precision, "--memory-budget", "400KB", ranks=ranks)
    if ranks > count:
        assert re.search(r"; 0-1 waveforms each", err), err
    with h5py.File(tmp_path / "alone.h5", "r") as f:
        # The input exercises the retries: a passive set beyond the first cap.
        assert (f["x"][()] > 0).sum(axis=1).max() > 64
        assert (f["status"][()] == 0).all()


@pytest.mark.parametrize("ranks", [2, 3])
def test_deconv_summary_once_with_ranks_and_imbalance(tmp_path, ranks):
    err = compare_with_one_process(tmp_path, "deconv", INPUTS / "deconv_lvis_small.h5",
                                   "--memory-budget", "20MB", ranks=ranks)
    balance = re.findall(r"kpl deconv: (\d+) processes: solving ([\d.e+-]+) s max, "
                         r"([\d.e+-]+) s mean per process \(imbalance ([\d.]+)%\); "
                         r"(\d+)-(\d+) waveforms each", err)
    assert len(balance) == 1, err
    processes, busiest, mean, imbalance, fewest, most = balance[0]
    assert int(processes) == ranks
    assert float(busiest) >= float(mean) > 0
    # (the seconds are printed to 3 digits)
    assert float(imbalance) == pytest.approx(100 * (float(busiest) / float(mean) - 1), abs=1)
    assert 0 <= int(fewest) <= int(most) <= 100
    assert err.count("kpl deconv: 100 waveforms: 100 converged") == 1, err
    assert err.count("wrote ") == 1, err


@pytest.fixture(scope="module")
def lvis_input(tmp_path_factory):
    """An LVIS 1.04 file (scripts/make_lvis.py): returns, copied shot identity
    and geolocation, gathered over the ranks in shot order."""
    import subprocess
    import sys
    path = tmp_path_factory.mktemp("lvis") / "in.h5"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_lvis.py"), "--layout", "1.04",
                    "--shots", "37", "--seed", "4", "--output", str(path)], check=True)
    return path


@pytest.mark.parametrize("ranks", RANKS)
def test_deconv_lvis_returns_and_copies(tmp_path, ranks, lvis_input):
    # One process compresses by default and several cannot: compare equal storage.
    compare_with_one_process(tmp_path, "deconv", lvis_input, "--memory-budget", "3MB",
                             "--compression", "none", ranks=ranks)
    with h5py.File(tmp_path / f"ranks{ranks}.h5", "r") as f:
        assert f["returns/offsets"][-1] == len(f["returns/sample"]) > 37
        assert f["SHOTNUMBER"].dtype == np.uint32


@pytest.mark.parametrize("options, message", [
    (["--resume"], r"--resume: not on several processes"),
    (["--compression", "deflate"], r"--compression deflate: not on several processes"),
])
def test_deconv_one_process_options_refused_under_mpi(tmp_path, options, message):
    status, out, err = run_kpl(2, "deconv", "--input", INPUTS / "deconv_lvis_small.h5",
                               "--output", tmp_path / "out.h5", *options)
    assert status == 1, err
    assert len(re.findall(message, err)) == 1, err
    assert not (tmp_path / "out.h5").exists()
    no_partials(tmp_path)


def test_deconv_alone_prints_no_balance(tmp_path):
    err = run_ok(0, "deconv", "--input", INPUTS / "deconv_lvis_small.h5",
                 "--output", tmp_path / "out.h5")
    assert "processes:" not in err


# ------------------------------------------------------------------ nnls

@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("precision", ["double", "float"])
def test_nnls_shipped_input(tmp_path, ranks, precision):
    compare_with_one_process(tmp_path, "nnls", INPUTS / "nnls_gauss_small.h5",
                             "--precision", precision, ranks=ranks)


@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("precision", ["double", "float"])
@pytest.mark.parametrize("systems", [1, 2, 5, 13])
def test_nnls_shared_matrix_uneven(tmp_path, ranks, precision, systems):
    """5 systems over 3 ranks are chunks of one system each; the one process
    solves them in one call, which takes the gradient from cross products
    (two systems or more): the chunks must too."""
    A, b = shared_matrix_batch(systems, 40, 30)
    write_nnls(tmp_path / "in.h5", A, b)
    compare_with_one_process(tmp_path, "nnls", tmp_path / "in.h5", "--precision", precision,
                             ranks=ranks)


def test_nnls_gradients_differ_in_their_bits(tmp_path):
    """What makes test_nnls_shared_matrix_uneven able to fail: with the
    gradient from the residual (what a chunk of one system would choose on
    its own) the solution differs in its bits from the automatic choice."""
    A, b = shared_matrix_batch(5, 40, 30)
    write_nnls(tmp_path / "in.h5", A, b)
    for gradient in ["automatic", "residual"]:
        run_ok(0, "nnls", "--input", tmp_path / "in.h5", "--output", tmp_path / f"{gradient}.h5",
               "--gradient", gradient)
    with h5py.File(tmp_path / "automatic.h5", "r") as a, \
            h5py.File(tmp_path / "residual.h5", "r") as r:
        assert a.attrs["gradient"] == "automatic"
        assert a["x"][()].tobytes() != r["x"][()].tobytes()


@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("systems", [1, 4, 11])
def test_nnls_matrix_per_system(tmp_path, ranks, systems):
    rng = np.random.default_rng(systems)
    A = rng.standard_normal((systems, 25, 20))
    b = rng.standard_normal((systems, 25))
    write_nnls(tmp_path / "in.h5", A, b)
    compare_with_one_process(tmp_path, "nnls", tmp_path / "in.h5", ranks=ranks)


@pytest.mark.parametrize("ranks", RANKS)
def test_nnls_one_system_as_a_vector(tmp_path, ranks):
    A, b = shared_matrix_batch(1, 30, 20)
    write_nnls(tmp_path / "in.h5", A, b[0])
    compare_with_one_process(tmp_path, "nnls", tmp_path / "in.h5", ranks=ranks)


@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("gradient", ["residual", "cross-products"])
def test_nnls_gradient_given(tmp_path, ranks, gradient):
    A, b = shared_matrix_batch(7, 40, 30)
    write_nnls(tmp_path / "in.h5", A, b)
    compare_with_one_process(tmp_path, "nnls", tmp_path / "in.h5", "--gradient", gradient,
                             ranks=ranks)


@pytest.mark.parametrize("ranks", [2, 3])
def test_nnls_summary_once_with_ranks_and_imbalance(tmp_path, ranks):
    err = compare_with_one_process(tmp_path, "nnls", INPUTS / "nnls_gauss_small.h5", ranks=ranks)
    balance = re.findall(
        r"kpl nnls: (\d+) processes: .*imbalance [\d.]+%\); (\d+)-(\d+) systems each", err)
    assert balance == [(str(ranks), *balance[0][1:])], err
    fewest, most = int(balance[0][1]), int(balance[0][2])
    assert fewest <= most and fewest + most * (ranks - 1) >= 16
    assert err.count("kpl nnls: 16 systems: 16 converged") == 1, err


# ------------------------------------------------------------------ copies

@pytest.mark.parametrize("command", ["deconv", "nnls"])
def test_ranks_reading_copies_at_other_paths(tmp_path, command):
    """Ranks may read their own copy of the input (a node's local disk): the
    output is the one process's, its "input" attribute rank 0's path."""
    shipped = INPUTS / ("deconv_lvis_small.h5" if command == "deconv" else "nnls_gauss_small.h5")
    copy, alone, launched = tmp_path / "copy.h5", tmp_path / "alone.h5", tmp_path / "out.h5"
    shutil.copy(shipped, copy)
    run_ok(0, command, "--input", shipped, "--output", alone)
    status, _, err = run_mpmd([[command, "--input", path, "--output", launched]
                               for path in (shipped, copy, copy)])
    assert status == 0, err
    same_file(alone, launched, except_attributes=CHUNK_ATTRIBUTE)
    no_partials(tmp_path)


# ------------------------------------------------------------ collective I/O

@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("count", [2, 23])
def test_deconv_collective_io(tmp_path, ranks, count):
    """--collective-io: chunks dealt round-robin, each round's rows written in
    one collective MPI-IO call, a rank with no chunk left taking part with no
    rows (23 waveforms in chunks of a few leave the last round short; 2
    waveforms leave a rank of 3 with none at all). The file is still the one
    process's, bit for bit."""
    waveforms, pulses = sparse_and_dense_waveforms(count, 150, count, False)
    write_deconv(tmp_path / "in.h5", waveforms, pulses)
    err = compare_with_one_process(tmp_path, "deconv", tmp_path / "in.h5", "--memory-budget",
                                   "400KB", "--collective-io", ranks=ranks)
    if ranks > count:
        assert re.search(r"; 0-1 waveforms each", err), err


@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("systems", [1, 13])
def test_nnls_collective_io(tmp_path, ranks, systems):
    A, b = shared_matrix_batch(systems, 40, 30)
    write_nnls(tmp_path / "in.h5", A, b)
    compare_with_one_process(tmp_path, "nnls", tmp_path / "in.h5", "--collective-io", ranks=ranks)
    compare_with_one_process(tmp_path, "nnls", INPUTS / "nnls_gauss_small.h5", "--collective-io",
                             ranks=ranks)
