#!/usr/bin/python3
"""Writes inputs/self_check.h5, the input `kpl self-check` runs on.

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


if __name__ == "__main__":
    main(*sys.argv[1:])
