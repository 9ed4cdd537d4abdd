#!/usr/bin/env python3
"""Mutation check: does the test suite catch small deliberate bugs?

Each mutant (scripts/mutations/*.txt) replaces one exact piece of text in one
source file, rebuilds one test executable and runs it. The mutant is *killed*
when that executable fails (or times out); it *survives* when every test
passes. The source file is restored after every mutant, also on Ctrl-C.

File format: blocks separated by blank lines; '#' starts a comment line.
    mutant: <name>
    file: <path relative to the repository root>
    target: <test executable (CMake target) to rebuild and run>
    find: <text that occurs exactly once in the file; \\n is a newline>
    replace: <its replacement; \\n is a newline>
"""
import argparse
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
KEYS = ("mutant", "file", "target", "find", "replace")


def parse(path):
    mutants, block = [], {}
    lines = path.read_text().splitlines() + [""]
    for number, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if block:
                missing = [k for k in KEYS if k not in block]
                if missing:
                    sys.exit(f"{path}:{number}: mutant block lacks {', '.join(missing)}")
                block["where"] = f"{path.name}:{block.pop('line')}"
                mutants.append(block)
                block = {}
            continue
        key, sep, value = line.partition(":")
        if not sep or key.strip() not in KEYS:
            sys.exit(f"{path}:{number}: expected one of {', '.join(KEYS)}: '{line}'")
        block.setdefault("line", number)
        value = value[1:] if value.startswith(" ") else value
        block[key.strip()] = value.replace("\\n", "\n")
    return mutants


def check_unique(mutant):
    source = (ROOT / mutant["file"]).read_text()
    count = source.count(mutant["find"])
    if count != 1:
        sys.exit(f"{mutant['where']}: mutant {mutant['mutant']}: 'find' occurs {count} times "
                 f"in {mutant['file']} (must be exactly once)")
    return source


def build(build_dir, target):
    result = subprocess.run(["cmake", "--build", str(build_dir), "--target", target],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return result.returncode == 0, result.stdout


def executable(build_dir, target):
    hits = [p for p in build_dir.rglob(target) if p.is_file() and os.access(p, os.X_OK)]
    if not hits:
        sys.exit(f"no executable named {target} under {build_dir}")
    return hits[0]


def run_tests(program, timeout):
    environment = dict(os.environ, OMP_NUM_THREADS="2", OMP_PROC_BIND="spread",
                       OMP_PLACES="threads")
    try:
        result = subprocess.run([str(program)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=timeout,
                                env=environment)
    except subprocess.TimeoutExpired:
        return "killed (timeout)"
    return "survived" if result.returncode == 0 else "killed"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path, help="a configured kpl build directory")
    parser.add_argument("files", nargs="*", type=pathlib.Path,
                        help="mutant files (default: scripts/mutations/*.txt)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per test run")
    parser.add_argument("--only", help="run only mutants whose name contains this text")
    parser.add_argument("--list", action="store_true",
                        help="check that every mutant applies, list them, build nothing")
    args = parser.parse_args()
    files = args.files or sorted((ROOT / "scripts" / "mutations").glob("*.txt"))
    mutants = [m for f in files for m in parse(f)]
    if args.only:
        mutants = [m for m in mutants if args.only in m["mutant"]]
    for mutant in mutants:
        check_unique(mutant)
    if args.list:
        for mutant in mutants:
            print(f"{mutant['mutant']:<44} {mutant['target']:<24} {mutant['file']}")
        print(f"{len(mutants)} mutants")
        return 0

    for target in sorted({m["target"] for m in mutants}):
        ok, log = build(args.build_dir, target)
        if not ok:
            sys.exit(f"baseline: {target} does not build unmutated:\n{log[-3000:]}")
        if run_tests(executable(args.build_dir, target), args.timeout) != "survived":
            sys.exit(f"baseline: {target} fails unmutated; fix that first")
        print(f"baseline: {target} builds and passes", flush=True)

    outcomes = []
    for mutant in mutants:
        path = ROOT / mutant["file"]
        original = check_unique(mutant)
        started = time.time()
        try:
            path.write_text(original.replace(mutant["find"], mutant["replace"]))
            ok, log = build(args.build_dir, mutant["target"])
            outcome = (run_tests(executable(args.build_dir, mutant["target"]), args.timeout)
                       if ok else "does not compile")
        finally:
            path.write_text(original)
        outcomes.append((mutant["mutant"], outcome))
        print(f"{mutant['mutant']:<40} {outcome:<18} ({time.time() - started:.0f} s)", flush=True)
        if not ok:
            print(log[-2000:], file=sys.stderr)

    for target in sorted({m["target"] for m in mutants}):
        build(args.build_dir, target)  # leave the build matching the sources
    killed = sum(o.startswith("killed") for _, o in outcomes)
    print(f"{killed} of {len(outcomes)} mutants killed")
    bad = [name for name, o in outcomes if not o.startswith("killed")]
    if bad:
        print("not killed: " + ", ".join(bad))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
