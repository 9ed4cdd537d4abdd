#!/usr/bin/env python3
"""Write LVIS Level-1B-layout HDF5 files whose returns are known exactly.

    /usr/bin/python3 scripts/make_lvis.py --layout {1.04,1.05,2.0,kpl} \
        --shots N --seed S --output FILE.h5 [--truth TRUTH.h5] \
        [--compression none|gzip] [--chunk-shots K] [--returns-max R] \
        [--noise SIGMA] [--rx-samples M] [--like 1.04|1.05|2.0] ...

Layouts (the LVIS Data Structure, LDS, of lvis.gsfc.nasa.gov; every dataset
at the file's root, one row per laser shot; see scripts/README-lvis.md):
  1.04  LFID SHOTNUMBER AZIMUTH INCIDENTANGLE RANGE TIME LON0 LAT0 Z0 LON527
        LAT527 Z527 SIGMEAN, TXWAVE [N, 120] and RXWAVE [N, 528] uint16
  1.05  as 1.04 plus DATE (int32 yyyymmdd), with LON431 LAT431 Z431
        (--rx-samples 352: LON351 LAT351 Z351), TXWAVE [N, 80] and
        RXWAVE [N, 432] uint8 (--wave-dtype uint16 for the other reading)
  2.0   as 1.04 with LON1023 LAT1023 Z1023, TXWAVE [N, 128] and RXWAVE
        [N, 1024] uint16 (--rx-samples 1216: LON1215 LAT1215 Z1215)
  kpl   kpl deconv's own input from the same simulation as --like (default
        1.05): /pulse [N, L] and /waveforms [N, M], float64

The simulation follows the convention kpl deconv uses, exactly:
  * pulse: b = mean(TXWAVE[0:8]); p = max(TXWAVE - b, 0); pulse = p / sum(p)
  * received waveform: y = RXWAVE - SIGMEAN
  * model: y[i] = sum_j x[j] pulse[i - j] (0 <= i - j < L); a return of energy
    E (counts x samples) whose echo peaks at fractional RXWAVE sample r is
    x = E at j = r - argmax(pulse) (first maximum), split linearly between
    floor(j) and floor(j) + 1;
  * elevation of fractional sample r: Z0 + (Z<last> - Z0) r / last, from the
    float32 values stored in the file.
So RXWAVE = round(SIGMEAN + sum of those echoes + Gaussian noise) with the
pulse that kpl will compute from the stored (quantized) TXWAVE; SIGMEAN is the
true noise mean. --truth writes /offsets [N+1] (CSR), /sample, /elevation,
/energy, /ground per return. The output depends only on the arguments
(shots are simulated in fixed blocks with their own seeds), and the first K
shots of a file are those of any longer file with the same arguments.
Needs NumPy and h5py (Debian: python3-numpy python3-h5py).
"""
import argparse
import math
import os
import sys
from statistics import NormalDist

try:
    import h5py
    import numpy as np
except ImportError as error:  # pragma: no cover - environment check
    sys.exit(f"make_lvis: {error} (install python3-h5py python3-numpy)")


# Shots simulated per block: fixed so that the output does not depend on how
# it is written (chunks, compression).
BLOCK = 4096
TX_BASELINE_SAMPLES = 8
SPEED_OF_LIGHT = 299792458.0

# layout -> TXWAVE samples, allowed RXWAVE samples (first: default), integer
# type of the waveforms, digitizer bits per RXWAVE length, DATE dataset?
LAYOUTS = {
    "1.04": dict(tx=120, rx=(528,), dtype="uint16", bits={528: 10}, date=False,
                 doc="LDS 1.04 (Operation IceBridge 2009-2015, ILVIS1B HDF5)"),
    "1.05": dict(tx=80, rx=(432, 352), dtype="uint8", bits={432: 8, 352: 8}, date=True,
                 doc="LDS 1.05 (historic 1998-2009 rerelease)"),
    "2.0": dict(tx=128, rx=(1024, 1216), dtype="uint16", bits={1024: 10, 1216: 12},
                date=False, doc="LDS 2.0.x (LVISF1B/LVISC1B, 2017 onwards)"),
}

CONVENTIONS = {
    "tx_baseline": "mean of the first 8 samples of TXWAVE",
    "pulse": "max(TXWAVE - baseline, 0) / sum(max(TXWAVE - baseline, 0)) (unit area)",
    "waveform": "RXWAVE - SIGMEAN",
    "model": "y[i] = sum_j x[j] * pulse[i - j], 0 <= i - j < L (kpl deconv --pulse-origin start)",
    "return_sample": ("fractional RXWAVE sample r of the echo peak; x = energy at "
                      "j = r - argmax(pulse) (first maximum), split linearly between "
                      "floor(j) and floor(j) + 1"),
    "elevation": "Z0 + (Z<last> - Z0) * r / last, from the float32 Z0 and Z<last> in the file",
    "energy": "counts x samples (sum over samples of the echo in y)",
}


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be finite and >= 0: {text!r}")
    return value


def positive_float(text):
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="See scripts/README-lvis.md for the layouts and their sources.")
    parser.add_argument("--layout", required=True, choices=["1.04", "1.05", "2.0", "kpl"],
                        help="LVIS Data Structure release to imitate, or kpl's own layout")
    parser.add_argument("--shots", required=True, type=positive_int, help="number of laser shots")
    parser.add_argument("--seed", required=True, type=int, help="random seed (any integer >= 0)")
    parser.add_argument("--output", required=True, help="HDF5 file to write")
    parser.add_argument("--truth", help="also write the true returns to this HDF5 file")
    parser.add_argument("--like", choices=["1.04", "1.05", "2.0"], default="1.05",
                        help="with --layout kpl: the release whose simulation to use "
                             "(default: %(default)s)")
    parser.add_argument("--rx-samples", type=positive_int,
                        help="RXWAVE samples where a release has two: 1.05: 432 (default) "
                             "or 352; 2.0: 1024 (default) or 1216")
    parser.add_argument("--wave-dtype", choices=["auto", "uint8", "uint16"], default="auto",
                        help="integer type of TXWAVE/RXWAVE (auto: the release's, see above)")
    parser.add_argument("--compression", choices=["none", "gzip"], default="none",
                        help="none: contiguous datasets; gzip: chunked, shuffle + gzip "
                             "(default: %(default)s)")
    parser.add_argument("--chunk-shots", type=positive_int, default=1024,
                        help="shots per chunk with --compression gzip (default: %(default)s)")
    parser.add_argument("--returns-max", type=positive_int, default=4,
                        help="returns per shot are 1 to this many (default: %(default)s)")
    parser.add_argument("--noise", type=non_negative_float, default=1.0,
                        help="standard deviation of the RXWAVE noise, counts (default: %(default)s)")
    parser.add_argument("--tx-noise", type=non_negative_float, default=0.5,
                        help="standard deviation of the TXWAVE noise, counts (default: %(default)s)")
    parser.add_argument("--fwhm-ns", type=positive_float, default=6.0,
                        help="mean full width at half maximum of the transmit pulse, ns "
                             "(default: %(default)s; varies +-10%% per shot)")
    parser.add_argument("--sample-ns", type=positive_float, default=1.0,
                        help="time between waveform samples, ns (default: %(default)s: "
                             "1 GHz digitizer, 0.1499 m of range per sample)")
    parser.add_argument("--big-endian", action="store_true",
                        help="store the datasets big-endian (HDF5 converts on reading)")
    arguments = parser.parse_args(argv)
    if arguments.seed < 0:
        parser.error(f"argument --seed: must be >= 0: {arguments.seed}")
    like = arguments.layout if arguments.layout != "kpl" else arguments.like
    spec = LAYOUTS[like]
    if arguments.rx_samples is None:
        arguments.rx_samples = spec["rx"][0]
    elif arguments.rx_samples not in spec["rx"]:
        parser.error(f"argument --rx-samples: layout {like} has RXWAVE of "
                     f"{' or '.join(map(str, spec['rx']))} samples, not {arguments.rx_samples}")
    if arguments.truth is not None and os.path.abspath(arguments.truth) == os.path.abspath(arguments.output):
        parser.error("--truth and --output name the same file")
    arguments.like_layout = like
    arguments.spec = spec
    arguments.tx_samples = spec["tx"]
    arguments.dtype = np.dtype(spec["dtype"] if arguments.wave_dtype == "auto" else arguments.wave_dtype)
    arguments.bits = min(spec["bits"][arguments.rx_samples], 8 * arguments.dtype.itemsize)
    # Feasibility: --returns-max returns at two pulse widths apart must fit.
    fwhm = 1.1 * arguments.fwhm_ns / arguments.sample_ns
    gap = math.ceil(2.0 * fwhm)
    span = arguments.rx_samples - arguments.tx_samples - 6
    if fwhm < 1.5:
        parser.error(f"--fwhm-ns {arguments.fwhm_ns} is under 1.5 samples of {arguments.sample_ns} ns")
    if 0.5 * fwhm + 5.5 * fwhm + TX_BASELINE_SAMPLES + 4 > arguments.tx_samples:
        parser.error(f"--fwhm-ns {arguments.fwhm_ns}: the pulse does not fit in "
                     f"{arguments.tx_samples} TXWAVE samples after {TX_BASELINE_SAMPLES} of baseline")
    if span <= (arguments.returns_max - 1) * gap:
        parser.error(f"--returns-max {arguments.returns_max}: that many returns {gap} samples "
                     f"apart do not fit in {arguments.rx_samples} RXWAVE samples")
    full_scale = 2 ** arguments.bits - 1
    if 20.0 * max(arguments.noise, 0.5) > 0.5 * full_scale:
        parser.error(f"--noise {arguments.noise}: returns 20 sigma above the noise do not fit "
                     f"under the {arguments.bits}-bit full scale ({full_scale} counts)")
    return arguments


class NormalTable:
    """Standard normal variates by inverse CDF of 16 random bits (tails cut
    at 4.3 sigma): an order of magnitude faster than Generator.normal here."""

    def __init__(self):
        quantiles = (np.arange(65536) + 0.5) / 65536
        inv_cdf = NormalDist().inv_cdf
        self.table = np.array([inv_cdf(q) for q in quantiles], dtype=np.float32)

    def __call__(self, rng, shape):
        count = int(np.prod(shape))
        indices = np.frombuffer(rng.bytes(2 * count), dtype=np.uint16)
        return self.table[indices].reshape(shape)


class Flight:
    """Per-file constants: where the aircraft flies and what it measures."""

    def __init__(self, seed, arguments):
        rng = np.random.default_rng([seed, 0x5EED])
        self.lfid = np.uint32(1_000_000 + rng.integers(0, 8_999_999))
        self.first_shot = int(rng.integers(1, 5_000_000))
        self.start_time = float(rng.uniform(36_000.0, 60_000.0))   # UTC seconds of the day
        self.rate_hz = 1000.0                                        # shots per second
        self.lat0 = float(rng.uniform(30.0, 65.0))                   # degrees north
        self.lon0 = float(rng.uniform(200.0, 300.0))                 # degrees east, 0..360
        self.heading = float(rng.uniform(0.0, 360.0))                # degrees from north
        self.speed = 120.0                                           # m/s
        self.altitude = float(rng.uniform(7000.0, 9500.0))           # m above ground
        self.shots_per_line = 64                                     # raster across track
        self.max_angle = 6.0                                         # degrees off nadir
        self.ground_base = float(rng.uniform(20.0, 1800.0))          # m above the ellipsoid
        self.terrain = [(float(rng.uniform(5.0, 60.0)), float(rng.uniform(2e3, 5e4)),
                         float(rng.uniform(0, 2 * math.pi))) for _ in range(3)]
        self.date = np.int32(int(rng.integers(1998, 2010)) * 10000 + int(rng.integers(1, 13)) * 100
                             + int(rng.integers(1, 29)))
        tx = arguments.tx_samples
        full = 2 ** arguments.bits - 1
        self.full_scale = full
        # Counts: baselines of a few to tens, peaks well inside the full scale.
        self.tx_baseline = (0.02 * full + 2, 0.06 * full + 6)
        self.tx_peak = (0.45 * full, 0.7 * full)
        self.rx_baseline = (0.02 * full + 2, 0.06 * full + 6)
        self.rx_peak = (max(20.0 * max(arguments.noise, 0.5), 0.06 * full), 0.5 * full)
        self.tx_peak_at = (0.3 * tx, 0.4 * tx)


def simulate_block(first, count, arguments, flight, normal):
    """Simulate shots first .. first + count - 1: the datasets of the layout
    (LVIS or kpl), the truth per return and the number of clipped samples."""
    # A whole block is always simulated (and the tail cut off), so that a
    # shot's values do not depend on how many shots follow it.
    wanted, count = count, BLOCK
    rng = np.random.default_rng([arguments.seed, 1 + first // BLOCK])
    m = arguments.rx_samples
    L = arguments.tx_samples
    last = m - 1
    shots = first + np.arange(count)

    # Transmit pulse: a skewed Gaussian (slower fall than rise) on a baseline.
    fwhm = arguments.fwhm_ns / arguments.sample_ns * rng.uniform(0.9, 1.1, count)
    skew = rng.uniform(1.2, 1.5, count)                      # fall sigma / rise sigma
    rise = fwhm / (math.sqrt(2 * math.log(2)) * (1 + skew))  # FWHM = 1.1774 (rise + fall)
    fall = skew * rise
    centre = rng.uniform(*flight.tx_peak_at, count)
    centre = np.maximum(centre, TX_BASELINE_SAMPLES + 2 + 4.5 * rise)
    t = np.arange(L, dtype=np.float64)[None, :] - centre[:, None]
    sigma = np.where(t < 0, rise[:, None], fall[:, None])
    shape = np.exp(-0.5 * (t / sigma) ** 2)
    tx_base = rng.uniform(*flight.tx_baseline, count)
    tx_peak = rng.uniform(*flight.tx_peak, count)
    tx = tx_base[:, None] + tx_peak[:, None] * shape
    if arguments.tx_noise > 0:
        tx += arguments.tx_noise * normal(rng, (count, L))
    tx = np.clip(np.rint(tx), 0, flight.full_scale).astype(arguments.dtype)

    # The pulse as kpl computes it from the stored TXWAVE.
    baseline = tx[:, :TX_BASELINE_SAMPLES].astype(np.float64).mean(axis=1)
    pulse = np.maximum(tx.astype(np.float64) - baseline[:, None], 0.0)
    pulse /= pulse.sum(axis=1)[:, None]
    peak_at = np.argmax(pulse, axis=1)
    pulse_max = pulse[np.arange(count), peak_at]

    # Returns: 1..R per shot, at least two pulse widths apart, every echo
    # (pulse support included) inside the window; the last one is the ground.
    R = arguments.returns_max
    counts = rng.integers(1, R + 1, count)
    gap = np.ceil(2.0 * fwhm)
    j_min = 3.0
    j_max = m - L - 1.001                       # floor(j) + 1 + L - 1 <= m - 1
    room = (j_max - j_min) - (counts - 1) * gap
    draws = rng.uniform(0.0, 1.0, (count, R)) * room[:, None]
    valid = np.arange(R)[None, :] < counts[:, None]
    draws = np.sort(np.where(valid, draws, np.inf), axis=1)
    j = j_min + draws + np.arange(R)[None, :] * gap[:, None]   # inf where not valid
    amplitude = rng.uniform(*flight.rx_peak, (count, R))
    energy = amplitude / pulse_max[:, None]
    sample = j + peak_at[:, None]

    # Received waveform: noise mean + echoes + noise, rounded.
    sigmean = rng.uniform(*flight.rx_baseline, count).astype(np.float32)
    y = np.zeros((count, m), dtype=np.float32)
    flat = y.reshape(-1)
    rows = (np.arange(count) * m)[:, None]
    taps = np.arange(L + 1)[None, :]
    pulse32 = pulse.astype(np.float32)
    for k in range(R):
        live = np.nonzero(valid[:, k])[0]
        if live.size == 0:
            break
        jk = j[live, k]
        j0 = np.floor(jk)
        frac = (jk - j0).astype(np.float32)[:, None]
        e = energy[live, k].astype(np.float32)[:, None]
        kernel = np.zeros((live.size, L + 1), dtype=np.float32)
        kernel[:, :L] = (1 - frac) * pulse32[live]
        kernel[:, 1:] += frac * pulse32[live]
        flat[rows[live] + j0.astype(np.int64)[:, None] + taps] += e * kernel
    if arguments.noise > 0:
        y += np.float32(arguments.noise) * normal(rng, (count, m))
    y += sigmean[:, None]
    np.rint(y, out=y)
    out_of_range = (y < 0) | (y > flight.full_scale)
    clipped = int(np.count_nonzero(out_of_range[:wanted]))
    np.clip(y, 0, flight.full_scale, out=y)
    rx = y.astype(arguments.dtype)

    # Geometry: a raster scan across track; the ground return lies on the terrain.
    time_s = flight.start_time + shots / flight.rate_hz
    phase = (shots % flight.shots_per_line) / (flight.shots_per_line - 1)
    across_angle = flight.max_angle * (2 * phase - 1) + rng.normal(0, 0.05, count)
    along_angle = 2.0 + rng.normal(0, 0.05, count)           # looking slightly forward
    incident = np.degrees(np.arctan(np.hypot(np.tan(np.radians(across_angle)),
                                             np.tan(np.radians(along_angle)))))
    azimuth = (flight.heading + np.degrees(np.arctan2(np.tan(np.radians(across_angle)),
                                                      np.tan(np.radians(along_angle))))) % 360.0
    cos_inc = np.cos(np.radians(incident))
    sin_inc = np.sin(np.radians(incident))
    along = flight.speed * (time_s - flight.start_time)
    ground = np.full(count, flight.ground_base)
    for amplitude_m, wavelength_m, offset in flight.terrain:
        ground += amplitude_m * np.sin(2 * math.pi * along / wavelength_m + offset)
    ground += rng.normal(0.0, 0.3, count)
    slant = 0.5 * SPEED_OF_LIGHT * arguments.sample_ns * 1e-9     # m of range per sample
    dz = slant * cos_inc                                             # m of height per sample
    ground_sample = sample[np.arange(count), counts - 1]
    z0 = (ground + ground_sample * dz).astype(np.float32)
    zlast = (ground - (last - ground_sample) * dz).astype(np.float32)
    heading = math.radians(flight.heading)
    az = np.radians(azimuth)
    # Footprint of the ground return, then the top and bottom samples along the beam.
    ground_distance = flight.altitude * np.tan(np.radians(incident))
    north = along * math.cos(heading) + ground_distance * np.cos(az)
    east = along * math.sin(heading) + ground_distance * np.sin(az)
    metres_per_degree = 111_320.0
    lat_ground = flight.lat0 + north / metres_per_degree
    lon_ground = flight.lon0 + east / (metres_per_degree * math.cos(math.radians(flight.lat0)))
    def shifted(samples_below_ground):
        horizontal = samples_below_ground * slant * sin_inc
        lat = lat_ground + horizontal * np.cos(az) / metres_per_degree
        lon = lon_ground + horizontal * np.sin(az) / (metres_per_degree * np.cos(np.radians(lat_ground)))
        return lon % 360.0, lat
    lon_top, lat_top = shifted(-ground_sample)
    lon_bottom, lat_bottom = shifted(last - ground_sample)
    range_m = (flight.altitude / cos_inc).astype(np.float32)

    # Truth, per return in shot order, top (smallest sample) first.
    r = sample[valid]
    z0_64 = np.repeat(z0.astype(np.float64), counts)
    zl_64 = np.repeat(zlast.astype(np.float64), counts)
    truth = dict(counts=counts, sample=r, energy=energy[valid],
                 elevation=z0_64 + (zl_64 - z0_64) * r / last,
                 ground=(np.arange(R)[None, :] == (counts - 1)[:, None])[valid].astype(np.int8))

    data = {
        "LFID": np.full(count, flight.lfid, dtype=np.uint32),
        "SHOTNUMBER": (flight.first_shot + shots).astype(np.uint32),
        "AZIMUTH": azimuth.astype(np.float32),
        "INCIDENTANGLE": incident.astype(np.float32),
        "RANGE": range_m,
        "TIME": time_s.astype(np.float64),
        "LON0": lon_top, "LAT0": lat_top, "Z0": z0,
        f"LON{last}": lon_bottom, f"LAT{last}": lat_bottom, f"Z{last}": zlast,
        "SIGMEAN": sigmean,
        "TXWAVE": tx,
        "RXWAVE": rx,
    }
    if arguments.spec["date"]:
        data["DATE"] = np.full(count, flight.date, dtype=np.int32)
    if arguments.layout == "kpl":
        data = {"pulse": pulse,
                "waveforms": rx.astype(np.float64) - sigmean.astype(np.float64)[:, None]}
    if wanted < count:
        data = {name: values[:wanted] for name, values in data.items()}
        kept = int(counts[:wanted].sum())
        truth = {name: values[:wanted] if name == "counts" else values[:kept]
                 for name, values in truth.items()}
    return data, truth, clipped


def lvis_datasets(arguments):
    """(name, dtype, trailing shape) in the order of the LDS tables."""
    last = arguments.rx_samples - 1
    names = [("LFID", "u4"), ("SHOTNUMBER", "u4"), ("AZIMUTH", "f4"),
             ("INCIDENTANGLE", "f4"), ("RANGE", "f4")]
    if arguments.spec["date"]:
        names.append(("DATE", "i4"))
    names += [("TIME", "f8"), ("LON0", "f8"), ("LAT0", "f8"), ("Z0", "f4"),
              (f"LON{last}", "f8"), (f"LAT{last}", "f8"), (f"Z{last}", "f4"), ("SIGMEAN", "f4")]
    order = ">" if arguments.big_endian else "<"
    out = [(name, np.dtype(order + code), ()) for name, code in names]
    wave = arguments.dtype.newbyteorder(order) if arguments.dtype.itemsize > 1 else arguments.dtype
    out.append(("TXWAVE", wave, (arguments.tx_samples,)))
    out.append(("RXWAVE", wave, (arguments.rx_samples,)))
    return out


def create(group, name, dtype, shape, arguments):
    n = shape[0]
    if arguments.compression == "gzip":
        chunks = (min(arguments.chunk_shots, n),) + tuple(shape[1:])
        return group.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks,
                                    compression="gzip", compression_opts=4, shuffle=True)
    return group.create_dataset(name, shape=shape, dtype=dtype)


def fixed_string_array(text):
    return np.array([text.encode("ascii")], dtype=f"S{max(1, len(text))}")


def write(arguments):
    n = arguments.shots
    flight = Flight(arguments.seed, arguments)
    normal = NormalTable()
    last = arguments.rx_samples - 1
    kpl_layout = arguments.layout == "kpl"
    output = h5py.File(arguments.output, "w")
    truth_file = h5py.File(arguments.truth, "w") if arguments.truth else None
    try:
        if kpl_layout:
            output.attrs["description"] = (
                f"kpl deconv input simulated as LVIS {arguments.like_layout} shots by "
                "scripts/make_lvis.py: /pulse = max(TXWAVE - mean(TXWAVE[0:8]), 0) normalised "
                "to unit area, /waveforms = RXWAVE - SIGMEAN")
            datasets = {"pulse": create(output, "pulse", np.float64, (n, arguments.tx_samples), arguments),
                        "waveforms": create(output, "waveforms", np.float64, (n, arguments.rx_samples),
                                            arguments)}
        else:
            spec = arguments.spec
            # Root attributes as the real files carry them (1-element string
            # arrays, read as attrs[name][0] by pylidar and gedipy).
            output.attrs["level"] = fixed_string_array("L1B")
            output.attrs["short_name"] = fixed_string_array("L1B HDF")
            output.attrs["title"] = fixed_string_array(
                f"LVIS Level 1B geolocated waveforms, {spec['doc']} layout (synthetic)")
            output.attrs["description"] = fixed_string_array(
                "Synthetic LVIS L1B waveforms with known returns written by kpl "
                "scripts/make_lvis.py; not measured data")
            ancillary = output.create_group("ancillary_data")
            ancillary.create_dataset("reference_frame", data=fixed_string_array("WGS-84 ellipsoid"))
            ancillary.create_dataset("lds_version", data=fixed_string_array(arguments.layout))
            ancillary.create_dataset("synthetic", data=np.array([1], dtype=np.int8))
            datasets = {name: create(output, name, dtype, (n,) + trailing, arguments)
                        for name, dtype, trailing in lvis_datasets(arguments)}
        output.attrs["synthetic_generator"] = "kpl scripts/make_lvis.py"
        output.attrs["synthetic_layout"] = arguments.layout
        output.attrs["synthetic_seed"] = arguments.seed

        if truth_file is not None:
            truth_file.attrs["layout"] = arguments.layout
            truth_file.attrs["simulated_as"] = arguments.like_layout
            truth_file.attrs["rx_samples"] = arguments.rx_samples
            truth_file.attrs["tx_samples"] = arguments.tx_samples
            truth_file.attrs["last_sample_name"] = f"Z{last}"
            truth_file.attrs["seed"] = arguments.seed
            truth_file.attrs["shots"] = n
            truth_file.attrs["noise_standard_deviation"] = arguments.noise
            truth_file.attrs["tx_noise_standard_deviation"] = arguments.tx_noise
            truth_file.attrs["sample_ns"] = arguments.sample_ns
            for key, value in CONVENTIONS.items():
                truth_file.attrs[key] = value
            offsets = truth_file.create_dataset("offsets", shape=(n + 1,), dtype=np.int64)
            grow = {name: truth_file.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype,
                                                    chunks=(65536,))
                    for name, dtype in [("sample", np.float64), ("elevation", np.float64),
                                        ("energy", np.float64), ("ground", np.int8)]}
            grow["ground"].attrs["meaning"] = "1 for the lowest return of the shot (the ground)"
            offsets[0] = 0
            total = 0

        clipped = 0
        for first in range(0, n, BLOCK):
            count = min(BLOCK, n - first)
            data, truth, block_clipped = simulate_block(first, count, arguments, flight, normal)
            clipped += block_clipped
            for name, dataset in datasets.items():
                dataset[first:first + count] = data[name]
            if truth_file is not None:
                ends = total + np.cumsum(truth["counts"])
                offsets[first + 1:first + count + 1] = ends
                added = int(ends[-1]) - total
                for name, dataset in grow.items():
                    dataset.resize((total + added,))
                    dataset[total:] = truth[name]
                total += added
        if clipped:
            print(f"make_lvis: warning: {clipped} RXWAVE samples were clipped to the "
                  f"{arguments.bits}-bit range; the truth does not hold there", file=sys.stderr)
    except BaseException:
        output.close()
        if truth_file is not None:
            truth_file.close()
        for path in (arguments.output, arguments.truth):
            if path and os.path.exists(path):
                os.remove(path)
        raise
    output.close()
    if truth_file is not None:
        truth_file.close()


def main(argv=None):
    arguments = parse_arguments(argv)
    for path in (arguments.output, arguments.truth):
        if path is None:
            continue
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            print(f"make_lvis: {path}: directory {directory} does not exist", file=sys.stderr)
            return 2
        if os.path.isdir(path):
            print(f"make_lvis: {path}: is a directory", file=sys.stderr)
            return 2
    try:
        write(arguments)
    except OSError as error:
        print(f"make_lvis: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
