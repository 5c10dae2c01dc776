#!/usr/bin/env python3
"""Checks cgc.compile_generate's graph without PyTorch: each fixture of
generate-fixtures/ (make_generate_fixtures.py) is lowered and composed as
compile_generate does (cgc.generate.program_of_records, with
output_scores), run in the reference interpreter (`cgc-opt --interpret`)
on the fixture's prompts (padded on the left and on the right), and must
give transformers' greedy tokens exactly, its scores within
|cgc - hf| <= 1e-4 + 1e-4 |hf| (-inf where transformers' are), and the
lengths up to each sequence's end. A refusal check: sampling is refused
by name.

Usage: PYTHONPATH=python generate_fixtures_test.py --cgc-opt PATH [--fixtures DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from cgc.errors import RefusedError
from cgc.generate import program_of_records, settings_from
from cgc.safetensors import read_safetensors, write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
ATOL = RTOL = 1e-4


def right_aligned(ids, mask, pad):
    """The prompts as Generator.packed gives them to the graph."""
    out_ids, out_mask = np.full_like(ids, pad), np.zeros_like(mask)
    for r in range(ids.shape[0]):
        real = ids[r][mask[r].astype(bool)]
        out_ids[r, ids.shape[1] - real.size:] = real
        out_mask[r, ids.shape[1] - real.size:] = 1
    return out_ids, out_mask


def expected_lengths(tokens, eos, new):
    lengths = []
    for row in tokens:
        ends = [c for c, t in enumerate(row) if int(t) in eos]
        lengths.append(ends[0] + 1 if ends else new)
    return np.array(lengths)


def check(name, folder, cgc_opt, work):
    with open(os.path.join(folder, "settings.json")) as f:
        spec = json.load(f)
    records = []
    weights = read_safetensors(os.path.join(folder, "weights.safetensors"))
    for step in ("prefill", "decode"):
        with open(os.path.join(folder, f"{step}.json")) as f:
            records.append((json.load(f), weights))
    fields = dict(spec["generation"], pad_token_id=0)
    s = settings_from(fields, spec["batch"], spec["max_prompt"], spec["max_new_tokens"],
                      spec["vocab"])
    s.output_scores = True
    ir, ir_weights = program_of_records(records, s, name)
    out = os.path.join(work, name)
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "g.safetensors"), ir_weights)
    ir["weights_file"] = "g.safetensors"
    ir_path = os.path.join(out, "g.json")
    with open(ir_path, "w") as f:
        json.dump(ir, f)
    want = read_safetensors(os.path.join(folder, "expected.safetensors"))
    ids, mask = right_aligned(want["input_ids"], want["attention_mask"], s.pad)
    write_safetensors(os.path.join(out, "in.safetensors"), {"input_ids": ids,
                                                            "attention_mask": mask})
    r = subprocess.run([cgc_opt, ir_path, "--interpret", "--inputs",
                        os.path.join(out, "in.safetensors"), "--outputs",
                        os.path.join(out, "out.safetensors"), "--overwrite"],
                       capture_output=True, text=True)
    if r.returncode:
        print(f"{name}: the interpreter failed: {r.stderr.strip()[-2000:]}")
        return False
    got = read_safetensors(os.path.join(out, "out.safetensors"))
    columns = want["tokens"].shape[1]  # transformers stops when every row has ended
    ok = True
    if not np.array_equal(got["tokens"][:, :columns], want["tokens"]) or \
            (got["tokens"][:, columns:] != s.pad).any():
        print(f"{name}: tokens {got['tokens'].tolist()}, transformers' {want['tokens'].tolist()}")
        ok = False
    lengths = expected_lengths(want["tokens"], s.eos, s.max_new)
    if not np.array_equal(got["lengths"], lengths) or int(got["steps"]) != columns:
        print(f"{name}: lengths {got['lengths'].tolist()} steps {int(got['steps'])}, expected "
              f"{lengths.tolist()} and {columns}")
        ok = False
    theirs, ours = want["scores"].astype(np.float64), got["scores"][:, :columns].astype(np.float64)
    finite = np.isfinite(theirs)
    with np.errstate(invalid="ignore"):  # -inf - -inf where both ended
        off = np.abs(ours - theirs)
    if not np.array_equal(finite, np.isfinite(ours)) or \
            np.any(off[finite] > ATOL + RTOL * np.abs(theirs[finite])):
        worst = np.max(off[finite & np.isfinite(ours)])
        print(f"{name}: scores differ from transformers' (worst {worst:.3g}, or -inf elsewhere)")
        ok = False
    print(f"{name}: {'ok' if ok else 'FAILED'}: {want['tokens'].shape[0]} prompts, "
          f"{columns} columns, tokens {'equal' if ok else 'differ'}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cgc-opt", required=True)
    parser.add_argument("--fixtures", default=os.path.join(HERE, "generate-fixtures"))
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="cgc-generate-fixtures-") as work:
        for name in sorted(os.listdir(args.fixtures)):
            ok &= check(name, os.path.join(args.fixtures, name), args.cgc_opt, work)
    try:
        settings_from({"do_sample": True}, 1, 4, 4, 10)
        print("sampling was not refused")
        ok = False
    except RefusedError as e:
        ok &= "sampling" in str(e)
    print(f"generate_fixtures: {'all passed' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
