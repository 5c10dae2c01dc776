"""The generation loop as one IR graph (docs/generation.md): the prompt's
forward pass, then a `while` whose body runs one decoding step for the
whole batch, so that N tokens take one graph launch and stopping is
decided on the device. Needs neither torch nor transformers: it composes
the IR of the two exported steps (torch/generation.py).

The graph takes input_ids and attention_mask [B, P] (prompts padded on
the left, as transformers pads a batch for generation; a row with no
real token starts ended: a call with fewer prompts than B) and returns
tokens [B, N] (pad_token_id after a sequence's end), lengths [B] (tokens
up to and including the end), steps [] (columns generated), with
output_scores scores [B, N, V] (f32: each column's processed logits,
transformers' output_scores; columns past `steps` are 0) and with
output_logprobs logprobs [B, N] (f32: the chosen token's log-probability
under those scores, 0 after a sequence's end). The KV
caches [B, heads, P + N, head dim] are values of the graph, carried by
the loop: the context's arena holds them, so contexts generate
concurrently over one engine's weights.

The prompt's width is bucketed: for each width W of
Settings.prompt_buckets (the last P) a graph runs the prompt's pass over
the last W columns only (main at P, an entry main_pW below it; the
columns before them must hold no real token), their keys and values in
the same cache slots [P - W, P) as main's, slots before them masked; the
decoding loop is main's in every graph (its kernels shared).

Positions follow transformers' generate: a prompt token's position is the
count of real tokens before it, a pad's is 1; the k-th generated token of
a sequence with L real prompt tokens sits at position L + k and in cache
slot P + k; the mask shows a step the real prompt tokens and the
generated ones so far. Logits are processed in f32 in transformers'
order (repetition penalty, the end held back before min_new_tokens, and
when sampling temperature, top-k and top-p), then the argmax (greedy) or,
sampling, a draw from softmax by one uniform number per row and token
from cgc's Philox stream (graph input rng = {seed, offset}; each step
moves the offset on by rng_stride)."""
from .ir_builder import IRBuilder
from .ranking import MAX_SELECTED, picked


class Settings:
    """What a generation does, read from a transformers GenerationConfig
    and compile_generate's arguments (generate.py checks them)."""

    def __init__(self, *, batch, max_prompt, max_new_tokens, vocab, eos, pad,
                 min_new_tokens=0, repetition_penalty=1.0, do_sample=False, temperature=1.0,
                 top_k=0, top_p=1.0, output_scores=False, output_logprobs=False,
                 prompt_buckets=None, pads_penalized=True):
        self.batch, self.max_prompt, self.max_new = batch, max_prompt, max_new_tokens
        # The prompt widths a graph is built for, increasing, the last
        # max_prompt: a call runs the narrowest that holds its prompts.
        self.prompt_buckets = list(prompt_buckets or [max_prompt])
        self.vocab, self.eos, self.pad = vocab, list(eos), pad
        self.min_new, self.penalty = min_new_tokens, repetition_penalty
        # Whether the repetition penalty counts a prompt's pad ids as seen.
        self.pads_penalized = pads_penalized
        self.do_sample, self.temperature = do_sample, temperature
        self.top_k, self.top_p = top_k, top_p
        self.output_scores, self.output_logprobs = output_scores, output_logprobs

    @property
    def cache_len(self):
        return self.max_prompt + self.max_new

    @property
    def pads_seen(self):
        """Whether the repetition penalty counts a prompt's pad ids as seen."""
        return self.penalty != 1.0 and self.pads_penalized

    def bucket_for(self, need):
        """The narrowest prompt bucket of at least `need` columns, or None."""
        return next((w for w in self.prompt_buckets if w >= need), None)


def loop_graph(width, s):
    """The name of the graph that generates from prompts `width` wide."""
    return "main" if width == s.max_prompt else f"main_p{width}"


def prefill_graph(width, s):
    """The name of the streaming entry that runs the prompt's pass at `width`."""
    return "prefill" if width == s.max_prompt else f"prefill_p{width}"


def prompt_width(prefill):
    """The number of prompt columns the exported prompt step reads."""
    return user_inputs(prefill)[0]["shape"][1]


class Builder(IRBuilder):
    """IRBuilder with the few ops the loop spells often."""

    def op(self, op, inputs, attrs=None, name=None):
        return self.node(op, inputs, attrs, name)

    def const(self, value, dtype, shape=()):
        return self.op("constant", [], {"dtype": dtype, "shape": list(shape), "value": value},
                       "c")

    def scalar(self, value, dtype):  # as ranking.py's builders spell a 0-d constant
        return self.const(value, dtype)

    def fill(self, value, dtype, shape):
        return self.op("fill", [], {"dtype": dtype, "shape": list(shape), "value": value}, "fill")

    def reshape(self, x, shape):
        return self.op("reshape", [x], {"shape": list(shape)})


def user_inputs(step):
    return [i for i in step["inputs"] if i.get("kind", "user_input") == "user_input"]


def state_inputs(step):
    return [i for i in step["inputs"] if i.get("kind", "user_input") != "user_input"]


def inline(b, step, bound, prefix):
    """Appends the nodes of the exported `step` to builder `b`, its inputs
    read from `bound` ({step input name: value name in b}); returns the
    value names of its outputs."""
    names = dict(bound)

    def rename(old):
        names[old] = b.fresh(prefix + old)
        return names[old]

    for node in step["nodes"]:
        if node.get("regions"):
            raise ValueError(f"step node '{node['name']}' has regions")
        copy = dict(node, inputs=[names[v] for v in node["inputs"]])
        if "outputs" in node:
            copy["outputs"] = [rename(v) for v in node["outputs"]]
        copy["name"] = rename(node["name"])
        b.nodes.append(copy)
    return [names[o if isinstance(o, str) else o["value"]] for o in step["outputs"]]


def is_end(b, token, s):
    """bool [B]: the token is one of the end ids."""
    hit = None
    for e in s.eos:
        eq = b.op("eq", [token, b.const(e, "i64")])
        hit = eq if hit is None else b.op("logical_or", [hit, eq])
    return hit if hit is not None else b.fill(0, "bool", [s.batch])


def processed(b, logits, generated, seen, s):
    """The scores [B, V] (f32) the next token is chosen from: the logits of
    the last position after transformers' processors. `generated` (i64[])
    counts the tokens generated before this one; `seen` (bool [B, V], or
    None) marks the ids so far, for the repetition penalty."""
    scores = b.reshape(logits, [s.batch, s.vocab])
    scores = b.op("cast", [scores], {"dtype": "f32"})
    if seen is not None:
        p = b.const(float(s.penalty), "f32")
        negative = b.op("lt", [scores, b.const(0.0, "f32")])
        penalized = b.op("where", [negative, b.op("mul", [scores, p]),
                                   b.op("div", [scores, p])])
        scores = b.op("where", [seen, penalized, scores])
    if s.min_new > 0 and s.eos:
        early = b.op("lt", [generated, b.const(s.min_new, "i64")])
        ends = [1 if v in s.eos else 0 for v in range(s.vocab)]
        end_ids = b.const(ends, "bool", [s.vocab])
        hold = b.op("logical_and", [end_ids, early])
        scores = b.op("where", [hold, b.const("-inf", "f32"), scores])
    if s.do_sample and s.temperature != 1.0:
        scores = b.op("div", [scores, b.const(float(s.temperature), "f32")])
    if s.do_sample and 0 < s.top_k < s.vocab:
        scores = b.op("where", [top_k_kept(b, scores, s), scores, b.const("-inf", "f32")])
    if s.do_sample and s.top_p < 1.0:
        scores = b.op("where", [top_p_kept(b, scores, s), scores, b.const("-inf", "f32")])
    return scores


# Top-p (and a top-k past argtopk's k) find each row's threshold by
# multisection: ROUNDS
# rounds, each counting (or summing) the row at SECTIONS evenly spaced
# candidates between lo and hi at once and keeping the bracket where the
# count crosses, so [lo, hi) shrinks SECTIONS + 1 times a round (17^6:
# about 2e-7 of the first bracket, f32's resolution). A token within that
# of the threshold may fall on either side (transformers sorts: a near-tie
# only).
SECTIONS, ROUNDS = 16, 6


def multisection(b, lo, hi, measure, accept, s):
    """The final lo [B, 1] of the bracket search: `measure(candidates
    [B, SECTIONS, 1])` gives [B, SECTIONS] (monotone in the candidate),
    `accept` of it is true up to some candidate and false after."""
    fractions = b.const([float(m + 1) for m in range(SECTIONS)], "f32", [1, SECTIONS])
    for _ in range(ROUNDS):
        step = b.op("div", [b.op("sub", [hi, lo]), b.const(float(SECTIONS + 1), "f32")])
        candidates = b.op("add", [lo, b.op("mul", [step, fractions])])
        measured = measure(b.reshape(candidates, [s.batch, SECTIONS, 1]))
        taken = b.op("sum", [b.op("cast", [accept(measured)], {"dtype": "f32"})],
                     {"axes": [1], "keepdim": True})
        lo, hi = (b.op("add", [lo, b.op("mul", [step, taken])]),
                  b.op("add", [lo, b.op("mul", [step, b.op("add", [taken, b.const(1.0, "f32")])])]))
    return lo


def top_k_kept(b, scores, s):
    """bool [B, V]: the scores at or above the row's top_k-th largest
    (transformers' TopKLogitsWarper): read at the last of an argtopk's
    indices (one kernel), or for a top_k past what argtopk takes, found by
    multisection (all finite ones when fewer are)."""
    if s.top_k <= MAX_SELECTED:
        last = b.op("slice", [b.op("argtopk", [scores], {"k": s.top_k})],
                    {"starts": [s.top_k - 1], "ends": [s.top_k], "axes": [1]})
        return b.op("ge", [scores, picked(b, scores, s.batch, s.vocab, last, 1)])
    inf = b.const("inf", "f32")
    finite = b.op("lt", [scores, inf])
    finite = b.op("logical_and", [finite, b.op("gt", [scores, b.const("-inf", "f32")])])
    lowest = b.op("min", [b.op("where", [finite, scores, inf])], {"axes": [1], "keepdim": True})
    one = b.const(1.0, "f32")
    lo = b.op("sub", [lowest, one])
    hi = b.op("add", [b.op("max", [scores], {"axes": [1], "keepdim": True}), one])
    rows = b.reshape(scores, [s.batch, 1, s.vocab])

    def count(candidates):
        above = b.op("cast", [b.op("ge", [rows, candidates])], {"dtype": "f32"})
        return b.op("sum", [above], {"axes": [2]})

    def enough(counts):
        return b.op("ge", [counts, b.const(float(s.top_k), "f32")])

    return b.op("ge", [scores, multisection(b, lo, hi, count, enough, s)])


def top_p_kept(b, scores, s):
    """bool [B, V]: transformers' TopPLogitsWarper: the most probable ids
    whose mass passes top_p, the rest removed while the mass of what is
    removed stays at most 1 - top_p (the most probable id always kept)."""
    probs = b.op("softmax", [scores], {"axis": 1})
    lo = b.fill(0.0, "f32", [s.batch, 1])
    hi = b.op("max", [probs], {"axes": [1], "keepdim": True})
    rows = b.reshape(probs, [s.batch, 1, s.vocab])
    zero = b.const(0.0, "f32")

    def mass(candidates):
        below = b.op("where", [b.op("le", [rows, candidates]), rows, zero])
        return b.op("sum", [below], {"axes": [2]})

    def removable(masses):
        return b.op("le", [masses, b.const(1.0 - float(s.top_p), "f32")])

    return b.op("gt", [probs, multisection(b, lo, hi, mass, removable, s)])


# A draw's uniform number: UNIFORM_BITS fair bits, each a dropout(p = 0.5)
# of a one (2 where kept, else 0) on its own stretch of the Philox stream:
# u = sum_k bit_k 2^-(k+1), exact in f32. A row draws one u per token.
UNIFORM_BITS = 24


def uniform(b, rng, s):
    """f32 [B] uniform in [0, 1) from the stream at `rng` ({seed, offset}),
    reading UNIFORM_BITS * B numbers from its offset on."""
    ones = b.fill(1.0, "f32", [s.batch])
    u = None
    for k in range(UNIFORM_BITS):
        kept = b.op("dropout", [ones, rng], {"p": 0.5, "offset": k * s.batch})
        bit = b.op("mul", [kept, b.const(2.0 ** -(k + 2), "f32")])
        u = bit if u is None else b.op("add", [u, bit])
    return u


def drawn(b, scores, rng, s):
    """A token per row drawn from softmax(scores) by the inverse of its
    distribution function: the first id whose cumulative probability passes
    u times the row's total (an id of probability 0 is never drawn)."""
    probs = b.op("softmax", [scores], {"axis": 1})
    cdf = b.op("cumsum", [probs], {"axis": 1})
    total = b.op("slice", [cdf], {"starts": [s.vocab - 1], "ends": [s.vocab], "axes": [1]})
    threshold = b.op("mul", [b.reshape(uniform(b, rng, s), [s.batch, 1]), total])
    below = b.op("cast", [b.op("le", [cdf, threshold])], {"dtype": "i64"})
    count = b.op("sum", [below], {"axes": [1]})
    return b.op("minimum", [count, b.const(s.vocab - 1, "i64")])


def chosen(b, scores, rng, s):
    """The next token of each sequence, i64 [B]: the argmax, or a draw."""
    if s.do_sample:
        return drawn(b, scores, rng, s)
    return b.op("argmax", [scores], {"axis": 1})


def rng_stride(s):
    """How far a step moves the stream: past the numbers its draw read."""
    return UNIFORM_BITS * s.batch


def seen_after(b, seen, token, s):
    hot = b.op("one_hot", [token], {"num_classes": s.vocab, "dtype": "bool"})
    return b.op("logical_or", [seen, hot])


def prompt_seen(b, input_ids, mask, s):
    """bool [B, V]: the ids in the prompt, pads included where
    s.pads_penalized (an earlier transformers' repetition penalty reads
    the padded input_ids; later ones skip the left padding)."""
    if not s.pads_penalized:  # an id past the vocabulary has no one-hot bit
        real = b.op("eq", [mask, b.const(1, "i64")])
        input_ids = b.op("where", [real, input_ids, b.const(s.vocab, "i64")])
    hot = b.op("one_hot", [input_ids], {"num_classes": s.vocab, "dtype": "i32"})
    return b.op("gt", [b.op("max", [hot], {"axes": [1]}), b.const(0, "i32")])


def generation_graph(prefills, decode, s, name="generate"):
    """The IR dict of the generation graph over the exported steps: the
    prompt's at each bucket width ({width: record}) and one decoding step;
    graph main generates from the widest, an entry main_pW from the
    prompts' last W columns."""
    graphs = {}
    for width, prefill in prefills.items():
        b, loop = prompt_pass(prefill, s)
        results = generation_loop(b, decode, loop, s)
        outputs = [{"name": n, "value": results[n]}
                   for n in ("tokens", "lengths", "step", "scores", "logprobs") if n in results]
        outputs[2]["name"] = "steps"
        graphs[loop_graph(width, s)] = (b, outputs)
    b, outputs = graphs.pop("main")
    model = {"format_version": 1, "name": name, "inputs": b.inputs, "nodes": b.nodes,
             "outputs": outputs}
    if graphs:
        model["entries"] = [{"name": graph, "nodes": entry.nodes, "outputs": entry_outputs}
                            for graph, (entry, entry_outputs) in graphs.items()]
    return model


def graph_inputs(prefill, s):
    """The generation graph's inputs: the prompts, the random stream's
    {seed, 0} when sampling, and the weights."""
    B, P = s.batch, s.max_prompt
    return [{"name": "input_ids", "dtype": "i64", "shape": [B, P]},
            {"name": "attention_mask", "dtype": "i64", "shape": [B, P]}] + \
        ([{"name": "rng", "dtype": "i64", "shape": [2]}] if s.do_sample else []) + \
        [dict(i) for i in state_inputs(prefill)]


def prompt_pass(prefill, s, extra_inputs=()):
    """(builder, carried): a Builder holding the generation's inputs (and
    `extra_inputs`) and the prompt's pass, and the loop's carried values
    as (name, dtype, shape, first value): the step count, the first
    column's token, done flags, lengths and written columns, the caches,
    the prompts' real lengths and mask, the ids seen, the stream, and the
    weights (passed through)."""
    b = Builder()
    B, P, N = s.batch, s.max_prompt, s.max_new
    W = prompt_width(prefill)
    states = state_inputs(prefill)
    kv_specs = user_inputs(prefill)[4:]
    b.inputs = graph_inputs(prefill, s) + list(extra_inputs)
    b.names.update(i["name"] for i in b.inputs)
    ids, mask = (prompt_columns(b, x, W, s) for x in ("input_ids", "attention_mask"))
    # The cache's slots as main's: the prompt's last W columns at [P - W, P)
    # (the columns before them hold no real token), the N generated after.
    full_mask = b.op("concat", ["attention_mask", b.fill(0, "i64", [B, N])], {"axis": 1})
    slots = b.op("iota", [], {"dtype": "i64", "shape": [W], "axis": 0})
    if W < P:
        slots = b.op("add", [slots, b.const(P - W, "i64")])
    positions = b.op("sub", [b.op("cumsum", [mask], {"axis": 1}), b.const(1, "i64")])
    positions = b.op("where", [b.op("eq", [mask, b.const(0, "i64")]), b.const(1, "i64"),
                               positions])
    caches = [b.fill(0, k["dtype"], k["shape"]) for k in kv_specs]
    bound = dict(zip([i["name"] for i in user_inputs(prefill)],
                     [ids, full_mask, positions, slots, *caches]))
    bound.update((i["name"], i["name"]) for i in states)
    logits, *caches = inline(b, prefill, bound, "prefill.")
    seen = prompt_seen(b, ids, mask, s) if s.penalty != 1.0 else None
    scores = processed(b, logits, b.const(0, "i64"), seen, s)
    real = b.op("sum", [mask], {"axes": [1]})
    empty = b.op("eq", [real, b.const(0, "i64")])  # a row past the caller's: ended
    token = b.op("where", [empty, b.const(s.pad, "i64"), chosen(b, scores, "rng", s)])
    loop = [("step", "i64", [], b.const(1, "i64")), ("token", "i64", [B], token),
            ("done", "bool", [B], b.op("logical_or", [is_end(b, token, s), empty])),
            ("lengths", "i64", [B],
             b.op("cast", [b.op("logical_not", [empty])], {"dtype": "i64"}))]
    for column, (dtype, trailing, blank, value) in recorded(b, token, scores, empty, s).items():
        start = b.fill(blank, dtype, [B, N] + trailing)
        loop.append((column, dtype, [B, N] + trailing,
                     write_column(b, start, b.const([0], "i64", [1]), value, trailing, s)))
    loop += [(f"cache{k}", spec["dtype"], spec["shape"], cache)
             for k, (spec, cache) in enumerate(zip(kv_specs, caches))]
    loop += [("real", "i64", [B], real), ("mask", "i64", [B, P], "attention_mask")]
    if seen is not None:
        loop.append(("seen", "bool", [B, s.vocab], seen_after(b, seen, token, s)))
    if s.do_sample:
        loop.append(("rng", "i64", [2], advanced(b, "rng", s)))
    loop += [(i["name"], i["dtype"], i["shape"], i["name"]) for i in states]
    return b, loop


def prompt_columns(b, x, width, s):
    """The last `width` columns of prompt input `x` [B, max_prompt] (the
    prompts' real tokens sit at the end)."""
    if width == s.max_prompt:
        return x
    return b.op("slice", [x], {"starts": [s.max_prompt - width], "ends": [s.max_prompt],
                               "axes": [1]})


def generation_loop(b, decode, loop, s):
    """Appends the `while` over `loop` (prompt_pass's carried values) to
    `b`; returns {carried name: its value after the loop}."""
    carried = [(n, d, sh) for n, d, sh, _ in loop]
    regions = {"cond": condition(carried, s),
               "body": body(decode, carried, cache_count(carried), s)}
    results = {n: b.fresh("loop." + n) for n, _, _ in carried}
    b.nodes.append({"name": b.fresh("loop"), "op": "while", "inputs": [v for *_, v in loop],
                    "outputs": list(results.values()),
                    "attrs": {"max_iterations": max(s.max_new, 1)}, "regions": regions})
    return results


def cache_count(carried):
    return sum(1 for n, _, _ in carried if n.startswith("cache") and n[5:].isdigit())


def recorded(b, token, scores, done, s):
    """{column output: (dtype, trailing shape, value before generation,
    this step's value [B, ...])}: what each step writes into its column
    (a finished sequence's: the pad token, log-probability 0)."""
    out = {"tokens": ("i64", [], s.pad, token)}
    if s.output_scores:
        out["scores"] = ("f32", [s.vocab], 0.0, scores)
    if s.output_logprobs:
        out["logprobs"] = ("f32", [], 0.0, logprob(b, scores, token, done, s))
    return out


def logprob(b, scores, token, done, s):
    """f32 [B]: log softmax(scores) at the token; 0 where `done`."""
    logs = b.op("log_softmax", [scores], {"axis": 1})
    hot = b.op("one_hot", [token], {"num_classes": s.vocab, "dtype": "bool"})
    picked = b.op("sum", [b.op("where", [hot, logs, b.const(0.0, "f32")])], {"axes": [1]})
    return b.op("where", [done, b.const(0.0, "f32"), picked])


def write_column(b, columns, at, value, trailing, s):
    """`columns` [B, N, ...] with column `at` (i64 [1]) set to value [B, ...]."""
    return b.op("index_copy", [columns, at, b.reshape(value, [s.batch, 1] + trailing)],
                {"axis": 1})


def advanced(b, rng, s):
    """The stream's state past one step's draw."""
    return b.op("add", [rng, b.const([0, rng_stride(s)], "i64", [2])])


def region_inputs(carried):
    return [{"name": n, "dtype": d, "shape": list(sh)} for n, d, sh in carried]


def condition(carried, s):
    """Some sequence not done and fewer than N columns generated."""
    b = Builder()
    b.inputs = region_inputs(carried)
    b.names.update(n for n, _, _ in carried)
    return {"inputs": b.inputs, "nodes": b.nodes, "outputs": [going(b, "step", "done", s)]}


def going(b, step, done, s):
    """bool []: whether another column is due: some sequence not done and
    fewer than N columns generated."""
    room = b.op("lt", [step, b.const(s.max_new, "i64")])
    alive = b.op("cast", [b.op("logical_not", [done])], {"dtype": "i32"})
    some = b.op("gt", [b.op("max", [alive], {"axes": [0]}), b.const(0, "i32")])
    return b.op("logical_and", [room, some], name="go")


def body(decode, carried, cache_count, s, returned=None):
    """One decoding step of the whole batch: the last token in, the next
    one out, the caches updated in their slots. Returns the next value of
    each carried value named in `returned` (default: all; the ones not
    named here pass through)."""
    b = Builder()
    b.inputs = region_inputs(carried)
    names = [n for n, _, _ in carried]
    b.names.update(names)
    B, P, N = s.batch, s.max_prompt, s.max_new
    one = b.const(1, "i64")
    before = b.op("sub", ["step", one])  # the fed token's index among the generated
    slot = b.reshape(b.op("add", [before, b.const(P, "i64")]), [1])
    shown = b.op("lt", [b.op("iota", [], {"dtype": "i64", "shape": [N], "axis": 0}), "step"])
    shown = b.op("broadcast_to", [b.reshape(b.op("cast", [shown], {"dtype": "i64"}), [1, N])],
                 {"shape": [B, N]})
    mask = b.op("concat", ["mask", shown], {"axis": 1})
    position = b.reshape(b.op("add", ["real", before]), [B, 1])
    bound = dict(zip([i["name"] for i in user_inputs(decode)],
                     [b.reshape("token", [B, 1]), mask, position, slot,
                      *[f"cache{k}" for k in range(cache_count)]]))
    bound.update((i["name"], i["name"]) for i in state_inputs(decode))
    logits, *new_caches = inline(b, decode, bound, "decode.")
    seen = "seen" if "seen" in names else None
    step_scores = processed(b, logits, "step", seen, s)
    token = b.op("where", ["done", b.const(s.pad, "i64"), chosen(b, step_scores, "rng", s)])
    going = b.op("cast", [b.op("logical_not", ["done"])], {"dtype": "i64"})
    nxt = {"step": b.op("add", ["step", one]), "token": token,
           "done": b.op("logical_or", ["done", is_end(b, token, s)]),
           "lengths": b.op("add", ["lengths", going])}
    at = b.reshape("step", [1])
    for column, (_, trailing, _, value) in recorded(b, token, step_scores, "done", s).items():
        nxt[column] = write_column(b, column, at, value, trailing, s)
    nxt.update((f"cache{k}", c) for k, c in enumerate(new_caches))
    if seen:
        nxt["seen"] = seen_after(b, seen, token, s)
    if s.do_sample:
        nxt["rng"] = advanced(b, "rng", s)
    return {"inputs": b.inputs, "nodes": b.nodes,
            "outputs": [nxt.get(n, n) for n in (names if returned is None else returned)]}
