"""kpl.deconvolve against `kpl deconv` on the same waveforms: bit for bit
(each waveform's solve depends on it alone, not on the chunk the command line
put it in)."""
import numpy as np
import pytest

import kpl
from conftest import REPO, assert_same, read_h5

FIELDS = ("x", "fit", "rnorm", "iterations", "status", "kkt_residual")


@pytest.fixture(scope="module")
def lvis():
    data = read_h5(REPO / "inputs" / "deconv_lvis_small.h5")
    return data["pulse"][:40], data["waveforms"][:40]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("origin", ["start", "center"])
def test_pulse_per_waveform_equals_the_cli(cli, lvis, dtype, origin):
    pulse, waveforms = (array.astype(dtype) for array in lvis)
    ours = kpl.deconvolve(pulse, waveforms, pulse_origin=origin)
    theirs = cli("deconv", {"pulse": pulse, "waveforms": waveforms}, "--pulse-origin", origin,
                 "--precision", "float" if dtype == np.float32 else "double",
                 "--memory-budget", "1MiB")  # several chunks
    assert_same(ours, theirs, FIELDS)
    assert np.all(ours.status == 0)
    # A x is the fit: the pulse placed at every return, as the Toeplitz model says.
    w = 3
    length = pulse.shape[1]
    shift = 0 if origin == "start" else length // 2
    full = np.convolve(ours.x[w].astype(np.float64), pulse[w].astype(np.float64))
    expected = full[shift:shift + waveforms.shape[1]]
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    assert np.allclose(ours.fit[w], expected, rtol=0, atol=tolerance * np.abs(expected).max())


def test_shared_pulse_equals_the_cli(cli, lvis):
    pulse, waveforms = lvis
    ours = kpl.deconvolve(pulse[0], waveforms, max_passive=16)
    theirs = cli("deconv", {"pulse": pulse[0], "waveforms": waveforms}, "--max-passive", 16)
    assert_same(ours, theirs, FIELDS)


def test_one_waveform_gives_its_values(lvis):
    pulse, waveforms = lvis
    batch = kpl.deconvolve(pulse[:2], waveforms[:2])
    one = kpl.deconvolve(pulse[1], waveforms[1])
    assert one.x.shape == (waveforms.shape[1],)
    assert np.array_equal(one.x, batch.x[1]) and one.rnorm == batch.rnorm[1]
