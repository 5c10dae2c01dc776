#!/usr/bin/env python3
"""Where a training step's time goes: every kernel of one cgc step replay
and of one PyTorch step (the same workload, its graph replayed), timed by
Nsight Compute at the GPU's own clocks, side by side.

  bench/training_kernels.py --cgc build/tools/cgc [--workload mlp_train_large]
                            [--out DIR] [--log FILE]

cgc: `cgc --train` of the workload (bench/training.py's model, SGD),
`ncu --clock-control none --profile-from-start off` over one `cgc bench`
replay (its timed replays are the profiled range: kernel nodes and the
kernels of cuBLASLt's child graphs alike, not engine load's timing). PyTorch: the whole step
captured in a torch.cuda.graph, one replay under ncu. ncu runs each kernel
alone, so the sum of kernel times is the step without overlap or launch
gaps: the measured cause behind a gap of the step times of
bench/training.py. Writes KERNEL lines (impl, microseconds, name) and a
SUM line per side to --log (default
bench/results/training-kernels-<gpu>-<date>.log).
"""
import argparse, csv, io, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from torch_timing import BenchLog  # noqa: E402
from cgc_tool import Runner  # noqa: E402
import training  # noqa: E402

WORKLOADS = {"mlp_train_small": (32, (128, 256, 16)), "mlp_train_large": (640, (4096, 2048, 1024))}
NCU = ["--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw"]

TORCH_STEP = r"""
import sys, torch
sys.path.insert(0, {here!r})
import training
from torch_timing import capture
torch.backends.cuda.matmul.allow_tf32 = False
batch, dims = {batch}, {dims}
model = training.torch_model(torch, dims, True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(batch, dims[0], device="cuda"); t = torch.randn(batch, dims[2], device="cuda")
g = capture(torch, training.torch_step(torch, model, opt, x, t))
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
g.replay()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
"""


def kernels(ncu_csv):
    """(name, microseconds) of each kernel ncu measured."""
    rows = [r for r in csv.reader(io.StringIO(ncu_csv)) if len(r) > 5]
    if not rows or "Kernel Name" not in rows[0]:
        return []
    head = rows[0]
    name, dur = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    unit = rows[1][dur] if len(rows) > 1 else "nsecond"
    scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, 1e-3)
    out = []
    for r in rows[2:]:
        try:
            out.append((r[name], float(r[dur].replace(",", "")) * scale))
        except ValueError:
            continue
    return out


def report(say, impl, ks):
    for name, us in ks:
        say(f"KERNEL impl={impl} us={us:.2f} name={name[:140]}")
    say(f"SUM impl={impl} kernels={len(ks)} us={sum(us for _, us in ks):.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--workload", default="mlp_train_large", choices=sorted(WORKLOADS))
    ap.add_argument("--out", default="")
    ap.add_argument("--log", default="")
    ap.add_argument("--ncu", default=os.environ.get("NCU", "ncu"))
    args = ap.parse_args()
    import torch
    out = args.out or tempfile.mkdtemp(prefix="cgc-train-kernels-")
    os.makedirs(out, exist_ok=True)
    say = BenchLog(torch, "training-kernels", args.log,
                   "ncu --clock-control none, gpu__time_duration of every kernel of one step")
    batch, dims = WORKLOADS[args.workload]
    b = Runner(args.cgc, out, say)
    art = b.compile(args.workload, training.mlp(batch, dims, {"kind": "sgd", "lr": 0.1}), training.TRAIN)
    if not art:
        return 1
    d = subprocess.run([args.cgc, "bench", art, "--iters", "1", "--warmup", "1", "--repeats", "1",
                        "--print-algorithms"], capture_output=True, text=True)
    for line in d.stderr.splitlines():
        say("# " + line.strip())
    r = subprocess.run([args.ncu, *NCU, "--profile-from-start", "off", args.cgc, "bench", art, "--iters", "1", "--warmup", "0",
                        "--repeats", "1"], capture_output=True, text=True)
    report(say, "cgc", kernels(r.stdout))
    script = os.path.join(out, "torch_step.py")
    with open(script, "w") as f:
        f.write(TORCH_STEP.format(here=HERE, batch=batch, dims=dims))
    r = subprocess.run([args.ncu, *NCU, "--profile-from-start", "off", sys.executable, script],
                       capture_output=True, text=True)
    report(say, "torch_graph", kernels(r.stdout))
    say.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
