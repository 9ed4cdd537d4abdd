#!/usr/bin/python3
"""scipy.optimize.nnls on the cases kpl_nnls_benchmark runs, on this CPU, one
process (one core), so kpl's OpenMP figures can be read side by side:

    /usr/bin/python3 perf/scipy_nnls_baseline.py [systems]

For `kpl nnls` against scipy on the same data, in whole processes:

    /usr/bin/python3 perf/scipy_nnls_baseline.py --write-gauss512 FILE [systems]
        writes /A (the shifted Gaussians, shared) and /b [systems, 512] to FILE
    /usr/bin/python3 perf/scipy_nnls_baseline.py --input FILE
        reads /A [m, n] and /b [B, m] and solves each system with scipy

The matrices are built as in perf/nnls_benchmark.cpp (512 x 512 shifted
Gaussians with sigma 4.32, or uniform random; b uniform random in [0, 1));
the random streams differ from the benchmark's, so per-system times are
compared, not individual solutions. The LVIS-like deconvolution case uses a
Gaussian pulse of width 20 in a 25-sample window and 432 samples.
Needs Debian's python3-scipy (1.10.1 on Debian 12).
"""
import sys
import time

import numpy as np
import scipy
from scipy.optimize import nnls


def shifted_gaussians(size=512, sigma=4.32):
    rows = np.arange(size)[:, None]
    columns = np.arange(size)[None, :]
    return np.exp(-0.5 * ((rows - columns) / sigma) ** 2)


def lvis_matrix(samples=432, window=25, width=20.0):
    sigma = width / 6.0
    taps = np.exp(-0.5 * ((np.arange(window) - (window - 1) / 2.0) / sigma) ** 2)
    a = np.zeros((samples, samples))
    for j in range(samples):
        length = min(window, samples - j)
        a[j:j + length, j] = taps[:length]
    return a, taps


def time_systems(name, a, right_hand_sides):
    start = time.perf_counter()
    for b in right_hand_sides:
        nnls(a, b, maxiter=3 * a.shape[1])
    seconds = time.perf_counter() - start
    count = len(right_hand_sides)
    print(f"{name}: {count} systems in {seconds:.3f} s, {1e3 * seconds / count:.2f} ms a system "
          f"(scipy {scipy.__version__}, one core)")


def write_gauss512(path, systems=24):
    import h5py  # only this mode and --input need it
    generator = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        f["A"] = shifted_gaussians()
        f["b"] = generator.uniform(0.0, 1.0, size=(int(systems), 512))


def solve_file(path):
    import h5py
    with h5py.File(path, "r") as f:
        a = f["A"][...]
        right_hand_sides = f["b"][...]
    time_systems(path, a, right_hand_sides)


def main(systems=24):
    systems = int(systems)
    generator = np.random.default_rng(7)
    time_systems("gauss512", shifted_gaussians(),
                 generator.uniform(0.0, 1.0, size=(systems, 512)))
    time_systems("uniform512", generator.uniform(0.0, 1.0, size=(512, 512)),
                 generator.uniform(0.0, 1.0, size=(systems, 512)))
    a, taps = lvis_matrix()
    waveforms = []
    for _ in range(systems):
        x = np.zeros(432)
        for _ in range(generator.integers(1, 5)):
            x[generator.integers(0, 432 - 25)] += generator.uniform(0.2, 1.0)
        waveforms.append(a @ x + generator.normal(0.0, 0.01, size=432))
    time_systems("lvis432", a, waveforms)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--write-gauss512":
        write_gauss512(*sys.argv[2:4])
    elif len(sys.argv) == 3 and sys.argv[1] == "--input":
        solve_file(sys.argv[2])
    else:
        main(*sys.argv[1:])
