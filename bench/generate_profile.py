#!/usr/bin/env python3
"""Where a cgc.compile_generate call's time goes: the GPU time of every
kernel of one generation (torch.profiler's CUDA activity, which sees the
kernels inside graph launches), summed by kernel name, largest first.

    generate_profile.py --cgc build/tools/cgc [--model llama1b] [--dtype bf16] [--new 16]
"""
import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate import PROMPT, make_model, model_configs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cgc", required=True)
    parser.add_argument("--model", default="llama1b")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--new", type=int, default=16)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    import torch
    import cgc
    os.environ["CGC_CACHE"] = "0"
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    model = make_model(args.model, model_configs()[args.model], dtype)
    ids = torch.randint(1, model.config.vocab_size, (args.batch, PROMPT)).cuda()
    gen = cgc.compile_generate(model, args.new, PROMPT, args.batch, cgc=args.cgc)
    gen(ids)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        gen(ids)
        torch.cuda.synchronize()
    total, count = defaultdict(float), defaultdict(int)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            total[e.name] += e.device_time_total
            count[e.name] += 1
    whole = sum(total.values())
    print(f"{args.model} {args.dtype} batch {args.batch}, {args.new} tokens: "
          f"{whole / 1e3:.2f} ms of kernels, {sum(count.values())} launches")
    for name, us in sorted(total.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{us / 1e3:9.3f} ms {100 * us / whole:5.1f}% {count[name]:6d}x  {name[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
