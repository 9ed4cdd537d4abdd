#!/usr/bin/env python3
"""Plot the partial effects f_j(x_j) of the covariates a kpl GAM selected.

    python3 scripts/plot_gam_effects.py --model model.h5 --output effects.png \
        [--kpl build/algorithms/kpl] [--data input.h5] [--top 12]

The effects are evaluated by `kpl gam predict --partial-effects` on a grid over
each covariate's training range (so the plot shows exactly what kpl predicts),
one panel per selected covariate, ordered by how often boosting chose it.
With --data, the partial residuals of the fit's rows are drawn behind each
curve. Needs h5py, numpy and matplotlib (Debian: python3-h5py python3-numpy
python3-matplotlib).
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model file from kpl gam fit")
    parser.add_argument("--output", required=True, help="PNG file to write")
    parser.add_argument("--kpl", default=os.path.join("build", "algorithms", "kpl"),
                        help="the kpl executable (default: %(default)s)")
    parser.add_argument("--data", help="the fit's input (/X, /y): draw partial residuals")
    parser.add_argument("--top", type=int, default=12,
                        help="at most this many covariates, the most often selected first")
    parser.add_argument("--points", type=int, default=200, help="grid points per covariate")
    arguments = parser.parse_args()
    try:
        import h5py
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError as error:
        sys.exit(f"plot_gam_effects: {error} (install python3-h5py python3-matplotlib)")

    with h5py.File(arguments.model, "r") as model:
        selected = model["/selected"][:]
        boundary = model["/boundary"][:]
        offset = float(model["/offset"][0])
    if selected.size == 0:
        sys.exit("plot_gam_effects: the model selected no covariate (mstop = 0)")
    counts = collections.Counter(int(j) for j in selected)
    chosen = [j for j, _ in counts.most_common(arguments.top)]
    p = boundary.shape[0]
    grid = np.linspace(0.0, 1.0, arguments.points)
    X = boundary[:, 0] + grid[:, None] * (boundary[:, 1] - boundary[:, 0])[None, :]

    with tempfile.TemporaryDirectory() as scratch:
        grid_file = os.path.join(scratch, "grid.h5")
        effects_file = os.path.join(scratch, "effects.h5")
        with h5py.File(grid_file, "w") as f:
            f["/X"] = X
        commands = [[arguments.kpl, "gam", "predict", "--model", arguments.model, "--input",
                     grid_file, "--output", effects_file, "--partial-effects"]]
        residual_file = os.path.join(scratch, "fit.h5")
        if arguments.data:
            commands.append([arguments.kpl, "gam", "predict", "--model", arguments.model,
                             "--input", arguments.data, "--output", residual_file,
                             "--partial-effects"])
        for command in commands:
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                sys.exit(f"plot_gam_effects: {' '.join(command)} failed:\n{result.stderr}")
        with h5py.File(effects_file, "r") as f:
            effects = f["/partial_effects"][:]
        if arguments.data:
            with h5py.File(arguments.data, "r") as f:
                data_X, data_y = f["/X"][:], f["/y"][:]
            with h5py.File(residual_file, "r") as f:
                fitted, data_effects = f["/prediction"][:], f["/partial_effects"][:]
            if data_X.shape[1] != p:
                sys.exit("plot_gam_effects: --data has another number of covariates")

    columns = min(4, len(chosen))
    rows = (len(chosen) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.8 * rows), squeeze=False)
    for panel, j in enumerate(chosen):
        axis = axes[panel // columns][panel % columns]
        if arguments.data:
            partial_residual = data_y - fitted + data_effects[:, j]
            axis.scatter(data_X[:, j], partial_residual, s=2, color="0.75", rasterized=True)
        axis.plot(X[:, j], effects[:, j], color="C0", linewidth=2)
        axis.set_title(f"x{j}: chosen {counts[j]} of {selected.size}", fontsize=9)
        axis.set_xlabel(f"x{j}", fontsize=8)
        axis.tick_params(labelsize=7)
    for panel in range(len(chosen), rows * columns):
        axes[panel // columns][panel % columns].axis("off")
    figure.suptitle(f"Partial effects f_j(x_j) (offset {offset:.4g})", fontsize=10)
    figure.tight_layout()
    figure.savefig(arguments.output, dpi=110)
    print(f"plot_gam_effects: {len(chosen)} covariates plotted to {arguments.output}")


if __name__ == "__main__":
    main()
