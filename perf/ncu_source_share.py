#!/usr/bin/env python3
"""Where a CUDA kernel spends its time, by source line or call site, from an
Nsight Compute report: each SASS instruction's warp-stall samples and
executions (ncu's source page) joined to the line tables of the same binary
(nvdisasm -gi), which name every inlined frame, innermost first.

Samples are taken per warp at regular intervals, so a line's share of the
samples is its share of the warps' time (waiting included); its share of the
instructions is its share of the issued work. A kernel of kpl is one inlined
tree under Kokkos' launch, so ncu's own CUDA view puts nearly every sample on
Kokkos' launch line; this script walks each instruction's inline chain to the
frames in kpl's files instead.

On the device machine, for a report r.ncu-rep of a -lineinfo build:

    ncu --import r.ncu-rep --page source --print-source sass --csv > sass.csv
    cuobjdump -xelf all BINARY            # writes *.cubin
    nvdisasm -gi -c THE.cubin > disasm.txt

then, anywhere:

    python3 perf/ncu_source_share.py --disasm disasm.txt --sass sass.csv \\
        --kernel NnlsTeamSolveIdNS3_12DenseColumnsIdEE [--files nnls_] [--at FILE]

--kernel is a substring of the kernel's mangled name (as nvdisasm prints it).
By default rows are the innermost frames whose file name matches --files;
with --at FILE, rows are the call sites in FILE (its innermost frame in each
chain) and the file:line each calls into.
"""
import argparse
import collections
import csv
import re
import sys

FRAME = re.compile(r'//## File "([^"]+)", line (\d+)')
ADDRESS = re.compile(r"\s*/\*([0-9a-f]{4,})\*/")


def inline_chains(disasm_lines, kernel):
    """{offset in the kernel: [(file name, line), ...] innermost first}."""
    start = None
    for number, line in enumerate(disasm_lines):
        if line.startswith(".text.") and kernel in line and line.rstrip().endswith(":"):
            start = number
            break
    if start is None:
        raise ValueError(f"no kernel whose name contains {kernel!r} in the disassembly")
    chains, frames, in_group = {}, [], False
    for line in disasm_lines[start + 1:]:
        if line.startswith("//-----"):  # the next function's banner
            break
        frame = FRAME.search(line)
        if frame:
            if not in_group:
                frames, in_group = [], True
            frames.append((frame.group(1).rsplit("/", 1)[-1], int(frame.group(2))))
            continue
        address = ADDRESS.match(line)
        if address:
            in_group = False
            chains[int(address.group(1), 16)] = list(frames)
    return chains


def instruction_rows(sass_rows):
    """[(offset from the kernel's first instruction, samples, executed)]."""
    header_at = next(i for i, row in enumerate(sass_rows) if "Address" in row)
    header = sass_rows[header_at]
    address = header.index("Address")
    samples = header.index("Warp Stall Sampling (All Samples)")
    executed = header.index("Instructions Executed")
    body = [row for row in sass_rows[header_at + 1:] if len(row) == len(header)]
    if not body:
        return []
    base = int(body[0][address], 16)
    return [(int(row[address], 16) - base, int(row[samples]), int(row[executed]))
            for row in body]


def label_of(chain, files, at):
    """The row an instruction's inline chain counts towards."""
    if at is None:
        matching = [frame for frame in chain if files.search(frame[0])]
        frame = matching[0] if matching else (chain[0] if chain else ("?", 0))
        return f"{frame[0]}:{frame[1]}"
    for depth, frame in enumerate(chain):
        if frame[0] == at:
            callee = chain[depth - 1] if depth > 0 else None
            inner = f"{callee[0]}:{callee[1]}" if callee else "(own line)"
            return f"{frame[0]}:{frame[1]} -> {inner}"
    return "(not under " + at + ")"


def shares(chains, rows, files, at=None):
    """[(label, share of samples, share of instructions)], largest first."""
    totals = collections.defaultdict(lambda: [0, 0])
    all_samples = all_executed = 0
    for offset, samples, executed in rows:
        label = label_of(chains.get(offset, []), files, at)
        totals[label][0] += samples
        totals[label][1] += executed
        all_samples += samples
        all_executed += executed
    result = [(label, values[0] / all_samples if all_samples else 0.0,
               values[1] / all_executed if all_executed else 0.0)
              for label, values in totals.items()]
    return sorted(result, key=lambda row: (-row[1], -row[2], row[0]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--disasm", required=True, help="nvdisasm -gi -c output")
    parser.add_argument("--sass", required=True, help="ncu --page source --print-source sass --csv")
    parser.add_argument("--kernel", required=True, help="substring of the mangled kernel name")
    parser.add_argument("--files", default=r"^(?!Kokkos)", help="regex on file names (default: "
                        "any file not named Kokkos*)")
    parser.add_argument("--at", help="group by the call sites in this file instead")
    parser.add_argument("--top", type=int, default=40, help="rows to print")
    args = parser.parse_args(argv)
    with open(args.disasm, encoding="utf-8", errors="replace") as disasm:
        chains = inline_chains(disasm.read().split("\n"), args.kernel)
    with open(args.sass, newline="", encoding="utf-8", errors="replace") as sass:
        rows = instruction_rows(list(csv.reader(sass)))
    if not rows:
        print(f"{args.sass}: no instruction rows", file=sys.stderr)
        return 1
    print(f"{'samples':>8} {'instr.':>8}  where")
    for label, sampled, executed in shares(chains, rows, re.compile(args.files), args.at)[:args.top]:
        print(f"{100 * sampled:7.1f}% {100 * executed:7.1f}%  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
