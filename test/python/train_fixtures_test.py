#!/usr/bin/env python3
"""Checks cgc.compile_train's lowering without PyTorch: each fixture of
train-fixtures/ (make_train_fixtures.py) is lowered as compile_train
lowers it (cgc.torch.training.lower_train_record), then trained for its
steps in the interpreter (`cgc-opt --passes=...,autodiff,apply-optimizer
--interpret` with the passes `cgc --train` runs first, each step's updated
parameters, buffers and optimizer state the next step's inputs), and its
parameters and buffers (batch norm's running statistics) after the last
step must equal PyTorch's (f32 on the CPU): |cgc - torch| <= 2e-5 + 1e-4 |torch|. A
16-bit model (a fixture with `f32.<name>`: PyTorch's same training in
f32) must be closer to PyTorch's 16-bit result than that is to f32, by
relative L2 distance over all its trained parameters together: cgc rounds
each stored value once where torch.optim rounds after each of its ops, so
neither is exact, and PyTorch's own 16-bit error is the yardstick; its
moments must be kept in f16, as torch.optim keeps them. Frozen
parameters must not move. A refusal check: an unsupported optimizer
option is refused by name.

Usage: PYTHONPATH=python train_fixtures_test.py --cgc-opt PATH [--fixtures DIR] [--work DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from cgc.errors import RefusedError
from cgc.safetensors import read_safetensors, write_safetensors
from cgc.torch.training import lower_train_record, optimizer_ir

HERE = os.path.dirname(os.path.abspath(__file__))
ATOL, RTOL = 2e-5, 1e-4
MOMENTS = (".momentum_buffer", ".exp_avg", ".exp_avg_sq")  # optimizer state per parameter
# What `cgc --train` runs before the update exists (driver/Compiler.cpp):
# every attention written out (--expand-attention, the target policy
# --train sets: no attention derivative rule yet), the convolutions cuDNN
# would run kept whole, differentiated by conv's rule (a conv_transpose
# and a conv_weight_grad), and so does batch_norm (its rule), written out
# after autodiff.
PASSES = "expand-attention,expand-convolution,autodiff,expand-batch-norm,apply-optimizer"


def train(cgc_opt, ir_path, ir, steps, folder):
    """The interpreter's state after the fixture's steps: {IR name: array}."""
    user = [i["name"] for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"]
    state = {}
    for k in range(1, steps["count"] + 1):
        feed = dict(state)
        feed.update({name: steps[f"step{k}.in{j}"] for j, name in enumerate(user)})
        src, dst = (os.path.join(folder, f"{s}{k}.safetensors") for s in ("in", "out"))
        write_safetensors(src, feed)
        r = subprocess.run([cgc_opt, ir_path, "--passes=" + PASSES,
                            "--expand-attention", "--interpret",
                            "--inputs", src, "--outputs", dst, "--overwrite"],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr.strip()[-2000:])
        for name, value in read_safetensors(dst).items():
            if name.endswith(".next"):
                state[name[:-len(".next")]] = value
    return state


def check(name, folder, cgc_opt, work):
    with open(os.path.join(folder, "program.json")) as f:
        record = json.load(f)
    with open(os.path.join(folder, "train.json")) as f:
        spec = json.load(f)
    weights = read_safetensors(os.path.join(folder, "weights.safetensors"))
    steps = read_safetensors(os.path.join(folder, "steps.safetensors"))
    steps["count"] = spec["steps"]
    out = os.path.join(work, name)
    os.makedirs(out, exist_ok=True)
    ir_path = os.path.join(out, "step.json")
    ir, names = lower_train_record(record, weights, ir_path, spec["optimizer"], spec["frozen"])
    kinds = {i["name"]: i.get("kind") for i in ir["inputs"]}
    state = train(cgc_opt, ir_path, ir, steps, out)
    ok, worst = True, 0.0
    sixteen = []  # (cgc, torch, torch in f32) of each 16-bit parameter
    for target, ir_name in names.items():
        want = steps["after." + target].astype(np.float64)
        got = state.get(ir_name, weights[target]).astype(np.float64)
        if target in spec["frozen"]:
            if kinds[ir_name] != "buffer" or not np.array_equal(got, weights[target]):
                print(f"{name}: frozen {target} is {kinds[ir_name]} or moved")
                ok = False
            continue
        worst = max(worst, float(np.max(np.abs(got - want))))
        if "f32." + target in steps:
            sixteen.append((got, want, steps["f32." + target].astype(np.float64)))
            continue
        err = np.abs(got - want) - (ATOL + RTOL * np.abs(want))
        if not np.all(err <= 0):
            print(f"{name}: {target} differs from PyTorch's by {np.max(np.abs(got - want)):.3g}")
            ok = False
    if sixteen:
        ok &= within_16_bit_spread(name, *(np.concatenate([p[i].ravel() for p in sixteen])
                                           for i in range(3)))
        moments = {n: v.dtype for n, v in state.items() if n.endswith(MOMENTS)}
        if not moments or any(d != np.float16 for d in moments.values()):
            print(f"{name}: the moments are not kept in f16 as torch.optim keeps them: {moments}")
            ok = False
    trained = sum(1 for t in names if t not in spec["frozen"])
    print(f"{name}: {trained} parameters after {spec['steps']} steps of "
          f"{spec['optimizer']['kind']}, max |cgc - torch| = {worst:.2e}: "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def within_16_bit_spread(name, got, want, f32):
    """cgc's 16-bit parameters against PyTorch's (want), the yardstick
    PyTorch's own distance from its f32 training (f32)."""
    def distance(a, b):
        return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
    ours, spread = distance(got, want), distance(want, f32)
    print(f"{name}: relative L2 from PyTorch's 16-bit parameters {ours:.2e}, "
          f"theirs from f32 {spread:.2e}")
    if np.all(np.isfinite(got)) and ours <= spread:
        return True
    print(f"{name}: farther from PyTorch's 16-bit parameters than they are from f32")
    return False


def check_refusals():
    ok = True
    for describe, words in (({"kind": "adam", "lr": 1e-3, "amsgrad": True}, "amsgrad"),
                            ({"kind": "sgd", "lr": 0.1, "dampening": 0.5}, "dampening"),
                            ({"kind": "rmsprop", "lr": 0.1}, "rmsprop"),
                            ({"kind": "sgd", "lr": 0.1, "nesterov": True}, "momentum")):
        try:
            optimizer_ir(describe)
            print(f"refusal: {describe} was accepted")
            ok = False
        except RefusedError as e:
            if words not in str(e):
                print(f"refusal: {describe}: '{e}' does not name {words}")
                ok = False
    print("refusals:", "ok" if ok else "FAIL")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--fixtures", default=os.path.join(HERE, "train-fixtures"))
    ap.add_argument("--work", default="")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="cgc-train-fixtures-")
    ok = check_refusals()
    names = sorted(os.listdir(args.fixtures))
    for name in names:
        ok &= check(name, os.path.join(args.fixtures, name), args.cgc_opt, work)
    print(f"train fixtures: {len(names)} checked:", "PASS" if ok else "FAIL")
    return 0 if ok and names else 1


if __name__ == "__main__":
    sys.exit(main())
