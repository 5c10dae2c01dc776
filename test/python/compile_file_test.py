#!/usr/bin/env python3
"""cgc.compile_file (cgc/driver.py) without a GPU or torch: it logs the
driver's phases at INFO under the logger "cgc" as they start (reading,
passes, lowering, NVRTC, writing, in that order) and the summary after
them; a bad model raises CgcError with the driver's located diagnostic
and no phase line in it, and writes no artifact; cgc.runtime's
weights_stay_beside reads from a manifest whether the weights stay
beside the artifact.

Usage: PYTHONPATH=python compile_file_test.py --cgc PATH --model examples/mlp8_infer_b1.json
"""
import argparse
import logging
import os
import shutil
import sys
import tempfile

import cgc
from cgc.errors import CgcError
from cgc.runtime import weights_stay_beside

PHASES = ("read and verify", "passes on graph 'main'", "lower graph 'main'", "NVRTC",
          "artifact writer", "write ")


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.records = []

    def emit(self, record):
        self.records.append((record.levelno, record.getMessage()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cgc", required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    os.environ["CGC_CACHE"] = "0"
    log = logging.getLogger("cgc")
    log.setLevel(logging.INFO)
    collect = Collect()
    log.addHandler(collect)
    ok = True
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "m.cgc")
        cgc.compile_file(args.model, out, cgc=args.cgc)
        lines = [m for _, m in collect.records]
        at = [next((i for i, m in enumerate(lines) if m.startswith("cgc: " + p)), -1)
              for p in PHASES]
        if -1 in at or at != sorted(at) or not lines[-1].startswith("cgc: wrote "):
            print(f"phases out of order or missing: {lines}")
            ok = False
        collect.records.clear()
        bad = os.path.join(work, "bad.json")
        with open(bad, "w") as f:
            f.write('{"format_version": 1, "name": "bad", "inputs": [], "nodes": [\n'
                    ' {"name": "y", "op": "frobnicate", "inputs": []}], "outputs": ["y"]}\n')
        try:
            cgc.compile_file(bad, os.path.join(work, "bad.cgc"), cgc=args.cgc)
            print("a bad model compiled")
            ok = False
        except CgcError as e:
            if "bad.json:2:" not in str(e) or "frobnicate" not in str(e) or "phase:" in str(e):
                print(f"the error does not locate the node or holds phase lines: {e}")
                ok = False
        if os.path.exists(os.path.join(work, "bad.cgc")):
            print("a failed compile wrote an artifact")
            ok = False
        # Whether an artifact's weights stay beside it (what cgc.compile's
        # cache must not keep alone): read from its manifest.
        inputs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ir", "Inputs")
        for name in ("weights-ok.json", "weights.safetensors"):
            shutil.copy(os.path.join(inputs, name), work)
        beside = os.path.join(work, "beside.cgc")
        cgc.compile_file(os.path.join(work, "weights-ok.json"), beside, ("--weights-beside",),
                         cgc=args.cgc)
        if not weights_stay_beside(beside) or weights_stay_beside(out):
            print("weights_stay_beside misreads the manifests")
            ok = False
    print(f"compile_file: {'all passed' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
