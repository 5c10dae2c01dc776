"""A torch module as a program record (torch_record.py) and its weights:
exported with torch.export, decomposed to Core ATen but for the composites
cgc has ops for, every fx node written as plain JSON, torch's dim symbols
renamed after the user's torch.export.Dim. Needs torch; torch_export.py
lowers the record without it."""
import inspect
import math
import os
import re
from collections import Counter, defaultdict

import sympy
import torch
from torch.export import dynamic_shapes as torch_dynamic_shapes
from torch.export.graph_signature import InputKind

from .ir_builder import is_dim_name
from .onnx_types import RefusedError
from .torch_record import RECORD_VERSION

# The composites decomposition keeps: cgc has ops of its own for them, so
# that fusion sees their elementwise neighbours (and a batched matmul keeps
# its batch dims, rather than folding them into one a dynamic dim cannot be).
KEPT = ("linear", "layer_norm", "gelu", "_softmax", "_log_softmax", "matmul")
TORCH_VALUES = (("dtype", torch.dtype), ("device", torch.device),
                ("memory_format", torch.memory_format), ("layout", torch.layout))
WEIGHT_KINDS = ("parameter", "buffer", "constant")
# A named Dim's type: torch.export.Dim is a class in recent torch; in older
# ones, Dim() is a function making a class whose metaclass is _Dim.
DIM_TYPE = torch.export.Dim if isinstance(torch.export.Dim, type) else torch_dynamic_shapes._Dim


def capture(module, example_args, dynamic_shapes=None, example_kwargs=None):
    """(record, weights): the program record of `module` exported on the
    examples, and the values of the parameters, buffers and constants its
    signature reads (NumPy arrays by state_dict name)."""
    ep = torch.export.export(module, tuple(example_args), kwargs=example_kwargs,
                             dynamic_shapes=dynamic_shapes)
    ep = decompose(ep)
    rename = dim_names(ep, module, example_args, example_kwargs, dynamic_shapes)
    return program_record(ep, type(module).__name__, rename), weights(ep)


def decompose(ep):
    """Core ATen, keeping the composites cgc has ops for."""
    try:
        table = torch.export.default_decompositions()
        for name in KEPT:
            packet = getattr(torch.ops.aten, name)
            for overload in packet.overloads():
                table.pop(getattr(packet, overload), None)
        return ep.run_decompositions(table)
    except (AttributeError, TypeError):  # an older torch: no export.default_decompositions
        return ep.run_decompositions()


# ---- dims named after the user's torch.export.Dim

def is_named_dim(dim):
    """Whether `dim` is a torch.export.Dim("name", ...), not a derived or
    static dim or a hint (Dim.AUTO, Dim.DYNAMIC)."""
    return isinstance(dim, DIM_TYPE) and not isinstance(
        dim, (torch_dynamic_shapes._DerivedDim, torch_dynamic_shapes._StaticDim))


def dim_names(ep, module, example_args, example_kwargs, dynamic_shapes):
    """{torch's symbol: the name of the Dim the user gave for it}. A
    dynamic_shapes entry belongs to a forward parameter: by name for a
    dict; for a tuple or list, the parameter each positional example
    argument binds to. A tensor parameter is the user input placeholder
    of its name. A symbol keeps torch's name where no Dim maps to it,
    where two Dims do, where one Dim's name maps to two symbols or is
    another symbol's, where the name cannot name an IR dim, and for a
    tuple or list with keyword examples (torch versions line those up
    with the parameters in different orders)."""
    if not dynamic_shapes:
        return {}
    if isinstance(dynamic_shapes, dict):
        entries = dynamic_shapes.items()
    elif example_kwargs:
        return {}
    else:
        positional = inspect.signature(module.forward).bind_partial(*example_args)
        entries = zip(positional.arguments, dynamic_shapes)
    user = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    shapes = {n.name: n.meta["val"].shape for n in ep.graph.nodes
              if n.name in user and isinstance(n.meta.get("val"), torch.Tensor)}
    claims = defaultdict(set)  # torch's symbol -> the Dim names given for it
    for param, spec in entries:
        if param not in shapes:
            continue
        if isinstance(spec, dict):
            axes = spec.items()
        elif isinstance(spec, (list, tuple)):
            axes = enumerate(spec)
        else:
            continue
        for axis, dim in axes:
            size = shapes[param][axis]
            if is_named_dim(dim) and isinstance(size, torch.SymInt) and \
                    isinstance(size.node.expr, sympy.Symbol):
                claims[size.node.expr.name].add(dim.__name__)
    symbols = {str(s) for s in ep.range_constraints}
    single = {sym: next(iter(names)) for sym, names in claims.items() if len(names) == 1}
    uses = Counter(single.values())
    return {sym: name for sym, name in single.items()
            if uses[name] == 1 and is_dim_name(name) and (name == sym or name not in symbols)}


# ---- the record

def input_kind(kind):
    """A placeholder's kind in the record: torch's InputKind, lower case,
    CONSTANT_TENSOR as "constant"."""
    return "constant" if kind == InputKind.CONSTANT_TENSOR else kind.name.lower()


def program_record(ep, module_name, rename):
    """The JSON-serializable record of the decomposed program `ep`, torch's
    symbols renamed by `rename`."""
    library = os.path.dirname(os.path.abspath(torch.__file__))
    nodes = [{"op": n.op, "name": n.name, "target": target_name(n),
              "args": encode(list(n.args), rename, n.name),
              "kwargs": {k: encode(v, rename, n.name) for k, v in n.kwargs.items()},
              "val": encode_val(n.meta.get("val"), rename, n.name),
              "source": source_line(n, library)} for n in ep.graph.nodes]
    signature = ep.graph_signature
    return {"record_version": RECORD_VERSION, "module": module_name,
            "inputs": [{"name": s.arg.name, "kind": input_kind(s.kind), "target": s.target}
                       for s in signature.input_specs],
            "outputs": [{"name": s.arg.name, "kind": s.kind.name.lower()}
                        for s in signature.output_specs],
            "range_constraints": dict(sorted(
                (sym_text(sym, rename), {"min": bound(r.lower), "max": bound(r.upper)})
                for sym, r in ep.range_constraints.items())),
            "nodes": nodes}


def target_name(n):
    """An ATen overload as torch prints it ("aten.add.Tensor"), another
    function by its name ("getitem"), a placeholder's or output's own."""
    target = n.target
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    name = getattr(target, "__name__", None)
    if name is None:
        raise RefusedError(f"node '{n.name}' calls a {type(target).__name__}, "
                           "which has no name to record")
    return name


def sym_text(expr, rename):
    """A sympy expression of torch's symbols, written with the Dims' names."""
    return str(expr.xreplace({s: sympy.Symbol(rename[s.name])
                              for s in expr.free_symbols if s.name in rename}))


def encode(value, rename, where):
    """An fx argument of node `where` as JSON (torch_record.py)."""
    if isinstance(value, torch.fx.Node):
        return {"node": value.name}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"float": "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"}
    if isinstance(value, (list, tuple)):
        return [encode(v, rename, where) for v in value]
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"sym": sym_text(value.node.expr, rename)}
    for kind, cls in TORCH_VALUES:
        if isinstance(value, cls):
            return {kind: str(value)}
    raise RefusedError(f"node '{where}' has an argument of type {type(value).__name__}, "
                       "which the program record cannot hold")


def encode_val(val, rename, where):
    """A node's meta val: a tensor's dtype and shape, a list of those for
    several results, else the value itself."""
    if isinstance(val, torch.Tensor):
        return {"dtype": str(val.dtype),
                "shape": [d if isinstance(d, int) else sym_text(d.node.expr, rename)
                          for d in val.shape]}
    if isinstance(val, (list, tuple)):
        return [encode_val(v, rename, where) for v in val]
    return encode(val, rename, where)


def bound(value):
    """A range bound: an int, or "inf" / "-inf" where torch leaves it unbounded."""
    text = str(value)
    if text in ("int_oo", "oo", "-int_oo", "-oo"):
        return "-inf" if text.startswith("-") else "inf"
    return int(value)


def source_line(n, library):
    """`file:line` of the innermost frame of the node's stack trace that is
    the user's: outside the `library` folder (torch's own package, whose
    nn.Modules and functionals call the ops), else the innermost."""
    trace = n.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    if not frames:
        return None
    users = [f for f in frames if not os.path.abspath(f[0]).startswith(library + os.sep)]
    path, line = (users or frames)[-1]
    return f"{os.path.basename(path)}:{line}"


# ---- the weights

def weights(ep):
    """The parameters', buffers' and constants' values the signature reads,
    as NumPy arrays by their state_dict names."""
    state = dict(ep.state_dict)
    state.update(getattr(ep, "constants", {}))
    out = {}
    for spec in ep.graph_signature.input_specs:
        kind = input_kind(spec.kind)
        if kind not in WEIGHT_KINDS:
            continue
        tensor = state.get(spec.target)
        if tensor is None:
            raise RefusedError(f"no value for {kind} '{spec.target}'")
        if tensor.dtype == torch.bfloat16:
            raise RefusedError(f"bfloat16 {kind} '{spec.target}' (the weights file is "
                               "written from NumPy, which has no bfloat16)")
        out[spec.target] = tensor.detach().cpu().numpy()
    return out
