"""Streaming generation (docs/generation.md): the generation graph of
generation_ir.py with its loop's carried values kept in per-context state
(inputs of scope "context", named "gen.<value>"), and two entries over
the same inputs, outputs and state:

- `prefill`: the prompt's pass, which leaves the first column in the
  state (graph "main" runs it too, then the whole loop);
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
from .generation_ir import (Builder, body, cache_count, generation_loop, going, prompt_pass,
                            state_inputs)


def carried_state(loop, prefill_states):
    """The loop's carried values kept as state: all but the weights."""
    weights = {i["name"] for i in prefill_states}
    return [(n, d, sh) for n, d, sh, _ in loop if n not in weights]


def state_name(value):
    return "gen." + value


def streaming_graph(prefill, decode, s, name="generate"):
    """The IR dict of the generation graph ("main") with entries prefill
    and step, over the two exported steps."""
    weights = state_inputs(prefill)
    b, loop = prompt_pass(prefill, s)
    kept = carried_state(loop, weights)
    held = [{"name": state_name(n), "kind": "buffer", "dtype": d, "shape": list(sh),
             "init": {"dist": "zeros"}, "scope": "context"} for n, d, sh in kept]
    b.inputs += held
    b.names.update(i["name"] for i in held)
    results = generation_loop(b, decode, loop, s)
    main_outputs = outputs_of(results, kept)
    first, first_loop = prompt_pass(prefill, s, held)
    prefill_entry = {"name": "prefill", "nodes": first.nodes,
                     "outputs": outputs_of({n: v for n, _, _, v in first_loop}, kept)}
    return {"format_version": 1, "name": name, "inputs": b.inputs, "nodes": b.nodes,
            "outputs": main_outputs,
            "entries": [prefill_entry, step_entry(decode, loop, kept, b.inputs, s)]}


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
