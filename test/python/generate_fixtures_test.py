#!/usr/bin/env python3
"""Checks cgc.compile_generate's graph without PyTorch: each fixture of
generate-fixtures/ (make_generate_fixtures.py) is lowered and composed as
compile_generate does (cgc.generate.program_of_records, with
output_scores), run in the reference interpreter (`cgc-opt --interpret`)
on the fixture's prompts (padded on the left and on the right), and must
give transformers' greedy tokens exactly, its scores within
|cgc - hf| <= 1e-4 + 1e-4 |hf| (-inf where transformers' are), and the
lengths up to each sequence's end; the log-probabilities (output_logprobs)
are log softmax of transformers' scores at its tokens, 0 after the end.

Sampling (temperature, top-k and top-p) over the same records: the first
column's scores are transformers' after its warpers (-inf where they
removed an id), no column keeps more than top_k ids; every token is the one
the draw rule gives for cgc's own scores of its column and the uniform
number the Philox stream holds for its row and step (computed here by an
independent Philox, test/golden/golden_numerics.py); an end token is
never drawn before min_new_tokens; the same seed gives the same tokens
and another seed others. Refusal checks: typical-p and min-p sampling and
beam search are refused by name.

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
from cgc.generation_ir import UNIFORM_BITS, loop_graph, prefill_graph, rng_stride
from cgc.safetensors import read_safetensors, write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "golden"))
from golden_numerics import philox_uniform  # noqa: E402
ATOL = RTOL = 1e-4


def right_aligned(ids, mask, pad, width):
    """The prompts as Generator.packed gives them to the graph: real tokens
    at the end, the columns before them the row's pad id where it was
    padded, else its first token; a row with no real token all pad."""
    out_ids = np.full((ids.shape[0], width), pad, dtype=ids.dtype)
    out_mask = np.zeros((ids.shape[0], width), dtype=mask.dtype)
    for r in range(ids.shape[0]):
        keep = mask[r].astype(bool)
        if not keep.any():
            continue
        real = ids[r][keep]
        out_ids[r] = ids[r][~keep][0] if not keep.all() else real[0]
        out_ids[r, width - real.size:] = real
        out_mask[r, width - real.size:] = 1
    return out_ids, out_mask


def expected_lengths(tokens, eos, new):
    lengths = []
    for row in tokens:
        ends = [c for c, t in enumerate(row) if int(t) in eos]
        lengths.append(ends[0] + 1 if ends else new)
    return np.array(lengths)


def compose(folder, spec, fields, work, tag, streaming=False):
    """(settings, IR path) of the generation graph over the fixture's
    records, with output_scores (and with `streaming`, its entries)."""
    records = []
    weights = read_safetensors(os.path.join(folder, "weights.safetensors"))
    buckets = spec.get("prompt_buckets", [spec["max_prompt"]])
    steps = ["prefill" if w == spec["max_prompt"] else f"prefill_w{w}" for w in buckets]
    for step in steps + ["decode"]:
        with open(os.path.join(folder, f"{step}.json")) as f:
            records.append((json.load(f), weights))
    s = settings_from(dict(fields, pad_token_id=0), spec["batch"], spec["max_prompt"],
                      spec["max_new_tokens"], spec["vocab"], buckets,
                      spec.get("pads_penalized", True))
    s.output_scores = s.output_logprobs = True
    ir, ir_weights = program_of_records(records, s, tag, streaming)
    out = os.path.join(work, tag)
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "g.safetensors"), ir_weights)
    ir["weights_file"] = "g.safetensors"
    ir_path = os.path.join(out, "g.json")
    with open(ir_path, "w") as f:
        json.dump(ir, f)
    return s, ir_path


def interpret(cgc_opt, ir_path, feed, tag, entry="main"):
    """The interpreter's outputs of graph `entry` on `feed`, or None
    (printed) on a failure."""
    folder = os.path.dirname(ir_path)
    write_safetensors(os.path.join(folder, f"in-{tag}.safetensors"), feed)
    r = subprocess.run([cgc_opt, ir_path, "--entry", entry, "--interpret", "--inputs",
                        os.path.join(folder, f"in-{tag}.safetensors"), "--outputs",
                        os.path.join(folder, f"out-{tag}.safetensors"), "--overwrite"],
                       capture_output=True, text=True)
    if r.returncode:
        print(f"{tag}: the interpreter failed: {r.stderr.strip()[-2000:]}")
        return None
    return read_safetensors(os.path.join(folder, f"out-{tag}.safetensors"))


def log_softmax(scores):
    finite = np.isfinite(scores)
    top = scores[finite].max()
    return scores - top - np.log(np.exp(np.where(finite, scores - top, -np.inf)).sum())


def check_logprobs(name, ours, scores, tokens, lengths):
    """cgc's logprobs: log softmax of `scores` at each token up to the
    row's length, 0 after it."""
    ok = True
    for r in range(tokens.shape[0]):
        for c in range(tokens.shape[1]):
            want = log_softmax(scores[r, c])[int(tokens[r, c])] if c < lengths[r] else 0.0
            if abs(float(ours[r, c]) - want) > 1e-4 + 1e-4 * abs(want):
                print(f"{name}: row {r} column {c}: log-probability {float(ours[r, c])}, "
                      f"expected {want}")
                ok = False
    return ok


def row_left_out(want, s):
    """`want` (expected*.safetensors) with row 1 left out (a call with
    fewer prompts than the batch): its mask 0, its tokens the pad id, no
    scores, the columns up to where the other rows have ended."""
    want = {k: v.copy() for k, v in want.items()}
    want["attention_mask"][1] = 0
    lengths = expected_lengths(want["tokens"], s.eos, s.max_new)
    columns = max(lengths[0], lengths[2])
    want["tokens"] = want["tokens"][:, :columns].copy()
    want["tokens"][1] = s.pad
    want["scores"] = None
    return want


def fitting_widths(want, s):
    """The prompt buckets that `want`'s prompts fit: each that holds every
    row's real tokens (and one pad column for a padded
    row, where the penalty counts pads: Generator.packed's rule)."""
    mask = want["attention_mask"].astype(bool)
    pad_seen = ~mask.all(axis=1) & mask.any(axis=1) & s.pads_seen
    need = int((mask.sum(axis=1) + pad_seen).max())
    return [w for w in s.prompt_buckets if w >= need]


def check(name, folder, cgc_opt, work):
    """The fixture's prompts as given and narrower than max_prompt, each
    also with row 1 left out, on every graph whose prompt bucket holds
    them (the narrow ones with row 1 left out fit the narrowest), each
    graph's outputs equal to main's exactly (the same cache slots, the same
    sums)."""
    with open(os.path.join(folder, "settings.json")) as f:
        spec = json.load(f)
    s, ir_path = compose(folder, spec, spec["generation"], work, name)
    ok = True
    for suffix in ("", "_narrow"):
        want = read_safetensors(os.path.join(folder, f"expected{suffix}.safetensors"))
        for tag, case in ((suffix, want), (suffix + "_row_left_out", row_left_out(want, s))):
            main = None
            for graph in (loop_graph(w, s) for w in reversed(fitting_widths(case, s))):
                passed, got = check_run(f"{name}{tag} ({graph})", s, ir_path, case, cgc_opt,
                                        graph)
                ok &= passed
                main = main or got
                if got is not None and any(not np.array_equal(got[k], main[k]) for k in main):
                    print(f"{name}{tag}: graph {graph}'s outputs differ from main's")
                    ok = False
    return ok


def check_pads_penalized(name, folder, cgc_opt, work):
    """With pads_penalized (an earlier transformers counts a prompt's pad
    ids as seen), the first column's scores are the fixture's (made by a
    transformers that skips the padding) but at the pad id of each padded
    row, which the penalty then also applies to."""
    with open(os.path.join(folder, "settings.json")) as f:
        spec = json.load(f)
    if spec["generation"].get("repetition_penalty", 1.0) == 1.0 or spec.get("pads_penalized"):
        return True
    spec = dict(spec, pads_penalized=True)
    s, ir_path = compose(folder, spec, spec["generation"], work, name + "_pads")
    want = read_safetensors(os.path.join(folder, "expected.safetensors"))
    ids, mask = right_aligned(want["input_ids"], want["attention_mask"], s.pad, s.max_prompt)
    got = interpret(cgc_opt, ir_path, {"input_ids": ids, "attention_mask": mask},
                    name + "_pads")
    if got is None:
        return False
    expected = want["scores"][:, 0].astype(np.float64).copy()
    for r in np.flatnonzero(~want["attention_mask"].all(axis=1)):
        raw = expected[r, s.pad]  # no real prompt token is the pad id
        expected[r, s.pad] = raw * s.penalty if raw < 0 else raw / s.penalty
    ok = check_scores(name + " pads penalized, first column", got["scores"][:, 0], expected)
    print(f"{name} pads penalized: {'ok' if ok else 'FAILED'}")
    return ok


def check_run(tag, s, ir_path, want, cgc_opt, graph="main"):
    """(passed, outputs): graph `graph` on `want`'s prompts against its
    tokens (and, where given, transformers' scores and the
    log-probabilities under them)."""
    ids, mask = right_aligned(want["input_ids"], want["attention_mask"], s.pad, s.max_prompt)
    got = interpret(cgc_opt, ir_path, {"input_ids": ids, "attention_mask": mask},
                    tag.replace(" ", "_").replace("(", "").replace(")", ""), graph)
    if got is None:
        return False, None
    columns = want["tokens"].shape[1]  # transformers stops when every row has ended
    ok = True
    if not np.array_equal(got["tokens"][:, :columns], want["tokens"]) or \
            (got["tokens"][:, columns:] != s.pad).any():
        print(f"{tag}: tokens {got['tokens'].tolist()}, expected {want['tokens'].tolist()}")
        ok = False
    lengths = expected_lengths(want["tokens"], s.eos, s.max_new)
    real = want["attention_mask"].any(axis=1)
    if not np.array_equal(got["lengths"][real], lengths[real]) or int(got["steps"]) != columns:
        print(f"{tag}: lengths {got['lengths'].tolist()} steps {int(got['steps'])}, expected "
              f"{lengths.tolist()} and {columns}")
        ok = False
    if want["scores"] is not None:
        ok &= check_scores(tag, got["scores"][:, :columns], want["scores"])
        ok &= check_logprobs(tag, got["logprobs"][:, :columns],
                             want["scores"].astype(np.float64), want["tokens"], lengths)
    print(f"{tag}: {'ok' if ok else 'FAILED'}: {want['tokens'].shape[0]} prompts, "
          f"{columns} columns, tokens {'equal' if ok else 'differ'}")
    return ok, got


def check_scores(tag, ours, theirs):
    """cgc's scores against transformers' within ATOL + RTOL |theirs|, -inf
    where theirs are."""
    ours, theirs = ours.astype(np.float64), theirs.astype(np.float64)
    finite = np.isfinite(theirs)
    with np.errstate(invalid="ignore"):  # -inf - -inf where both ended
        off = np.abs(ours - theirs)
    if np.array_equal(finite, np.isfinite(ours)) and \
            np.all(off[finite] <= ATOL + RTOL * np.abs(theirs[finite])):
        return True
    worst = np.max(off[finite & np.isfinite(ours)])
    print(f"{tag}: scores differ from transformers' (worst {worst:.3g}, or -inf elsewhere)")
    return False


def uniforms(seed, s, steps):
    """u [steps, B] of the graph's draws: step t's bit k of row r is the
    Philox number at offset t * rng_stride + k * B, element r, >= 0.5."""
    u = np.zeros((steps, s.batch))
    for t in range(steps):
        for k in range(UNIFORM_BITS):
            offset = t * rng_stride(s) + k * s.batch
            u[t] += (philox_uniform(seed, offset, np.arange(s.batch)) >= 0.5) * 2.0 ** -(k + 1)
    return u


def drawn(scores, u):
    """The draw rule (generation_ir.drawn): the first id whose cumulative
    probability passes u times the total."""
    finite = np.isfinite(scores)
    e = np.where(finite, np.exp(scores - scores[finite].max()), 0.0)
    cdf = np.cumsum(e / e.sum())
    return min(int(np.sum(cdf <= u * cdf[-1])), scores.size - 1)


def check_sampling(name, folder, cgc_opt, work):
    """Temperature sampling over the fixture's records (see the module's
    docstring)."""
    with open(os.path.join(folder, "settings.json")) as f:
        spec = json.load(f)
    fields = dict(spec["generation"], **spec["sampling"])
    s, ir_path = compose(folder, spec, fields, work, name + "_sample")
    want = read_safetensors(os.path.join(folder, "expected.safetensors"))
    ids, mask = right_aligned(want["input_ids"], want["attention_mask"], s.pad,
                              s.max_prompt)
    runs = {}
    for seed in (5, 5, 6):
        feed = {"input_ids": ids, "attention_mask": mask, "rng": np.array([seed, 0])}
        runs.setdefault(seed, []).append(interpret(cgc_opt, ir_path, feed, f"{name}_{seed}"))
    if any(r is None for rs in runs.values() for r in rs):
        return False
    ok = True
    first, again = runs[5]
    if not np.array_equal(first["tokens"], again["tokens"]):
        print(f"{name} sampling: seed 5 gave {first['tokens'].tolist()}, then "
              f"{again['tokens'].tolist()}")
        ok = False
    if np.array_equal(first["tokens"], runs[6][0]["tokens"]):
        print(f"{name} sampling: seeds 5 and 6 gave the same tokens")
        ok = False
    warped = read_safetensors(os.path.join(folder, "expected_sample.safetensors"))["scores"]
    ok &= check_scores(f"{name} sampling, first column", first["scores"][:, 0], warped)
    kept = np.isfinite(first["scores"]).sum(axis=2)
    if (kept > s.top_k).any():
        print(f"{name} sampling: more than top_k={s.top_k} ids kept: {kept.tolist()}")
        ok = False
    steps, done = int(first["steps"]), np.zeros(s.batch, dtype=bool)
    u = uniforms(5, s, steps)
    for c in range(steps):
        for r in range(s.batch):
            token = int(first["tokens"][r, c])
            expected = s.pad if done[r] else drawn(first["scores"][r, c].astype(np.float64),
                                                   u[c, r])
            if token != expected:
                print(f"{name} sampling: row {r} column {c}: token {token}, the draw rule "
                      f"gives {expected}")
                ok = False
            if c < s.min_new and token in s.eos and not done[r]:
                print(f"{name} sampling: row {r} drew an end token at column {c}")
                ok = False
            done[r] |= token in s.eos
    lengths = np.array([int(first["lengths"][r]) for r in range(s.batch)])
    ok &= check_logprobs(name + " sampling", first["logprobs"][:, :steps],
                         first["scores"][:, :steps].astype(np.float64),
                         first["tokens"][:, :steps], lengths)
    print(f"{name} sampling: {'ok' if ok else 'FAILED'}: {steps} columns, "
          f"tokens {first['tokens'].tolist()}")
    return ok


def check_streaming(name, folder, cgc_opt, work, sample, narrow):
    """Streaming (generation_stream.py): prefill then one step per column,
    the state carried from run to run as a context carries it, gives every
    column of the whole loop's graph ("main" of the same program) and of
    the graph compiled without streaming, the same state at the end, and a
    step past the end changes nothing. `narrow`: on the narrow prompts with
    row 1 left out, through the narrowest prompt bucket's graphs
    (main_pW, prefill_pW)."""
    with open(os.path.join(folder, "settings.json")) as f:
        spec = json.load(f)
    fields = dict(spec["generation"], **spec["sampling"]) if sample else spec["generation"]
    tag = name + ("_stream_sample" if sample else "_stream") + ("_narrow" if narrow else "")
    s, ir_path = compose(folder, spec, fields, work, tag, streaming=True)
    _, plain_path = compose(folder, spec, fields, work, tag + "_plain")
    want = read_safetensors(os.path.join(folder, f"expected{'_narrow' if narrow else ''}"
                                                 ".safetensors"))
    want = row_left_out(want, s) if narrow else want
    width = fitting_widths(want, s)[0]
    loop, prefill = loop_graph(width, s), prefill_graph(width, s)
    ids, mask = right_aligned(want["input_ids"], want["attention_mask"], s.pad, s.max_prompt)
    feed = {"input_ids": ids, "attention_mask": mask}
    if sample:
        feed["rng"] = np.array([5, 0])
    whole = interpret(cgc_opt, ir_path, feed, tag + "_main", loop)
    plain = interpret(cgc_opt, plain_path, feed, tag + "_plain", loop)
    if whole is None or plain is None:
        return False
    ok = True
    for column in ("tokens", "lengths", "steps", "scores", "logprobs"):
        state = "next.gen." + ("step" if column == "steps" else column)
        if not np.array_equal(whole[state], plain[column]):
            print(f"{tag}: the loop's {column} in state differ from the graph without "
                  f"streaming")
            ok = False
    state = {}
    steps = int(whole["next.gen.step"])
    for c in range(steps + 1):  # one step past the end
        out = interpret(cgc_opt, ir_path, dict(feed, **state), f"{tag}_{c}",
                        "step" if c else prefill)
        if out is None:
            return False
        state = {k[len("next."):]: v for k, v in out.items() if k.startswith("next.")}
        if c < steps and not np.array_equal(out["token"], whole["next.gen.tokens"][:, c]):
            print(f"{tag}: column {c}: token {out['token'].tolist()}, the loop made "
                  f"{whole['next.gen.tokens'][:, c].tolist()}")
            ok = False
    for k, v in whole.items():
        if k.startswith("next.") and not np.array_equal(v, out[k]):
            print(f"{tag}: after {steps} columns and a step past the end, state "
                  f"{k[len('next.'):]} differs from the loop's")
            ok = False
    print(f"{tag} ({loop}, {prefill}): {'ok' if ok else 'FAILED'}: {steps} columns streamed, "
          f"tokens {whole['next.gen.tokens'].tolist()}")
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
            ok &= check_sampling(name, os.path.join(args.fixtures, name), args.cgc_opt, work)
            ok &= check_pads_penalized(name, os.path.join(args.fixtures, name), args.cgc_opt,
                                       work)
            for sample, narrow in ((False, False), (True, False), (False, True)):
                ok &= check_streaming(name, os.path.join(args.fixtures, name), args.cgc_opt,
                                      work, sample, narrow)
    for fields, word in (({"do_sample": True, "typical_p": 0.9}, "typical_p=0.9"),
                         ({"do_sample": True, "min_p": 0.1}, "min_p=0.1"),
                         ({"num_beams": 4}, "beam search")):
        try:
            settings_from(fields, 1, 4, 4, 10)
            print(f"{fields} was not refused")
            ok = False
        except RefusedError as e:
            if word not in str(e):
                print(f"{fields}: refused without naming {word}: {e}")
                ok = False
    print(f"generate_fixtures: {'all passed' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
