"""Case 9: jobs that cannot fit in memory or on disk fail at once with exit 4 and a
message giving the bytes needed and available; nothing is written."""
import os
import resource
import signal
import time

import h5py
import pytest

from conftest import INPUTS, assert_no_output, check, run_kpl

BYTES = r"\((\d+) bytes\).*\((\d+) bytes\)"


def test_simulate_larger_than_disk(run, tmp_path):
    t0 = time.time()
    res = run("simulate", "deconv", "--waveforms", "100000000000", "--samples", "1000", "--output", "out.h5")
    check(res, 4, r"kpl: .*simulate deconv writes about .*" + BYTES + r" are free")
    assert time.time() - t0 < 10
    assert_no_output(tmp_path / "out.h5")


def _huge(path, **shapes):
    with h5py.File(path, "w") as f:
        for name, shape in shapes.items():
            f.create_dataset(name, shape=shape, dtype="f8", chunks=tuple(min(s, 1024) for s in shape))
    return path


def test_deconv_output_larger_than_disk(run, tmp_path, h5):
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("waveforms", shape=(2 ** 34, 432), dtype="f8", chunks=(1, 432))
        f["pulse"] = [0.5, 1.0, 0.5]
    res = run("deconv", "--input", "in.h5", "--output", "out.h5")
    check(res, 4, r"kpl: .*deconv on 'in\.h5' writes about .*" + BYTES + r" are free")
    assert_no_output(tmp_path / "out.h5")


def test_nnls_needs_more_memory_than_machine(run, tmp_path):
    _huge(tmp_path / "in.h5", A=(2 ** 20, 2 ** 20), b=(2 ** 20,))
    res = run("nnls", "--input", "in.h5", "--output", "out.h5")
    check(res, 4, r"kpl: .*nnls on 'in\.h5' needs .*" + BYTES + r" are available")
    assert_no_output(tmp_path / "out.h5")


def test_gam_fit_needs_more_memory_than_machine(run, tmp_path):
    _huge(tmp_path / "in.h5", X=(2 ** 36, 4), y=(2 ** 36,))
    res = run("gam", "fit", "--input", "in.h5", "--output", "out.h5")
    check(res, 4, r"kpl: .*gam fit on 'in\.h5' needs .*" + BYTES + r" are available")
    assert_no_output(tmp_path / "out.h5")


def test_gam_predict_needs_more_memory_than_machine(run, tmp_path, gam_model):
    _huge(tmp_path / "x.h5", X=(2 ** 36, 3))
    res = run("gam", "predict", "--model", gam_model, "--input", "x.h5", "--output", "out.h5")
    assert res[0] in (2, 4), res
    check(res, res[0], r"x\.h5.*\d+ bytes")
    assert_no_output(tmp_path / "out.h5")


@pytest.mark.skipif("address" in os.environ.get("KPL_SANITIZERS", ""),
                    reason="AddressSanitizer reserves terabytes of address space for its shadow "
                           "memory, so no process starts under RLIMIT_AS (the plain build runs this)")
def test_nnls_under_address_space_limit(run, tmp_path):
    """A 512 MB /A (fits the machine) under a 1 GiB RLIMIT_AS: exit 4 with the bytes
    needed and available (the pre-flight check should honour the process' limit)."""
    _huge(tmp_path / "in.h5", A=(8000, 8000), b=(8000,))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    res = run("nnls", "--input", "in.h5", "--output", "out.h5", preexec_fn=limit)
    if "default execution space  Cuda" in run("info")[1]:
        # CUDA itself cannot start within 1 GiB of address space.
        check(res, 4, r"kpl: error: .*(out of memory|cudaErrorMemoryAllocation)")
    else:
        check(res, 4, r"kpl: .*in\.h5.*" + BYTES)
    assert_no_output(tmp_path / "out.h5")


@pytest.mark.parametrize("cmd", ["deconv", "simulate"])
def test_disk_full_while_writing(run, tmp_path, cmd):
    """RLIMIT_FSIZE with SIGXFSZ ignored: writes fail with EFBIG mid-run -> exit 4, no output."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if cmd == "deconv":
        res = run("deconv", "--input", str(INPUTS / "deconv_lvis_small.h5"), "--output", "out.h5", preexec_fn=limit)
    else:
        res = run("simulate", "deconv", "--waveforms", "1000", "--output", "out.h5", preexec_fn=limit)
    check(res, 4, r"kpl: .*cannot write 'out\.h5'.*(disk full|File too large|space)")
    assert_no_output(tmp_path / "out.h5")
