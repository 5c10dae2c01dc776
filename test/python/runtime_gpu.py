#!/usr/bin/env python3
"""cgc.compile and cgc.load on the GPU machine: modules compiled and called
on torch CUDA tensors (no copies: the caller's pointers are bound to the
graph) against the modules themselves; the clear errors of a bad call; and
the time of a call from Python against PyTorch eager, torch.cuda.graph and
torch.compile (CUDA events around N back-to-back calls, median of 5, after
warm-up), written as RESULT lines to --log.

Usage: runtime_gpu.py --cgc PATH [--log FILE] [--iters N]
Exit status 1 if a result is wrong or an error is not raised; 77 without
PyTorch or a GPU.
"""
import argparse, os, sys, time

# Cold compiles: no Inductor or autotuning cache from an earlier run.
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
os.environ.setdefault("CGC_CACHE", "0")  # and no cgc compile cache

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # `cgc` itself: the installed wheel, or PYTHONPATH=build/python
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from export_models import models  # noqa: E402
from torch_timing import capture, time_events  # noqa: E402
from cuda_torch import SKIPPED, cuda_torch  # noqa: E402


def timed(torch, fn, iters):
    """µs per call: the bench scripts' CUDA-event timing (median of 5)."""
    return time_events(fn, iters, max(iters // 10, 10))[0]


def graphed(torch, module, x):
    """A torch.cuda.graph replay of `module` on a copy of `x`."""
    static_x = x.clone()
    with torch.no_grad():
        return capture(torch, lambda: module(static_x)).replay


def tiny_state(torch, cgc, tool):
    """Writes a state tensor of the wrong shape (must raise ValueError)."""
    class Biased(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = torch.nn.Parameter(torch.zeros(16))

        def forward(self, x):
            return x + self.bias

    fn = cgc.compile(Biased().cuda().eval(), (torch.randn(16, device="cuda"),), cgc=tool)
    name = next(iter(fn.states))
    fn.set_state(name, torch.zeros(3))


def check_buckets(torch, cgc, args, name, module, example, dynamic, top, say):
    """Compiled with power-of-two buckets up to `top`: a call at batch 5
    runs the bucket-8 graph. Checks sizes 1, 5 and `top` against the
    module and times batch 5; returns the number of failed checks."""
    dim = next(iter(dynamic[0].values()))
    buckets = [b for b in (1, 2, 4, 8, 16, 32, 64) if b < top] + [top]
    t0 = time.perf_counter()
    fn = cgc.compile(module, example, dynamic_shapes=dynamic, cgc=args.cgc,
                     buckets={dim.__name__: buckets})
    say(f"RESULT workload={name}_buckets impl=cgc_compile "
        f"cold_compile_s={time.perf_counter() - t0:.2f} buckets={len(buckets)}")
    bad = 0
    for b in (1, 5, top):
        x = torch.randn(b, *example[0].shape[1:], device="cuda")
        with torch.no_grad():
            w = module(x)
        g = fn(x)
        torch.cuda.synchronize()
        d = (g - w).abs().max().item()
        ok = g.shape == w.shape and d <= 2 * (1e-4 * w.abs().max().item() + 1e-5)
        bad += not ok
        say(f"CHECK workload={name}_buckets_B{b} impl=cgc_compile max_abs_diff={d:.3g} ok={int(ok)}")
    x = torch.randn(5, *example[0].shape[1:], device="cuda")
    say(f"RESULT workload={name}_buckets_B5 impl=cgc_callable "
        f"us={timed(torch, lambda: fn(x), args.iters):.2f}")
    # At a bucket's exact size the input is bound, not copied: two tensors
    # in turn rebind the graph's nodes (node updates), and match the module.
    xs = [torch.randn(8, *example[0].shape[1:], device="cuda") for _ in range(2)]
    for x8 in xs:
        fn(x8)
    before = fn.counters()["node_updates"]
    worst = 0.0
    for x8 in xs:
        with torch.no_grad():
            w = module(x8)
        worst = max(worst, (fn(x8) - w).abs().max().item() / (1e-4 * w.abs().max().item() + 1e-5))
    ok = fn.counters()["node_updates"] > before and worst <= 2
    bad += not ok
    say(f"CHECK workload={name}_buckets_B8 bound_at_bucket_size=1 "
        f"node_updates={fn.counters()['node_updates'] - before} worst_diff_over_tol={worst:.3g} ok={int(ok)}")
    turn = [0]

    def in_turn():
        turn[0] ^= 1
        fn(xs[turn[0]])
    say(f"RESULT workload={name}_buckets_B8 impl=cgc_callable_new_input "
        f"us={timed(torch, in_turn, args.iters):.2f}")
    return bad


def check_sizes_fast_path(torch, fn, module, example, say):
    """Calls at two sizes in turn, each run once before: every later call
    takes the extension's fast path (Python's _slow_call is not called)
    and matches the module."""
    xs = [torch.randn(b, *example.shape[1:], device="cuda") for b in (5, 7)]
    for x in xs:
        fn(x)
    slow = [0]
    take = fn._slow_call

    def counted(*args, **kwargs):
        slow[0] += 1
        return take(*args, **kwargs)
    fn._slow_call = counted
    worst = 0.0
    try:
        for k in range(6):
            x = xs[k % 2]
            got = fn(x).clone()
            with torch.no_grad():
                want = module(x)
            tol = 1e-4 * want.abs().max().item() + 1e-5
            worst = max(worst, (got - want).abs().max().item() / (2 * tol))
    finally:
        del fn._slow_call
    ok = slow[0] == 0 and worst <= 1
    say(f"CHECK sizes_fast_path slow_calls={slow[0]} worst_diff_over_tol={worst:.3g} ok={int(ok)}")
    return not ok


def check_fast_path(torch, fn, module, x, say):
    """Calls that the extension's fast path takes: the same input again
    launches and updates nothing else; two inputs in turn are each bound
    (one node update per reading node) and give their own results."""
    fn(x)
    before = fn.counters()
    for _ in range(10):
        fn(x)
    after = fn.counters()
    same = (after["launches"] - before["launches"] == 10
            and all(after[k] == before[k] for k in after if k != "launches"))
    other = torch.randn_like(x)
    with torch.no_grad():
        wants = tensors(module(x)) + tensors(module(other))
    gots = [t.clone() for t in tensors(fn(x))] + [t.clone() for t in tensors(fn(other))]
    tol = 1e-4 * max(w.abs().max().item() for w in wants if w.numel()) + 1e-5
    ok = same and len(gots) == len(wants) and all(
        (g - w).abs().max().item() <= 2 * tol for g, w in zip(gots, wants) if w.numel())
    say(f"CHECK fast_path same_input_only_launches={int(same)} ok={int(ok)}")
    return not ok


class CacheLog:
    """cgc.compile's INFO lines of the calls made inside it."""

    def __init__(self, logging):
        self.logging, self.lines = logging, []
        self.handler = logging.Handler(logging.INFO)
        self.handler.emit = lambda record: self.lines.append(record.getMessage())

    def __enter__(self):
        log = self.logging.getLogger("cgc")
        self.level = log.level
        log.setLevel(self.logging.INFO)
        log.addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        log = self.logging.getLogger("cgc")
        log.removeHandler(self.handler)
        log.setLevel(self.level)

    def last(self):
        return next((l for l in reversed(self.lines) if l.startswith("cgc.compile of")), "")


def check_module_cache(torch, cgc, args, say):
    """cgc.compile's cache of whole calls (python/cgc/module_cache.py): a
    second call on an unchanged module loads without exporting and gives
    the module's results; a changed weight, module attribute or input
    shape compiles again; a truncated entry is compiled again. Returns
    the number of failed checks."""
    import logging
    import tempfile
    from export_models import models as all_models
    bad = 0
    saved = {k: os.environ.get(k) for k in ("CGC_CACHE", "CGC_CACHE_DIR")}
    os.environ["CGC_CACHE"] = "1"
    os.environ["CGC_CACHE_DIR"] = tempfile.mkdtemp(prefix="cgc-module-cache-")
    try:
        for name in ("mlp", "encoder_layer"):
            module, example = next((m, a) for n, m, a, _ in all_models(torch) if n == name)
            module = module.cuda().eval()
            example = tuple(t.cuda() for t in example)

            def compiled(note, want_cached, inputs=example):
                with CacheLog(logging) as log:
                    t0 = time.perf_counter()
                    fn = cgc.compile(module, inputs, cgc=args.cgc)
                    seconds = time.perf_counter() - t0
                with torch.no_grad():
                    want = tensors(module(*inputs))
                got = tensors(fn(*inputs))
                torch.cuda.synchronize()
                diff = max((g - w).abs().max().item() for g, w in zip(got, want))
                cached = ": cached:" in log.last()
                ok = cached == want_cached and diff <= 1e-4
                say(f"CHECK workload={name} module_cache={note} cached={int(cached)} "
                    f"s={seconds:.2f} max_abs_diff={diff:.3g} ok={int(ok)}")
                say(f"RESULT workload={name} module_cache={note} log=\"{log.last()}\"")
                return int(not ok)

            bad += compiled("cold", False)
            bad += compiled("again", True)
            with torch.no_grad():
                next(module.parameters()).add_(0.25)
            bad += compiled("weight_changed", False)
            bad += compiled("weight_changed_again", True)
            module.train(False)
            module.cgc_test_attribute = 3  # a plain attribute: part of the key
            bad += compiled("attribute_added", False)
            del module.cgc_test_attribute
            bigger = tuple(torch.cat([t, t]) for t in example)
            bad += compiled("other_shape", False, bigger)
            folder = os.environ["CGC_CACHE_DIR"]
            for entry in os.listdir(folder):
                if entry.endswith(".cgc"):
                    with open(os.path.join(folder, entry), "r+b") as f:
                        f.truncate(1000)
            bad += compiled("truncated", False)
            bad += compiled("after_truncated", True)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return bad


def check_channels_last(torch, cgc, args, say):
    """A bf16 conv net compiled on a channels-last example: the artifact
    takes the input as it is held ([N, H, W, C]), and a call with a
    channels-last tensor or a contiguous one matches eager (bf16:
    within 2e-2 of the output's scale)."""
    nn = torch.nn
    module = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                           nn.MaxPool2d(3, 2, 1), nn.Conv2d(16, 8, 3, padding=1))
    module = module.cuda().eval().to(torch.bfloat16).to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 20, 18, device="cuda", dtype=torch.bfloat16)
    held = x.contiguous(memory_format=torch.channels_last)
    fn = cgc.compile(module, (held,), cgc=args.cgc)
    shape = list(fn.artifact.inputs[0]["shape"])
    with torch.no_grad():
        want = module(held).float()
    bad = 0
    for how, given in (("channels_last", held), ("contiguous", x)):
        got = fn(given).float()
        d = (got - want).abs().max().item()
        ok = shape == [2, 20, 18, 3] and got.shape == want.shape and \
            d <= 2e-2 * want.abs().max().item()
        bad += not ok
        say(f"CHECK workload=conv_channels_last input={how} declared={shape} "
            f"max_abs_diff={d:.3g} ok={int(ok)}")
    return bad


def tensors(out):
    """A module's or callable's outputs as a list: one tensor, or a tuple's."""
    return list(out) if isinstance(out, (tuple, list)) else [out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--log")
    ap.add_argument("--iters", type=int, default=1000)
    args = ap.parse_args()
    torch = cuda_torch()
    if torch is None:
        return SKIPPED
    import cgc
    bad, lines = 0, []
    say = lambda line: (print(line), lines.append(line))  # noqa: E731

    class Tiny(torch.nn.Module):
        def forward(self, x):
            return x + 1

    cases = [(n, m, a, d) for n, m, a, d in models(torch)]
    cases.append(("tiny", Tiny(), (torch.randn(16),), None))
    for name, module, example, dynamic in cases:
        module = module.cuda().eval()
        example = tuple(t.cuda() for t in example)
        t0 = time.perf_counter()
        fn = cgc.compile(module, example, dynamic_shapes=dynamic, cgc=args.cgc)
        compile_s = time.perf_counter() - t0
        with torch.no_grad():
            wants = tensors(module(*example))
        gots = [t.clone() for t in tensors(fn(*example))]
        agains = tensors(fn(*example, fresh_outputs=True))
        # A fresh output is the caller's: a later call on other inputs
        # leaves it as it was.
        fn(*(torch.randn_like(t) if t.is_floating_point() else t for t in example))
        torch.cuda.synchronize()
        ok = len(gots) == len(agains) and all(map(torch.equal, gots, agains))
        bad += not ok
        say(f"CHECK workload={name} impl=cgc_compile_fresh_outputs_kept ok={int(ok)}")
        ok, diff = len(gots) == len(wants), 0.0
        for got, want in zip(gots, wants):
            d = (got.float() - want.float()).abs().max().item() if want.numel() else 0.0
            tol = 1e-4 * (want.float().abs().max().item() if want.numel() else 0.0) + 1e-5
            ok &= got.shape == want.shape and d <= 2 * tol
            diff = max(diff, d)
        bad += not ok
        say(f"CHECK workload={name} impl=cgc_compile max_abs_diff={diff:.3g} ok={int(ok)}")
        say(f"RESULT workload={name} impl=cgc_compile cold_compile_s={compile_s:.2f}")
        if dynamic:
            top = next(iter(dynamic[0].values())).max
            for b in (1, 5, top):
                x = torch.randn(b, *example[0].shape[1:], device="cuda")
                with torch.no_grad():
                    w = module(x)
                g = fn(x, fresh_outputs=b == 1)  # batch 1: a first call's fresh outputs
                torch.cuda.synchronize()
                d = (g - w).abs().max().item()
                ok = g.shape == w.shape and d <= 2 * (1e-4 * w.abs().max().item() + 1e-5)
                bad += not ok
                say(f"CHECK workload={name}_B{b} impl=cgc_compile max_abs_diff={d:.3g} ok={int(ok)}")
            bad += check_sizes_fast_path(torch, fn, module, example[0], say)
            # A call below the largest size: copied into the context's slot;
            # at the largest size the input is bound (no copy): the two
            # split the gap to a graph recorded at the size.
            for b in (5, top):
                x = torch.randn(b, *example[0].shape[1:], device="cuda")
                with torch.no_grad():
                    graph = timed(torch, graphed(torch, module, x), args.iters)
                say(f"RESULT workload={name}_B{b} impl=cgc_callable us={timed(torch, lambda: fn(x), args.iters):.2f}")
                say(f"RESULT workload={name}_B{b} impl=torch_cuda_graph us={graph:.2f}")
            bad += check_buckets(torch, cgc, args, name, module, example, dynamic, top, say)
            continue
        # The timings below feed one input tensor (checked above: all).
        if name in ("embedding_pool", "int_division", "rounding_prod") or len(example) > 1:
            continue
        x = example[0]
        with torch.no_grad():
            eager = timed(torch, lambda: module(x), args.iters)
            replay = graphed(torch, module, x)
            graph = timed(torch, replay, args.iters)
            # A new input every call: torch.cuda.graph copies it into the
            # captured input; cgc binds its pointer (two tensors in turn).
            static_x = x.clone()
            replay = graphed(torch, module, static_x)
            pool, turn = [x.clone(), x.clone()], [0]

            def graph_copy_in():
                turn[0] ^= 1
                static_x.copy_(pool[turn[0]])
                replay()
            graph_new = timed(torch, graph_copy_in, args.iters)

        def cgc_new_input():
            turn[0] ^= 1
            fn(pool[turn[0]])
        ours = timed(torch, lambda: fn(x), args.iters)
        ours_new = timed(torch, cgc_new_input, args.iters)
        fresh = timed(torch, lambda: fn(x, fresh_outputs=True), args.iters)
        say(f"RESULT workload={name} impl=cgc_callable us={ours:.2f}")
        say(f"RESULT workload={name} impl=cgc_callable_new_input us={ours_new:.2f}")
        say(f"RESULT workload={name} impl=cgc_callable_fresh_outputs us={fresh:.2f}")
        say(f"RESULT workload={name} impl=torch_eager us={eager:.2f}")
        say(f"RESULT workload={name} impl=torch_cuda_graph us={graph:.2f}")
        say(f"RESULT workload={name} impl=torch_cuda_graph_copy_in us={graph_new:.2f}")
        bad += check_fast_path(torch, fn, module, x, say)
        for mode, impl in (("default", "torch_compile"), ("reduce-overhead", "torch_compile_ro")):
            try:
                torch._dynamo.reset()
                comp = torch.compile(module, mode=mode)
                t0 = time.perf_counter()
                with torch.no_grad():
                    comp(x)
                    torch.cuda.synchronize()
                say(f"RESULT workload={name} impl={impl} cold_compile_s={time.perf_counter() - t0:.2f}")
                with torch.no_grad():
                    say(f"RESULT workload={name} impl={impl} us={timed(torch, lambda: comp(x), args.iters):.2f}")
            except Exception as e:  # noqa: BLE001 - a peer that fails is reported
                say(f"ERROR workload={name} impl={impl} {type(e).__name__}: {e}")
    bad += check_module_cache(torch, cgc, args, say)
    bad += check_channels_last(torch, cgc, args, say)
    # State by name: the weights the artifact was compiled with, written back
    # changed, change the result.
    mlp = next(m for n, m, _, _ in models(torch) if n == "mlp").cuda().eval()
    x = torch.randn(8, 64, device="cuda")
    fn = cgc.compile(mlp, (x,), cgc=args.cgc)
    name = next(n for n in fn.states if n.endswith("fc2_bias"))
    ok = torch.equal(fn.state(name), mlp.fc2.bias.detach().cpu())
    with torch.no_grad():
        mlp.fc2.bias.add_(0.5)
        want = mlp(x)
    fn.set_state(name, mlp.fc2.bias.detach().cpu())
    diff = (fn(x) - want).abs().max().item()
    ok = ok and diff < 1e-4
    bad += not ok
    say(f"CHECK state={name} read_and_write ok={int(ok)} max_abs_diff={diff:.3g}")
    # An output fed back as the next input is copied, not bound over itself.
    tiny = cgc.compile(Tiny().cuda(), (torch.randn(16, device="cuda"),), cgc=args.cgc)
    x = torch.randn(16, device="cuda")
    twice = tiny(tiny(x)).clone()
    ok = torch.allclose(twice, x + 2)
    bad += not ok
    say(f"CHECK feed_back ok={int(ok)}")
    # The errors a bad call gets, after a good call (so that the extension's
    # fast path is armed and must hand them to the checks).
    fn = cgc.compile(Tiny().cuda(), (torch.randn(16, device="cuda"),), cgc=args.cgc)
    fn(torch.randn(16, device="cuda"))

    class Pair(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    batch = torch.export.Dim("batch", min=1, max=32)
    pair_x = torch.randn(4, 8, device="cuda")
    pair = cgc.compile(Pair().cuda(), (pair_x, pair_x), dynamic_shapes=({0: batch}, {0: batch}),
                       cgc=args.cgc)
    pair(pair_x, pair_x)
    for what, call, kind, text in [
            ("cpu tensor", lambda: fn(torch.randn(16)), TypeError, "is on cpu"),
            ("dtype", lambda: fn(torch.randn(16, device="cuda", dtype=torch.float16)), TypeError,
             "has dtype torch.float16, expected torch.float32"),
            ("shape", lambda: fn(torch.randn(15, device="cuda")), ValueError,
             "has shape [15], expected [16]"),
            ("non-contiguous", lambda: fn(torch.randn(32, device="cuda")[::2]), ValueError,
             "is not contiguous"),
            ("count", lambda: fn(), TypeError, "was exported with 1 positional argument(s)"),
            ("not a tensor", lambda: fn([1.0] * 16), TypeError, "expected a torch.Tensor, got list"),
            ("dim bounds", lambda: pair(torch.randn(40, 8, device="cuda"),
                                        torch.randn(40, 8, device="cuda")),
             cgc.SizeOutOfRange, "dim batch = 40 is outside [1, 32]"),
            ("dims disagree", lambda: pair(torch.randn(4, 8, device="cuda"),
                                           torch.randn(5, 8, device="cuda")), ValueError,
             "dim batch = 5, but 4 in an earlier input"),
            ("state name", lambda: fn.state("nothing"), KeyError, "no state named 'nothing'"),
            ("state shape", lambda: tiny_state(torch, cgc, args.cgc), ValueError,
             "got torch.float32[3]")]:
        try:
            call()
            say(f"CHECK error={what} raised=0 ok=0")
            bad += 1
        except kind as e:
            ok = text in str(e)
            bad += not ok
            say(f"CHECK error={what} raised={type(e).__name__} ok={int(ok)} message={str(e)!r}")
    if args.log:
        with open(args.log, "w") as f:
            f.write(f"# cgc from Python, {torch.cuda.get_device_name()}, torch {torch.__version__}; "
                    f"CUDA events around {args.iters} back-to-back calls, median of 5 after warm-up\n")
            f.write("\n".join(lines) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
