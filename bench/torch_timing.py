#!/usr/bin/env python3
"""What the bench scripts share to time PyTorch and log results: a
BenchLog (header lines, RESULT/CHECK/INFO lines, the log file), CUDA-event
timing of back-to-back calls (median of repeats after warm-up) and a
torch.cuda.graph capture after warm-up on a side stream."""
import datetime, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class BenchLog:
    """The log of one bench script: `# gpu/date/torch/command/method` header
    lines, then RESULT/CHECK/INFO lines, each printed as it comes; write()
    saves them to `path`, or bench/results/<prefix>-<gpu>-<date>.log."""

    def __init__(self, torch, prefix, path, method):
        gpu = torch.cuda.get_device_name()
        date = datetime.date.today().isoformat()
        self.prefix = prefix
        self.path = path or os.path.join(HERE, "results", f"{prefix}-{gpu.replace(' ', '-')}-{date}.log")
        self.lines = []
        script = os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)
        for key, value in (("gpu", gpu), ("date", date), ("torch", torch.__version__),
                           ("command", f"{script} {' '.join(sys.argv[1:])}"), ("method", method)):
            self(f"# {key}: {value}")

    def __call__(self, line):
        print(line, flush=True)
        self.lines.append(line)

    def write(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        print(f"{self.prefix}: wrote {self.path}")


def time_events(fn, iters, warmup, repeats=5):
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        e.synchronize()
        samples.append(s.elapsed_time(e) * 1000.0 / iters)
    samples.sort()
    return samples[len(samples) // 2], samples


def capture(torch, fn):
    """torch.cuda.graph of fn after three warm-up calls on a side stream."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g
