#!/usr/bin/env python3
"""Sync points removed: cgc against PyTorch on workloads that need the host
in PyTorch (an item() that picks a branch or ends a loop, a gather by the
indices of a mask).

  bench/sync_points.py --cgc build/tools/cgc [--out DIR] [--log FILE] [--iters N]

Workloads (issue 12), each compiled once by `cgc` and timed with `cgc bench
--inputs` (CUDA events around N back-to-back graph replays, median of 5
repeats after warm-up; eager too), PyTorch timed in this process on the same
GPU the same way, every tensor the same (weights are model inputs here):
  branch_infer   Linear(4096,2048); if t.sum().item() > 0 another
                 Linear(2048,1024) else a third; batch 640, f32 without TF32.
                 Inputs are chosen to take each arm. Peers: PyTorch eager
                 with .item(), torch.cuda.graph of both arms + torch.where,
                 torch.compile(mode="reduce-overhead") (a graph break at
                 item), and the floor: the two products alone in a
                 torch.cuda.graph and as cgc's examples/linear_pair_f32.json.
  power_iter     v <- A v / |A v| while max|v' - v| > 1e-5, at most 100
                 trips, A 1024x1024 with a dominant eigenvalue. Peer: the
                 PyTorch loop that reads the update with .item() every trip.
  masked_lm      BERT's masked-LM loss, hidden 768, vocab 30522, 8 x 512
                 tokens, 15% of them masked (the count differs per batch).
                 cgc: nonzero(mask) gathers into Linear and cross_entropy,
                 compiled with max_count 768 (a fixed-size gather) and
                 without (all 4096 rows with a mask). Peers: PyTorch eager
                 gathering the masked rows (a sync), the fixed-size mask
                 version (all rows, unmasked labels set to -100) in a
                 torch.cuda.graph, and torch.nonzero_static(size=768) in a
                 torch.cuda.graph.
Every cgc result is checked against PyTorch's (`cgc run` on the same
inputs). Writes RESULT/CHECK/INFO lines to --log (default
bench/results/sync-points-<gpu>-<date>.log); bench/make_perf_md.py
--sync-points LOG renders them in docs/perf.md.
"""
import argparse, json, os, sys, tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
from torch_timing import BenchLog, time_events, capture  # noqa: E402
from cgc_tool import Runner  # noqa: E402
from gen_sync_models import masked_lm, power_iter  # noqa: E402

TOKENS, HIDDEN, VOCAB, MAX_COUNT = 8 * 512, 768, 30522, 768


def weights_as_inputs(m):
    """The model with its parameters turned into inputs (PyTorch and cgc
    read the same arrays)."""
    for i in m["inputs"]:
        i.pop("kind", None)
        i.pop("init", None)
    return m


def timed(torch, fn, iters, graph=True):
    try:
        if graph:
            g = capture(torch, fn)
            return time_events(g.replay, iters, max(iters // 10, 3))
        return time_events(fn, iters, max(iters // 10, 3))
    except Exception as e:  # a failed peer is reported, not fatal
        return None, f"{type(e).__name__}: {str(e)[:200]}"


def report(say, workload, impl, result, extra=""):
    us, samples = result
    if us is None:
        say(f"ERROR workload={workload} impl={impl} {samples}")
    else:
        say(f"RESULT workload={workload} impl={impl} us={us:.3f} samples=" +
            ",".join(f"{s:.3f}" for s in samples) + (" " + extra if extra else ""))


def branch_infer(torch, F, r, iters):
    with open(os.path.join(ROOT, "examples/branch_infer.json")) as f:
        m = weights_as_inputs(json.load(f))
    art = r.compile("branch_infer", m)
    with open(os.path.join(ROOT, "examples/linear_pair_f32.json")) as f:
        pair = weights_as_inputs(json.load(f))
    pair_art = r.compile("linear_pair", pair)
    rng = np.random.default_rng(0)
    shapes = {i["name"]: i["shape"] for i in m["inputs"]}
    base = {n: (rng.uniform(-1, 1, s) / np.sqrt(s[-1])).astype(np.float32) for n, s in shapes.items()}
    base["x"] = rng.uniform(-1, 1, shapes["x"]).astype(np.float32)
    dev = "cuda"
    for arm, shift in (("then", 0.05), ("else", -0.05)):
        inputs = dict(base)
        inputs["fc1.b"] = (base["fc1.b"] + shift).astype(np.float32)  # picks the sign of t.sum()
        wl = f"branch_infer_{arm}"
        T = {k: torch.from_numpy(v).to(dev) for k, v in inputs.items()}
        x, w1, b1, w2, b2, w3, b3 = (T[k] for k in ("x", "fc1.w", "fc1.b", "fc2.w", "fc2.b", "fc3.w", "fc3.b"))
        out = torch.empty(640, 1024, device=dev)

        def eager():
            t = F.linear(x, w1, b1)
            out.copy_(F.linear(t, w2, b2) if t.sum().item() > 0 else F.linear(t, w3, b3))

        def both():
            t = F.linear(x, w1, b1)
            out.copy_(torch.where(t.sum() > 0, F.linear(t, w2, b2), F.linear(t, w3, b3)))

        def gemms():
            out.copy_(F.linear(F.linear(x, w1, b1), w2, b2))

        eager()
        want = out.cpu().numpy().copy()
        if art:
            r.bench(wl, "cgc", art, inputs, iters)
            got = r.run(wl, "cgc", art, inputs)
            if got is not None:
                r.check(wl, "cgc", got["y"], want, 1e-4, f"arm={arm}")
        report(r.say, wl, "torch_eager_item", timed(torch, eager, iters, graph=False))
        report(r.say, wl, "torch_graph_both_arms", timed(torch, both, iters))
        report(r.say, wl, "torch_graph_gemms_only", timed(torch, gemms, iters))
        try:
            compiled = torch.compile(lambda: eager(), mode="reduce-overhead")
            for _ in range(3):
                compiled()
            report(r.say, wl, "torch_compile_ro", time_events(compiled, iters, 3))
        except Exception as e:
            r.say(f"ERROR workload={wl} impl=torch_compile_ro {type(e).__name__}: {str(e)[:200]}")
        if pair_art and arm == "then":
            names = [i["name"] for i in pair["inputs"]]
            pin = dict(zip(names, (inputs[k] for k in ("x", "fc1.w", "fc1.b", "fc2.w", "fc2.b"))))
            r.bench("branch_infer_gemms", "cgc_linear_pair", pair_art, pin, iters)


def power_iteration(torch, r, iters):
    n = 1024
    m = power_iter(n)
    art = r.compile("power_iter", m)
    rng = np.random.default_rng(1)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    lam = np.concatenate([[1.0, 0.75], rng.uniform(-0.5, 0.5, n - 2)])
    a = ((q * lam) @ q.T).astype(np.float32)
    v0 = rng.standard_normal((n, 1)).astype(np.float32)
    v0 /= np.linalg.norm(v0)
    A, V0 = torch.from_numpy(a).cuda(), torch.from_numpy(v0).cuda()
    out = torch.empty_like(V0)
    trips = [0]

    def loop():
        v = V0
        for i in range(100):
            w = A @ v
            v2 = w / w.norm()
            d = (v2 - v).abs().max()
            v = v2
            if d.item() <= 1e-5:
                break
        trips[0] = i + 1
        out.copy_(v)

    loop()
    want = out.cpu().numpy().copy()
    if art:
        kv = r.bench("power_iter", "cgc", art, {"a": a, "v0": v0}, max(iters // 4, 10))
        got = r.run("power_iter", "cgc", art, {"a": a, "v0": v0})
        if got is not None:
            r.check("power_iter", "cgc", got["v"], want, 1e-3,
                    f"trips={int(got['iterations'])} torch_trips={trips[0]}")
    report(r.say, "power_iter", "torch_eager_item", timed(torch, loop, max(iters // 4, 10), graph=False),
           f"trips={trips[0]}")


def masked_lm_loss(torch, F, r, iters):
    rng = np.random.default_rng(2)
    arts = {"cgc_k768": r.compile("masked_lm_k768", weights_as_inputs(
                masked_lm(TOKENS, HIDDEN, VOCAB, MAX_COUNT, name="masked_lm_k768"))),
            "cgc_all_rows": r.compile("masked_lm_all_rows", weights_as_inputs(
                masked_lm(TOKENS, HIDDEN, VOCAB, None, name="masked_lm_all_rows")))}
    bound = 1 / np.sqrt(HIDDEN)
    w = rng.uniform(-bound, bound, (VOCAB, HIDDEN)).astype(np.float32)
    b = rng.uniform(-bound, bound, VOCAB).astype(np.float32)
    hidden = rng.standard_normal((TOKENS, HIDDEN)).astype(np.float32)
    W, B, H = (torch.from_numpy(t).cuda() for t in (w, b, hidden))
    out = torch.empty((), device="cuda")
    for batch in range(3):  # three batches: three masked counts, one artifact
        mask = rng.uniform(0, 1, TOKENS) < 0.15
        labels = np.where(mask, rng.integers(0, VOCAB, TOKENS), -100).astype(np.int64)
        wl = f"masked_lm_batch{batch}"
        r.say(f"INFO workload={wl} masked={int(mask.sum())} tokens={TOKENS}")
        M, L = torch.from_numpy(mask).cuda(), torch.from_numpy(labels).cuda()

        def gather():
            idx = M.nonzero()[:, 0]
            out.copy_(F.cross_entropy(F.linear(H[idx], W, B), L[idx]))

        def fixed_mask():
            out.copy_(F.cross_entropy(F.linear(H, W, B), L.masked_fill(~M, -100)))

        def nonzero_static():
            idx = torch.nonzero_static(M, size=MAX_COUNT, fill_value=-1)[:, 0]
            valid = idx >= 0
            idx = idx.clamp(min=0)
            t = torch.where(valid, L[idx], torch.full_like(idx, -100))
            out.copy_(F.cross_entropy(F.linear(H[idx], W, B), t))

        gather()
        want = float(out)
        inputs = {"hidden": hidden, "labels": labels, "mask": mask, "decoder.w": w, "decoder.b": b}
        for impl, art in arts.items():
            if art:
                r.bench(wl, impl, art, inputs, iters)
                got = r.run(wl, impl, art, inputs)
                if got is not None:
                    r.check(wl, impl, got["loss"], want, 1e-4)
        report(r.say, wl, "torch_eager_gather", timed(torch, gather, iters, graph=False))
        report(r.say, wl, "torch_graph_fixed_mask", timed(torch, fixed_mask, iters))
        report(r.say, wl, "torch_graph_nonzero_static", timed(torch, nonzero_static, iters))
        fixed_mask()
        r.check(wl, "torch_graph_fixed_mask", float(out), want, 1e-4)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--log", default="")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--only", default="", help="branch_infer,power_iter,masked_lm")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out_dir = args.out or tempfile.mkdtemp(prefix="cgc-sync-")
    say = BenchLog(torch, "sync-points", args.log,
                   f"CUDA events around {args.iters} back-to-back runs (power_iter: "
                   f"{max(args.iters // 4, 10)}), median of 5 repeats after warm-up; f32 without TF32")
    r = Runner(args.cgc, out_dir, say)
    only = set(filter(None, args.only.split(",")))
    if not only or "branch_infer" in only:
        branch_infer(torch, F, r, args.iters)
    if not only or "power_iter" in only:
        power_iteration(torch, r, args.iters)
    if not only or "masked_lm" in only:
        masked_lm_loss(torch, F, r, args.iters)
    say.write()
    return r.status


if __name__ == "__main__":
    sys.exit(main())
