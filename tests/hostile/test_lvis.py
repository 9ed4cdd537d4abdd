"""kpl deconv on LVIS Level-1B files: files in each release's exact layout
(names, types, sizes) written by scripts/make_lvis.py with known returns, the
returns found where they are (elevation within half a sample), the shot
identity copied with its types, compressed and big-endian inputs read alike,
the output chunked and compressed, other layouts named with --dataset, and
every bad LVIS input refused by name with exit status 2."""
import os
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import REPO, check, datasets, run_kpl

MAKE_LVIS = REPO / "scripts" / "make_lvis.py"
# Under AddressSanitizer kpl solves some 50 times slower: one release, fewer
# shots (every release is run by the plain build's suite).
SANITIZED = "address" in os.environ.get("KPL_SANITIZERS", "")
SHOTS = 16 if SANITIZED else 60
# release, RXWAVE samples, the Z<last> it carries
RELEASES = [("1.04", 528), ("1.05", 432), ("1.05", 352), ("2.0", 1024), ("2.0", 1216)]
if SANITIZED:
    RELEASES = RELEASES[1:2]


def make_lvis(path, layout, *options, truth=None, shots=SHOTS, seed=11):
    argv = [sys.executable, str(MAKE_LVIS), "--layout", layout, "--shots", str(shots),
            "--seed", str(seed), "--output", str(path), *[str(o) for o in options]]
    if truth is not None:
        argv += ["--truth", str(truth)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return path


def deconv(tmp_path, source, *options, output="out.h5", status=0, err=r"converged"):
    res = run_kpl("deconv", "--input", source, "--output", tmp_path / output, *options,
                  cwd=tmp_path, timeout=300)
    check(res, status, err)
    return tmp_path / output


@pytest.fixture(scope="module", params=RELEASES, ids=lambda r: f"{r[0]}-{r[1]}")
def release(request, tmp_path_factory):
    layout, samples = request.param
    d = tmp_path_factory.mktemp(f"lvis{layout}-{samples}")
    extra = ["--rx-samples", samples] if layout in ("1.05", "2.0") else []
    source = make_lvis(d / "in.h5", layout, *extra, truth=d / "truth.h5")
    out = deconv(d, source)
    return dict(layout=layout, samples=samples, dir=d, input=source, truth=d / "truth.h5",
                output=out)


def test_layout_is_the_release_s(release):
    """The generated file really is the layout: capitals at the root, the
    sample counts and the Z<last> the release documents."""
    last = release["samples"] - 1
    with h5py.File(release["input"], "r") as f:
        assert f["RXWAVE"].shape == (SHOTS, release["samples"])
        assert f["RXWAVE"].dtype.kind == "u" and f["TXWAVE"].dtype.kind == "u"
        assert f["TXWAVE"].shape[1] in (80, 120, 128)
        for name in ("SHOTNUMBER", "LFID", "TIME", "SIGMEAN", "Z0", f"Z{last}", f"LON{last}",
                     f"LAT{last}", "AZIMUTH", "INCIDENTANGLE", "RANGE"):
            assert f[name].shape == (SHOTS,), name


def matched(truth_samples, found_samples):
    """For each true return, the nearest found one's index (or -1)."""
    if len(found_samples) == 0:
        return np.full(len(truth_samples), -1)
    return np.abs(found_samples[None, :] - truth_samples[:, None]).argmin(axis=1)


def one_return_noise(txwave, rnorm, samples):
    """The energy noise gives one return, per shot (the README's definition,
    written again here): (rnorm / sqrt(m)) / ||pulse|| with the pulse TXWAVE
    less the mean of its first 8 samples, clipped at 0, at unit area."""
    pulse = np.maximum(txwave - txwave[:, :8].mean(axis=1, keepdims=True), 0)
    pulse /= pulse.sum(axis=1, keepdims=True)
    return rnorm / np.sqrt(samples) / np.sqrt((pulse ** 2).sum(axis=1))


def nearby_energy(truth_samples, found_samples, found_energy, radius=3):
    """For each true return, the energy of the returns found within `radius`
    samples and their energy-weighted centroid: one echo's energy, wherever
    the solver split it."""
    energy, centroid = [], []
    for sample in truth_samples:
        near = np.abs(found_samples - sample) <= radius
        total = found_energy[near].sum()
        energy.append(total)
        centroid.append((found_samples[near] * found_energy[near]).sum() / total if total else np.inf)
    return np.array(energy), np.array(centroid)


def test_returns_are_where_the_echoes_are(release):
    """Every true return comes back within half a sample of where its echo
    peaks, in samples and in elevation; few and weak runs are found beside
    them (noise fitted next to a strong echo)."""
    last = release["samples"] - 1
    with h5py.File(release["truth"], "r") as t, h5py.File(release["output"], "r") as o, \
            h5py.File(release["input"], "r") as i:
        t_off, t_sample, t_elev, t_energy = (t[k][()] for k in ("offsets", "sample", "elevation",
                                                                 "energy"))
        r = o["returns"]
        o_off, o_sample, o_elev, o_energy = (r[k][()] for k in ("offsets", "sample", "elevation",
                                                                 "energy"))
        half_sample = 0.5 * np.abs(i[f"Z{last}"][()].astype(float) - i["Z0"][()]) / last
        assert o.attrs["layout"] == "lvis"
        noise = one_return_noise(i["TXWAVE"][()].astype(float), o["rnorm"][()], release["samples"])
    assert o_off.shape == (SHOTS + 1,) and o_off[0] == 0 and o_off[-1] == len(o_sample)
    assert np.all(np.diff(o_off) >= 0)
    extra_energy = 0.0
    for w in range(SHOTS):
        truth = slice(t_off[w], t_off[w + 1])
        found = slice(o_off[w], o_off[w + 1])
        nearest = matched(t_sample[truth], o_sample[found])
        assert np.all(nearest >= 0), f"shot {w}: no return found"
        assert np.all(np.abs(o_sample[found][nearest] - t_sample[truth]) <= 0.5), f"shot {w}"
        assert np.all(np.abs(o_elev[found][nearest] - t_elev[truth]) <= half_sample[w]), f"shot {w}"
        energy, _ = nearby_energy(t_sample[truth], o_sample[found], o_energy[found])
        assert np.allclose(energy, t_energy[truth], rtol=0.05, atol=10 * noise[w]), f"shot {w}"
        unmatched = np.setdiff1d(np.arange(found.stop - found.start), nearest)
        extra_energy += o_energy[found][unmatched].sum()
        assert np.all((o_sample[found] >= 0) & (o_sample[found] <= last))
    assert extra_energy < 0.03 * t_energy.sum()
    assert len(o_sample) - len(t_sample) < 0.15 * len(t_sample)


def test_shot_identity_is_copied_with_its_types(release):
    last = release["samples"] - 1
    with h5py.File(release["input"], "r") as i, h5py.File(release["output"], "r") as o:
        for name in ("SHOTNUMBER", "LFID", "TIME", "LON0", "LAT0", "Z0", f"LON{last}",
                     f"LAT{last}", f"Z{last}"):
            assert o[name].dtype == i[name].dtype, name
            assert np.array_equal(o[name][()], i[name][()]), name
            assert o[name].chunks is not None and o[name].compression == "gzip", name
        for name in ("RXWAVE", "TXWAVE", "SIGMEAN", "AZIMUTH"):
            assert name not in o


def test_outputs_are_chunked_along_shots_and_compressed(release):
    with h5py.File(release["output"], "r") as o:
        for name in ("x", "fit", "rnorm", "iterations", "status", "kkt_residual",
                     "returns/offsets", "returns/sample", "returns/elevation", "returns/energy"):
            d = o[name]
            assert d.chunks is not None and d.chunks[1:] == d.shape[1:], name
            assert d.compression == "gzip" and d.shuffle, name
        assert o["x"].chunks[0] * o["x"].shape[1] * o["x"].dtype.itemsize <= 1 << 20


def test_compression_none_gives_the_same_numbers(release, tmp_path):
    plain = deconv(tmp_path, release["input"], "--compression", "none")
    a, b = datasets(release["output"]), datasets(plain)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].tobytes() == b[name].tobytes(), name
    with h5py.File(plain, "r") as o:
        assert o["x"].compression is None and o.attrs["deflate_level"] == 0
    assert os.path.getsize(plain) > 1.5 * os.path.getsize(release["output"])


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("small")
    source = make_lvis(d / "in.h5", "1.04", truth=d / "truth.h5", shots=60)
    return dict(dir=d, input=source, output=deconv(d, source))


@pytest.mark.parametrize("variant", [["--compression", "gzip", "--chunk-shots", "7"],
                                     ["--big-endian"]], ids=["gzip-chunked", "big-endian"])
def test_compressed_and_big_endian_inputs_read_alike(small, tmp_path, variant):
    source = make_lvis(tmp_path / "in.h5", "1.04", *variant, shots=60)
    out = deconv(tmp_path, source, "--memory-budget", "1mb")
    a, b = datasets(small["output"]), datasets(out)
    for name in ("x", "fit", "rnorm", "status", "returns/sample", "returns/elevation"):
        assert a[name].tobytes() == b[name].tobytes(), name


def test_float_precision_finds_the_echoes(small, tmp_path):
    """In float the solver stops sooner (its tolerances scale with float's
    epsilon) and may split an echo into runs a sample apart: the energy and
    centroid of what it finds around each echo are the echo's."""
    out = deconv(tmp_path, small["input"], "--precision", "float")
    found = datasets(out)
    assert found["x"].dtype == np.float32
    with h5py.File(small["dir"] / "truth.h5", "r") as t:
        t_off, t_sample, t_energy = t["offsets"][()], t["sample"][()], t["energy"][()]
    off, sample, energy = (found[f"returns/{k}"] for k in ("offsets", "sample", "energy"))
    with h5py.File(small["input"], "r") as i:
        noise = one_return_noise(i["TXWAVE"][()].astype(float), found["rnorm"].astype(float),
                                 found["x"].shape[1])
    for w in range(len(t_off) - 1):
        truth, here = slice(t_off[w], t_off[w + 1]), slice(off[w], off[w + 1])
        near, centroid = nearby_energy(t_sample[truth], sample[here], energy[here])
        assert np.allclose(near, t_energy[truth], rtol=0.05, atol=10 * noise[w]), f"shot {w}"
        assert np.all(np.abs(centroid - t_sample[truth]) <= 0.5), f"shot {w}"


def test_kpl_layout_and_nameddatasets(small, tmp_path):
    """The same simulation in kpl's layout (pulses already normalised,
    waveforms less their noise) gives the LVIS file's answer; the same data
    under other names, mapped with --dataset, gives it bit for bit."""
    make_lvis(tmp_path / "kpl.h5", "kpl", "--like", "1.04", shots=60)
    out = deconv(tmp_path, tmp_path / "kpl.h5", output="kpl_out.h5")
    a, b = datasets(small["output"]), datasets(out)
    assert "returns/elevation" not in b and "SHOTNUMBER" not in b
    assert np.allclose(a["x"], b["x"], rtol=1e-9, atol=1e-9 * np.abs(a["x"]).max())
    assert np.array_equal(a["returns/offsets"], b["returns/offsets"])
    assert np.allclose(a["returns/sample"], b["returns/sample"], atol=1e-9)
    with h5py.File(tmp_path / "kpl.h5", "r") as f, h5py.File(tmp_path / "named.h5", "w") as g:
        g["group/received"] = f["waveforms"][()]
        g["tx"] = f["pulse"][()]
        g["level"] = np.zeros(60)
    named = deconv(tmp_path, tmp_path / "named.h5", "--dataset",
                   "waveforms=group/received,pulse=/tx,noise=/level", output="named_out.h5")
    c = datasets(named)
    for name in ("x", "fit", "rnorm", "returns/sample", "returns/offsets"):
        assert b[name].tobytes() == c[name].tobytes(), name
    with h5py.File(named, "r") as o:
        assert o.attrs["layout"] == "named"


def test_plot_of_chosen_shots(small, tmp_path):
    figure = tmp_path / "shots.png"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "plot_waveforms.py"),
                           "--input", str(small["input"]), "--result", str(small["output"]),
                           "--shots", "0,5,17", "--output", str(figure)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert figure.stat().st_size > 10000
    bad = subprocess.run([sys.executable, str(REPO / "scripts" / "plot_waveforms.py"),
                          "--input", str(small["input"]), "--result", str(small["output"]),
                          "--shots", "60", "--output", str(tmp_path / "no.png")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and re.search(r"60", bad.stderr) and not (tmp_path / "no.png").exists()


# ---------------------------------------------------------------- hostile

def altered(small, tmp_path, change):
    """A copy of the small LVIS file with `change(f)` applied."""
    path = tmp_path / "in.h5"
    with h5py.File(small["input"], "r") as source, h5py.File(path, "w") as f:
        for name, item in source.items():
            source.copy(item, f, name)
        change(f)
    return path


def replace(f, name, values):
    del f[name]
    f[name] = values


def nan_at(name, row):
    def change(f):
        values = f[name][()].astype(np.float64)
        values[row] = np.nan
        replace(f, name, values)
    return change


def flat_pulse(row):
    def change(f):
        values = f["TXWAVE"][()]
        values[row, :] = values[row, 0]
        replace(f, "TXWAVE", values)
    return change


HOSTILE = {
    "no_sigmean": (lambda f: f.__delitem__("SIGMEAN"),
                   r"an LVIS file \(/RXWAVE, /TXWAVE\) without /SIGMEAN"),
    "no_rxwave": (lambda f: f.__delitem__("RXWAVE"), r"dataset /RXWAVE is missing"),
    "sigmean_nan": (nan_at("SIGMEAN", 37), r"/SIGMEAN holds NaN or Inf at \[37\]"),
    "sigmean_length": (lambda f: replace(f, "SIGMEAN", np.zeros(59, np.float32)),
                       r"dataset /SIGMEAN \(the noise level\) must be \[60\] \(one per shot\) or "
                       r"\[1\], not \[59\]"),
    "flat_pulse": (flat_pulse(41), r"dataset /TXWAVE row 41: the transmitted pulse has nothing "
                                   r"above its baseline"),
    "txwave_rows": (lambda f: replace(f, "TXWAVE", f["TXWAVE"][:50]),
                    r"/TXWAVE.*/RXWAVE.*dimension mismatch|dimension mismatch.*/TXWAVE"),
    "txwave_longer": (lambda f: replace(f, "TXWAVE", np.ones((60, 600), np.uint16)),
                      r"the pulse \(600 samples\) is longer than the waveforms \(528 samples\)"),
    "z_length": (lambda f: replace(f, "Z527", np.zeros(61, np.float32)),
                 r"dataset /Z527 must be \[60\] \(one value per shot of /RXWAVE\), not \[61\]"),
    "shotnumber_2d": (lambda f: replace(f, "SHOTNUMBER", np.zeros((60, 2), np.uint32)),
                      r"dataset /SHOTNUMBER must be \[60\]"),
    "rxwave_text": (lambda f: replace(f, "RXWAVE", np.array([b"x"] * 60)),
                    r"dataset /RXWAVE"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_bad_lvis_input_is_refused_by_name(small, tmp_path, case):
    change, message = HOSTILE[case]
    source = altered(small, tmp_path, change)
    res = run_kpl("deconv", "--input", "in.h5", "--output", "out.h5", cwd=tmp_path)
    check(res, 2, r"^kpl: bad input: 'in\.h5': .*" + message)
    assert len(res[2].strip().splitlines()) == 1, res[2]
    assert not (tmp_path / "out.h5").exists()
    assert not list(tmp_path.glob("out.h5.partial-*"))
    assert source.exists()


def test_nan_elevation_gives_returns_of_unknown_elevation(small, tmp_path):
    source = altered(small, tmp_path, nan_at("Z0", 3))
    out = deconv(tmp_path, source)
    with h5py.File(out, "r") as o:
        off = o["returns/offsets"][()]
        elevation = o["returns/elevation"][()]
    assert np.all(np.isnan(elevation[off[3]:off[4]])) and off[4] > off[3]
    assert np.all(np.isfinite(np.delete(elevation, np.arange(off[3], off[4]))))


@pytest.mark.parametrize("options, message", [
    (["--dataset", "waves=/RXWAVE"], r"--dataset: 'waves=/RXWAVE' is not ROLE=NAME"),
    (["--dataset", "pulse=/TXWAVE,pulse=/RXWAVE"], r"--dataset: pulse named twice"),
    (["--dataset", "noise="], r"--dataset: 'noise=' is not ROLE=NAME"),
    (["--return-threshold", "-1"], r"--return-threshold"),
    (["--return-threshold", "nan"], r"--return-threshold"),
    (["--compression", "zstd"], r"--compression"),
])
def test_bad_options_are_usage_errors(small, tmp_path, options, message):
    res = run_kpl("deconv", "--input", small["input"], "--output", "out.h5", *options,
                  cwd=tmp_path)
    check(res, 1, message)
    assert not (tmp_path / "out.h5").exists()


def test_named_dataset_missing(small, tmp_path):
    res = run_kpl("deconv", "--input", small["input"], "--output", "out.h5", "--dataset",
                  "noise=/NOISE", cwd=tmp_path)
    check(res, 2, r"dataset /NOISE is missing")


def test_unknown_layout_asks_for_names(tmp_path):
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f["a"] = np.ones((3, 30))
    res = run_kpl("deconv", "--input", "in.h5", "--output", "out.h5", cwd=tmp_path)
    check(res, 2, r"'in\.h5': neither kpl's layout \(datasets /waveforms and /pulse\) nor LVIS "
                  r"Level-1B \(/RXWAVE, /TXWAVE, /SIGMEAN\); name its datasets with --dataset")


def test_progress_line_on_a_terminal_only(small, tmp_path):
    """On a terminal stderr shows shots done, shots/s and the time left,
    rewritten in place and cleared before the summary; piped, it does not."""
    import pty
    controller, terminal = pty.openpty()
    argv = [os.environ.get("KPL_BINARY", "build/algorithms/kpl"), "deconv", "--input",
            str(small["input"]), "--output", str(tmp_path / "tty.h5"), "--memory-budget", "2mb"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=terminal) as p:
        os.close(terminal)
        chunks = []
        while True:
            try:
                data = os.read(controller, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            chunks.append(data)
        p.wait(timeout=120)
    os.close(controller)
    err = b"".join(chunks).decode(errors="replace")
    assert p.returncode == 0, err
    lines = re.findall(r"\rkpl deconv: (\d+) of 60 shots \(([\d.]+)%\), (\d+) shots/s, (\d+) s left",
                       err)
    assert len(lines) >= 2, err
    assert int(lines[-1][0]) == 60 and float(lines[-1][1]) == 100.0
    assert [int(done) for done, *_ in lines] == sorted(int(done) for done, *_ in lines)
    assert "\r\x1b[K" in err and "60 converged" in err
    piped = run_kpl("deconv", "--input", small["input"], "--output", tmp_path / "piped.h5",
                    "--memory-budget", "2mb")
    assert "shots/s" not in piped[2]


def test_damaged_chunk_mid_run_fails_cleanly(small, tmp_path):
    """A compressed RXWAVE chunk near the end that no longer inflates (integer
    waveforms are not read ahead: they cannot hold NaN) stops the overlapped
    run where the reader meets it: exit 2 naming the file and dataset, no
    output, and no partial file (an error is not an interruption)."""
    source = make_lvis(tmp_path / "in.h5", "1.04", "--compression", "gzip", "--chunk-shots", "4",
                       shots=60)
    with h5py.File(source, "r") as f:
        info = f["RXWAVE"].id.get_chunk_info(12)  # shots 48-51
    with open(source, "r+b") as raw:
        raw.seek(info.byte_offset + 8)
        raw.write(b"\xff" * 64)
    res = run_kpl("deconv", "--input", "in.h5", "--output", "out.h5", "--memory-budget", "1mb",
                  cwd=tmp_path)
    check(res, 2, r"^kpl: bad input: 'in\.h5': dataset /RXWAVE .*could not be read")
    assert not (tmp_path / "out.h5").exists()
    assert not list(tmp_path.glob("out.h5.partial-*"))
