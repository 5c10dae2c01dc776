#!/usr/bin/env python3
"""Where a zoo entry's time goes: the GPU kernels of one call of cgc's
callable and of a torch.cuda.graph replay of the same module, side by side.

    kernel_profile.py --cgc PATH --only NAME[,NAME...] [--iters N] [--out DIR]

Both run in this process on the same inputs under torch.profiler (CUPTI
records every kernel node of a graph replay). For each side it prints the
wall time of one call (CUDA events around N back-to-back calls), the sum of
its kernels' durations per call, the gap between the two (launch and
dependency latency the kernels do not cover), and the kernels grouped by
kind (convolutions, matrix products, attention, normalization and
softmax, elementwise and copies) with counts and microseconds per call,
then the 12 longest kernels. These are the measurements behind the causes docs/perf.md gives
where cgc does not beat torch.cuda.graph. Writes DIR/profile-ENTRY.txt.
"""
import argparse
import collections
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

KINDS = (  # (kind, pattern searched in the kernel's name), first match wins
    ("convolution", r"conv|fprop|dgrad|wgrad|winograd|implicit_gemm|implicit_convolve"),
    ("product", r"gemm|gemv|nvjet|cutlass|sm90_xmma|matmul|cublas|splitK|_mm_|tile_product"),
    ("attention", r"flash|fmha|attention|sdpa|softmax_warp|efficient_attention"),
    ("norm/softmax/reduce", r"norm|softmax|reduce|rows|row_|mean|sum"),
    ("elementwise/copy", r"."),
)


def kind_of(name):
    for kind, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return kind
    return "other"


def kernels_per_call(torch, fn, calls):
    """{kernel name: (count, total µs)} per call of `fn`, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    table = collections.defaultdict(lambda: [0, 0.0])
    for event in prof.events():
        if event.device_type.name != "CUDA":
            continue
        table[event.name][0] += 1
        table[event.name][1] += event.device_time_total if hasattr(event, "device_time_total") \
            else event.cuda_time_total
    return {name: (count / calls, total / calls) for name, (count, total) in table.items()}


def describe(label, wall_us, kernels, out):
    busy = sum(t for _, t in kernels.values())
    launches = sum(c for c, _ in kernels.values())
    out.append(f"## {label}: {wall_us:.1f} µs per call, kernels {busy:.1f} µs "
               f"({launches:.0f} launches), not covered by kernels {wall_us - busy:.1f} µs")
    by_kind = collections.defaultdict(lambda: [0.0, 0.0])
    for name, (count, total) in kernels.items():
        by_kind[kind_of(name)][0] += count
        by_kind[kind_of(name)][1] += total
    for kind, (count, total) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
        out.append(f"  {kind:22s} {count:6.0f} kernels {total:9.1f} µs")
    out.append("  longest kernels (µs per call, count):")
    for name, (count, total) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:12]:
        out.append(f"    {total:8.1f} {count:4.0f}  {name[:110]}")


def profile_entry(torch, cgc, entry, iters, work):
    from entries import IMAGE_FAMILIES
    from torch_timing import capture, time_events
    from zoo import channels_last, on_device, torch_dtype
    module, (args, kwargs) = entry.build(torch)
    dtype = torch_dtype(torch, entry.dtype)
    model = module.cuda().to(dtype)
    call_args = [on_device(torch, a, dtype) for a in args]
    call_kwargs = {k: on_device(torch, v, dtype) for k, v in kwargs.items()}
    out = [f"# {entry.name} ({torch.cuda.get_device_name()}, torch {torch.__version__})"]
    with torch.no_grad():
        fn = cgc.compile(model, tuple(call_args), example_kwargs=call_kwargs,
                         path=os.path.join(work, "model.cgc"))
        call = lambda: fn(*call_args, **call_kwargs)  # noqa: E731
        wall = time_events(call, iters, 5)[0]
        cgc_lines = []
        describe("cgc", wall, kernels_per_call(torch, call, iters), cgc_lines)
        torch_args, torch_kwargs = call_args, call_kwargs
        if entry.family in IMAGE_FAMILIES and entry.dtype != "f32":  # As zoo.py times it.
            model = model.to(memory_format=torch.channels_last)
            torch_args = channels_last(torch, call_args)
            torch_kwargs = {k: channels_last(torch, [v])[0] for k, v in call_kwargs.items()}
        graph = capture(torch, lambda: model(*torch_args, **torch_kwargs))
        wall = time_events(graph.replay, iters, 5)[0]
        describe("torch.cuda.graph", wall, kernels_per_call(torch, graph.replay, iters), out)
        del graph
        out += cgc_lines
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", default=os.environ.get("CGC"))
    ap.add_argument("--only", required=True)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    import torch
    import cgc
    import entries
    if a.cgc:
        os.environ["CGC"] = os.path.abspath(a.cgc)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(a.out, exist_ok=True)
    wanted = a.only.split(",")
    for entry in entries.ENTRIES:
        if not any(w in entry.name for w in wanted):
            continue
        with tempfile.TemporaryDirectory() as work:
            text = profile_entry(torch, cgc, entry, a.iters, work)
        print(text, flush=True)
        with open(os.path.join(a.out, f"profile-{entry.name}.txt"), "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
