#!/usr/bin/env python3
"""What the bench scripts share to drive the `cgc` tool: safetensors files
(F32, I64, I32, BOOL) and a Runner that compiles models, times them with
`cgc bench` and runs them with `cgc run`, writing RESULT/CHECK/ERROR lines
through the script's BenchLog (torch_timing.py)."""
import json, os, subprocess, sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from cgc.safetensors import write_safetensors, read_safetensors  # noqa: E402,F401


class Runner:
    """Compiles models with `cgc` and times or runs them, saying RESULT,
    CHECK and ERROR lines; `status` turns 1 at the first failure."""

    def __init__(self, cgc, out_dir, say):
        self.cgc, self.out_dir, self.say = cgc, out_dir, say
        self.status = 0

    def compile(self, name, m, flags=("--report",)):
        """The artifact of model `m` (None after an ERROR line); the notes
        and the summary line of cgc go to the log as comments."""
        src, art = (os.path.join(self.out_dir, name + e) for e in (".json", ".cgc"))
        with open(src, "w") as f:
            json.dump(m, f)
        r = subprocess.run([self.cgc, src, "-o", art, *flags], capture_output=True, text=True)
        for line in r.stderr.strip().splitlines():
            if "note:" in line or "wrote" in line:
                self.say("# " + line.split(self.out_dir + "/")[-1])
        if r.returncode:
            self.fail(f"ERROR workload={name} impl=cgc compile rc={r.returncode} {r.stderr.strip()[-300:]}")
            return None
        return art

    def fail(self, line):
        self.say(line)
        self.status = 1

    def bench(self, workload, impl, art, inputs, iters):
        """cgc bench (on `inputs`, or its random ones when None): RESULT
        lines for graph and eager, with the trips of its loops."""
        given = []
        if inputs is not None:
            path = os.path.join(self.out_dir, f"{workload}-{impl}.in.safetensors")
            write_safetensors(path, inputs)
            given = ["--inputs", path]
        b = subprocess.run([self.cgc, "bench", art, *given, "--iters", str(iters),
                            "--warmup", str(max(iters // 10, 3)), "--repeats", "5"],
                           capture_output=True, text=True)
        kv = dict(t.split("=", 1) for t in b.stdout.split() if "=" in t)
        if b.returncode or "graph_us_per_run" not in kv:
            self.fail(f"ERROR workload={workload} impl={impl} bench rc={b.returncode} {b.stderr.strip()[-300:]}")
            return {}
        trips = " ".join(f"{k}={v}" for k, v in kv.items() if "_trips_" in k)
        for mode in ("graph", "eager"):
            self.say(f"RESULT workload={workload} impl={impl}_{mode} us={kv[mode + '_us_per_run']} "
                     f"samples={kv[mode + '_us_samples']} {trips}".rstrip())
        return kv

    def run(self, workload, impl, art, inputs, steps=1):
        """cgc run on the inputs, `steps` replays: the outputs."""
        src = os.path.join(self.out_dir, f"{workload}-{impl}.run.in.safetensors")
        dst = os.path.join(self.out_dir, f"{workload}-{impl}.run.out.safetensors")
        write_safetensors(src, inputs)
        r = subprocess.run([self.cgc, "run", art, "--inputs", src, "--outputs", dst, "--overwrite",
                            "--steps", str(steps)], capture_output=True, text=True)
        if r.returncode:
            self.fail(f"ERROR workload={workload} impl={impl} run rc={r.returncode} {r.stderr.strip()[-300:]}")
            return None
        return read_safetensors(dst)

    def check(self, workload, impl, got, want, rtol, extra=""):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        diff = float(np.max(np.abs(got - want))) if got.size else 0.0
        ok = got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=rtol)
        self.say(f"CHECK workload={workload} impl={impl} max_abs_diff={diff:.3g} rtol={rtol} "
                 f"ok={int(ok)} {extra}".rstrip())
        if not ok:
            self.status = 1
