#!/usr/bin/env python3
"""Differential fuzzers of cgc's front ends (docs/onnx.md, "Fuzzing").

    run.py onnx|records --cgc-opt PATH [--cgc PATH] [--seconds S | --cases N]
           [--seed S] [--start I] [--case I] [--findings DIR] [--summary FILE]
    run.py replay --cgc-opt PATH [--cgc PATH] DIR...

A fuzz run mutates seed inputs (onnx_target.py, record_target.py) for
--seconds (or --cases) and checks each against the target's oracles.
Case I of seed S is the same input on every machine: `--seed S --case I`
reruns it alone. A finding's class (kind | op | message pattern) is
looked up in allowlist.txt; the first input of each class not listed is
saved to --findings, and the run exits 1. `replay` runs the oracles over
saved inputs (*.onnx, *.json records) unmutated, `cgc` end to end on
those whose name has "cli": test/fuzz/regressions/onnx/ and records/
through ctest. Exit 77 (skipped) without onnx for the
onnx target.
"""
import argparse
import faulthandler
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))

import fuzzlib  # noqa: E402


def make_target(name, args):
    if name == "onnx":
        import onnx_target
        return onnx_target.Target(args)
    import record_target
    return record_target.Target(args)


def findings_folder(args):
    return args.findings or os.path.join("build-fuzz", "findings", args.target)


def supervise(args):
    """Runs the cases in worker processes (this script with --worker), so
    that a case that kills the process (a signal in a native library) is
    a finding of kind `crash` and the run goes on with the next case."""
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    print(f"fuzz-{args.target}: seed {seed} (rerun one case: run.py {args.target} --seed {seed} "
          f"--case I)", flush=True)
    findings = fuzzlib.Findings(findings_folder(args), fuzzlib.Allowlist(), args.target)
    deadline, start, status = time.monotonic() + args.seconds, args.start, 0
    end = args.start + (args.cases or 0)
    with tempfile.TemporaryDirectory(prefix=f"cgc-fuzz-{args.target}-state-") as state:
        while (start < end) if args.cases else (time.monotonic() < deadline):
            budget = ["--cases", str(end - start)] if args.cases else \
                     ["--seconds", str(deadline - time.monotonic())]
            cmd = [sys.executable, os.path.abspath(__file__), args.target, "--worker", state,
                   "--start", str(start), "--seed", str(seed), "--cgc-opt", args.cgc_opt,
                   "--findings", findings_folder(args)] + budget
            cmd += (["--cgc", args.cgc] if args.cgc else []) + \
                   (["--summary", args.summary] if args.summary else []) + \
                   (["-v"] if args.verbose else [])
            rc = subprocess.run(cmd).returncode
            if rc >= 0:
                status = status or rc
                break
            with open(os.path.join(state, "case.txt")) as f:
                index, where = f.read().split("\n", 1)
            with open(os.path.join(state, "case.bin"), "rb") as f:
                data = f.read()
            frame = fault_frame(os.path.join(state, "fault.txt"))
            findings.add(f"crash | - | signal {-rc} at {frame}", data, ".onnx" if args.target == "onnx"
                         else ".json", where.strip())
            start = int(index) + 1
        for path in glob.glob(os.path.join(state, "classes-*.json")):
            findings.merge(path)
    opened = findings.open_classes()
    text = (f"fuzz-{args.target}: seed {seed}: {len(findings.classes)} finding classes "
            f"({len(opened)} open, {len(findings.classes) - len(opened)} allow-listed)")
    print(text + ("\n" + findings.summary() if findings.classes else ""), flush=True)
    if args.summary:  # the campaign's summary: every class, one line each
        with open(args.summary, "a") as f:
            f.write(text + ("\n" + findings.summary(verbose=True) if findings.classes else "") + "\n")
    return 1 if opened or status == 1 else status


def fault_frame(path):
    """'file:function' of the innermost Python frame faulthandler wrote."""
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r'\s*File "([^"]+)", line \d+ in (\S+)', line)
                if m:
                    return f"{os.path.basename(m.group(1))}:{m.group(2)}"
    except OSError:
        pass
    return "?"


def fuzz(args):
    """The cases of one worker (or the one --case): each generated, its
    bytes and name written to the state folder first, then checked."""
    try:
        target = make_target(args.target, args)
    except ImportError as e:
        print(f"skipped: {e} (scripts/setup.sh installs onnx)")
        return 77
    state = args.worker
    persist = os.path.join(state, f"classes-{args.start}.json") if state else None
    findings = fuzzlib.Findings(findings_folder(args), fuzzlib.Allowlist(), args.target, persist)
    seed = args.seed
    if state:
        fault = open(os.path.join(state, "fault.txt"), "w")
        faulthandler.enable(fault)
    start = time.monotonic()
    indices = [args.case] if args.case is not None else range(args.start, 10**12)
    with tempfile.TemporaryDirectory(prefix=f"cgc-fuzz-{args.target}-") as work:
        for index in indices:
            if args.case is None and (index >= args.start + args.cases if args.cases else
                                      time.monotonic() - start > args.seconds):
                break
            rng = fuzzlib.case_rng(seed, index)
            try:
                data, description = target.generate(rng)
            except Exception as e:  # the fuzzer's own bug: say which case to rerun
                raise RuntimeError(f"the {args.target} generator failed at seed {seed} case "
                                   f"{index}: {type(e).__name__}: {e}") from e
            where = f"seed {seed} case {index} ({description})"
            if args.verbose:
                print(where, flush=True)
            if state:
                with open(os.path.join(state, "case.bin"), "wb") as f:
                    f.write(data)
                with open(os.path.join(state, "case.txt"), "w") as f:
                    f.write(f"{index}\n{where}")
            target.check(data, rng, work, findings, where)
    report(args, target, findings, seed, time.monotonic() - start)
    if idle_oracle(target.stats):
        print(f"fuzz-{args.target}: the differential oracle compared none of "
              f"{target.stats['accepted']} accepted cases (a broken oracle)", flush=True)
        return 1
    return 1 if findings.open_classes() else 0


def idle_oracle(stats):
    """Whether a run accepted enough cases to compare some, and compared
    none: the differential oracle itself is broken (once, a stale import
    it swallowed made every ONNX case "reference failed")."""
    return stats.get("accepted", 0) >= 10 and stats.get("compared", 0) == 0


def report(args, target, findings, seed, seconds):
    """A worker's counts (its classes go to the supervisor), or the one
    --case's classes too."""
    stats = ", ".join(f"{v} {k}" for k, v in target.stats.items())
    text = f"fuzz-{args.target}: seed {seed}, cases from {args.start}, {seconds:.0f} s: {stats}"
    if not args.worker and findings.classes:
        text += "\n" + findings.summary()
    print(text, flush=True)
    if args.summary:
        with open(args.summary, "a") as f:
            f.write(text + "\n")


def replay(args):
    import onnx_target  # noqa: F401 - skipped below without onnx
    allowlist = fuzzlib.Allowlist()
    status, count = 0, 0
    with tempfile.TemporaryDirectory(prefix="cgc-fuzz-replay-") as work:
        for folder in args.inputs:
            kind = "onnx" if os.path.basename(os.path.normpath(folder)) == "onnx" else "records"
            try:
                target = make_target(kind, args)
            except ImportError as e:
                print(f"skipped: {e}")
                return 77
            # Beside the work folder, which each check empties.
            findings = fuzzlib.Findings(work + "-findings", allowlist, kind)
            for name in sorted(os.listdir(folder)):
                if not name.endswith(target.suffix):
                    continue
                with open(os.path.join(folder, name), "rb") as f:
                    data = f.read()
                # `cgc` end to end (seconds each) for the inputs named for it.
                target.cli_every = 1 if "cli" in name else None
                target.check(data, fuzzlib.case_rng(0, count), work, findings, name)
                count += 1
            if findings.open_classes():
                status = 1
            print(f"replay {folder}: {findings.summary(verbose=True) or 'no findings'}")
    print(f"replayed {count} inputs: {'FAILED' if status else 'no open finding'}")
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", choices=["onnx", "records", "replay"])
    ap.add_argument("inputs", nargs="*", help="replay: folders of saved inputs")
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--cgc", help="the cgc binary, for the end-to-end check of ONNX models")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--cases", type=int, help="a number of cases instead of --seconds")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--case", type=int, help="run this one case of --seed")
    ap.add_argument("--findings", help="where the first input of each open class goes")
    ap.add_argument("--summary", help="append the run's summary to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # the state folder of a worker
    ap.add_argument("--start", type=int, default=0, help="the first case (default 0)")
    args = ap.parse_intermixed_args()
    fuzzlib.bound_process()
    if args.target == "replay":
        return replay(args)
    if args.case is not None:
        if args.seed is None:
            ap.error("--case needs --seed")
        return fuzz(args)
    return fuzz(args) if args.worker else supervise(args)


if __name__ == "__main__":
    sys.exit(main())
