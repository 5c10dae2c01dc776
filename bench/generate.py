#!/usr/bin/env python3
"""Per-token latency of greedy generation (issue 31): cgc.compile_generate
against transformers' generate, eager and with a static cache and
torch.compile(mode="reduce-overhead"), in one process on one GPU, and the
bandwidth floor.

For each model (random weights from its config) x dtype x batch: a
128-token prompt, then N new tokens (every sequence runs to N: no end
token). Each system is timed with CUDA events around the whole call (the
host waits for the tokens), median of 5 after a warm-up; cgc_stream (not
in the default --systems) is compile_generate(streaming=True)'s
gen.stream, one replay and one host read a token:
  ttft      the call with max_new_tokens=1 (the prompt's pass and one token)
  per token (time(N) - time(1)) / (N - 1): one decoding step
  floor     bytes of every weight (the LM head included, a tied matrix
            once) / the measured device-copy bandwidth (2 x bytes / time
            of a 1 GiB cudaMemcpy): a step reads each weight once
Prints one RESULT line per row (the log bench/results/generate-*.log).

    generate.py --cgc build/tools/cgc [--models gpt2,llama4] [--new 128]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_timing import time_events  # noqa: E402

PROMPT = 128
# The prompts fill PROMPT: the narrower prompt buckets would never run.
BUCKETS = [PROMPT]
# Extra cgc compile flags (--cgc-flags).
CGC_FLAGS = ()


def model_configs():
    from transformers import GPT2Config, LlamaConfig
    return {
        "gpt2": GPT2Config(),  # 124M
        "llama4": LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                              num_attention_heads=8, vocab_size=32000),
        "llama1b": LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16,
                               vocab_size=32000),
    }


def median_ms(fn):
    """Milliseconds of one call: torch_timing.time_events' median of 5
    (CUDA events, one call per sample after a warm-up call)."""
    return time_events(fn, iters=1, warmup=1)[0] / 1000.0


def copy_bandwidth():
    """Bytes per second of a device-to-device copy of 1 GiB (read + write)."""
    import torch
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    ms = median_ms(lambda: b.copy_(a))
    return 2 * a.numel() / (ms / 1e3)


def weight_bytes(model):
    seen, total = set(), 0
    for p in model.parameters():
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            total += p.numel() * p.element_size()
    return total


def make_model(name, config, dtype):
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype).cuda().eval()
    model.requires_grad_(False)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def hf_call(model, ids, mask, new):
    import torch

    def run():
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new,
                           min_new_tokens=new, do_sample=False, pad_token_id=0)
    return run


def time_hf(model, ids, mask, new):
    return median_ms(hf_call(model, ids, mask, 1)), median_ms(hf_call(model, ids, mask, new))


def time_compiled(model, ids, mask, new):
    """transformers' static cache, whose generate compiles the forward with
    torch.compile(mode="reduce-overhead") itself (its CompileConfig); the
    compiles happen in the warm-up calls."""
    import torch
    model.generation_config.cache_implementation = "static"
    try:
        for _ in range(2):
            hf_call(model, ids, mask, new)()
            hf_call(model, ids, mask, 1)()
        return time_hf(model, ids, mask, new)
    finally:
        model.generation_config.cache_implementation = None
        torch._dynamo.reset()


def time_cgc(model, ids, mask, new, cgc_tool):
    import cgc
    t0 = time.time()
    gen = cgc.compile_generate(model, new, PROMPT, ids.shape[0], prompt_buckets=BUCKETS,
                               cgc=cgc_tool, flags=CGC_FLAGS)
    compile_s = time.time() - t0
    first = cgc.compile_generate(model, 1, PROMPT, ids.shape[0], prompt_buckets=BUCKETS,
                                 cgc=cgc_tool, flags=CGC_FLAGS)
    return (median_ms(lambda: first(ids, mask)), median_ms(lambda: gen(ids, mask)),
            compile_s)


def time_cgc_stream(model, ids, mask, new, cgc_tool):
    """compile_generate(streaming=True)'s gen.stream: one replay and one
    host read of the column per token (the first: the prompt's pass)."""
    import cgc
    gen = cgc.compile_generate(model, new, PROMPT, ids.shape[0], streaming=True,
                               prompt_buckets=BUCKETS, cgc=cgc_tool, flags=CGC_FLAGS)

    def first():
        next(iter(gen.stream(ids, mask)))

    def every():
        for _ in gen.stream(ids, mask):
            pass
    return median_ms(first), median_ms(every)


def row(name, dtype_name, batch, new, cgc_tool, bandwidth, compiled, systems):
    import torch
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    model = make_model(name, model_configs()[name], dtype)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, model.config.vocab_size, (batch, PROMPT), generator=g).cuda()
    mask = torch.ones_like(ids)
    floor_ms = weight_bytes(model) / bandwidth * 1e3
    out = {"model": name, "dtype": dtype_name, "batch": batch, "new": new,
           "floor_ms": floor_ms}
    for system, timer in (("cgc", lambda: time_cgc(model, ids, mask, new, cgc_tool)[:2]),
                          ("cgc_stream", lambda: time_cgc_stream(model, ids, mask, new, cgc_tool)),
                          ("hf_eager", lambda: time_hf(model, ids, mask, new)),
                          ("hf_static_compiled", lambda: time_compiled(model, ids, mask, new))):
        if system not in systems or (system == "hf_static_compiled" and not compiled):
            continue
        try:
            first, full = timer()
            out[system] = {"ttft_ms": first, "per_token_ms": (full - first) / (new - 1),
                           "total_ms": full}
        except Exception as e:  # noqa: BLE001 - a row that fails is reported, not fatal
            out[system] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    del model
    torch.cuda.empty_cache()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cgc", required=True)
    parser.add_argument("--models", default="gpt2,llama4,llama1b")
    parser.add_argument("--dtypes", default="bf16,f32")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--systems", default="cgc,hf_eager,hf_static_compiled")
    parser.add_argument("--compiled-batches", default="1",
                        help="batches to time the torch.compile static-cache peer at")
    parser.add_argument("--cgc-flags", default="",
                        help="extra cgc compile flags, space-separated")
    args = parser.parse_args()
    global CGC_FLAGS
    CGC_FLAGS = tuple(args.cgc_flags.split())
    import torch
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    os.environ["CGC_CACHE"] = "0"
    bandwidth = copy_bandwidth()
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"copy bandwidth {bandwidth / 1e9:.0f} GB/s  prompt {PROMPT}  new {args.new}")
    compiled = {int(b) for b in args.compiled_batches.split(",") if b}
    for name in args.models.split(","):
        for dtype_name in args.dtypes.split(","):
            for batch in (int(b) for b in args.batches.split(",")):
                r = row(name, dtype_name, batch, args.new, args.cgc, bandwidth,
                        batch in compiled, args.systems.split(","))
                print("RESULT", r, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
