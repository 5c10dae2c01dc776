#!/usr/bin/env python3
"""cgc.export on ordinary nn.Modules, checked on the GPU machine (PyTorch is
there, not on the CPU machine): each module is exported, compiled with
`cgc` and run with `cgc run` on random inputs, and its outputs compared
with the module's own (f32, rtol 1e-4 + atol 1e-5 of the largest output).
The modules are export_models.py's. Prints one line per model; each of
export_models.refusals must be refused with its text and source line.
Exit status 1 if any is wrong or fails to export or compile, 77 without
PyTorch.

Usage: torch_export_gpu.py --cgc PATH [--work DIR]
"""
import argparse, os, subprocess, sys, tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "..", "..", "python"))  # unless `cgc` is installed
from export_models import models, refusals  # noqa: E402  (this folder: the script's)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--work")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed")
        return 77
    import cgc
    from cgc.safetensors import read_safetensors, write_safetensors
    work = args.work or tempfile.mkdtemp(prefix="cgc-export-")
    os.makedirs(work, exist_ok=True)
    bad = 0
    for name, module, inputs, dynamic in models(torch):
        module.eval()
        path = os.path.join(work, name + ".json")
        try:
            ir = cgc.export(module, inputs, path, dynamic_shapes=dynamic)
        except Exception as e:  # noqa: BLE001 - reported per model
            print(f"FAIL {name}: export: {type(e).__name__}: {e}")
            bad += 1
            continue
        art = os.path.join(work, name + ".cgc")
        r = subprocess.run([args.cgc, path, "-o", art], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {name}: compile: {r.stderr.strip()[-400:]}")
            bad += 1
            continue
        user = [i["name"] for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"]
        feed = {n: t.numpy() for n, t in zip(user, inputs)}
        write_safetensors(os.path.join(work, name + ".in.safetensors"), feed)
        out = os.path.join(work, name + ".out.safetensors")
        r = subprocess.run([args.cgc, "run", art, "--inputs", os.path.join(work, name + ".in.safetensors"),
                            "--outputs", out, "--overwrite"], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {name}: run: {r.stderr.strip()[-400:]}")
            bad += 1
            continue
        with torch.no_grad():
            want = module(*inputs)
        want = [want] if isinstance(want, torch.Tensor) else list(want)
        got = read_safetensors(out)
        names = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
        for k, (o, w) in enumerate(zip(names, want)):
            w = w.numpy()
            g = got.get(o)
            tol = 1e-4 * np.abs(w).max() + 1e-5
            diff = np.abs(g - w).max() if g is not None and g.shape == w.shape else None
            ok = diff is not None and diff <= tol + 1e-4 * np.abs(w).max()
            nodes = len(ir["nodes"])
            print(f"{'OK' if ok else 'FAIL'} {name}: output {o} max abs diff "
                  f"{diff if diff is not None else 'shape ' + str(None if g is None else g.shape)} "
                  f"(tol {tol:.2g}; {nodes} IR nodes{', dims ' + str(ir.get('dims')) if ir.get('dims') else ''})")
            bad += 0 if ok else 1
    # What cgc cannot express is refused by name, with the user's line.
    for name, module, inputs, dynamic, refusal in refusals(torch):
        try:
            cgc.export(module, inputs, os.path.join(work, name + ".json"), dynamic_shapes=dynamic)
            print(f"FAIL refusal {name}: exported")
            bad += 1
        except cgc.RefusedError as e:
            ok = refusal in str(e)
            print(f"{'OK' if ok else 'FAIL'} refusal {name}: {e}"
                  f"{'' if ok else f' (expected: {refusal})'}")
            bad += 0 if ok else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
