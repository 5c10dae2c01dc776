"""Streaming generation (docs/generation.md): the generation graph of
generation_ir.py with its loop's carried values kept in per-context state
(inputs of scope "context", named "gen.<value>"), and two entries over
the same inputs, outputs and state:

- `prefill`: the prompt's pass, which leaves the first column in the
  state (graph "main" runs it too, then the whole loop); for each
  narrower prompt bucket W, `prefill_pW`, and `main_pW` the whole loop;
- `step`: one decoding step of the whole batch, which leaves the next
  column; inside an `if` on the loop's own condition, so a step past the
  end (every sequence done, or max_new_tokens columns made) changes
  nothing.

Every graph returns the column it made last: `token` [B] (the pad id for
a finished sequence), `done` [B] and `steps` [] (columns made); the
columns so far are state: `gen.tokens` [B, N], `gen.lengths` [B], and as
compiled `gen.scores` [B, N, V] and `gen.logprobs` [B, N]. The state is
the context's, so contexts of one engine stream concurrently. Runs of
prefill then steps give the loop's tokens exactly: the same ops in the
same order, the same random stream."""
from .generation_ir import (Builder, body, cache_count, generation_loop, going, loop_graph,
                            prefill_graph, prompt_pass, state_inputs)


def carried_state(loop, prefill_states):
    """The loop's carried values kept as state: all but the weights."""
    weights = {i["name"] for i in prefill_states}
    return [(n, d, sh) for n, d, sh, _ in loop if n not in weights]


def state_name(value):
    return "gen." + value


def streaming_graph(prefills, decode, s, name="generate"):
    """The IR dict of the generation graph ("main") with entries prefill
    and step, over the exported steps (the prompt's at each bucket width,
    {width: record}, and one decoding step); for each narrower bucket W,
    entries main_pW and prefill_pW too (generation_ir.py)."""
    widest = prefills[s.max_prompt]
    b, loop = prompt_pass(widest, s)
    kept = carried_state(loop, state_inputs(widest))
    held = [{"name": state_name(n), "kind": "buffer", "dtype": d, "shape": list(sh),
             "init": {"dist": "zeros"}, "scope": "context"} for n, d, sh in kept]
    b.inputs += held
    b.names.update(i["name"] for i in held)
    main_outputs = outputs_of(generation_loop(b, decode, loop, s), kept)
    entries = []
    for width, prefill in prefills.items():
        if width != s.max_prompt:
            whole, whole_loop = prompt_pass(prefill, s, held)
            entries.append({"name": loop_graph(width, s), "nodes": whole.nodes,
                            "outputs": outputs_of(generation_loop(whole, decode, whole_loop, s),
                                                  kept)})
        first, first_loop = prompt_pass(prefill, s, held)
        entries.append({"name": prefill_graph(width, s), "nodes": first.nodes,
                        "outputs": outputs_of({n: v for n, _, _, v in first_loop}, kept)})
    return {"format_version": 1, "name": name, "inputs": b.inputs, "nodes": b.nodes,
            "outputs": main_outputs,
            "entries": entries + [step_entry(decode, loop, kept, b.inputs, s)]}


def outputs_of(values, kept):
    """The outputs every graph gives: the last column and the state's next
    values ({carried name: value})."""
    columns = [{"name": "token", "value": values["token"]},
               {"name": "done", "value": values["done"]},
               {"name": "steps", "value": values["step"]}]
    return columns + [{"name": "next." + state_name(n), "value": values[n],
                       "kind": "buffer_mutation", "target": state_name(n)}
                      for n, _, _ in kept]


def step_entry(decode, loop, kept, inputs, s):
    """Entry `step`: body() of the loop in an `if` on the loop's condition,
    over the state (the weights passed in, not returned)."""
    b = Builder()
    b.names.update(i["name"] for i in inputs)
    carried = [(n, d, sh) for n, d, sh, _ in loop]
    kept_names = [n for n, _, _ in kept]
    operand = {n: state_name(n) if n in kept_names else n for n, _, _ in carried}
    go = going(b, operand["step"], operand["done"], s)
    then = body(decode, carried, cache_count(carried), s, returned=kept_names)
    otherwise = {"inputs": then["inputs"], "nodes": [], "outputs": kept_names}
    results = {n: b.fresh("next." + n) for n in kept_names}
    b.nodes.append({"name": b.fresh("step"), "op": "if",
                    "inputs": [go] + [operand[n] for n, _, _ in carried],
                    "outputs": [results[n] for n in kept_names],
                    "regions": {"then": then, "else": otherwise}})
    return {"name": "step", "nodes": b.nodes, "outputs": outputs_of(results, kept)}
