#!/usr/bin/env python3
"""The model zoo runner (entries.py), on the GPU machine.

    zoo.py [--cgc PATH] [--only SUBSTR] [--export-only] [--coverage] [--bench] [--backend]
           [--shard I/N] [--out DIR]
           [--status bench/zoo/status.json] [--update-status]

Correctness tier (the default, run by scripts/gpu-run.sh): each entry is
compiled with `cgc.compile` exactly as a user calls it and run against
eager PyTorch on the same inputs:
- f32: every output within 1e-4 of eager's f32 result, relative to that
  output's largest magnitude (matmuls in strict f32 on both sides: TF32 off);
- bf16/f16: cgc's difference from eager f32 at most 2x eager bf16/f16's own
  difference from eager f32 (+1e-6), measured in the same run.
An entry's status is `passed`, `refused` (with cgc's message) or `wrong`;
the run fails on any wrong entry and on an entry the committed status file
says passed that is now refused. `--export-only` stops after cgc.export
(the IR: no compile, no run): how far the front end gets. `--coverage`
runs the coverage entries instead (coverage.py's COVERAGE: more
architectures of each family at small configs, f32 and bf16).

With `--backend`, each entry (but the dynamic ones) also runs under
torch.compile(model, backend="cgc", dynamic=False) against the same bound,
whether cgc.compile passed it or not; a backend result that is not
`passed` fails the run.

Benchmark tier (`--bench`): each passing entry tagged "bench" is timed
from Python in this process (bench_entry): eager, torch.cuda.graph,
torch.compile reduce-overhead (and max-autotune where tagged "autotune",
its compile held to --autotune-budget-s), cgc's callable, and with
--backend the backend's, inductor's default mode, and the backend's
compile time cold and from a filled compile cache (a fresh
$CGC_CACHE_DIR; the correctness tier's compiles stay uncached).
`--shard I/N` runs every Nth selected entry from the Ith (0-based), so
that N processes share the GPU machine's cores for the compiles; `--report`
merges their zoo-results.json files.
Writes models.md and status.json into --out (default: $OUT or the
current folder); `--update-status` rewrites the committed status file.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import traceback

# Compile times are cold ones: no cgc compile cache (docs/artifact.md).
os.environ.setdefault("CGC_CACHE", "0")

HERE = os.path.dirname(os.path.abspath(__file__))
# Extra cgc compile flags (--cgc-flags).
CGC_FLAGS = ()
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # bench/: torch_timing
from entries import ENTRIES, IMAGE_FAMILIES  # noqa: E402

F32_TOLERANCE = 1e-4
LOW_PRECISION_FACTOR, LOW_PRECISION_FLOOR = 2.0, 1e-6


def leaves(torch, value):
    """The tensors of a module's result, in pytree order."""
    from torch.utils import _pytree
    return [t for t in _pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def on_device(torch, value, dtype):
    """A module argument on the GPU, its floats in `dtype`."""
    if isinstance(value, torch.Tensor):
        value = value.cuda()
        return value.to(dtype) if value.is_floating_point() else value
    return value


def torch_dtype(torch, name):
    """The torch dtype of an entry's dtype name ("f32", "bf16", "f16"): the
    IR's name, through cgc's dtype table."""
    from cgc.dtypes import BY_IR
    return getattr(torch, BY_IR[name].torch)


def relative_error(torch, got, want):
    """max |got - want| / max |want| over every output (float64)."""
    worst = 0.0
    for g, w in zip(got, want):
        w64 = w.detach().double()
        scale = max(w64.abs().max().item(), 1e-30)
        worst = max(worst, (g.detach().double() - w64).abs().max().item() / scale)
    return worst


def check_entry(torch, cgc, entry, export_only, work, kept=None, backend=False):
    """The entry's result row: status, message, errors, compile time. Into
    `kept` (when given) go cgc's callable, the module in the entry's dtype
    and the call's arguments, for the benchmark tier to time. With
    `backend`, the row also holds torch.compile(backend="cgc")'s result
    (check_backend), whatever cgc.compile did."""
    import copy
    module, (args, kwargs) = entry.build(torch)
    row = {"entry": entry.name, "family": entry.family, "dtype": entry.dtype,
           "batch": entry.batch, "seq": entry.seq}
    reference = module.cuda()
    dtype = torch_dtype(torch, entry.dtype)
    # Copied before any call: a module that caches tensors in eval mode
    # (LeViT's attention biases) would keep f32 ones through .to(dtype).
    model = copy.deepcopy(reference).to(dtype) if dtype != torch.float32 else reference
    ref_args = [on_device(torch, a, torch.float32) for a in args]
    ref_kwargs = {k: on_device(torch, v, torch.float32) for k, v in kwargs.items()}
    with torch.no_grad():
        want = leaves(torch, reference(*ref_args, **ref_kwargs))
    call_args = [on_device(torch, a, dtype) for a in args]
    call_kwargs = {k: on_device(torch, v, dtype) for k, v in kwargs.items()}
    if entry.family in IMAGE_FAMILIES and dtype != torch.float32:
        # Images held channels last, as PyTorch's fastest modes take them:
        # cgc's artifact then reads them where they lie (docs/python.md).
        call_args = channels_last(torch, call_args)
        call_kwargs = {k: channels_last(torch, [v])[0] for k, v in call_kwargs.items()}
    dynamic = None
    if entry.dynamic:
        dynamic = dynamic_shapes(torch, entry, args, kwargs)
    if dtype == torch.float32:
        bound = F32_TOLERANCE
    else:
        with torch.no_grad():
            eager = leaves(torch, model(*call_args, **call_kwargs))
        row["eager_error"] = relative_error(torch, eager, want)
        bound = LOW_PRECISION_FACTOR * row["eager_error"] + LOW_PRECISION_FLOOR
    row["bound"] = bound
    if backend and not export_only and not entry.dynamic:
        check_backend(torch, model, call_args, call_kwargs, want, row, kept)
    started = time.perf_counter()
    try:
        if export_only:
            cgc.export(model, tuple(call_args), os.path.join(work, "model.json"),
                       dynamic_shapes=dynamic, example_kwargs=call_kwargs)
            row.update(status="exported", compile_s=time.perf_counter() - started)
            return row
        fn = cgc.compile(model, tuple(call_args), dynamic_shapes=dynamic,
                         example_kwargs=call_kwargs, path=os.path.join(work, "model.cgc"),
                         flags=CGC_FLAGS)
    except cgc.RefusedError as e:
        row.update(status="refused", message=str(e))
        return row
    except Exception as e:  # noqa: BLE001 - a crash of the front end is a finding
        row.update(status="refused", message=f"{type(e).__name__}: {e}",
                   trace=traceback.format_exc(limit=4))
        return row
    row["compile_s"] = time.perf_counter() - started
    if kept is not None:
        kept.update(fn=fn, model=model, args=call_args, kwargs=call_kwargs)
    with torch.no_grad():
        got = leaves(torch, fn(*call_args, **call_kwargs, fresh_outputs=True))
        torch.cuda.synchronize()
        if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
            row.update(status="wrong", message=f"outputs {[tuple(g.shape) for g in got]}, "
                       f"eager {[tuple(w.shape) for w in want]}")
            return row
        error = relative_error(torch, got, want)
        for batch, seq in entry.other_sizes:
            at_size, mismatch = other_size_error(torch, entry, fn, reference, batch, seq)
            if mismatch:
                row.update(status="wrong", message=mismatch)
                return row
            error = max(error, at_size)
        row["error"] = error
        row["status"] = "passed" if error <= bound else "wrong"
    return row


def check_backend(torch, model, call_args, call_kwargs, want, row, kept):
    """torch.compile(model, backend="cgc") on the entry's call, against
    the same bound as cgc.compile: backend_status (passed, wrong or
    failed with backend_message), backend_error, backend_parts (cgc parts
    over all graphs), backend_kept_out (calls left to PyTorch), and the
    cold time of the first call (backend_compile_s)."""
    torch._dynamo.reset()
    reports = []
    started = time.perf_counter()
    try:
        compiled = torch.compile(model, backend="cgc", dynamic=False,
                                 options={"report": reports})
        with torch.no_grad():
            got = leaves(torch, compiled(*call_args, **call_kwargs))
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - a crash of the backend is a finding
        row.update(backend_status="failed", backend_message=f"{type(e).__name__}: {e}"[:2000])
        return
    row["backend_compile_s"] = time.perf_counter() - started
    row["backend_parts"] = sum(len(r.parts) for r in reports)
    row["backend_kept_out"] = sorted({op for r in reports for op, _, _ in r.kept_out.values()})
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        row.update(backend_status="wrong", backend_message="output shapes differ")
        return
    row["backend_error"] = relative_error(torch, got, want)
    row["backend_status"] = "passed" if row["backend_error"] <= row["bound"] else "wrong"
    if kept is not None:
        kept["backend"] = compiled


def other_size_error(torch, entry, fn, reference, batch, seq):
    """(relative error, None) of a dynamic entry's callable against eager
    at another (batch, seq), or (None, message) when the shapes differ; f32
    only (the dynamic entries are f32)."""
    args, kwargs = entry.inputs_at(torch, batch, seq)
    args = [on_device(torch, a, torch.float32) for a in args]
    kwargs = {k: on_device(torch, v, torch.float32) for k, v in kwargs.items()}
    want = leaves(torch, reference(*args, **kwargs))
    got = leaves(torch, fn(*args, **kwargs, fresh_outputs=True))
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        return None, (f"at batch {batch}, seq {seq}: outputs {[tuple(g.shape) for g in got]}, "
                      f"eager {[tuple(w.shape) for w in want]}")
    return relative_error(torch, got, want), None


def channels_last(torch, values):
    """The 4-D tensors among `values` in channels_last memory format."""
    return [v.contiguous(memory_format=torch.channels_last)
            if isinstance(v, torch.Tensor) and v.dim() == 4 else v for v in values]


def bench_entry(torch, kept, entry, row, iters, autotune_budget_s):
    """Times of one call (µs, CUDA events around `iters` back-to-back calls,
    median of 5 after warm-up) of eager, torch.cuda.graph (replay),
    torch.compile reduce-overhead, max-autotune for entries tagged
    "autotune" when their compile fits the budget, and cgc's callable (the
    one the correctness tier compiled and checked), all in this process on
    the same inputs; plus each torch.compile's cold time. With the backend
    (--backend) also its callable, inductor's default mode (its peer) and
    the backend's compile time cold and from a filled compile cache. A half-type image
    model runs channels_last in PyTorch's modes, its fastest form."""
    from torch_timing import capture, time_events
    model, fn = kept["model"], kept["fn"]
    call_args, call_kwargs = kept["args"], kept["kwargs"]
    torch_args, torch_kwargs = call_args, call_kwargs
    if entry.family in IMAGE_FAMILIES and entry.dtype != "f32":
        # PyTorch's fastest form of a half-type CNN: channels_last weights
        # and input (the input, as cgc's callable takes it too).
        model = model.to(memory_format=torch.channels_last)
        torch_args, torch_kwargs = channels_last(torch, call_args), {
            k: channels_last(torch, [v])[0] for k, v in call_kwargs.items()}
    times = {}
    with torch.no_grad():
        times["eager"] = time_events(lambda: model(*torch_args, **torch_kwargs), iters, 5)[0]
        graph = capture(torch, lambda: model(*torch_args, **torch_kwargs))
        times["cuda_graph"] = time_events(graph.replay, iters, 5)[0]
        del graph
        if "backend" in kept:  # (before the modes' resets drop its compiled code)
            backend = kept["backend"]
            times["cgc-backend"] = time_events(lambda: backend(*call_args, **call_kwargs),
                                               iters, 5)[0]
            row.update(backend_compile_times(torch, model, call_args, call_kwargs))
        # Inductor's default mode is the backend's peer (the compile issue's
        # comparison); reduce-overhead and max-autotune are cgc.compile's.
        modes = (["default"] if "backend" in kept else []) + ["reduce-overhead"] + \
            (["max-autotune"] if "autotune" in entry.tags else [])
        for mode in modes:
            torch._dynamo.reset()
            started = time.perf_counter()
            compiled = torch.compile(model, mode=mode)
            compiled(*torch_args, **torch_kwargs)
            torch.cuda.synchronize()
            row[f"compile_s_{mode}"] = time.perf_counter() - started
            if mode == "max-autotune" and row[f"compile_s_{mode}"] > autotune_budget_s:
                row["message"] = f"max-autotune compile {row[f'compile_s_{mode}']:.0f} s " \
                                 f"> budget {autotune_budget_s} s"
            times[mode] = time_events(lambda: compiled(*torch_args, **torch_kwargs), iters, 5)[0]
        torch._dynamo.reset()
        times["cgc"] = time_events(lambda: fn(*call_args, **call_kwargs), iters, 5)[0]
    row["times_us"] = times
    return row


def backend_compile_times(torch, model, call_args, call_kwargs):
    """torch.compile(backend="cgc")'s first call with an empty compile cache
    (a fresh $CGC_CACHE_DIR) and again after torch._dynamo.reset() with the
    cache it filled: {backend_compile_s_cold, backend_compile_s_cached}."""
    from unittest import mock
    out = {}
    with tempfile.TemporaryDirectory(prefix="cgc-zoo-cache-") as folder, \
            mock.patch.dict(os.environ, CGC_CACHE="1", CGC_CACHE_DIR=folder):
        for label in ("cold", "cached"):
            torch._dynamo.reset()
            started = time.perf_counter()
            compiled = torch.compile(model, backend="cgc", dynamic=False)
            compiled(*call_args, **call_kwargs)
            torch.cuda.synchronize()
            out[f"backend_compile_s_{label}"] = time.perf_counter() - started
    torch._dynamo.reset()
    return out


def onnx_status(torch, entry, cgc_tool, work):
    """(status, message) of the entry exported with torch.onnx.export (in
    f32 on the CPU, keywords as the model takes them) and compiled with
    `cgc model.onnx`: "compiled", "refused" (cgc's first error line) or
    "export failed" (torch's)."""
    import subprocess
    module, (args, kwargs) = entry.build(torch)
    path = os.path.join(work, f"{entry.name}.onnx")
    try:
        torch.onnx.export(module, tuple(args), path, kwargs=kwargs)
    except Exception as e:  # noqa: BLE001 - reported per entry
        return "export failed", f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
    r = subprocess.run([cgc_tool, path, "-o", os.path.join(work, f"{entry.name}.cgc")],
                       capture_output=True, text=True, timeout=600)
    if r.returncode == 0:
        return "compiled", ""
    return "refused", (r.stderr.strip().splitlines() or ["(no message)"])[0][:400]


def dynamic_shapes(torch, entry, args, kwargs):
    """Batch and sequence as named Dims on every tensor argument."""
    batch = torch.export.Dim("batch", min=1, max=entry.batch * 2)
    seq = torch.export.Dim("seq", min=2, max=entry.seq * 2)
    spec = {0: batch, 1: seq}
    return {k: spec if isinstance(v, torch.Tensor) else None for k, v in kwargs.items()} \
        if kwargs else tuple(spec for _ in args)


def bench_table(rows):
    """The benchmark tier's table: µs per call and cgc's speedups."""
    timed = [r for r in rows if "times_us" in r]
    if not timed:
        return []
    lines = ["", "## Benchmark tier (µs per call from Python)", "",
             "| entry | eager | torch.cuda.graph | reduce-overhead | max-autotune | cgc | "
             "vs cuda.graph | vs reduce-overhead | reduce-overhead compile s | "
             'backend="cgc" | backend / cgc | inductor default | backend / default | '
             "backend compile s, cold / cached | default compile s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in timed:
        t = r["times_us"]
        cell = lambda k: f"{t[k]:.1f}" if k in t else ""  # noqa: E731
        ratio = lambda a, b: f"{t[a] / t[b]:.2f}x" if a in t and b in t else ""  # noqa: E731
        compiles = (f"{r['backend_compile_s_cold']:.1f} / {r['backend_compile_s_cached']:.1f}"
                    if "backend_compile_s_cached" in r else "")
        default_s = f"{r['compile_s_default']:.1f}" if "compile_s_default" in r else ""
        lines.append(f"| {r['entry']} | {cell('eager')} | {cell('cuda_graph')} | "
                     f"{cell('reduce-overhead')} | {cell('max-autotune')} | {cell('cgc')} | "
                     f"{t['cuda_graph'] / t['cgc']:.2f}x | {t['reduce-overhead'] / t['cgc']:.2f}x | "
                     f"{r.get('compile_s_reduce-overhead', 0):.1f} | {cell('cgc-backend')} | "
                     f"{ratio('cgc-backend', 'cgc')} | {cell('default')} | "
                     f"{ratio('cgc-backend', 'default')} | {compiles} | {default_s} |")
    return lines


ABOUT = """Generated by `bench/zoo/zoo.py` (entries: `bench/zoo/entries.py`), run by
`scripts/gpu-run.sh` on the GPU machine. Each entry is built from its
config with random weights, called with token ids and an `attention_mask`
that pads part of the rows (`token_type_ids` for BERT), compiled with
`cgc.compile(model, (), example_kwargs=...)` exactly as a user calls it,
and compared with eager PyTorch on the same inputs: f32 within 1e-4 of
eager f32 relative to the output's largest magnitude (TF32 off on both
sides); bf16/f16 within 2x eager bf16/f16's own difference from eager f32
(+1e-6). Cold compile: `cgc.compile` from a fresh export to a loaded
callable (export, NVRTC, load)."""


def markdown(rows, title, header=()):
    lines = [f"# {title}", "", ABOUT, ""] + [f"- {h}" for h in header] + ["",
             "| entry | status | max rel. error (bound) | cold compile s | message |",
             "|---|---|---|---|---|"]
    for r in rows:
        err = f"{r['error']:.2e} ({r['bound']:.1e})" if "error" in r else ""
        comp = f"{r['compile_s']:.1f}" if "compile_s" in r else ""
        msg = (r.get("message") or "").replace("\n", " ").replace("|", "\\|")[:400]
        lines.append(f"| {r['entry']} | {r['status']} | {err} | {comp} | {msg} |")
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines += ["", "Totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))]
    exported = [r for r in rows if "onnx" in r]
    if exported:
        lines += ["", "## Through ONNX (torch.onnx.export, then `cgc model.onnx`)", "",
                  "| entry | status | message |", "|---|---|---|"]
        lines += [f"| {r['entry']} | {r['onnx']} | "
                  f"{r['onnx_message'].replace('|', '/')} |" for r in exported]
    lines += backend_table(rows) + bench_table(rows) + [""]
    return "\n".join(lines)


def backend_table(rows):
    """The backend's rows (zoo.py --backend): status, error, cgc parts,
    ops left to PyTorch, cold first call."""
    checked = [r for r in rows if "backend_status" in r]
    if not checked:
        return []
    lines = ["", '## Under torch.compile(backend="cgc")', "",
             "| entry | status | max rel. error | cgc parts | ops in PyTorch | cold first call s |",
             "|---|---|---|---|---|---|"]
    for r in checked:
        err = f"{r['backend_error']:.2e}" if "backend_error" in r else ""
        kept = ", ".join(op.replace("aten.", "") for op in r.get("backend_kept_out", [])) or \
            (r.get("backend_message") or "").replace("|", "/")[:300]
        cold = f"{r['backend_compile_s']:.1f}" if "backend_compile_s" in r else ""
        lines.append(f"| {r['entry']} | {r['backend_status']} | {err} | "
                     f"{r.get('backend_parts', '')} | {kept} | {cold} |")
    return lines


def report(paths, out, title):
    """models.md from saved zoo-results.json files (entries in ENTRIES'
    order, a later file's row replacing an earlier one's; the header lines
    of each file's run)."""
    rows, header = {}, []
    for path in paths:
        with open(path) as f:
            saved = json.load(f)
        header += [h for h in saved["header"] if h not in header]
        rows.update((r["entry"], r) for r in saved["rows"])
    order = [e.name for e in ENTRIES if e.name in rows]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "models.md"), "w") as f:
        f.write(markdown([rows[name] for name in order], title, header))
    return 0


def write_results(rows, args, header):
    """models.md and zoo-results.json of the rows so far, into --out."""
    os.makedirs(args.out, exist_ok=True)
    title = "Model zoo: export only" if args.export_only else args.title
    with open(os.path.join(args.out, "models.md"), "w") as f:
        f.write(markdown(rows, title, header))
    with open(os.path.join(args.out, "zoo-results.json"), "w") as f:
        json.dump({"header": header, "rows": rows}, f, indent=1)


def run_header(torch):
    import datetime
    try:
        import transformers
        versions = f"torch {torch.__version__}, transformers {transformers.__version__}"
    except ImportError:
        versions = f"torch {torch.__version__}"
    return [f"{torch.cuda.get_device_name()}, {datetime.date.today().isoformat()}, {versions}: "
            f"`{' '.join(['bench/zoo/zoo.py'] + sys.argv[1:])}`"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", nargs="+", metavar="RESULTS_JSON",
                    help="write models.md from saved results and stop")
    ap.add_argument("--title", default="Model zoo: correctness tier")
    ap.add_argument("--cgc", help="the cgc driver ($CGC otherwise)")
    ap.add_argument("--only", default="",
                    help="entries whose name contains one of these (comma-separated)")
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--coverage", action="store_true",
                    help="the coverage entries (more architectures of each family, small "
                         "configs) instead of the others")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--status", default=os.path.join(HERE, "status.json"))
    ap.add_argument("--update-status", action="store_true")
    ap.add_argument("--bench", action="store_true",
                    help="the benchmark tier: time the entries tagged 'bench' that pass")
    ap.add_argument("--bench-only", default="",
                    help="with --bench: time only entries whose name contains one of these")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--cgc-flags", default="",
                    help="extra cgc compile flags, space-separated (e.g. "
                         "--programmatic-edges=all)")
    ap.add_argument("--shard", default="0/1", metavar="I/N",
                    help="run every Nth selected entry from the Ith (0-based)")
    ap.add_argument("--onnx", action="store_true",
                    help="also export each f32 entry with torch.onnx.export and compile it "
                         "with `cgc model.onnx`")
    ap.add_argument("--autotune-budget-s", type=float, default=300)
    ap.add_argument("--backend", action="store_true",
                    help='also run each entry under torch.compile(backend="cgc")')
    args = ap.parse_args()
    if args.report:
        return report(args.report, args.out, args.title)
    global CGC_FLAGS
    CGC_FLAGS = tuple(args.cgc_flags.split())
    if args.cgc:
        os.environ["CGC"] = os.path.abspath(args.cgc)
    import torch
    import cgc
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    committed = {}
    if os.path.exists(args.status):
        with open(args.status) as f:
            committed = json.load(f)
    rows, failed = [], []
    shard, shards = (int(part) for part in args.shard.split("/"))
    selected = [entry for entry in ENTRIES
                if any(part in entry.name for part in args.only.split(",")) and
                args.coverage == ("coverage" in entry.tags)]
    for entry in selected[shard::shards]:
        timed = args.bench and "bench" in entry.tags and \
            any(part in entry.name for part in args.bench_only.split(","))
        kept = {} if timed else None
        with tempfile.TemporaryDirectory(prefix="cgc-zoo-") as work:
            try:
                row = check_entry(torch, cgc, entry, args.export_only, work, kept,
                                  args.backend)
            except Exception as e:  # noqa: BLE001 - eager itself failed: the entry is broken
                row = {"entry": entry.name, "status": "broken",
                       "message": f"{type(e).__name__}: {e}"}
            if timed and row["status"] == "passed":
                bench_entry(torch, kept, entry, row, args.iters, args.autotune_budget_s)
                print(f"{entry.name}: " + " ".join(f"{k}={v:.1f}us" for k, v in
                                                    row["times_us"].items()), flush=True)
        kept = None
        if args.onnx and entry.dtype == "f32" and not entry.dynamic:
            with tempfile.TemporaryDirectory(prefix="cgc-zoo-onnx-") as work:
                row["onnx"], row["onnx_message"] = onnx_status(
                    torch, entry, os.environ.get("CGC", "cgc"), work)
            print(f"{entry.name}: onnx {row['onnx']} {row['onnx_message'][:200]}", flush=True)
        rows.append(row)
        print(f"{row['entry']}: {row['status']} "
              f"{row.get('error', '')} {(row.get('message') or '')[:300]}", flush=True)
        if row["status"] in ("wrong", "broken"):
            failed.append(row["entry"])
        if "backend_status" in row:
            print(f"{row['entry']}: backend {row['backend_status']} "
                  f"{row.get('backend_error', '')} parts {row.get('backend_parts')} kept out "
                  f"{row.get('backend_kept_out')} {(row.get('backend_message') or '')[:300]}",
                  flush=True)
            if row["backend_status"] != "passed":
                failed.append(f"{row['entry']} (backend {row['backend_status']})")
        if not args.export_only and committed.get(entry.name) == "passed" and \
                row["status"] != "passed":
            failed.append(f"{entry.name} (passed before, now {row['status']})")
        torch.cuda.empty_cache()
        write_results(rows, args, run_header(torch))  # after each entry: a cut run keeps its rows
    if args.update_status and not args.export_only:
        committed.update((r["entry"], r["status"]) for r in rows)  # other entries kept
        with open(args.status, "w") as f:
            json.dump(committed, f, indent=1)
            f.write("\n")
    print(f"zoo: {len(rows)} entries, " + ", ".join(
        f"{s} {sum(r['status'] == s for r in rows)}"
        for s in ("passed", "exported", "refused", "wrong", "broken")))
    if failed:
        print("zoo: FAIL: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
