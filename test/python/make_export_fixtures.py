#!/usr/bin/env python3
"""Writes test/python/export-fixtures/, what export_fixtures_test.py checks
cgc.export's lowering on without PyTorch: each module of export_models.py
(at the fixtures' small sizes) captured as a program record
(cgc.torch.capture). For each, under export-fixtures/<name>/:

  program.json          the record (python/cgc/torch/record.py)
  weights.safetensors   its parameters' and buffers' values, by state_dict
                        name (absent without any)
  io.safetensors        inputs and PyTorch's outputs (CPU): run0.in.<input>,
                        run0.out.<output>, by the record's names; a module
                        with dynamic_shapes (its batch on axis 0 of float
                        inputs) also runs at batch 3, as run1; a dynamic
                        keyword model (export_dynamic_models.dynamic_keyword_models)
                        runs its second call as run1
  expect.json           {"dims": the names of the module's Dims} or, for
                        export_models.refusals, {"refusal": the text}

Needs PyTorch (CPU). Rerun it after changing export_models.py or
torch/capture.py and commit the folder: the records are the same on every
run of one PyTorch version (PyTorch's outputs may differ in their last
bits between CPUs).

Usage: PYTHONPATH=python make_export_fixtures.py [--out DIR] [--only NAME,...]
"""
import argparse
import json
import os
import shutil
import sys

import torch

from cgc.safetensors import write_safetensors
from cgc.torch.capture import capture, capture_program
from cgc.torch.record import tensor_inputs, tensor_outputs

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from export_dynamic_models import dynamic_keyword_models  # noqa: E402
from export_models import keyword_models, models, refusals  # noqa: E402

SECOND_BATCH = 3


def at_batch(example, batch):
    """Inputs like `example` with `batch` rows, drawn from a generator seeded 1."""
    gen = torch.Generator().manual_seed(1)
    return tuple(torch.randn((batch,) + tuple(x.shape[1:]), generator=gen, dtype=x.dtype)
                 for x in example)


def run_io(record, module, runs):
    """{runK.in.<input>, runK.out.<output>: array} of the module on each run's inputs."""
    inputs = [i["name"] for i in record["inputs"] if i["kind"] == "user_input"]
    outputs = [o["name"] for o in record["outputs"]]
    io = {}
    for k, args in enumerate(runs):
        with torch.no_grad():
            results = module(*args)
        results = results if isinstance(results, tuple) else (results,)
        io.update({f"run{k}.in.{name}": t.numpy() for name, t in zip(inputs, args)})
        io.update({f"run{k}.out.{name}": t.numpy() for name, t in zip(outputs, results)})
    return io


def keyword_io(record, module, signature, args, kwargs, run=0):
    """run_io's arrays for a call with keywords (as run `run`): the graph's
    inputs in the record's order (the signature flattens the call as the
    export did), the outputs as the module's result flattened (pytree
    order)."""
    from torch.utils import _pytree
    inputs, outputs = tensor_inputs(record), tensor_outputs(record)
    with torch.no_grad():
        results = [t for t in _pytree.tree_leaves(module(*args, **kwargs))
                   if isinstance(t, torch.Tensor)]
    tensors = signature.inputs(args, kwargs)
    if len(tensors) != len(inputs) or len(results) != len(outputs):
        raise ValueError(f"{record['module']}: {len(tensors)} tensor inputs and {len(results)} "
                         f"outputs, the record {len(inputs)} and {len(outputs)}")
    io = {f"run{run}.in.{name}": t.numpy() for name, t in zip(inputs, tensors)}
    io.update({f"run{run}.out.{name}": t.numpy() for name, t in zip(outputs, results)})
    return io


def as_on_cuda(record):
    """The record as an export on CUDA gives it where that differs from the
    CPU's: a 16-bit batch norm's saved mean and inverse deviation are f32
    (cuDNN's), its output x's own dtype. For modules that set
    `record_as_cuda`."""
    for node in record["nodes"]:
        if "batch_norm" in str(node.get("target")) and isinstance(node.get("val"), list):
            for saved in node["val"][1:3]:
                if saved and saved["dtype"] in ("torch.bfloat16", "torch.float16"):
                    saved["dtype"] = "torch.float32"
    return record


def write_fixture(folder, record, weights, io, expect):
    os.makedirs(folder)
    with open(os.path.join(folder, "program.json"), "w") as f:
        json.dump(record, f, indent=1, allow_nan=False)  # non-finite floats are tagged
        f.write("\n")
    if weights:
        write_safetensors(os.path.join(folder, "weights.safetensors"), weights)
    if io:
        write_safetensors(os.path.join(folder, "io.safetensors"), io)
    with open(os.path.join(folder, "expect.json"), "w") as f:
        json.dump(expect, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "export-fixtures"))
    ap.add_argument("--only", default="", help="rewrite only these fixtures (comma-separated)")
    args = ap.parse_args()
    wanted = set(args.only.split(",")) if args.only else None

    def skip(name):
        if wanted is not None and name not in wanted:
            return True
        shutil.rmtree(os.path.join(args.out, name), ignore_errors=True)
        return False
    if wanted is None:
        shutil.rmtree(args.out, ignore_errors=True)
    torch.manual_seed(0)  # the modules' initial weights
    for name, module, example, dynamic in models(torch, small=True):
        if skip(name):
            continue
        module.eval()
        record, weights = capture(module, example, dynamic)
        runs = [example] + ([at_batch(example, SECOND_BATCH)] if dynamic else [])
        dims = sorted({dim.__name__ for spec in dynamic or () for dim in spec.values()})
        write_fixture(os.path.join(args.out, name), record, weights,
                      run_io(record, module, runs), {"dims": dims})
        print(f"{name}: {len(record['nodes'])} nodes, {len(runs)} runs")
    failed = []
    for name, module, example, kwargs in keyword_models(torch):
        if skip(name):
            continue
        module.eval()
        try:
            record, weights, signature = capture_program(module, example, None, kwargs)
            io = keyword_io(record, module, signature, example, kwargs)
            if getattr(module, "record_as_cuda", False):
                record = as_on_cuda(record)
        except Exception as e:  # noqa: BLE001 - said, then the run fails
            print(f"{name}: FAILED: {type(e).__name__}: {e}")
            failed.append(name)
            continue
        write_fixture(os.path.join(args.out, name), record, weights, io, {"dims": []})
        print(f"{name}: {len(record['nodes'])} nodes, called with keywords {sorted(kwargs)}")
    for name, module, runs, dynamic in dynamic_keyword_models(torch):
        if skip(name):
            continue
        module.eval()
        try:
            record, weights, signature = capture_program(module, (), dynamic, runs[0])
            io = {}
            for k, kwargs in enumerate(runs):
                io.update(keyword_io(record, module, signature, (), kwargs, run=k))
        except Exception as e:  # noqa: BLE001 - said, then the run fails
            print(f"{name}: FAILED: {type(e).__name__}: {e}")
            failed.append(name)
            continue
        dims = sorted({dim.__name__ for spec in dynamic.values() for dim in spec.values()})
        write_fixture(os.path.join(args.out, name), record, weights, io, {"dims": dims})
        print(f"{name}: {len(record['nodes'])} nodes, {len(runs)} runs over {dims}")
    for name, module, example, dynamic, refusal in refusals(torch):
        if skip(name):
            continue
        record, weights = capture(module, example, dynamic)
        write_fixture(os.path.join(args.out, name), record, weights, None, {"refusal": refusal})
        print(f"{name}: {len(record['nodes'])} nodes, refused with: {refusal}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
