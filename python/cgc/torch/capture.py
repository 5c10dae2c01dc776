"""A torch module as a program record (record.py) and its weights:
exported with torch.export, decomposed to Core ATen but for the composites
cgc has ops for, every fx node written as plain JSON, torch's dim symbols
renamed after the user's torch.export.Dim. Needs torch; export.py
lowers the record without it."""
import inspect
import math
import os
import re
from collections import Counter, defaultdict

import sympy
import torch
from torch.export import dynamic_shapes as torch_dynamic_shapes
from torch.export.graph_signature import InputKind, OutputKind, TensorArgument

from ..ir_builder import is_dim_name
from ..errors import RefusedError
from ..safetensors import BFloat16
from .cumulative_batch_norm import traceable_cumulative_batch_norms
from .record import RECORD_VERSION

# The composites decomposition keeps: cgc has ops of its own for them, so
# that fusion sees their elementwise neighbours (and a batched matmul keeps
# its batch dims, rather than folding them into one a dynamic dim cannot be).
KEPT = ("linear", "layer_norm", "rms_norm", "gelu", "_softmax", "_log_softmax", "matmul",
        "scaled_dot_product_attention", "nll_loss_forward",
        "eye")  # (its decomposition compares uint8 aranges: a dtype cgc has not)
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
    record, weights_, _ = capture_program(module, example_args, dynamic_shapes, example_kwargs)
    return record, weights_


def capture_program(module, example_args, dynamic_shapes=None, example_kwargs=None):
    """(record, weights, CallSignature) of `module` on the examples. An
    example tensor held channels last (torch.channels_last or
    channels_last_3d, and not also contiguous) makes its input channels
    last in the record (`layout`): the IR takes it as it is held."""
    ep = decompose(export_program(module, example_args, example_kwargs, dynamic_shapes))
    rename = dim_names(ep, module, example_args, example_kwargs, dynamic_shapes)
    record = program_record(ep, type(module).__name__, rename)
    signature = CallSignature(ep, type(module).__name__)
    signature.hold_channels_last(record, example_args, example_kwargs or {})
    return record, weights(ep), signature


# An example tensor of this rank held in this memory format is taken as it
# is held: [N, D..., C].
CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}


def is_channels_last(t):
    """True for a tensor whose strides are channels last's and not also
    contiguous ones (a unit channel or spatial extent makes them both)."""
    fmt = CHANNELS_LAST.get(t.dim())
    return fmt is not None and not t.is_contiguous() and t.is_contiguous(memory_format=fmt)


def channels_last_perm(rank):
    """[N, C, D...] to [N, D..., C]."""
    return [0, *range(2, rank), 1]


class TrainProgram(torch.nn.Module):
    """What compile_train exports: the loss of the module's outputs on a
    batch, `loss_fn(module(*batch[:inputs]), *batch[inputs:])`, and (with
    `returns_outputs`) the module's outputs after it."""

    def __init__(self, module, loss_fn, inputs, returns_outputs):
        super().__init__()
        self.module, self.loss_fn = module, loss_fn
        self.inputs, self.returns_outputs = inputs, returns_outputs

    def forward(self, *batch):
        out = self.module(*batch[:self.inputs])
        loss = self.loss_fn(out, *batch[self.inputs:])
        return (loss, out) if self.returns_outputs else (loss,)


def capture_train(module, loss_fn, example_batch, inputs, returns_outputs):
    """(record, weights) of TrainProgram exported in training mode; the
    module's mode is restored after. Weights are named as the module's
    state_dict names them."""
    program = TrainProgram(module, loss_fn, inputs, returns_outputs)
    was_training = module.training
    program.train()
    try:
        with traceable_cumulative_batch_norms(module):
            ep = decompose(export_program(program, tuple(example_batch), None, None))
    finally:
        module.train(was_training)
    record = program_record(ep, type(module).__name__, {})
    for entry in record["inputs"] + record["outputs"]:
        if entry["target"] and entry["target"].startswith("module."):
            entry["target"] = entry["target"][len("module."):]
    tie_parameters(record, module)
    return record, {k[len("module."):] if k.startswith("module.") else k: v
                    for k, v in weights(ep).items()}


def tie_parameters(record, module):
    """Makes tied parameters one input: torch.export keeps a placeholder
    per name of a tied tensor (and may read either), so every read of
    another name's placeholder becomes a read of the first name's (as
    named_parameters() names the tensor), and the others are dropped."""
    first = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        first.setdefault(id(p), name)
    canonical = {name: first[id(p)] for name, p in module.named_parameters(remove_duplicate=False)}
    placeholder = {i["target"]: i["name"] for i in record["inputs"] if i["target"]}
    rename = {i["name"]: placeholder[canonical[i["target"]]] for i in record["inputs"]
              if i["target"] in canonical and canonical[i["target"]] != i["target"]
              and canonical[i["target"]] in placeholder}
    if not rename:
        return

    def renamed(value):
        if isinstance(value, dict):
            if set(value) == {"node"}:
                return {"node": rename.get(value["node"], value["node"])}
            return {k: renamed(v) for k, v in value.items()}
        if isinstance(value, list):
            return [renamed(v) for v in value]
        return value

    record["inputs"] = [i for i in record["inputs"] if i["name"] not in rename]
    record["nodes"] = [dict(n, args=renamed(n["args"]), kwargs=renamed(n["kwargs"]))
                       for n in record["nodes"] if n["name"] not in rename]


def children(spec):
    """A TreeSpec's child specs (children() in recent torch)."""
    return list(spec.children()) if hasattr(spec, "children") else list(spec.children_specs)


class CallSignature:
    """How a call of the module maps onto the compiled graph and back: the
    module's (args, kwargs) flattened as torch.export flattened the
    examples (keyword arguments by name), its tensor leaves the graph's
    inputs in order (the other leaves were fixed at export and must be
    passed unchanged), and the graph's outputs rebuilt into the structure
    the module returns (a tuple, dict, ModelOutput ...)."""

    def __init__(self, ep, module_name):
        from torch.utils import _pytree
        self.module_name = module_name
        self.in_spec, self.out_spec = ep.call_spec.in_spec, ep.call_spec.out_spec
        self.unflatten = _pytree.tree_unflatten
        user = [s for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
        values = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
        self.fixed = {}  # leaf position -> the value the export fixed
        self.tensors = []  # leaf positions of the graph's inputs, in order
        for position, spec in enumerate(user):
            name = getattr(spec.arg, "name", None)
            value = values[name] if name in values else getattr(spec.arg, "value", None)
            if isinstance(value, torch.Tensor):
                self.tensors.append(position)
            else:
                self.fixed[position] = value

        # Each user output: (True, None) for a tensor, the graph's next
        # output; (False, value) for a constant the module returns.
        self.returned = [(isinstance(spec.arg, TensorArgument), getattr(spec.arg, "value", None))
                         for spec in ep.graph_signature.output_specs
                         if spec.kind == OutputKind.USER_OUTPUT]
        args_spec, kwargs_spec = children(self.in_spec)
        self.positional = args_spec.num_children
        self.keywords = sorted(kwargs_spec.context or ())
        # Indices (among the graph's inputs) of those held channels last.
        self.channels_last = []
        # A call of tensors alone, passed straight to the graph.
        self.plain_inputs = not self.fixed and not self.keywords and all(
            c.is_leaf() for c in children(args_spec))
        # Outputs already in the module's structure: one tensor, or a tuple of them.
        self.plain_outputs = self.out_spec.is_leaf() or (
            self.out_spec.type is tuple and all(c.is_leaf() for c in children(self.out_spec))
            and self.out_spec.num_children > 1)

    def hold_channels_last(self, record, example_args, example_kwargs):
        """Marks the record's user inputs whose example is held channels
        last (`"layout": "channels_last"`) and remembers them."""
        import torch.fx._pytree as fx_pytree
        leaves = fx_pytree.tree_flatten_spec((tuple(example_args), dict(example_kwargs)),
                                             self.in_spec)
        users = [i for i in record["inputs"] if i["kind"] == "user_input"]
        for index, position in enumerate(self.tensors):
            if is_channels_last(leaves[position]):
                users[position]["layout"] = "channels_last"
                self.channels_last.append(index)
        self.plain_inputs = self.plain_inputs and not self.channels_last

    def inputs(self, args, kwargs):
        """The graph's inputs of a call, in order; a TypeError if the call
        does not fit the exported signature. An input held channels last
        in the graph is passed as [N, D..., C]: a view of a channels-last
        tensor, a copy of any other."""
        if self.plain_inputs and not kwargs and len(args) == self.positional:
            return args
        return self.held(self.leaves(args, kwargs))

    def held(self, inputs):
        """`inputs` with each channels-last one as [N, D..., C] (a tensor of
        another rank is left for the artifact to refuse)."""
        for index in self.channels_last:
            x = inputs[index]
            if isinstance(x, torch.Tensor) and x.dim() in CHANNELS_LAST:
                inputs[index] = x.permute(channels_last_perm(x.dim())).contiguous()
        return inputs

    def leaves(self, args, kwargs):
        """The graph's inputs of a call as given, in order."""
        import torch.fx._pytree as fx_pytree
        if len(args) != self.positional or sorted(kwargs) != self.keywords:
            raise TypeError(f"{self.module_name} was exported with {self.positional} "
                            f"positional argument(s) and keywords {self.keywords}; the call "
                            f"has {len(args)} and {sorted(kwargs)}")
        try:
            leaves = fx_pytree.tree_flatten_spec((tuple(args), dict(kwargs)), self.in_spec)
        except Exception as e:  # noqa: BLE001 - pytree raises several kinds
            raise TypeError(f"{self.module_name}: the call's arguments do not match the "
                            f"exported ones ({type(e).__name__}: {e})") from None
        for position, value in self.fixed.items():
            given = leaves[position]
            if isinstance(given, torch.Tensor) or not (given is value or given == value):
                raise TypeError(f"{self.module_name}: argument #{position} was {value!r} at "
                                f"export; cgc compiled it in, so it cannot be {given!r}")
        return [leaves[p] for p in self.tensors]

    def outputs(self, results):
        """The module's result from the graph's outputs (a tensor or tuple)."""
        if self.plain_outputs:
            return results
        flat = iter(results if isinstance(results, (tuple, list)) else [results])
        leaves = [next(flat) if tensor else value for tensor, value in self.returned]
        if len(leaves) != self.out_spec.num_leaves:  # (None is no pytree leaf)
            leaves = [v for v in leaves if v is not None]
        return self.unflatten(leaves, self.out_spec)


def export_program(module, example_args, example_kwargs, dynamic_shapes):
    """torch.export.export of the module, its failure a RefusedError that
    names the module and the cause (a KV cache among the outputs gets what
    to do about it)."""
    # scaled_dot_product_attention stays whole (KEPT), so which kernel torch
    # would pick does not matter; tracing with the math one keeps the fused
    # kernels' own guards (the efficient kernel pads a mask to a multiple of
    # 8, which a dynamic sequence cannot be proven to fit) out of the export.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        with sdpa_kernel([SDPBackend.MATH]):
            return torch.export.export(module, tuple(example_args), kwargs=example_kwargs,
                                       dynamic_shapes=dynamic_shapes)
    except Exception as e:  # noqa: BLE001 - torch.export raises many kinds
        raise RefusedError(export_failure(type(module).__name__, e)) from None


def export_failure(module_name, error):
    """The message for torch.export's `error` on `module_name`."""
    text = str(error).strip()
    cache = re.search(r"Found <class '([\w.]*Cache)'> in output", text)
    if cache:
        return (f"{module_name} returns a {cache.group(1).rsplit('.', 1)[-1]} (a KV cache), "
                "which cgc cannot return: compile it with use_cache=False (as a forward "
                "argument or in its config)")
    if len(text) > 2000:
        text = text[:2000] + " ..."
    return f"torch.export could not export {module_name}: {type(error).__name__}: {text}"


def decomposition_table():
    """Core ATen's decompositions but for the composites cgc has ops for
    (KEPT): what cgc.export and the torch.compile backend both lower."""
    table = torch.export.default_decompositions()
    for name in KEPT:
        packet = getattr(torch.ops.aten, name, None)  # rms_norm: torch 2.4 and later
        for overload in packet.overloads() if packet is not None else []:
            table.pop(getattr(packet, overload), None)
    return table


def decompose(ep):
    """Core ATen, keeping the composites cgc has ops for."""
    try:
        return ep.run_decompositions(decomposition_table())
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
    nodes = graph_nodes(ep.graph, rename)
    signature = ep.graph_signature
    return {"record_version": RECORD_VERSION, "module": module_name,
            "inputs": [{"name": s.arg.name, "kind": input_kind(s.kind), "target": s.target}
                       for s in signature.input_specs],
            "outputs": [{"name": s.arg.name, "kind": s.kind.name.lower(), "target": s.target}
                        for s in signature.output_specs],
            "range_constraints": dict(sorted(
                (sym_text(sym, rename), {"min": bound(r.lower), "max": bound(r.upper)})
                for sym, r in ep.range_constraints.items())),
            "nodes": nodes}


def graph_nodes(graph, rename):
    """Every node of the fx `graph` as the record writes it."""
    library = os.path.dirname(os.path.abspath(torch.__file__))
    return [{"op": n.op, "name": n.name, "target": target_name(n),
             "args": encode(list(n.args), rename, n.name),
             "kwargs": {k: encode(v, rename, n.name) for k, v in n.kwargs.items()},
             "val": encode_val(n.meta.get("val"), rename, n.name),
             "source": source_line(n, library)} for n in graph.nodes]


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
    """An fx argument of node `where` as JSON (record.py)."""
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
        out[spec.target] = weight_value(tensor)
    return out


def weight_value(tensor):
    """A weight's value for the safetensors writer: a NumPy array, or for
    bfloat16 (which NumPy has not) its bit patterns; a complex64 one as
    its parts, last (aten_complex.py's layout)."""
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.complex64:
        return torch.view_as_real(tensor).contiguous().numpy()
    if tensor.dtype == torch.bfloat16:
        return BFloat16(tensor.view(torch.int16).numpy().view("uint16"))
    return tensor.numpy()
