#!/usr/bin/env python3
"""The ONNX node tests that pass through the interpreter, compiled with
`cgc` and run on the GPU with `cgc run` (staged by node_tests.py --stage on
a machine with onnx; this side needs only NumPy).

Usage: gpu_node_tests.py --cgc PATH --stage DIR [--jobs N]

Outcomes: passed; refused (cgc declined to compile it, with a located
error: not yet lowered to the GPU); wrong (an output differs, with the
tolerances of node_tests.py, or cgc crashed). Exit status 1 if any test is
wrong or none ran.
"""
import argparse, collections, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from node_tests import compare  # noqa: E402
from cgc.safetensors import read_safetensors  # noqa: E402


def run(case, cgc):
    art, out = os.path.join(case, "model.cgc"), os.path.join(case, "gpu-out.safetensors")
    r = subprocess.run([cgc, os.path.join(case, "model.json"), "-o", art],
                       capture_output=True, text=True, timeout=600)
    if r.returncode == 1 and "error:" in r.stderr:
        line = next(l for l in r.stderr.splitlines() if "error:" in l)
        return "refused", line.split("error:", 1)[1].strip()
    if r.returncode != 0:
        return "wrong", f"cgc exit {r.returncode}: {r.stderr.strip()[-300:]}"
    r = subprocess.run([cgc, "run", art, "--inputs", os.path.join(case, "in.safetensors"),
                        "--outputs", out, "--overwrite"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return "wrong", f"cgc run exit {r.returncode}: {r.stderr.strip()[-300:]}"
    got, want = read_safetensors(out), read_safetensors(os.path.join(case, "want.safetensors"))
    for name, w in want.items():
        problem = compare(got.get(name), w)
        if problem:
            return "wrong", f"output '{name}': {problem}"
    return "passed", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--stage", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    cases = sorted(os.path.join(args.stage, c) for c in os.listdir(args.stage))
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda c: (os.path.basename(c),) + run(c, args.cgc), cases))
    counts = collections.Counter(r[1] for r in results)
    print(f"onnx node tests on the GPU: {len(results)} run, {counts['passed']} passed, "
          f"{counts['refused']} refused by cgc, {counts['wrong']} wrong")
    reasons = collections.Counter(r[2][:100] for r in results if r[1] == "refused")
    for reason, n in reasons.most_common():
        print(f"  refused ({n}): {reason}")
    for name, outcome, detail in results:
        if outcome == "wrong":
            print(f"WRONG {name}: {detail}")
    return 1 if counts["wrong"] or not results else 0


if __name__ == "__main__":
    sys.exit(main())
