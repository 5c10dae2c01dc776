"""`torch.compile(model, backend="cgc")`: the graphs TorchDynamo captures,
lowered by AOTAutograd to ATen (with cgc.export's decomposition table,
capture.decomposition_table) and split between cgc and PyTorch
(partition.py): each part cgc can express is lowered by the ATen rules
cgc.export uses, compiled by the `cgc` driver (its compile cache
included) and replayed as one CUDA graph; every other call runs in
PyTorch between the parts (docs/python.md, `torch.compile(model,
backend="cgc")`).

    model = torch.compile(model, backend="cgc")              # the wheel registers it
    model = torch.compile(model, backend="cgc", options={"flags": ["--no-fuse"]})
    print(cgc.explain(model, x))                              # what stays in PyTorch

Options: "flags" (the driver's, a list), "max_extent" and "buckets"
(dynamic sizes, below), "executor" ("cuda", or
"interpreter": each part runs in cgc's reference interpreter through
`cgc-opt --interpret`, on any device, for checking), "cgc_opt" (the
cgc-opt binary for the interpreter; default $CGC_OPT), "report" (a
list: each compiled graph appends its Report), "compile" (False: split
and lower only; every call then runs in PyTorch, as cgc.explain does).

Parameters are graph inputs here (AOTAutograd lifts them): a part binds
them by pointer on every call, as it binds any input, without copies.
A part's outputs are fresh tensors (its own buffers are reused by its next
replay). Dynamo's guards and recompiles are its own.
Dynamo's symbolic sizes become cgc's dims: Dynamo's range, an unbounded
max set by the option "max_extent" (default: 4x the size Dynamo compiled
for, rounded up to a power of two, at least 64), buckets by "buckets" (a
list for every dim, or a dict by Dynamo's symbol; default: the size
compiled for, so a call pads up to it or to the max); a call past a
dim's max runs that part in PyTorch, with a warning. Training graphs
(AOTAutograd's forward and backward) are split the same way.
scaled_dot_product_attention is kept whole (cgc::scaled_dot_product_attention,
which runs PyTorch's own where PyTorch runs it, its gradients written with
PyTorch ops that AOTAutograd traces into the backward graph) so that it
becomes cgc's attention op; with grad mode on and a dropout probability,
it is left to AOTAutograd's decomposition. torch.compile's `mode` is
ignored.
"""
import functools
import itertools
import json
import logging
import operator
import os
import re
import shutil
import tempfile
from collections import namedtuple

import torch

from ..errors import SizeOutOfRange
from .capture import bound, decomposition_table, graph_nodes, target_name
from .partition import VIEWS, lowered_parts, overload_base
from .record import RECORD_VERSION

LOG = logging.getLogger("cgc")
DEFAULTS = {"flags": (), "executor": "cuda", "cgc_opt": None, "report": None, "compile": True,
            "max_extent": None, "buckets": None}
# An unbounded dynamic dim's max, at least: 4x the size Dynamo compiled for,
# rounded up to a power of two, and at least this.
MIN_UNBOUNDED_MAX = 64
KEPT_ATTENTION = "cgc.scaled_dot_product_attention.default"
ATTENTION = torch._C._nn.scaled_dot_product_attention  # F.scaled_dot_product_attention
GRAPHS = itertools.count()

# What one graph came to: its name, the parts cgc runs (their node
# counts) and {node: (op, why, source line)} of the calls PyTorch runs.
Report = namedtuple("Report", "graph parts kept_out")


@torch.library.custom_op("cgc::scaled_dot_product_attention", mutates_args=())
def kept_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                   is_causal: bool = False, *, scale: float | None = None,
                   enable_gqa: bool = False) -> torch.Tensor:
    """scaled_dot_product_attention, which AOTAutograd keeps whole."""
    return ATTENTION(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                     is_causal=is_causal, scale=scale, enable_gqa=enable_gqa).contiguous()


@kept_attention.register_fake
def _(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
      enable_gqa=False):
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


def attention_backward(ctx, grad):
    """The kept op's gradients, written with PyTorch ops that AOTAutograd
    traces into the backward graph (where cgc compiles them): the
    probabilities recomputed from q and k, then
    dv = p^T g,  ds = p (g v^T - rowsum(p g v^T)),  dq = ds k s,  dk = ds^T q s
    (each key and value head summed over the query heads it serves)."""
    query, key, value, mask = ctx.saved_tensors
    scale = ctx.scale if ctx.scale is not None else query.shape[-1] ** -0.5
    groups = query.shape[-3] // key.shape[-3] if query.dim() >= 3 else 1
    keys, values = (t.repeat_interleave(groups, dim=-3) if groups > 1 else t
                    for t in (key, value))
    scores = (query @ keys.transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool \
            else scores + mask
    if ctx.is_causal:
        rows, cols = scores.shape[-2:]
        causal = torch.ones(rows, cols, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    half = scores.dtype in (torch.float16, torch.bfloat16)
    probs = torch.softmax(scores.float() if half else scores, dim=-1)  # (half: in f32)
    if mask is not None or ctx.is_causal:  # a row that keeps no key weighs nothing
        empty = scores.amax(-1, keepdim=True) == float("-inf")
        probs = torch.where(empty, torch.zeros_like(probs), probs)
    probs = probs.to(query.dtype)
    d_values = probs.transpose(-2, -1) @ grad
    d_probs = grad @ values.transpose(-2, -1)
    d_scores = probs * (d_probs - (d_probs * probs).sum(-1, keepdim=True))
    d_query = (d_scores @ keys) * scale
    d_keys = (d_scores.transpose(-2, -1) @ query) * scale
    if groups > 1:
        d_keys, d_values = (d.reshape(d.shape[:-3] + (key.shape[-3], groups) + d.shape[-2:])
                            .sum(-3) for d in (d_keys, d_values))
    return d_query, d_keys, d_values, None, None, None


def attention_context(ctx, inputs, keyword_only_inputs, output):
    query, key, value, mask, _, is_causal = inputs
    ctx.save_for_backward(query, key, value, mask)
    ctx.is_causal, ctx.scale = is_causal, keyword_only_inputs["scale"]


kept_attention.register_autograd(attention_backward, setup_context=attention_context)


SDPA_ARGS = ("attn_mask", "dropout_p", "is_causal")


def multi_head_attention_kept(*args, **kwargs):
    """F.multi_head_attention_forward (which Dynamo leaves whole for
    AOTAutograd to trace) with its attention kept whole: torch.nn.functional's
    scaled_dot_product_attention, which it calls, is kept_sdpa while it
    runs (a swap of a module global, made only while AOTAutograd traces the
    graph: what runs later are the ATen ops it traced)."""
    functional = torch.nn.functional
    functional.scaled_dot_product_attention = kept_sdpa
    try:
        return functional.multi_head_attention_forward(*args, **kwargs)
    finally:
        functional.scaled_dot_product_attention = ATTENTION


def kept_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
              enable_gqa=False):
    """F.scaled_dot_product_attention's signature over the kept op (but
    for training-mode dropout, which its backward does not draw)."""
    if dropout_p and torch.is_grad_enabled():
        return ATTENTION(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                         is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    return torch.ops.cgc.scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)


def keep_attention_whole(gm):
    """Points every scaled_dot_product_attention call of Dynamo's graph at
    cgc::scaled_dot_product_attention (its arguments as aten's schema
    takes them), and every F.multi_head_attention_forward call at
    multi_head_attention_kept."""
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is torch.nn.functional.multi_head_attention_forward:
            n.target = multi_head_attention_kept
        if n.op == "call_function" and n.target is ATTENTION:
            args = list(n.args)
            kwargs = dict(n.kwargs)
            for i, name in enumerate(SDPA_ARGS, start=3):
                if len(args) > i:
                    kwargs[name] = args[i]
            if kwargs.get("dropout_p", 0.0) != 0.0 and torch.is_grad_enabled():
                continue  # training-mode dropout: left to AOTAutograd's decomposition
            n.args = tuple(args[:3]) + tuple(kwargs.pop(k, d) for k, d in
                                             zip(SDPA_ARGS, (None, 0.0, False)))
            n.kwargs = kwargs
            n.target = torch.ops.cgc.scaled_dot_product_attention.default
    gm.recompile()


def cgc_backend(gm, example_inputs, options=None, mode=None):
    """The backend torch.compile calls with each graph Dynamo captures
    (`options` torch.compile's, `mode` ignored)."""
    opts = dict(DEFAULTS, **(options or {}))
    unknown = set(opts) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"cgc backend: unknown options {sorted(unknown)} "
                         f"(it takes {sorted(DEFAULTS)})")
    keep_attention_whole(gm)
    from torch._dynamo.backends.common import aot_autograd
    compiler = functools.partial(compile_graph, options=opts)
    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler,
                        decompositions=decomposition_table())(gm, example_inputs)


def compile_graph(gm, example_inputs, options):
    """The callable of one ATen graph: its parts compiled by cgc, the rest
    left to PyTorch."""
    name = f"graph{next(GRAPHS)}"
    separate_returned_views(gm)
    record = graph_record(gm, name)
    why_not = unsupported_graph(gm, options)
    steps, kept_out, parts, runners = [], {}, {}, {}
    if why_not:
        kept_out = {n.name: (str(n.target), why_not, None) for n in gm.graph.nodes
                    if n.op == "call_function"}
    else:
        buckets = dynamic_dims(record, example_inputs, options)
        steps, kept_out, parts, runners = compiled_parts(gm, record, name, buckets, options)
    report = Report(name, [len(parts[k][0].nodes) for k in sorted(parts)], kept_out)
    log_report(report)
    if options["report"] is not None:
        options["report"].append(report)
    from functorch.compile import make_boxed_func  # AOTAutograd's calling convention
    if not runners:
        return make_boxed_func(gm)
    return make_boxed_func(rebuilt(gm, steps, runners))


DRIVER_REFUSED_NODE = re.compile(r"error: node '([^']+)'")


def compiled_parts(gm, record, name, buckets, options):
    """(steps, kept_out, parts, {step index: Part}) of lowered_parts, each
    part compiled (unless options' "compile" is off); where the driver
    refuses a part, the node it names (else the whole part) goes to
    PyTorch and the graph is split again. A part compiled before is not
    compiled again."""
    refused, done = {}, {}
    while True:
        steps, kept_out, parts = lowered_parts(record, name, buckets, refused)
        if not options["compile"]:
            return steps, kept_out, parts, {}
        runners, again = {}, False
        for k, part in parts.items():
            key = tuple(part[0].nodes)
            try:
                runners[k] = done[key] if key in done else part_runner(gm, *part, options)
            except DriverRefused as e:
                m = DRIVER_REFUSED_NODE.search(e.message)
                nodes = [m.group(1)] if m and m.group(1) in part[0].nodes else part[0].nodes
                why = "the driver refused it: " + e.message.split("\n")[0]
                refused.update({n: why for n in nodes})
                again = True
                break
            done[key] = runners[k]
        if not again:
            return steps, kept_out, parts, runners


class DriverRefused(Exception):
    """The `cgc` driver refused a part (its message)."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


def unsupported_graph(gm, options):
    """Why no part of `gm` can run in cgc, or None."""
    if options["compile"] and options["executor"] == "cuda" and not any(
            isinstance(n.meta.get("val"), torch.Tensor) and n.meta["val"].is_cuda
            for n in gm.graph.nodes if n.op == "placeholder"):
        return "no CUDA tensor among the graph's inputs (cgc runs graphs on CUDA devices)"
    return None


def separate_returned_views(gm):
    """Gives each view the graph returns that other nodes also read a twin
    for those readers: the returned view stays PyTorch's (partition.py),
    aliasing its base as AOTAutograd expects, while its twin may join a
    cgc part with its readers."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or output not in n.users or len(n.users) < 2 or \
                overload_base(target_name(n)) not in VIEWS:
            continue
        with gm.graph.inserting_after(n):
            twin = gm.graph.call_function(n.target, n.args, n.kwargs)
        twin.meta = dict(n.meta)
        for user in list(n.users):
            if user is not output:
                user.replace_input_with(n, twin)
    gm.recompile()


def graph_record(gm, name):
    """The program record of an ATen graph: every placeholder a user input;
    the kept attention as aten's scaled_dot_product_attention."""
    nodes = graph_nodes(gm.graph, {})
    for entry, n in zip(nodes, gm.graph.nodes):
        if entry["target"] == KEPT_ATTENTION:
            entry["target"] = "aten.scaled_dot_product_attention.default"
        if n.op == "get_attr" and entry["val"] is None:
            value = getattr(gm, n.target, None)
            if isinstance(value, torch.Tensor):
                entry["val"] = {"dtype": str(value.dtype), "shape": list(value.shape)}
    output = next(n for n in gm.graph.nodes if n.op == "output")
    returned = output.args[0] if isinstance(output.args[0], (list, tuple)) else [output.args[0]]
    return {"record_version": RECORD_VERSION, "module": name,
            "inputs": [{"name": n.name, "kind": "user_input", "target": None}
                       for n in gm.graph.nodes if n.op in ("placeholder", "get_attr")],
            "outputs": [{"name": getattr(a, "name", str(i)), "kind": "user_output"}
                        for i, a in enumerate(returned)],
            "range_constraints": {}, "nodes": nodes}


def dynamic_dims(record, example_inputs, options):
    """Gives the record's range_constraints each symbol of Dynamo's that a
    placeholder's size holds ({symbol: {min, max}}: Dynamo's range, an
    unbounded max options' "max_extent" or the policy of MIN_UNBOUNDED_MAX)
    and returns each one's buckets: options' "buckets" (a list for every
    dim, or a dict by symbol), else the size Dynamo compiled for (every
    call pads to it or to the max)."""
    fake = torch._guards.detect_fake_mode(example_inputs)
    env = fake.shape_env if fake is not None else None
    if env is None:
        return {}
    values = env.backed_var_to_val if hasattr(env, "backed_var_to_val") else env.var_to_val
    symbols = {}
    for sym, r in env.var_to_range.items():
        # Sizes are Dynamo's backed "s" symbols (not its float "zf" ones).
        if not str(sym).startswith("s") or sym not in values:
            continue
        hint, lower, upper = int(values[sym]), bound(r.lower), bound(r.upper)
        if not isinstance(upper, int):
            upper = max(int(options["max_extent"]), hint) if options["max_extent"] else \
                max(MIN_UNBOUNDED_MAX, 1 << (4 * hint - 1).bit_length())
        symbols[str(sym)] = ({"min": lower if isinstance(lower, int) else 0, "max": upper}, hint)
    record["range_constraints"] = {k: v for k, (v, _) in sorted(symbols.items())}
    given = options["buckets"]
    return {k: list(given.get(k, [hint]) if isinstance(given, dict) else given or [hint])
            for k, (_, hint) in symbols.items()}


def log_report(report):
    LOG.info("cgc backend: %s: %d part(s) in cgc (%s nodes), %d call(s) in PyTorch",
             report.graph, len(report.parts), "+".join(map(str, report.parts)) or "no",
             len(report.kept_out))
    for node, (op, why, source) in report.kept_out.items():
        LOG.debug("cgc backend: %s: %s (%s) stays in PyTorch: %s%s", report.graph, node, op,
                  why, f" ({source})" if source else "")


class Part(torch.nn.Module):
    """One cgc part in the rebuilt graph: of the step's inputs, the IR's
    (`arguments`: the step input each IR input is), each made what the
    compiled graph takes (`fixes`: contiguous, moved to its device), its
    outputs a tuple of fresh tensors."""

    def __init__(self, run, arguments, fixes, eager):
        super().__init__()
        self.run, self.arguments, self.fixes = run, arguments, fixes
        self.eager, self.warned = eager, False  # the part's nodes, run by PyTorch

    def forward(self, *given):
        args = [given[j] for j in self.arguments]
        for i, device in self.fixes:
            args[i] = args[i].to(device).contiguous() if device else args[i].contiguous()
        try:
            out = self.run(*args)
        except SizeOutOfRange as e:
            if not self.warned:
                LOG.warning("cgc backend: %s; this part runs in PyTorch at such sizes (raise "
                            "the backend's max_extent option)", e)
                self.warned = True
            return tuple(self.eager(*given))
        return out if isinstance(out, tuple) else (out,)


def part_runner(gm, step, ir, arguments, options):
    """The Part running `step` (lowered to `ir`, whose input k is the
    step's input arguments[k]) with options' executor."""
    vals = {n.name: n.meta.get("val") for n in gm.graph.nodes}
    device = next(v.device for v in vals.values() if isinstance(v, torch.Tensor) and v.is_cuda) \
        if options["executor"] == "cuda" else None  # (unsupported_graph: there is one)
    work = tempfile.mkdtemp(prefix="cgc-backend-")
    try:
        ir_path = os.path.join(work, f"{ir['name']}.json")
        with open(ir_path, "w") as f:
            json.dump(ir, f, indent=1, allow_nan=False)
        if options["executor"] == "interpreter":
            from .interpreted import Interpreted
            run = Interpreted(ir, [vals[o].dtype for o in step.outputs], options["cgc_opt"])
        else:
            from ..runtime import CgcError, compile_file, load
            try:
                path = compile_file(ir_path, os.path.join(work, "part.cgc"),
                                    tuple(options["flags"]))
            except CgcError as e:
                raise DriverRefused(str(e)) from None
            artifact = load(path, device.index)
            run = functools.partial(artifact, fresh_outputs=True)
            # The artifact's inputs by name, whatever order its manifest has.
            names = [i["name"] for i in ir["inputs"]]
            arguments = [arguments[names.index(spec["name"])] for spec in artifact.inputs]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fixes = []
    for k, j in enumerate(arguments):
        v = vals[step.inputs[j]]
        moved = device if device is not None and v.device != device else None
        if moved is not None or not v.is_contiguous():
            fixes.append((k, moved))
    return Part(run, tuple(arguments), tuple(fixes), part_module(gm, step))


def part_module(gm, step):
    """The nodes of `step` as a GraphModule of their own (PyTorch runs them
    where the compiled part cannot)."""
    old = {n.name: n for n in gm.graph.nodes}
    graph = torch.fx.Graph()
    env = {old[i]: graph.placeholder(i) for i in step.inputs}
    for name in step.nodes:
        env[old[name]] = graph.node_copy(old[name], env.__getitem__)
    graph.output(tuple(env[old[o]] for o in step.outputs))
    return torch.fx.GraphModule(gm, graph)


def rebuilt(gm, steps, runners):
    """`gm` with each cgc part's nodes replaced by a call of its Part."""
    old = {n.name: n for n in gm.graph.nodes}
    graph = torch.fx.Graph()
    env = {}
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "get_attr"):
            env[n] = graph.node_copy(n, env.__getitem__)
    for k, step in enumerate(steps):
        if step.kind == "torch":
            n = old[step.nodes[0]]
            env[n] = graph.node_copy(n, env.__getitem__)
            continue
        target = f"cgc_part{k}"
        gm.add_submodule(target, runners[k])
        call = graph.call_module(target, tuple(env[old[i]] for i in step.inputs))
        for j, o in enumerate(step.outputs):
            env[old[o]] = graph.call_function(operator.getitem, (call, j))
            env[old[o]].meta = dict(old[o].meta)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    graph.node_copy(output, env.__getitem__)
    return torch.fx.GraphModule(gm, graph)


class Explanation:
    """What the backend made of each graph Dynamo captured (`reports`, a
    list of Report); str() lists each graph's parts and the ops PyTorch
    keeps, grouped by op and reason, with a count and the first source
    line."""

    def __init__(self, reports):
        self.reports = reports

    def __str__(self):
        lines = [f"cgc backend: {len(self.reports)} graph(s)"]
        for r in self.reports:
            lines.append(f"{r.graph}: {len(r.parts)} part(s) in cgc "
                         f"({' + '.join(map(str, r.parts)) or 'no'} nodes)"
                         + ("; in PyTorch:" if r.kept_out else ""))
            groups = {}
            for op, why, source in r.kept_out.values():
                entry = groups.setdefault((op, why), [0, source])
                entry[0] += 1
                entry[1] = entry[1] or source
            for (op, why), (count, source) in groups.items():
                lines.append(f"  {op} x{count}: {why}" + (f" ({source})" if source else ""))
        return "\n".join(lines)

    __repr__ = __str__


def explain(model, args, kwargs):
    """The Explanation of torch.compile(model, backend="cgc") on a call
    with `args` and `kwargs`: the graphs are split and lowered, nothing is
    compiled, and the call runs in PyTorch."""
    reports = []
    backend = functools.partial(cgc_backend, options={"compile": False, "report": reports})
    torch.compile(model, backend=backend, dynamic=False)(*args, **kwargs)
    return Explanation(reports)
