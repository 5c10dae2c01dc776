#!/usr/bin/env python3
"""The zoo checked on the CPU, without a GPU: each static entry (f32, bf16
and f16; or those named; with --coverage the coverage entries instead)
brought to cgc's IR, `--path onnx`: exported with
`torch.onnx.export` (the dynamo exporter) and imported with
`python3 -m cgc.onnx.cli`; `--path torch`: by `cgc.export`, as
`cgc.compile` does. The IR is compiled with `cgc` (NVRTC needs no GPU)
and run by the reference interpreter (`cgc-opt --interpret`) on the
entry's inputs; every output is compared with eager PyTorch on the CPU
(the tolerance of the zoo's f32 tier: 1e-4 of the output's scale; a
bf16/f16 entry, exported and run in its dtype, against eager f32 within
2x eager's own bf16/f16 difference from f32, as the GPU tier).
Prints one line per entry and writes them to --log.

Usage: PYTHONPATH=python bench/zoo/cpu_check.py --cgc BIN --cgc-opt BIN
           [--path onnx|torch] [--only A,B] [--log F] [--compile-only] [--dynamic]
           [--coverage]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from entries import ENTRIES  # noqa: E402

TOLERANCE = 1e-4  # of max |eager output|, as zoo.py's f32 tier


def run(cmd, timeout=1800):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    first = (r.stderr.strip().splitlines() or ["(no message)"])[0][:300]
    return r.returncode, first


def in_dtype(torch, value, dtype):
    """A module argument with its floats in `dtype`."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    return value


def as_numpy(torch, t):
    """A CPU tensor as what write_safetensors takes (bf16 as its bits)."""
    from cgc.safetensors import BFloat16
    if t.dtype == torch.bfloat16:
        return BFloat16(t.view(torch.int16).numpy().view(np.uint16))
    return t.numpy()


def check(torch, entry, args, work):
    """(status, message) of one entry."""
    from cgc.safetensors import read_safetensors, write_safetensors
    reference, (call_args, kwargs) = entry.build(torch)
    module = reference
    if entry.dtype != "f32":  # (the reference stays in f32: the bound)
        import copy
        dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[entry.dtype]
        module = copy.deepcopy(reference).to(dtype)
        call_args = [in_dtype(torch, a, dtype) for a in call_args]
        kwargs = {k: in_dtype(torch, v, dtype) for k, v in kwargs.items()}
    if args.path == "torch":
        return check_torch(torch, module, call_args, kwargs, args, work,
                           None if entry.dtype == "f32" else reference)
    onnx_path, ir_path = os.path.join(work, "m.onnx"), os.path.join(work, "m.json")
    try:
        dynamic = None
        if entry.dynamic:  # the Dims zoo.py exports them with
            from zoo import dynamic_shapes
            dynamic = dynamic_shapes(torch, entry, call_args, kwargs)
        program = torch.onnx.export(module, tuple(call_args), kwargs=kwargs, dynamo=True,
                                    dynamic_shapes=dynamic)
        program.save(onnx_path)
    except Exception as e:  # noqa: BLE001 - reported per entry
        return "export failed", f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-P", "-m", "cgc.onnx.cli", onnx_path, "-o", ir_path],
                       capture_output=True, text=True, env=env, timeout=1800)
    if r.returncode:
        return "refused", (r.stderr.strip().splitlines() or ["?"])[0][:300]
    code, message = run([args.cgc, ir_path, "-o", os.path.join(work, "m.cgc")])
    if code:
        return "refused", message
    if args.compile_only:
        return "compiled", "(not run: --compile-only)"
    import onnx
    names = [i.name for i in onnx.load(onnx_path, load_external_data=False).graph.input]
    given = dict(zip(names, [a for a in call_args if isinstance(a, torch.Tensor)]))
    given.update({k: v for k, v in kwargs.items() if k in names})
    feed = {n: as_numpy(torch, given[n]) for n in names}
    inputs, outputs = os.path.join(work, "in.safetensors"), os.path.join(work, "out.safetensors")
    write_safetensors(inputs, feed)
    code, message = run([args.cgc_opt, ir_path, "--interpret", "--inputs", inputs,
                         "--outputs", outputs, "--overwrite"])
    if code:
        return "interpreter failed", message
    graph_outputs = [o.name for o in onnx.load(onnx_path, load_external_data=False).graph.output]
    if entry.dtype != "f32":
        return compare_low(torch, reference, module, call_args, kwargs,
                           read_safetensors(outputs), graph_outputs)
    return compare(torch, module, call_args, kwargs, read_safetensors(outputs), graph_outputs)


def check_torch(torch, module, call_args, kwargs, args, work, reference=None):
    """The entry through cgc.export: (status, message); a bf16/f16 module
    against its f32 `reference` (compare_low)."""
    import json
    import cgc
    from cgc.torch.export import export_program
    from cgc.safetensors import read_safetensors, write_safetensors
    ir_path = os.path.join(work, "m.json")
    try:
        _, signature = export_program(module, tuple(call_args), ir_path,
                                      example_kwargs=kwargs)
    except cgc.RefusedError as e:
        return "refused", str(e)[:300]
    code, message = run([args.cgc, ir_path, "-o", os.path.join(work, "m.cgc")])
    if code:
        return "refused", message
    with open(ir_path) as f:
        ir = json.load(f)
    names = [i["name"] for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"]
    tensors = signature.inputs(tuple(call_args), kwargs)
    inputs, outputs = os.path.join(work, "in.safetensors"), os.path.join(work, "out.safetensors")
    write_safetensors(inputs, {n: as_numpy(torch, t) for n, t in zip(names, tensors)})
    code, message = run([args.cgc_opt, ir_path, "--interpret", "--inputs", inputs,
                         "--outputs", outputs, "--overwrite"])
    if code:
        return "interpreter failed", message
    graph_outputs = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
    if reference is not None:
        return compare_low(torch, reference, module, call_args, kwargs,
                           read_safetensors(outputs), graph_outputs)
    return compare(torch, module, call_args, kwargs, read_safetensors(outputs), graph_outputs)


def compare(torch, module, call_args, kwargs, got, graph_outputs):
    """(status, message) of the interpreter's outputs, in graph order,
    against the module's eager tensor outputs (pytree order)."""
    from torch.utils import _pytree
    with torch.no_grad():
        want = [t.numpy() for t in _pytree.tree_leaves(module(*call_args, **kwargs))
                if isinstance(t, torch.Tensor)]
    if len(want) != len(graph_outputs):
        return "wrong", f"{len(graph_outputs)} outputs, eager {len(want)}"
    worst = 0.0
    for name, w in zip(graph_outputs, want):
        g = got.get(name)
        if g is None or g.shape != w.shape:
            return "wrong", f"output {name}: {None if g is None else g.shape} vs eager {w.shape}"
        worst = max(worst, relative(g.astype(np.float64), w))
    status = "matches" if worst <= TOLERANCE else "wrong"
    return status, f"max error {worst:.2e} of the output's scale ({len(want)} outputs)"


def eager_leaves(torch, module, call_args, kwargs):
    """The module's tensor outputs, in pytree order, as float64 arrays."""
    from torch.utils import _pytree
    with torch.no_grad():
        out = module(*call_args, **kwargs)
    return [t.double().numpy() for t in _pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def relative(got, want):
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-6))


def compare_low(torch, reference, module, call_args, kwargs, got, graph_outputs):
    """(status, message) of a bf16/f16 entry's interpreter outputs against
    eager f32 (the reference on the arguments in f32), within 2x eager
    bf16/f16's own difference from it (+1e-6), as zoo.py's GPU tier."""
    f32_args = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in call_args]
    f32_kwargs = {k: v.float() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                  for k, v in kwargs.items()}
    want = eager_leaves(torch, reference, f32_args, f32_kwargs)
    eager = eager_leaves(torch, module, call_args, kwargs)
    if len(want) != len(graph_outputs):
        return "wrong", f"{len(graph_outputs)} outputs, eager {len(want)}"
    worst = bound = 0.0
    for name, w, e in zip(graph_outputs, want, eager):
        g = got.get(name)
        if g is None or g.shape != w.shape:
            return "wrong", f"output {name}: {None if g is None else g.shape} vs eager {w.shape}"
        worst = max(worst, relative(np.asarray(g, dtype=np.float64), w))
        bound = max(bound, relative(e, w))
    bound = 2.0 * bound + 1e-6
    status = "matches" if worst <= bound else "wrong"
    return status, (f"max error {worst:.2e} of the output's scale, bound {bound:.2e} "
                    f"({len(want)} outputs)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--path", choices=("onnx", "torch"), default="onnx")
    ap.add_argument("--only", default="", help="comma-separated entry names")
    ap.add_argument("--log")
    ap.add_argument("--compile-only", action="store_true",
                    help="stop once cgc compiles the entry (no interpreter run): the ONNX "
                         "status of the entries too large to interpret here")
    ap.add_argument("--coverage", action="store_true",
                    help="the coverage entries (coverage.py: more architectures of each family, "
                         "at small configs) instead of the others")
    ap.add_argument("--dynamic", action="store_true",
                    help="take the dynamic entries too, exported with their Dims")
    args = ap.parse_args()
    import torch
    only = [s for s in args.only.split(",") if s]
    lines = []
    for entry in ENTRIES:
        if (entry.dynamic and not args.dynamic) or (only and entry.name not in only) or \
                (args.coverage != ("coverage" in entry.tags)):
            continue
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="cgc-zoo-onnx-") as work:
            status, message = check(torch, entry, args, work)
        line = f"{entry.name} ({args.path}): {status}: {message} ({time.perf_counter() - started:.0f} s)"
        print(line, flush=True)
        lines.append(line)
    if args.log:
        with open(args.log, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if any(": wrong:" in line for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
