#!/usr/bin/env python3
"""cgc's attention node alone against PyTorch's scaled_dot_product_attention.

  bench/attention.py --cgc build/tools/cgc [--log FILE] [--only W,...] [--iters N]
                    [--splits 1,2,4,8] [--decode-chunks 1,4,16,64]

For each workload (batch, heads, kv heads, sequence, width, dtype, causal,
a padding mask or none) writes a one-node `attention` model and compiles
it twice with `cgc`: as its rule chooses (`cgc_fused`: one of the fused,
tensor-core and decode kernels, or written out) and written out as
products and a softmax (`--expand-attention`); times each with `cgc bench`
(CUDA events around N back-to-back graph replays, median of 5 after
warm-up). In this process on the same GPU, with the same method,
torch.nn.functional.scaled_dot_product_attention captured in a
torch.cuda.graph under each SDPA backend that takes the workload (flash,
efficient, cudnn, math); `sdpa_best` is the fastest. With --splits, the
f16/bf16 workloads are also compiled with hand-written mma_attention
records of one row warp per block and each split of the keys listed
(`cgc_mma_split<N>`: the measurements behind the rule's split,
target/AttentionRule.h). With --decode-chunks, workloads of at most 8
query rows are also compiled with decode_attention records of the keys
split into about that many spans (`cgc_decode_chunks<N>`, N the spans the
rounding gives). Writes RESULT lines (us per run) to --log
(default bench/results/attention-<gpu>-<date>.log).
"""
import argparse, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "test", "gpu"))
from torch_timing import BenchLog, time_events, capture  # noqa: E402
from attention_cases import decode_record  # noqa: E402 (the records the GPU tests run)

# name: (batch, heads, kv heads, sequence, width, dtype, causal, padding
# mask[, query rows: the sequence unless given])
WORKLOADS = {
    "bert_b1_s128_f32": (1, 12, 12, 128, 64, "f32", False, True),
    "bert_b1_s128_bf16": (1, 12, 12, 128, 64, "bf16", False, True),
    "gpt2_b1_s128_bf16": (1, 12, 12, 128, 64, "bf16", True, False),
    "llama_b1_s128_bf16": (1, 8, 4, 128, 64, "bf16", True, False),
    "b1_s128_w128_bf16": (1, 32, 8, 128, 128, "bf16", True, False),
    "b4_s128_w64_bf16": (4, 12, 12, 128, 64, "bf16", False, True),
    "b1_s512_w64_bf16": (1, 12, 12, 512, 64, "bf16", False, False),
    "b1_s512_w128_bf16": (1, 16, 16, 512, 128, "bf16", True, False),
    "decode_b1_k256_w64_bf16": (1, 32, 8, 256, 64, "bf16", False, True, 1),
    "decode_b1_k512_w64_bf16": (1, 32, 8, 512, 64, "bf16", False, True, 1),
    "decode_b1_k2048_w64_f32": (1, 12, 12, 2048, 64, "f32", False, True, 1),
    "decode_b1_k4096_w128_bf16": (1, 32, 8, 4096, 128, "bf16", False, True, 1),
    "decode_b8_k1024_w64_bf16": (8, 32, 8, 1024, 64, "bf16", False, True, 1),
    "b8_s2048_w64_bf16": (8, 12, 12, 2048, 64, "bf16", True, False),
    "b8_s2048_w128_bf16": (8, 16, 16, 2048, 128, "bf16", True, False),
}


def mma_split_record(b, h, rows, split):
    """A one-row-warp mma_attention record splitting the keys over `split`
    warps (cgc refuses one whose combine would not fit shared memory)."""
    return {"strategy": "mma_attention", "tile": 16, "grid_x": -(-rows // 16) * b * h,
            "block": 32 * split}


def model(name, b, h, hkv, s, e, dt, causal, mask, rows, schedule=None):
    inputs = [{"name": "q", "dtype": dt, "shape": [b, h, rows, e]},
              {"name": "k", "dtype": dt, "shape": [b, hkv, s, e]},
              {"name": "v", "dtype": dt, "shape": [b, hkv, s, e]}]
    if mask:
        inputs.append({"name": "m", "dtype": "bool", "shape": [b, 1, 1, s]})
    node = {"name": "y", "op": "attention", "inputs": [i["name"] for i in inputs]}
    if causal:
        node["attrs"] = {"causal": True}
    if schedule:
        node["schedule"] = schedule
    return {"format_version": 1, "name": name, "inputs": inputs, "nodes": [node],
            "outputs": ["y"]}


def cgc_us(cgc, src, art, flags, iters):
    r = subprocess.run([cgc, src, "-o", art] + flags, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()[-300:]
    b = subprocess.run([cgc, "bench", art, "--iters", str(iters), "--warmup", "20",
                        "--repeats", "5"], capture_output=True, text=True)
    kv = dict(t.split("=", 1) for t in b.stdout.split() if "=" in t)
    if b.returncode or "graph_us_per_run" not in kv:
        return None, b.stderr.strip()[-300:]
    return kv, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--log", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--splits", default="",
                    help="also time one-row-warp mma_attention records with these key splits")
    ap.add_argument("--decode-chunks", default="",
                    help="also time decode_attention records splitting the keys into about "
                         "this many spans (workloads of at most 8 query rows)")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    say = BenchLog(torch, "attention", args.log,
                   f"CUDA events around {args.iters} back-to-back runs, median of 5 repeats "
                   "after warm-up")
    work = tempfile.mkdtemp(prefix="cgc-attention-")
    status = 0
    for name, (b, h, hkv, s, e, dt, causal, mask, *rest) in WORKLOADS.items():
        if args.only and name not in args.only.split(","):
            continue
        rows = rest[0] if rest else s
        src = os.path.join(work, name + ".json")
        with open(src, "w") as f:
            json.dump(model(name, b, h, hkv, s, e, dt, causal, mask, rows), f)
        variants = [("cgc_fused", src, []), ("cgc_expanded", src, ["--expand-attention"])]
        for split in (int(x) for x in args.splits.split(",") if x and dt != "f32"):
            record = mma_split_record(b, h, rows, split)
            path = os.path.join(work, f"{name}.split{split}.json")
            with open(path, "w") as f:
                json.dump(model(name, b, h, hkv, s, e, dt, causal, mask, rows, record), f)
            variants.append((f"cgc_mma_split{split}", path, []))
        for chunks in (int(x) for x in args.decode_chunks.split(",") if x and rows <= 8):
            record = decode_record([b, h, rows, e], [b, hkv, s, e], [b, hkv, s, e],
                                   min(h // hkv * rows, 8), chunks)
            path = os.path.join(work, f"{name}.chunks{chunks}.json")
            with open(path, "w") as f:
                json.dump(model(name, b, h, hkv, s, e, dt, causal, mask, rows, record), f)
            variants.append((f"cgc_decode_chunks{record['chunks']}", path, []))
        for impl, path, flags in variants:
            art = os.path.join(work, f"{name}.{impl}.cgc")
            kv, err = cgc_us(args.cgc, path, art, flags, args.iters)
            if kv is None and impl.startswith("cgc_mma_split") and not os.path.exists(art):
                say(f"INFO workload={name} impl={impl} refused: {err}")  # the compiler's bound
                continue
            if kv is None:
                say(f"ERROR workload={name} impl={impl} {err}")
                status = 1
                continue
            say(f"RESULT workload={name} impl={impl} us={kv['graph_us_per_run']} "
                f"samples={kv['graph_us_samples']}")
        dtype = torch.float32 if dt == "f32" else torch.bfloat16
        q = torch.randn(b, h, rows, e, device="cuda", dtype=dtype)
        k = torch.randn(b, hkv, s, e, device="cuda", dtype=dtype)
        v = torch.randn(b, hkv, s, e, device="cuda", dtype=dtype)
        m = torch.ones(b, 1, 1, s, device="cuda", dtype=torch.bool) if mask else None
        if m is not None:
            m[:, :, :, s - s // 4:] = False
        best = None
        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                        SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH):
            impl = "sdpa_" + backend.name.lower()
            def call():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal,
                                                          enable_gqa=h != hkv)
            try:
                g = capture(torch, call)
                us, samples = time_events(g.replay, args.iters, 20)
            except Exception as ex:  # noqa: BLE001 - a backend that does not take it
                say(f"INFO workload={name} impl={impl} unavailable: {type(ex).__name__}: "
                    f"{str(ex).splitlines()[0][:160] if str(ex) else ''}")
                continue
            say(f"RESULT workload={name} impl={impl} us={us:.3f} samples=" +
                ",".join(f"{x:.3f}" for x in samples))
            best = us if best is None else min(best, us)
        if best is not None:
            say(f"RESULT workload={name} impl=sdpa_best us={best:.3f}")
        del q, k, v, m
        torch.cuda.empty_cache()
    say.write()
    return status


if __name__ == "__main__":
    sys.exit(main())
