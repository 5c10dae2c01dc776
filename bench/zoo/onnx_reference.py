#!/usr/bin/env python3
"""Whose is an ONNX-path mismatch: torch.onnx's model or cgc's import?

    PYTHONPATH=python onnx_reference.py ENTRY [ENTRY ...] [--cgc-opt build/tools/cgc-opt]

For each zoo entry (f32; entries.py), exports the module as cpu_check.py
--path onnx does (torch.onnx.export, dynamo), runs the ONNX model with
ONNX's own reference evaluator and, imported by cgc, with the reference
interpreter, and prints each one's largest difference from eager PyTorch
relative to the output's scale, and cgc's from onnx.reference's: where
onnx.reference is as far from eager as cgc and cgc equals it, the
exported model itself computes something else than the module."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def relative(got, want):
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-6))


def check(torch, name, cgc_opt, work):
    import onnx
    from onnx.reference import ReferenceEvaluator
    from cgc.safetensors import read_safetensors, write_safetensors
    from entries import ENTRIES
    entry = next(e for e in ENTRIES if e.name == name)
    module, (args, kwargs) = entry.build(torch)
    with torch.no_grad():
        want = module(*args, **kwargs)[0].numpy()
    path = os.path.join(work, "m.onnx")
    torch.onnx.export(module, tuple(args), kwargs=kwargs, dynamo=True).save(path)
    model = onnx.load(path)
    given = dict(zip([i.name for i in model.graph.input], args))
    given.update(kwargs)
    feed = {i.name: given[i.name].numpy() for i in model.graph.input}
    reference = ReferenceEvaluator(model).run(None, feed)[0]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    ir = os.path.join(work, "m.json")
    subprocess.run([sys.executable, "-m", "cgc.onnx.cli", path, "-o", ir], check=True, env=env)
    inputs, outputs = os.path.join(work, "in.safetensors"), os.path.join(work, "out.safetensors")
    write_safetensors(inputs, feed)
    subprocess.run([cgc_opt, ir, "--interpret", "--inputs", inputs, "--outputs", outputs,
                    "--overwrite"], check=True)
    got = read_safetensors(outputs)[model.graph.output[0].name]
    print(f"{name}: onnx.reference vs eager {relative(reference, want):.3g}, cgc vs eager "
          f"{relative(got, want):.3g}, cgc vs onnx.reference {relative(got, reference):.3g}",
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("entries", nargs="+")
    ap.add_argument("--cgc-opt", default="build/tools/cgc-opt")
    args = ap.parse_args()
    import torch
    for name in args.entries:
        with tempfile.TemporaryDirectory(prefix="cgc-onnx-ref-") as work:
            check(torch, name, os.path.abspath(args.cgc_opt), work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
