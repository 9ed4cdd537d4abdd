#!/usr/bin/python3
"""Writes the inputs kpl ships: inputs/self_check.h5 (for `kpl self-check`)
and inputs/nnls_gauss_small.h5 (for `kpl nnls`). inputs/deconv_lvis_small.h5
comes from kpl itself: kpl simulate deconv --waveforms 100 --samples 432
--seed 2011 --output inputs/deconv_lvis_small.h5.

The reference values are computed here in double with exactly rounded sums
(math.fsum), so they do not depend on any summation order a backend picks.
Run from the repository root: python3 scripts/make_inputs.py (needs h5py and
NumPy, Debian's python3-h5py). The file is committed; CI does not run this.
"""
import math
import sys

import h5py
import numpy as np


def main(path="inputs/self_check.h5"):
    generator = np.random.default_rng(20261122)
    # Lengths that are not multiples of any team, warp or vector size.
    vector = generator.uniform(-1.0, 2.0, size=1009)
    matrix = generator.normal(size=(37, 23))
    with h5py.File(path, "w") as output:
        output.attrs["description"] = (
            "kpl self-check: reference sums computed in double with math.fsum "
            "by scripts/make_inputs.py")
        written_vector = output.create_dataset("vector", data=vector)
        written_vector.attrs["sum"] = math.fsum(vector)
        written_vector.attrs["min"] = vector.min()
        written_vector.attrs["max"] = vector.max()
        output.create_dataset("matrix", data=matrix)
        output.create_dataset("matrix_row_sums",
                              data=[math.fsum(row) for row in matrix])
        output.create_dataset("matrix_column_sums",
                              data=[math.fsum(column) for column in matrix.T])


def nnls_gauss_small(path="inputs/nnls_gauss_small.h5"):
    """16 systems sharing a 128 x 128 matrix whose columns are Gaussians of
    sigma 4.32 centred on the diagonal (Luo & Duraiswami 2011, section 7.2, at
    a quarter of their size), with uniform random right-hand sides."""
    generator = np.random.default_rng(2011)
    size = 128
    rows = np.arange(size)[:, None]
    columns = np.arange(size)[None, :]
    matrix = np.exp(-0.5 * ((rows - columns) / 4.32) ** 2)
    right_hand_sides = generator.uniform(0.0, 1.0, size=(16, size))
    with h5py.File(path, "w") as output:
        output.attrs["description"] = (
            "kpl nnls example: /A [128, 128] shifted Gaussians (sigma 4.32), "
            "/b [16, 128] uniform random; scripts/make_inputs.py")
        output.create_dataset("A", data=matrix)
        output.create_dataset("b", data=right_hand_sides)


if __name__ == "__main__":
    if sys.argv[1:2] == ["nnls"]:
        nnls_gauss_small(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
        nnls_gauss_small()
