#!/usr/bin/env python3
"""Runs kpl's whole perf suite on every backend a build has, in one command.

    python3 perf/run_suite.py --build build-release --output perf-results [--quick]

For every backend the build enables (the execution-space names in the
benchmarks' names: Serial, OpenMP, Cuda, ...) and every benchmark binary
(build/perf/kpl_*_benchmark), Google Benchmark writes its JSON to
OUTPUT/<backend>/<binary>.json. From those files come

  OUTPUT/summary.md   one table per backend: each benchmark's time and figure
                      (GB/s, or systems/s, waveforms/s for the solvers), the
                      device-copy ceiling measured in the same run and the
                      ratio to it, the in-binary baseline (KokkosBlas/cuBLAS
                      or OpenBLAS for gemv, plain Kokkos::parallel_reduce,
                      the naive broadcast, Kokkos::deep_copy) and the ratio
                      to it (> 1: kpl is faster);
  OUTPUT/plots/*.png  the seeds' figures: gemv time against rows per strategy
                      (Sieminski & Lee, Fig. 4), broadcast bandwidth against
                      the Y-dimension length (Coban et al., Figs. 6-8), NNLS
                      time against the number of systems (Luo & Duraiswami,
                      Tables 7.1-7.3); skipped, with a note, without
                      matplotlib.

--quick runs a small subset at small sizes with short timing (under a minute
on two cores; CI runs it as a smoke test and checks no figure). --summarize
rebuilds summary and plots from an existing OUTPUT without running anything.
"""

import argparse
import datetime
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

KNOWN_BACKENDS = ["Serial", "OpenMP", "Threads", "HPX", "Cuda", "HIP", "SYCL", "OpenMPTarget"]

# One small, representative subset per binary for --quick; {backend} stands
# for the backend's name. These are POSIX extended regular expressions, what
# Google Benchmark's --benchmark_filter takes.
QUICK_FILTERS = {
    "kpl_copy_benchmark": r"copy(_kernel)?/float/{backend}/(65536|1048576|16777216)/",
    "kpl_reduce_benchmark": r"reduce/(kpl|kokkos)/(sum|minmax)/float/{backend}/(10000|1000000)/",
    "kpl_broadcast_benchmark": r"broadcast_y_length/(automatic|general|naive)/"
    r"matrix_plus_(row|column)/(16|256|1024)x1024/float/{backend}/",
    "kpl_gemv_benchmark": r"gemv/(T|N)/float/[^/]+/{backend}/rows:(1000|10000)/columns:(16|64)/",
    "kpl_nnls_benchmark": r"(nnls/uniform512/double/classical-twice/[^/]+/{backend}/systems:1/)|"
    r"(deconv/lvis432/double/{backend}/waveforms:192/)",
    "kpl_gam_benchmark": r"(gam_fit/(compact|dense-automatic|dense-kokkos-kernels)/(direct|gram)/"
    r"double/k:16/mstop:100/{backend}/n:1000/)|"
    r"(gam_kernel/transpose_product/double/k:32/{backend}/n:10000/)",
}


def extended_regex_escape(text):
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", text)


def log(message):
    print(f"kpl perf suite: {message}", flush=True)


def benchmark_binaries(build):
    binaries = sorted((build / "perf").glob("kpl_*_benchmark"))
    binaries = [b for b in binaries if b.is_file() and os.access(b, os.X_OK)]
    if not binaries:
        sys.exit(f"kpl perf suite: no kpl_*_benchmark binaries in {build / 'perf'} "
                 "(configure with -DKPL_ENABLE_BENCHMARKS=ON and build first)")
    return binaries


def list_benchmarks(binary, environment):
    result = subprocess.run([str(binary), "--benchmark_list_tests=true"], capture_output=True,
                            text=True, env=environment, check=True)
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def backends_of(names):
    found = set()
    for name in names:
        for component in name.split("/"):
            if component in KNOWN_BACKENDS:
                found.add(component)
    return [b for b in KNOWN_BACKENDS if b in found]


def supports_warmup(binary, environment):
    result = subprocess.run([str(binary), "--help"], capture_output=True, text=True,
                            env=environment)
    return "min_warmup_time" in result.stdout + result.stderr


def run_suite(arguments):
    build = pathlib.Path(arguments.build).resolve()
    output = pathlib.Path(arguments.output).resolve()
    environment = dict(os.environ)
    # OpenMP threads bound as Kokkos recommends, unless the caller chose.
    environment.setdefault("OMP_PROC_BIND", "spread")
    environment.setdefault("OMP_PLACES", "threads")
    binaries = benchmark_binaries(build)
    names = {b.name: list_benchmarks(b, environment) for b in binaries}
    backends = backends_of([n for listed in names.values() for n in listed])
    if arguments.backends:
        wanted = arguments.backends.split(",")
        unknown = [b for b in wanted if b not in backends]
        if unknown:
            sys.exit(f"kpl perf suite: backend(s) {', '.join(unknown)} not in this build "
                     f"(it has {', '.join(backends)})")
        backends = wanted
    log(f"build {build}; backends {', '.join(backends)}; "
        f"{'quick' if arguments.quick else 'full'} run into {output}")
    min_time = arguments.min_time if arguments.min_time else (0.01 if arguments.quick else 0.1)
    for backend in backends:
        (output / backend).mkdir(parents=True, exist_ok=True)
        for binary in binaries:
            if arguments.filter:
                # Any regular expression of the caller's: pick the names here
                # and hand Google Benchmark the exact names.
                chosen = [n for n in names[binary.name]
                          if f"/{backend}/" in n and re.search(arguments.filter, n)]
                pattern = "^(" + "|".join(extended_regex_escape(n) for n in chosen) + ")$"
            elif arguments.quick:
                pattern = QUICK_FILTERS.get(binary.name, "/{backend}/").replace("{backend}", backend)
            else:
                pattern = f"/{backend}/"
            if not any(re.search(pattern, n) for n in names[binary.name]):
                continue
            json_path = output / backend / f"{binary.name}.json"
            command = [str(binary), f"--benchmark_filter={pattern}",
                       f"--benchmark_out={json_path}", "--benchmark_out_format=json",
                       f"--benchmark_min_time={min_time}"]
            if supports_warmup(binary, environment):
                # Keep one-time costs (CUDA module loading, the cuBLAS handle)
                # out of the figures, as they stay out of any program that
                # calls a kernel more than once.
                command.append(f"--benchmark_min_warmup_time={min_time / 2}")
            started = time.monotonic()
            with open(output / backend / f"{binary.name}.log", "w") as console:
                status = subprocess.run(command, stdout=console, stderr=subprocess.STDOUT,
                                        env=environment).returncode
            log(f"{backend}: {binary.name} ({time.monotonic() - started:.1f} s)")
            if status == 0 and json_path.stat().st_size == 0:
                status = "no results"
            if status != 0:
                sys.exit(f"kpl perf suite: {binary.name} failed on {backend} (exit status "
                         f"{status}); its output is in {output / backend / (binary.name + '.log')}")
    kpl = build / "algorithms" / "kpl"
    versions = ""
    if kpl.is_file():
        versions = subprocess.run([str(kpl), "--version"], capture_output=True,
                                  text=True).stdout.strip()
    (output / "run.json").write_text(json.dumps({
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "build": str(build), "versions": versions, "quick": arguments.quick,
        "command": shlex.join(["python3"] + sys.argv), "backends": backends}, indent=1))
    return output


# ------------------------------------------------------------------ reading
def read_results(output):
    """{backend: {name: benchmark entry}} from OUTPUT/<backend>/*.json."""
    results = {}
    for backend_directory in sorted(p for p in output.iterdir() if p.is_dir()):
        entries, skipped = {}, {}
        context = {}
        for json_path in sorted(backend_directory.glob("*.json")):
            text = json_path.read_text()
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                # An interrupted run: Google Benchmark streams its JSON, so
                # everything up to the last finished benchmark is there.
                try:
                    data = json.loads(text.rstrip().rstrip(",") + "\n]}")
                except json.JSONDecodeError:
                    log(f"skipping {json_path}: not Google Benchmark JSON")
                    continue
                log(f"{json_path} was cut short; summarizing the benchmarks that finished")
            context = data.get("context", context)
            medians = {}
            for entry in data.get("benchmarks", []):
                if entry.get("run_type", "iteration") != "iteration":
                    # Runs with --benchmark_repetitions: the median stands
                    # for the benchmark.
                    if entry.get("aggregate_name") == "median":
                        medians[entry["run_name"]] = entry
                    continue
                if entry.get("error_occurred"):
                    skipped[entry["name"]] = entry.get("error_message", "")
                    continue
                entries[entry["name"]] = entry
            entries.update(medians)
        if entries or skipped:
            results[backend_directory.name] = {"entries": entries, "context": context,
                                               "skipped": skipped}
    return results


def seconds(entry):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry.get("time_unit", "ns")]
    return entry["real_time"] * scale


def figure(entry):
    """The figure a benchmark reports: (value, unit)."""
    if "GB/s" in entry:
        return entry["GB/s"], "GB/s"
    for unit in ("systems/s", "waveforms/s", "fits/s", "items_per_second"):
        if unit in entry:
            return entry[unit], unit
    return None, ""


def baseline_names(name):
    """(name, label) of the in-binary baselines of a benchmark, preferred first."""
    parts = name.split("/")
    family = parts[0]
    if family in ("gemv", "gemv_stream", "gemv_graph") and len(parts) > 4:
        if parts[3] in ("kokkos-kernels", "openblas"):
            return []
        # On CPUs without a BLAS TPL in Kokkos Kernels, OpenBLAS called directly.
        return [("/".join(parts[:3] + [b] + parts[4:]), b) for b in ("openblas", "kokkos-kernels")]
    if family == "reduce" and len(parts) > 1 and parts[1] != "kokkos":
        return [("/".join([family, "kokkos"] + parts[2:]), "Kokkos::parallel_reduce")]
    if family in ("broadcast", "broadcast_y_length") and len(parts) > 1 and parts[1] != "naive":
        return [("/".join([family, "naive"] + parts[2:]), "naive broadcast")]
    if family == "broadcast_factor_sweep":
        return [("/".join(["broadcast", "naive"] + parts[2:]), "naive broadcast")]
    if family == "gam_fit" and len(parts) > 2 and parts[1] != "dense-kokkos-kernels":
        return [("/".join([family, "dense-kokkos-kernels", "direct"] + parts[3:]),
                 "dense basis, KokkosBlas::gemv")]
    if family == "copy_kernel":
        return [("/".join(["copy"] + parts[1:]), "Kokkos::deep_copy")]
    return []


def ceiling(entries, backend):
    """The device copy's GB/s at its largest size in this run: the ceiling."""
    best = None
    for name, entry in entries.items():
        match = re.match(rf"copy/float/{backend}/(\d+)/", name)
        if match and "GB/s" in entry:
            size = int(match.group(1))
            if best is None or size > best[0]:
                best = (size, entry["GB/s"])
    return best


def format_value(value):
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def format_time(value):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def write_summary(output, results):
    run = json.loads((output / "run.json").read_text()) if (output / "run.json").exists() else {}
    lines = ["# kpl perf suite summary", ""]
    lines.append(f"- date: {run.get('date', 'unknown')}")
    lines.append(f"- command: `{run.get('command', 'unknown')}`")
    lines.append(f"- build: {run.get('versions', '') or run.get('build', '')}")
    if run.get("quick"):
        lines.append("- **quick mode**: small sizes and short timing, a smoke test, not figures")
    lines.append("")
    lines.append("Ratios: *of ceiling* = GB/s over the device copy's GB/s measured in the same "
                 "run (largest copy size); *vs baseline* = baseline time over kpl time "
                 "(> 1: kpl is faster). Sizes that fit in a cache can exceed the ceiling.")
    for backend, data in results.items():
        entries, context = data["entries"], data["context"]
        limit = ceiling(entries, backend)
        lines += ["", f"## {backend}", ""]
        host = context.get("host_name", "")
        cpus = context.get("num_cpus", "")
        lines.append(f"Host {host}, {cpus} CPUs; ceiling: " + (
            f"device copy {limit[1]:.1f} GB/s ({limit[0]} floats)" if limit else
            "no copy benchmark in this run"))
        lines += ["", "| benchmark | time | figure | of ceiling | baseline | vs baseline |",
                  "|---|---|---|---|---|---|"]
        for name, entry in entries.items():
            value, unit = figure(entry)
            of_ceiling = (f"{value / limit[1]:.2f}" if unit == "GB/s" and limit and value
                          else "—")
            baseline, versus = "—", "—"
            for candidate, label in baseline_names(name):
                if candidate in entries:
                    baseline = label
                    versus = f"{seconds(entries[candidate]) / seconds(entry):.2f}"
                    break
            figure_text = f"{format_value(value)} {unit}" if value is not None else "—"
            lines.append(f"| `{name}` | {format_time(seconds(entry))} | {figure_text} | "
                         f"{of_ceiling} | {baseline} | {versus} |")
        if data["skipped"]:
            lines += ["", "Skipped by the benchmark itself (the case does not apply):", ""]
            lines += [f"- `{name}`: {message}" for name, message in data["skipped"].items()]
    (output / "summary.md").write_text("\n".join(lines) + "\n")
    log(f"wrote {output / 'summary.md'}")


# -------------------------------------------------------------------- plots
def plot(output, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not installed (Debian: python3-matplotlib): no plots")
        return
    directory = output / "plots"
    directory.mkdir(exist_ok=True)
    written = []
    for backend, data in results.items():
        entries = data["entries"]
        written += plot_gemv(plt, directory, backend, entries)
        written += plot_broadcast(plt, directory, backend, entries)
        written += plot_nnls(plt, directory, backend, entries)
        written += plot_gam(plt, directory, backend, entries)
    for path in written:
        log(f"wrote {path}")


def save_figure(plt, figure_, title, path):
    """Titles, lays out, writes and closes a figure; returns [path]."""
    figure_.suptitle(title)
    figure_.tight_layout()
    figure_.savefig(path, dpi=110)
    plt.close(figure_)
    return [path]


def plot_gemv(plt, directory, backend, entries):
    """Sieminski & Lee Fig. 4: time against rows, one line per strategy."""
    # Back-to-back calls (gemv_stream) where the run has them, else fenced
    # calls (gemv); and, where the run has them, GPU time from graph replays
    # (gemv_graph, CUDA) in figures of their own.
    timing = "gemv_stream" if any(n.startswith("gemv_stream/") for n in entries) else "gemv"
    written = plot_gemv_timing(plt, directory, backend, entries, timing)
    if any(n.startswith("gemv_graph/") for n in entries):
        written += plot_gemv_timing(plt, directory, backend, entries, "gemv_graph")
    return written


def plot_gemv_timing(plt, directory, backend, entries, timing):
    timing_words = {"gemv_stream": "back-to-back calls", "gemv": "fenced calls",
                    "gemv_graph": "GPU time, CUDA-graph replays"}[timing]
    prefix = "gemv_graph_" if timing == "gemv_graph" else "gemv_"
    pattern = re.compile(
        rf"{timing}/(T|N)/(float|double)/([^/]+)/{backend}/rows:(\d+)/columns:(16|32|64)/")
    series = {}
    for name, entry in entries.items():
        match = pattern.match(name)
        if match:
            op, precision, strategy, rows, columns = match.groups()
            series.setdefault((precision, op, int(columns), strategy), []).append(
                (int(rows), seconds(entry) * 1e6))
    written = []
    for precision in ("float", "double"):
        keys = [k for k in series if k[0] == precision]
        if not keys:
            continue
        column_counts = sorted({k[2] for k in keys})
        figure_, axes = plt.subplots(2, len(column_counts), figsize=(4 * len(column_counts), 7),
                                     squeeze=False)
        for row, op in enumerate(("T", "N")):
            for column, k in enumerate(column_counts):
                axis = axes[row][column]
                for key in sorted(x for x in keys if x[1] == op and x[2] == k):
                    points = sorted(series[key])
                    axis.loglog([p[0] for p in points], [p[1] for p in points], marker="o",
                                label=key[3])
                axis.set_title(f"{'Bᵀg' if op == 'T' else 'Bd'}, k = {k}")
                axis.set_xlabel("rows n")
                axis.set_ylabel("µs per call")
                axis.grid(True, which="both", alpha=0.3)
        for row in range(2):
            axes[row][0].legend(fontsize=8)
        written += save_figure(
            plt, figure_,
            f"gemv, {precision}, {backend}, {timing_words} (after Sieminski & Lee Fig. 4)",
            directory / f"{prefix}time_vs_rows_{precision}_{backend}.png")
    return written


def plot_broadcast(plt, directory, backend, entries):
    """Coban et al. Figs. 6-8: bandwidth against the Y-dimension length."""
    pattern = re.compile(rf"broadcast_y_length/([^/]+)/(matrix_plus_row|matrix_plus_column)/(\d+)x(\d+)/float/{backend}/")
    series = {}
    for name, entry in entries.items():
        match = pattern.match(name)
        if match and "GB/s" in entry:
            variant, case, y_length, _ = match.groups()
            series.setdefault((case, variant), []).append((int(y_length), entry["GB/s"]))
    if not series:
        return []
    cases = sorted({k[0] for k in series})
    figure_, axes = plt.subplots(1, len(cases), figsize=(5.5 * len(cases), 4), squeeze=False)
    for column, case in enumerate(cases):
        axis = axes[0][column]
        for key in sorted(k for k in series if k[0] == case):
            points = sorted(series[key])
            axis.semilogx([p[0] for p in points], [p[1] for p in points], marker="o",
                          label=key[1])
        axis.set_title(case.replace("_", " "))
        axis.set_xlabel("Y-dimension length")
        axis.set_ylabel("GB/s")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    return save_figure(plt, figure_,
                       f"broadcast, float, {backend} (after Çoban et al. Figs. 6-8)",
                       directory / f"broadcast_bandwidth_vs_y_{backend}.png")


def plot_nnls(plt, directory, backend, entries):
    """Luo & Duraiswami Tables 7.1-7.3 as a plot: time against systems, one
    panel per matrix; colour = precision and orthogonalisation, solid = the
    gradient from cross products, dashed = from the residual."""
    pattern = re.compile(rf"nnls/([^/]+)/(float|double)/([^/]+)/([^/]+)/{backend}/systems:(\d+)/")
    series = {}
    for name, entry in entries.items():
        match = pattern.match(name)
        if match:
            matrix, precision, method, gradient, systems = match.groups()
            series.setdefault((matrix, precision, method, gradient), []).append(
                (int(systems), seconds(entry) * 1e3))
    if not series:
        return []
    matrices = sorted({k[0] for k in series})
    colours = {}
    figure_, axes = plt.subplots(1, len(matrices), figsize=(6.5 * len(matrices), 4.8),
                                 squeeze=False)
    for column, matrix in enumerate(matrices):
        axis = axes[0][column]
        for key in sorted(k for k in series if k[0] == matrix):
            _, precision, method, gradient = key
            colour = colours.setdefault((precision, method), f"C{len(colours) % 10}")
            points = sorted(series[key])
            axis.loglog([p[0] for p in points], [p[1] for p in points], marker="o", color=colour,
                        linestyle="-" if "cross" in gradient else "--",
                        label=f"{precision}, {method}, {gradient.replace('gradient-from-', '')}")
        axis.set_title(f"{matrix}")
        axis.set_xlabel("systems in the batch")
        axis.set_ylabel("ms per batch")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    return save_figure(plt, figure_,
                       f"batched NNLS, {backend} (after Luo & Duraiswami Tables 7.1-7.3)",
                       directory / f"nnls_time_vs_systems_{backend}.png")


def plot_gam(plt, directory, backend, entries):
    """Boosted GAM fit time (basis and lambda search included) against n, one
    panel per basis size k (the seed's grid, Sieminski & Lee §4); colour =
    basis and mode or gemv strategy, solid = double, dashed = float."""
    pattern = re.compile(
        rf"gam_fit/([^/]+)/([^/]+)/(float|double)/k:(\d+)/mstop:(\d+)/{backend}/n:(\d+)/")
    series = {}
    for name, entry in entries.items():
        match = pattern.match(name)
        if match:
            storage, mode, precision, k, mstop, n = match.groups()
            label = f"{storage} {mode}" + ("" if mstop == "100" else f", mstop {mstop}")
            series.setdefault((int(k), label, precision), []).append((int(n), seconds(entry)))
    if not series:
        return []
    sizes = sorted({key[0] for key in series})
    colours = {}
    figure_, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4.6), squeeze=False)
    for column, k in enumerate(sizes):
        axis = axes[0][column]
        for key in sorted(key for key in series if key[0] == k):
            _, label, precision = key
            colour = colours.setdefault(label, f"C{len(colours) % 10}")
            points = sorted(series[key])
            axis.loglog([p[0] for p in points], [p[1] for p in points], marker="o", color=colour,
                        linestyle="-" if precision == "double" else "--",
                        label=f"{label}, {precision}")
        axis.set_title(f"k = {k}, p = 100")
        axis.set_xlabel("observations n")
        axis.set_ylabel("seconds per fit (mstop 100 unless marked)")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=6)
    return save_figure(plt, figure_, f"boosted GAM fit time vs n, {backend}",
                       directory / f"gam_fit_time_vs_n_{backend}.png")


def main():
    parser = argparse.ArgumentParser(
        description="Run kpl's perf suite on every backend of a build; write Google Benchmark "
        "JSON per backend, a Markdown summary with ratios to the measured ceiling and to the "
        "baselines, and the seeds' plots.")
    parser.add_argument("--build", default="build",
                        help="build directory holding perf/kpl_*_benchmark (default: build)")
    parser.add_argument("--output", default="perf-results",
                        help="results folder (default: perf-results)")
    parser.add_argument("--quick", action="store_true",
                        help="small subset, small sizes, short timing: a smoke test")
    parser.add_argument("--backends", help="comma-separated subset, e.g. Cuda,OpenMP")
    parser.add_argument("--filter", help="regular expression: only benchmarks matching it")
    parser.add_argument("--min-time", type=float,
                        help="seconds per benchmark (default 0.1; 0.01 with --quick)")
    parser.add_argument("--summarize", action="store_true",
                        help="only rebuild summary.md and plots from an existing --output")
    arguments = parser.parse_args()
    output = pathlib.Path(arguments.output).resolve()
    if arguments.summarize:
        if not output.is_dir():
            sys.exit(f"kpl perf suite: {output} does not exist")
    else:
        run_suite(arguments)
    results = read_results(output)
    if not results:
        sys.exit(f"kpl perf suite: no benchmark results in {output}")
    write_summary(output, results)
    plot(output, results)


if __name__ == "__main__":
    main()
