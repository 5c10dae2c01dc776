#!/usr/bin/env python3
"""Runs cgc-opt --interpret on the golden cases and compares with NumPy.

Generates the cases with gen_golden.py into --work-dir first (unless
--no-generate), then for every case runs
  cgc-opt CASE.json --interpret --inputs CASE.in.safetensors
          --outputs CASE.out.safetensors --overwrite
and compares every output with CASE.expected.safetensors: same dtype and
shape, NaN where NaN, equal infinities, and |got - want| <= atol + rtol*|want|
with per-dtype tolerances (integers, bool, dropout and initializers exact).
Prints one line per case and exits 1 if any case fails.
"""
import argparse, json, os, struct, subprocess, sys
import numpy as np

TOL = {"F32": (2e-6, 1e-6), "F16": (1e-3, 1e-3), "BF16": (8e-3, 8e-3),
       "I32": (0, 0), "I64": (0, 0), "BOOL": (0, 0)}
NP = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "I64": "<i8", "BOOL": "u1"}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        b = body[h["data_offsets"][0]:h["data_offsets"][1]]
        if h["dtype"] == "BF16":
            bits = np.frombuffer(b, dtype="<u2").astype(np.uint32) << np.uint32(16)
            arr = bits.view(np.float32).astype(np.float64)
        elif h["dtype"] in ("I32", "I64", "BOOL"):  # exact: never through float64
            arr = np.frombuffer(b, dtype=NP[h["dtype"]]).astype(np.int64)
        else:
            arr = np.frombuffer(b, dtype=NP[h["dtype"]]).astype(np.float64)
        out[name] = (h["dtype"], arr.reshape(h["shape"]))
    return out


def compare(got, want, exact):
    problems = []
    for name, (dt, w) in want.items():
        if name not in got:
            problems.append(f"output '{name}' missing")
            continue
        gdt, g = got[name]
        if gdt != dt or g.shape != w.shape:
            problems.append(f"output '{name}': got {gdt}{list(g.shape)}, want {dt}{list(w.shape)}")
            continue
        if dt in ("I32", "I64", "BOOL"):
            bad = g != w
            if bad.any():
                i = np.argwhere(bad)[0]
                problems.append(f"output '{name}': {int(bad.sum())} of {w.size} elements differ, "
                                f"first at {tuple(int(v) for v in i)}: got {g[tuple(i)]!r}, want {w[tuple(i)]!r}")
            continue
        rtol, atol = (0, 0) if exact else TOL[dt]
        nan_ok = np.isnan(g) == np.isnan(w)
        inf = np.isinf(g) | np.isinf(w)
        with np.errstate(invalid="ignore"):
            close = np.where(np.isnan(w) | inf, (g == w) | (np.isnan(g) & np.isnan(w)),
                             np.abs(g - w) <= atol + rtol * np.abs(w))
        if exact:  # the sign of a zero counts too
            close &= ~((w == 0) & (np.signbit(g) != np.signbit(w)))
        bad = ~(close & nan_ok)
        if bad.any():
            i = np.argwhere(bad)[0]
            problems.append(f"output '{name}': {int(bad.sum())} of {w.size} elements differ, "
                            f"first at {tuple(int(v) for v in i)}: got {g[tuple(i)]!r}, want {w[tuple(i)]!r}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--work-dir", default="golden-cases")
    ap.add_argument("--no-generate", action="store_true")
    ap.add_argument("--filter", default="", help="run only cases whose name contains this")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    if not args.no_generate:
        subprocess.run([sys.executable, os.path.join(here, "gen_golden.py"), args.work_dir], check=True)
    with open(os.path.join(args.work_dir, "cases.json")) as f:
        cases = [c for c in json.load(f) if args.filter in c["name"]]
    failed = []
    for case in cases:
        base = os.path.join(args.work_dir, case["name"])
        cmd = [args.cgc_opt, base + ".json", "--interpret", "--inputs", base + ".in.safetensors",
               "--outputs", base + ".out.safetensors", "--overwrite"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            problems = [f"cgc-opt exited {r.returncode}: {r.stderr.strip()}"]
        else:
            problems = compare(read_safetensors(base + ".out.safetensors"),
                               read_safetensors(base + ".expected.safetensors"), case["exact"])
        status = "FAIL" if problems else "ok"
        print(f"{status:4} {case['name']}" + ("" if not problems else "\n       " + "\n       ".join(problems)))
        if problems:
            failed.append(case["name"])
    print(f"golden: {len(cases) - len(failed)} of {len(cases)} cases passed")
    if failed:
        print("golden: FAILED: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
