#!/usr/bin/env python3
"""Where a cached `cgc.compile` spends its time, against a cold one, on
model zoo entries (bench/zoo/entries.py), on the GPU machine.

For each entry, in one process with an empty compile cache
($CGC_CACHE_DIR, a fresh folder): cgc.compile twice on the same module,
the first cold (the key, torch.export, the driver's NVRTC, load), the
second served by cgc.compile's cache of whole calls
(python/cgc/module_cache.py: the key, then load; no export), each split
into its phases as cgc.compile logs them.

    compile_cache.py --cgc PATH [--only SUBSTR,...]
"""
import argparse
import logging
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "zoo"))
from entries import ENTRIES  # noqa: E402

COLD = re.compile(r"cgc\.compile of \w+: ([\d.]+) s: key ([\d.]+) s, export ([\d.]+) s, "
                  r"cgc ([\d.]+) s, load ([\d.]+) s")
CACHED = re.compile(r"cgc\.compile of \w+: ([\d.]+) s: cached: key ([\d.]+) s, load ([\d.]+) s")


class Phases(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.seen = []

    def emit(self, record):
        m = COLD.match(record.getMessage()) or CACHED.match(record.getMessage())
        if m:
            self.seen.append(tuple(float(v) for v in m.groups()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--only", default="bert-f32-b1,gpt2-bf16-b1,llama-bf16-b1")
    args = ap.parse_args()
    os.environ["CGC"] = os.path.abspath(args.cgc)
    os.environ["CGC_CACHE_DIR"] = tempfile.mkdtemp(prefix="cgc-cache-bench-")
    os.environ.pop("CGC_CACHE", None)
    import torch
    import cgc
    phases = Phases()
    logging.getLogger("cgc").addHandler(phases)
    logging.getLogger("cgc").setLevel(logging.INFO)
    print("| entry | cold s (key / export / cgc / load) | cached s (key / load) | "
          "cached / cold |")
    print("|---|---|---|---|")
    for entry in ENTRIES:
        if not any(part in entry.name for part in args.only.split(",")):
            continue
        module, (call_args, kwargs) = entry.build(torch)
        dtype = getattr(torch, {"f32": "float32", "bf16": "bfloat16",
                                "f16": "float16"}[entry.dtype])
        module = module.cuda().to(dtype).eval()
        move = lambda t: t.cuda().to(dtype) if t.is_floating_point() else t.cuda()  # noqa: E731
        call_args = [move(a) for a in call_args]
        kwargs = {k: move(v) for k, v in kwargs.items()}
        phases.seen.clear()
        for _ in range(2):
            cgc.compile(module, tuple(call_args), example_kwargs=kwargs)
        (cold, *cold_parts), (hot, *hot_parts) = phases.seen[:2]
        print(f"| {entry.name} | {cold:.2f} ({' / '.join(f'{v:.2f}' for v in cold_parts)}) | "
              f"{hot:.2f} ({' / '.join(f'{v:.2f}' for v in hot_parts)}) | "
              f"{hot / cold:.2f} |", flush=True)


if __name__ == "__main__":
    main()
