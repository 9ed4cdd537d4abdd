#!/usr/bin/env python3
"""Plot received waveforms, kpl deconv's fit and the returns it found.

    /usr/bin/python3 scripts/plot_waveforms.py --input IN.h5 --result OUT.h5 \
        --shots 0,5,17 --output FIG.png [--columns 4] [--full-window] [--no-x]

IN.h5 is what kpl deconv read: an LVIS Level-1B file (RXWAVE, SIGMEAN, and
Z0/Z<last> for elevations) or kpl's layout (/waveforms, already noise-
subtracted, /pulse). OUT.h5 is kpl deconv's output: /fit [W, m] (and /x,
/rnorm when present), /status [W], /returns/offsets [W+1], /returns/sample,
/returns/energy and, when the input had elevations, /returns/elevation.

One panel per shot (--shots takes 0-based row indices): the received
waveform (RXWAVE - SIGMEAN, counts) and the fit drawn horizontally against
elevation, up (as lidar users draw them), with each return marked at its
elevation and its energy written beside it; the deconvolved x (energy per
sample) is drawn as light bars on a top axis, each x[j] moved to where its
echo peaks (j + argmax of the pulse, as kpl computes it from TXWAVE or
/pulse; minus L/2 when OUT's pulse_origin attribute is "center"). Without Z0/Z<last> (in IN or
copied into OUT) the vertical axis is the sample index, sample 0 at the top.
Only the part of the window with signal is shown unless --full-window.
A missing dataset or a shot out of range is refused with one line on stderr
and exit status 2. Needs h5py, numpy and matplotlib (Debian: python3-h5py
python3-numpy python3-matplotlib).
"""
import argparse
import math
import os
import re
import sys

STATUS = {0: "converged", 1: "max_iterations", 2: "numerical_issue", 3: "passive_set_full",
          4: "dependent_columns", 5: "kkt_not_met"}


class Refusal(Exception):
    """A problem with the inputs: reported in one line, exit status 2."""


def shot_list(text):
    shots = []
    for part in text.split(","):
        part = part.strip()
        if not re.fullmatch(r"\d+", part):
            raise argparse.ArgumentTypeError(
                f"expected comma-separated 0-based shot indices such as 0,5,17, not {text!r}")
        shots.append(int(part))
    return shots


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="the file kpl deconv read (LVIS L1B or kpl layout)")
    parser.add_argument("--result", required=True, help="kpl deconv's output")
    parser.add_argument("--shots", required=True, type=shot_list,
                        help="comma-separated 0-based shot (row) indices, e.g. 0,5,17")
    parser.add_argument("--output", required=True, help="PNG (or any matplotlib format) to write")
    parser.add_argument("--columns", type=int, default=4, help="panels per row (default: %(default)s)")
    parser.add_argument("--full-window", action="store_true",
                        help="show every sample, not only the part with signal")
    parser.add_argument("--no-x", action="store_true", help="do not draw the deconvolved x")
    arguments = parser.parse_args(argv)
    if arguments.columns < 1:
        parser.error(f"argument --columns: must be at least 1: {arguments.columns}")
    return arguments


def open_h5(h5py, path, role):
    if not os.path.exists(path):
        raise Refusal(f"{path}: no such file ({role})")
    try:
        return h5py.File(path, "r")
    except OSError as error:
        raise Refusal(f"{path}: not a readable HDF5 file ({role}): {error}")


def dataset(h5, path, name, required=True):
    """The dataset /name of h5, or None when optional and absent."""
    item = h5.get(name)
    if item is None:
        if required:
            raise Refusal(f"{path}: no dataset /{name}")
        return None
    if not hasattr(item, "shape"):
        raise Refusal(f"{path}: /{name} is a group, not a dataset")
    return item


def last_sample_dataset(h5, samples):
    """Name of Z<last> in h5: Z{samples-1}, else the one Z<n> besides Z0."""
    name = f"Z{samples - 1}"
    if name in h5:
        return name
    others = [key for key in h5.keys() if re.fullmatch(r"Z\d+", key) and key != "Z0"]
    return others[0] if len(others) == 1 else None


def rows(ds, indices, np):
    """ds[indices] for any order of indices (h5py wants increasing, unique)."""
    unique = sorted(set(indices))
    values = ds[unique] if len(unique) > 1 else ds[unique[0]:unique[0] + 1]
    where = {index: k for k, index in enumerate(unique)}
    return np.asarray(values)[[where[i] for i in indices]]


def load(arguments, h5py, np):
    shots = arguments.shots
    with open_h5(h5py, arguments.input, "--input") as source, \
            open_h5(h5py, arguments.result, "--result") as result:
        # The received waveforms, noise-subtracted.
        if "RXWAVE" in source:
            layout = "lvis"
            rx = dataset(source, arguments.input, "RXWAVE")
            sigmean = dataset(source, arguments.input, "SIGMEAN")
            if rx.ndim != 2:
                raise Refusal(f"{arguments.input}: /RXWAVE has shape {rx.shape}, not [shots, samples]")
            if sigmean.shape != (rx.shape[0],):
                raise Refusal(f"{arguments.input}: /SIGMEAN has shape {sigmean.shape}, "
                              f"not [{rx.shape[0]}] as /RXWAVE's rows")
            count, samples = rx.shape
            source_name = "/RXWAVE"
        elif "waveforms" in source:
            layout = "kpl"
            rx = dataset(source, arguments.input, "waveforms")
            if rx.ndim != 2:
                raise Refusal(f"{arguments.input}: /waveforms has shape {rx.shape}, not [W, m]")
            count, samples = rx.shape
            source_name = "/waveforms"
        else:
            raise Refusal(f"{arguments.input}: no dataset /RXWAVE (LVIS L1B) or /waveforms (kpl)")
        for shot in shots:
            if shot >= count:
                raise Refusal(f"shot {shot} is out of range: {arguments.input} {source_name} has "
                              f"{count} waveforms (indices 0 to {count - 1})")

        fit = dataset(result, arguments.result, "fit")
        status = dataset(result, arguments.result, "status")
        offsets = dataset(result, arguments.result, "returns/offsets")
        sample = dataset(result, arguments.result, "returns/sample")
        energy = dataset(result, arguments.result, "returns/energy")
        elevation = dataset(result, arguments.result, "returns/elevation", required=False)
        x = None if arguments.no_x else dataset(result, arguments.result, "x", required=False)
        rnorm = dataset(result, arguments.result, "rnorm", required=False)
        if fit.ndim != 2 or fit.shape[1] != samples:
            raise Refusal(f"{arguments.result}: /fit has shape {fit.shape}, not [W, {samples}] "
                          f"as {arguments.input} {source_name}")
        width = fit.shape[0]
        for shot in shots:
            if shot >= width:
                raise Refusal(f"shot {shot} is out of range: {arguments.result} /fit has "
                              f"{width} waveforms (indices 0 to {width - 1})")
        if width != count:
            raise Refusal(f"{arguments.result}: /fit has {width} waveforms but "
                          f"{arguments.input} {source_name} has {count}: not this input's result")
        for name, item in (("status", status), ("rnorm", rnorm)):
            if item is not None and item.shape != (width,):
                raise Refusal(f"{arguments.result}: /{name} has shape {item.shape}, not [{width}]")
        if x is not None and x.shape != fit.shape:
            raise Refusal(f"{arguments.result}: /x has shape {x.shape}, not {fit.shape} as /fit")
        if offsets.shape != (width + 1,):
            raise Refusal(f"{arguments.result}: /returns/offsets has shape {offsets.shape}, "
                          f"not [{width + 1}]")
        total = int(offsets[width])
        for name, item in (("sample", sample), ("energy", energy), ("elevation", elevation)):
            if item is not None and item.shape != (total,):
                raise Refusal(f"{arguments.result}: /returns/{name} has shape {item.shape}, not "
                              f"[{total}] (/returns/offsets[{width}])")

        waves = rows(rx, shots, np).astype(np.float64)
        if layout == "lvis":
            waves -= rows(sigmean, shots, np).astype(np.float64)[:, None]
        # Where x[j]'s echo peaks: j + argmax(pulse) - c (c = 0 for kpl deconv's
        # --pulse-origin start, L/2 for center), with the pulse kpl uses.
        pulses = None
        if layout == "lvis" and "TXWAVE" in source and source["TXWAVE"].ndim == 2 \
                and source["TXWAVE"].shape[0] == count and source["TXWAVE"].shape[1] > 8:
            tx = rows(source["TXWAVE"], shots, np).astype(np.float64)
            pulses = np.maximum(tx - tx[:, :8].mean(axis=1)[:, None], 0.0)
        elif layout == "kpl" and "pulse" in source and hasattr(source["pulse"], "shape"):
            pulse = source["pulse"]
            if pulse.ndim == 1:
                pulses = np.repeat(np.asarray(pulse[:], dtype=np.float64)[None, :], len(shots), axis=0)
            elif pulse.ndim == 2 and pulse.shape[0] == count:
                pulses = rows(pulse, shots, np).astype(np.float64)
        origin = result.attrs.get("pulse_origin", "start")
        origin = origin.decode() if isinstance(origin, bytes) else str(origin)
        if pulses is not None:
            shifts = np.argmax(pulses, axis=1) - (pulses.shape[1] // 2 if origin == "center" else 0)
        else:
            shifts = np.zeros(len(shots), dtype=np.int64)
        panels = []
        fits = rows(fit, shots, np).astype(np.float64)
        xs = rows(x, shots, np).astype(np.float64) if x is not None else None
        statuses = rows(status, shots, np)
        rnorms = rows(rnorm, shots, np) if rnorm is not None else None

        # Elevation of each sample: from the input, else from the copies in the result.
        z0 = zlast = None
        for h5 in (source, result):
            last_name = last_sample_dataset(h5, samples)
            if "Z0" in h5 and last_name is not None:
                z0 = rows(h5["Z0"], shots, np).astype(np.float64)
                zlast = rows(h5[last_name], shots, np).astype(np.float64)
                last = int(last_name[1:])
                if last != samples - 1:
                    print(f"plot_waveforms: note: {last_name} with {samples} samples per waveform; "
                          f"using last = {last}", file=sys.stderr)
                break
        shot_numbers = None
        for h5 in (source, result):
            if "SHOTNUMBER" in h5:
                shot_numbers = rows(h5["SHOTNUMBER"], shots, np)
                break

        for k, shot in enumerate(shots):
            begin, end = int(offsets[shot]), int(offsets[shot + 1])
            if not 0 <= begin <= end <= total:
                raise Refusal(f"{arguments.result}: /returns/offsets[{shot}:{shot + 2}] = "
                              f"[{begin}, {end}] is not within [0, {total}]")
            panel = dict(index=shot, wave=waves[k], fit=fits[k], x_shift=int(shifts[k]),
                         x_aligned=pulses is not None,
                         x=None if xs is None else xs[k], status=int(statuses[k]),
                         rnorm=None if rnorms is None else float(rnorms[k]),
                         shot_number=None if shot_numbers is None else int(shot_numbers[k]),
                         sample=np.asarray(sample[begin:end], dtype=np.float64),
                         energy=np.asarray(energy[begin:end], dtype=np.float64))
            if z0 is not None:
                panel["z"] = z0[k] + (zlast[k] - z0[k]) * np.arange(samples) / last
                if elevation is not None:
                    panel["return_z"] = np.asarray(elevation[begin:end], dtype=np.float64)
                else:
                    panel["return_z"] = z0[k] + (zlast[k] - z0[k]) * panel["sample"] / last
            panels.append(panel)
    return layout, panels


def window(panel, np, full):
    """Sample range [lo, hi] to draw: where the signal is, with a margin."""
    samples = panel["wave"].size
    if full:
        return 0, samples - 1
    level = max(np.abs(panel["fit"]).max(), 1e-300)
    signal = np.nonzero(np.abs(panel["fit"]) > 0.02 * level)[0]
    points = list(signal) + [s for s in panel["sample"] if np.isfinite(s)]
    if not points:
        return 0, samples - 1
    lo, hi = min(points), max(points)
    margin = max(10, 0.25 * (hi - lo), 0.5 * (80 - (hi - lo)))   # at least ~80 samples
    lo, hi = max(0, int(lo - margin)), min(samples - 1, int(math.ceil(hi + margin)))
    return lo, hi


def draw(arguments, layout, panels, np, plt):
    count = len(panels)
    columns = min(arguments.columns, count)
    lines = math.ceil(count / columns)
    figure, axes = plt.subplots(lines, columns, figsize=(3.6 * columns, 5.4 * lines),
                                squeeze=False, constrained_layout=True)
    with_z = "z" in panels[0]
    for k, panel in enumerate(panels):
        ax = axes[k // columns][k % columns]
        lo, hi = window(panel, np, arguments.full_window)
        span = slice(lo, hi + 1)
        vertical = panel["z"] if with_z else np.arange(panel["wave"].size, dtype=np.float64)
        ax.plot(panel["wave"][span], vertical[span], color="0.35", lw=0.9,
                label="RXWAVE − SIGMEAN" if layout == "lvis" else "waveform")
        ax.plot(panel["fit"][span], vertical[span], color="tab:red", lw=1.2, label="fit (A x)")
        ax.axvline(0.0, color="0.8", lw=0.6, zorder=0)
        if panel["x"] is not None and not arguments.no_x:
            # x[j] drawn where its echo peaks: sample j + shift.
            at = np.arange(panel["x"].size) + panel["x_shift"]
            keep = (panel["x"] > 0) & (at >= lo) & (at <= hi)
            top = ax.twiny()
            if keep.any():
                top.hlines(vertical[at[keep]], 0, panel["x"][keep], color="tab:blue",
                           alpha=0.5, lw=2.5)
                top.set_xlim(0, panel["x"][keep].max() * 3.0)
            else:
                top.set_xlim(0, 1)
            top.tick_params(axis="x", labelsize=7, colors="tab:blue")
            where = "at its echo's peak" if panel["x_aligned"] else "at its echo's start"
            if not keep.any():
                where += "; none in view"
            top.set_xlabel(f"x, energy per sample ({where})", fontsize=7, color="tab:blue")
        z_returns = panel["return_z"] if with_z else panel["sample"]
        xmax = max(panel["wave"][span].max(), panel["fit"][span].max(), 1.0)
        extent = abs(vertical[hi] - vertical[lo]) or 1.0
        previous = None
        below = False
        for r, z, e in zip(panel["sample"], z_returns, panel["energy"]):
            ax.axhline(z, color="tab:green", lw=0.8, ls="--")
            height = float(np.interp(r, np.arange(panel["fit"].size), panel["fit"]))
            ax.plot([height], [z], marker="o", ms=4, color="tab:green")
            label = f"E {e:.4g}" + (f"\nz {z:.2f} m" if with_z else f"\nr {r:.1f}")
            # Returns close together: alternate the labels above and below.
            below = (not below) if previous is not None and abs(z - previous) < 0.08 * extent else False
            previous = z
            ax.annotate(label, xy=(height, z), xytext=(6, -2 if below else 2),
                        textcoords="offset points", fontsize=7, color="darkgreen",
                        va="top" if below else "bottom")
        ax.set_xlim(min(0.0, panel["wave"][span].min()) - 0.03 * xmax, 1.25 * xmax)
        if with_z:
            ax.set_ylim(vertical[hi], vertical[lo])
            if vertical[lo] < vertical[hi]:       # Z0 below Z<last>: keep elevation up
                ax.set_ylim(vertical[lo], vertical[hi])
            ax.set_ylabel("elevation (m)")
        else:
            ax.set_ylim(hi, lo)                   # sample 0 at the top
            ax.set_ylabel("sample (0 = top of window)")
        ax.set_xlabel("counts")
        name = STATUS.get(panel["status"], "unknown")
        title = (f"shot {panel['shot_number']} (row {panel['index']})"
                 if panel["shot_number"] is not None else f"row {panel['index']}")
        detail = f"status {panel['status']} {name}"
        if panel["rnorm"] is not None:
            detail += f", rnorm {panel['rnorm']:.3g}"
        detail += f", {panel['sample'].size} return{'s' if panel['sample'].size != 1 else ''}"
        ax.set_title(f"{title}\n{detail}", fontsize=8,
                     color="black" if panel["status"] == 0 else "tab:red")
        ax.tick_params(labelsize=7)
        if k == 0:
            ax.legend(fontsize=7, loc="lower right")
    for k in range(count, lines * columns):
        axes[k // columns][k % columns].set_visible(False)
    figure.suptitle(f"{os.path.basename(arguments.input)} — kpl deconv "
                    f"{os.path.basename(arguments.result)}", fontsize=9)
    figure.savefig(arguments.output, dpi=130)


def main(argv=None):
    arguments = parse_arguments(argv)
    try:
        import h5py
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError as error:
        print(f"plot_waveforms: {error} (install python3-h5py python3-matplotlib)", file=sys.stderr)
        return 2
    directory = os.path.dirname(os.path.abspath(arguments.output))
    try:
        if not os.path.isdir(directory):
            raise Refusal(f"{arguments.output}: directory {directory} does not exist")
        layout, panels = load(arguments, h5py, np)
    except Refusal as refusal:
        print(f"plot_waveforms: {refusal}", file=sys.stderr)
        return 2
    try:
        draw(arguments, layout, panels, np, plt)
    except (OSError, ValueError) as error:
        print(f"plot_waveforms: {arguments.output}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
