"""Text generation with cgc: a decoder's whole token loop in one graph
launch (docs/generation.md).

    gen = cgc.compile_generate(model, max_new_tokens=128, max_prompt=64, batch=4)
    tokens, lengths = gen(input_ids, attention_mask)   # CUDA tensors

The model (a transformers decoder-only LM) is exported twice over a
static KV cache (torch/generation.py), once for the padded prompt and
once for one token; generation_ir.py composes the two into one graph
whose `while` decodes until every sequence has ended or max_new_tokens
columns exist, and the `cgc` driver compiles it."""
import os

from .errors import RefusedError


def settings_of(model, config, batch, max_prompt, max_new_tokens, prompt_buckets=None):
    """generation_ir.Settings from the model's GenerationConfig, `config`
    (a GenerationConfig or a dict of its fields) over it."""
    fields = model.generation_config.to_dict() if model.generation_config else {}
    if config is not None:
        fields.update(config if isinstance(config, dict) else config.to_dict())
    vocab = model.get_output_embeddings().weight.shape[0]
    return settings_from(fields, batch, max_prompt, max_new_tokens, vocab, prompt_buckets,
                         pads_penalized=not penalty_skips_padding())


def penalty_skips_padding():
    """Whether this transformers' generate has its repetition penalty skip
    a prompt's left padding (it passes the rows' padding to the processor
    as prompt_ignore_length, which later 5.x releases do) rather than
    count the pad ids as seen: read from generate's own source, since the
    processor took the argument before generate passed it."""
    import inspect
    from transformers.generation.utils import GenerationMixin
    try:
        source = inspect.getsource(GenerationMixin._get_logits_processor)
    except (OSError, TypeError, AttributeError):  # no source: the older behaviour
        return False
    return "prompt_ignore_length=" in source


# The narrowest prompt bucket compile_generate builds by default: below
# it a prompt's pass costs about what a decoding step does.
SMALLEST_DEFAULT_BUCKET = 32


def prompt_buckets_of(buckets, max_prompt):
    """The prompt widths to build a graph for: `buckets` (None: every power
    of two from SMALLEST_DEFAULT_BUCKET below max_prompt), increasing, with
    max_prompt last."""
    if buckets is None:
        buckets, width = [], SMALLEST_DEFAULT_BUCKET
        while width < max_prompt:
            buckets.append(width)
            width *= 2
    buckets = list(buckets)
    if any(not isinstance(w, int) or not 1 <= w <= max_prompt for w in buckets):
        raise ValueError(f"prompt_buckets must be integers in [1, max_prompt={max_prompt}], "
                         f"got {buckets}")
    return sorted(set(buckets) | {max_prompt})


def settings_from(fields, batch, max_prompt, max_new_tokens, vocab, prompt_buckets=None,
                  pads_penalized=True):
    """generation_ir.Settings from a GenerationConfig's fields (a dict),
    refusing what compile_generate does not run; `prompt_buckets` as
    compile_generate takes them (prompt_buckets_of); `pads_penalized`:
    whether the repetition penalty counts a prompt's pad ids."""
    from .generation_ir import Settings
    if fields.get("num_beams", 1) not in (None, 1):
        raise RefusedError("beam search (num_beams > 1): compile_generate decodes "
                           "greedily or samples")
    sample = bool(fields.get("do_sample"))
    if sample:
        for name, off in (("typical_p", (None, 1.0)), ("min_p", (None,)),
                          ("epsilon_cutoff", (None, 0.0)), ("eta_cutoff", (None, 0.0))):
            if fields.get(name) not in off:
                raise RefusedError(f"sampling with {name}={fields[name]!r}: compile_generate "
                                   "samples with a temperature, top_k and top_p only yet "
                                   f"(pass {name}={off[-1]!r})")
    top_k = int(fields.get("top_k") or 0) if sample else 0
    top_p = fields.get("top_p")
    top_p = 1.0 if not sample or top_p is None else float(top_p)
    if top_k < 0 or not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_k must be >= 0 and top_p in (0, 1], got {top_k} and {top_p}")
    temperature = fields.get("temperature")
    temperature = 1.0 if not sample or temperature is None else float(temperature)
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    for name, value in (("max_new_tokens", max_new_tokens), ("max_prompt", max_prompt),
                        ("batch", batch)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    eos = fields.get("eos_token_id")
    eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
    pad = fields.get("pad_token_id")
    pad = pad if pad is not None else (eos[0] if eos else 0)
    penalty = fields.get("repetition_penalty")
    penalty = 1.0 if penalty is None else float(penalty)
    if penalty <= 0:
        raise ValueError(f"repetition_penalty must be positive, got {penalty}")
    return Settings(batch=batch, max_prompt=max_prompt, max_new_tokens=max_new_tokens,
                    prompt_buckets=prompt_buckets_of(prompt_buckets, max_prompt),
                    pads_penalized=pads_penalized,
                    vocab=vocab, eos=eos, pad=pad,
                    min_new_tokens=int(fields.get("min_new_tokens") or 0),
                    repetition_penalty=penalty, do_sample=sample, temperature=temperature,
                    top_k=top_k, top_p=top_p)


def generation_program(model, s, streaming=False):
    """(IR dict, weights by IR input name) of the generation graph."""
    from .torch.generation import capture_step, check_decoder
    check_decoder(model)
    steps = [capture_step(model, s.batch, tokens, s.cache_len)
             for tokens in (*s.prompt_buckets, 1)]
    return program_of_records(steps, s, type(model).__name__, streaming)


def program_of_records(steps, s, name, streaming=False):
    """(IR dict, weights) of the generation graph over the (record,
    weights) of the prompt's step at each of s.prompt_buckets' widths,
    then of one decoding step; `streaming`: with its entries prefill and
    step (generation_stream.py)."""
    from .generation_ir import generation_graph, prompt_width, state_inputs
    from .generation_stream import streaming_graph
    from .torch.export import lower_ir
    irs, weights = [], {}
    for record, given in steps:
        ir, lowering = lower_ir(record, given)
        irs.append(ir)
        weights.update(lowering.weights)
    *prompts, decode = irs
    prefills = {prompt_width(p): p for p in prompts}
    if sorted(prefills) != s.prompt_buckets:
        raise ValueError(f"prompt steps {sorted(prefills)} for buckets {s.prompt_buckets}")
    read = [(i["name"], i["shape"]) for i in state_inputs(decode)]
    if any([(i["name"], i["shape"]) for i in state_inputs(p)] != read for p in prompts):
        raise RefusedError(f"{name}'s prompt and decoding steps read different weights")
    build = streaming_graph if streaming else generation_graph
    return build(prefills, decode, s, name=name), weights


def compile_generate(model, max_new_tokens, max_prompt, batch, *, generation_config=None,
                     output_scores=False, output_logprobs=False, streaming=False,
                     prompt_buckets=None, path=None, cgc=None, flags=()):
    """A Generator for `model` (a transformers decoder-only LM, in eval
    mode on a CUDA device): `tokens, lengths = gen(input_ids,
    attention_mask)` generates up to `max_new_tokens` tokens for up to
    `batch` prompts of up to `max_prompt` tokens in one graph launch.
    `generation_config` (a transformers GenerationConfig or a dict) goes
    over the model's; `output_scores`: the call returns each column's
    processed logits too, as transformers' output_scores;
    `output_logprobs`: and each chosen token's log-probability under
    them; `streaming`: the artifact also holds the prompt's pass and one
    decoding step as graphs of their own, for `gen.stream(...)`, which
    yields each column as it is made (one replay per token; the cache is
    the context's state). `prompt_buckets`: the prompt widths a graph is
    built for (default: the powers of two from 32 below max_prompt, and
    max_prompt); a call runs the narrowest that holds its prompts, whose
    pass then costs that width's, not max_prompt's."""
    import json
    import shutil
    import tempfile
    from .errors import CgcError
    from .runtime import compile_beside, load
    from .safetensors import write_safetensors
    s = settings_of(model, generation_config, batch, max_prompt, max_new_tokens, prompt_buckets)
    s.output_scores, s.output_logprobs = bool(output_scores), bool(output_logprobs)
    ir, weights = generation_program(model, s, streaming)
    work = tempfile.mkdtemp(prefix="cgc-generate-")
    try:
        ir_path = os.path.join(work, "generate.json")
        if weights:
            write_safetensors(os.path.join(work, "generate.safetensors"), weights)
            ir["weights_file"] = "generate.safetensors"
        with open(ir_path, "w") as f:
            json.dump(ir, f, allow_nan=False)
        try:
            art = compile_beside(ir_path, path, os.path.join(work, "generate.cgc"), flags, cgc)
        except CgcError as e:
            raise CgcError(str(e).replace(ir_path, f"{type(model).__name__} (generation)")) \
                from None
        return Generator(load(art, next(model.parameters()).device.index), s, streaming)
    finally:
        shutil.rmtree(work, ignore_errors=True)


class Generator:
    """Runs the compiled generation: prompts in, generated tokens out."""

    def __init__(self, artifact, settings, streaming=False):
        self.artifact, self.settings, self.streaming = artifact, settings, streaming
        self.steps = None
        self.runs = 0  # calls and streams begun: a stream checks it is the last

    def __call__(self, input_ids, attention_mask=None, seed=None):
        """(tokens [b, max_new_tokens], lengths [b]) for b <= batch prompts:
        tokens after each sequence's end are the pad id; lengths count the
        tokens up to and including the end (and, as compiled, scores
        [b, max_new_tokens, vocab] and logprobs [b, max_new_tokens]). Prompts may be
        padded on either side (attention_mask marks the real tokens);
        `self.steps` then holds the columns generated, on the device.
        Sampling draws from cgc's Philox stream at `seed` (the same seed,
        the same tokens; None: a seed from torch's CPU generator, so
        torch.manual_seed makes runs repeat)."""
        from .generation_ir import loop_graph
        args, width = self.arguments(input_ids, attention_mask, seed)
        graph = loop_graph(width, self.settings)
        self.runs += 1
        if self.streaming:
            self.artifact.run(graph, *args)
            tokens, lengths, steps, *extra = self.columns()
        elif graph == "main":
            tokens, lengths, steps, *extra = self.artifact(*args)
        else:
            tokens, lengths, steps, *extra = self.artifact.run(graph, *args)
        rows = input_ids.shape[0]
        self.steps = steps.clone()  # columns generated (a device tensor: no sync)
        return tuple(t[:rows].clone() for t in (tokens, lengths, *extra))

    def stream(self, input_ids, attention_mask=None, seed=None):
        """Yields each column as it is made (compiled with streaming=True):
        the tokens [b] of the b prompts, on the CPU (the pad id for a
        sequence that has ended), after one replay each (the prompt's pass,
        then one decoding step) and one host read of the column; stops once
        every sequence has ended or max_new_tokens columns are out. The
        tokens are the ones a call gives; after the last, `columns()` holds
        (tokens, lengths, steps, ...) for the whole batch. One stream or call
        at a time: they share the context's state, so a stream refuses to
        go on after another began (a RuntimeError)."""
        if not self.streaming:
            raise ValueError("this generator was compiled without streaming=True")
        from .generation_ir import prefill_graph
        args, width = self.arguments(input_ids, attention_mask, seed)
        prefill = prefill_graph(width, self.settings)
        rows = input_ids.shape[0]
        self.runs += 1
        mine = self.runs
        for column in range(self.settings.max_new):
            if self.runs != mine:
                raise RuntimeError("another call or stream of this generator began after this "
                                   "stream: they share its context's state (one at a time)")
            token, done, *_ = self.artifact.run("step" if column else prefill, *args)
            out = self.artifact.torch.cat([token[:rows], done[:rows].long()]).cpu()
            yield out[:rows]
            if bool(out[rows:].all()):
                return

    def columns(self):
        """The generation's results as the context's state holds them:
        (tokens [batch, N], lengths [batch], steps [], and as compiled
        scores and logprobs), device views the next run overwrites."""
        names = ["tokens", "lengths", "step"] + \
            (["scores"] if self.settings.output_scores else []) + \
            (["logprobs"] if self.settings.output_logprobs else [])
        return tuple(self.artifact.state_view("gen." + n) for n in names)

    def arguments(self, input_ids, attention_mask, seed):
        """(the graph's inputs for a call: Generator.packed, and the random
        stream's {seed, 0} when sampling; the prompt bucket to run)."""
        ids, mask, width = self.packed(input_ids, attention_mask)
        return (ids, mask) + ((self.rng_input(seed),) if self.settings.do_sample else ()), width

    def rng_input(self, seed):
        """The graph's rng input {seed, 0}."""
        import torch
        if seed is None:
            seed = int(torch.randint(0, 2 ** 62, (1,)))
        if not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
            raise ValueError(f"seed must be an integer in [0, 2^63), got {seed!r}")
        return torch.tensor([seed, 0], dtype=torch.long, device=self.artifact.device)

    def packed(self, input_ids, attention_mask):
        """(ids, mask, width): the prompts as the graph takes them:
        [batch, max_prompt], each row's real tokens at its end. The columns
        before them hold an id the caller's row holds already, so the
        repetition penalty sees the ids transformers would (pads only where
        the caller's row had them): the row's own pad id if it was padded,
        else its first token. Rows past the caller's have no real token:
        the graph starts them ended (their output is dropped). `width`: the
        narrowest prompt bucket whose last columns hold every real token
        and, for a padded row whose pads the penalty counts, one pad column
        (max_prompt if none does)."""
        import torch
        s = self.settings
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [batch, length], got {list(input_ids.shape)}")
        rows = input_ids.shape[0]
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if attention_mask.shape != input_ids.shape:
            raise ValueError(f"attention_mask {list(attention_mask.shape)} does not match "
                             f"input_ids {list(input_ids.shape)}")
        if rows > s.batch:
            raise ValueError(f"{rows} prompts, but the generator was compiled for a batch of "
                             f"at most {s.batch}")
        device = self.artifact.device
        real = attention_mask.to(device=device, dtype=torch.bool)
        counts = real.sum(dim=1)
        padded = ~real.all(dim=1)
        # One host read a call (the checks and the bucket need the lengths).
        pad_seen = padded & s.pads_seen
        longest, shortest, need = \
            torch.stack([counts.max(), counts.min(), (counts + pad_seen).max()]).tolist() \
            if rows else (0, 1, 1)
        if longest > s.max_prompt:
            raise ValueError(f"a prompt of {longest} tokens, but the generator was compiled "
                             f"for at most max_prompt={s.max_prompt}")
        if shortest == 0:
            raise ValueError("a prompt with no real token (its attention_mask is all zero)")
        source = input_ids.to(device=device, dtype=torch.long)
        first = torch.where(padded, (~real).long().argmax(dim=1), real.long().argmax(dim=1))
        ids = torch.full((s.batch, s.max_prompt), s.pad, dtype=torch.long, device=device)
        mask = torch.zeros((s.batch, s.max_prompt), dtype=torch.long, device=device)
        ids[:rows] = source.gather(1, first[:, None])
        # Each real token's column: right-aligned in the order it came.
        column = s.max_prompt - counts[:, None] + real.long().cumsum(dim=1) - 1
        row = torch.arange(rows, device=device)[:, None].expand_as(column)
        ids[row[real], column[real]] = source[real]
        mask[row[real], column[real]] = 1
        return ids, mask, s.bucket_for(need) or s.max_prompt
