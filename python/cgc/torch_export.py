"""torch.export programs into cgc's JSON IR (docs/python.md).

    cgc.export(module, example_args, "model.json")   # + model.safetensors

The module is exported with `torch.export` and decomposed to Core ATen,
except for the composites cgc has ops of its own for (linear, layer_norm,
gelu, softmax), so that fusion sees their elementwise neighbours; each
ATen op maps onto cgc ops (ATEN below). Parameters and buffers become
persistent inputs whose values are written to a safetensors file beside
the IR; user inputs keep their placeholder names; dims declared dynamic
with `torch.export.Dim` become symbolic dims with the exported bounds. An
ATen op with no mapping is refused by name, with the user's source line.
"""
import json
import os
import re

from .ir_builder import IRBuilder, json_number, registrar, safe_name
from .onnx_types import RefusedError
from .safetensors import write_safetensors

DTYPE = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
         "torch.int32": "i32", "torch.int64": "i64", "torch.bool": "bool"}


class Exporter(IRBuilder):
    def __init__(self, ep):
        super().__init__()
        self.ep = ep
        self.weights, self.dims = {}, {}
        self.value = {}   # fx node name -> cgc value name

    def op(self, op, inputs, attrs=None, name=None):
        return self.node(op, inputs, attrs, name)

    def scalar(self, value, dtype):
        return self.op("constant", [], {"dtype": dtype, "shape": [],
                                        "value": json_number(value, dtype)}, "scalar")

    # -- types

    def dim(self, d):
        if isinstance(d, int):
            return d
        expr = str(d.node.expr) if hasattr(d, "node") else str(d)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", expr):
            raise RefusedError(f"a dim computed from others ({expr}); cgc takes declared dims only")
        if expr not in self.dims:
            lo, hi = self.bounds(expr)
            self.dims[expr] = {"name": expr, "min": lo, "max": hi}
        return expr

    def bounds(self, symbol):
        for sym, rng in self.ep.range_constraints.items():
            if str(sym) == symbol:
                hi = rng.upper
                if not str(hi).isdigit():
                    raise RefusedError(f"dim {symbol} has no upper bound: give torch.export.Dim a max")
                return int(rng.lower), int(hi)
        raise RefusedError(f"dim {symbol} has no range")

    def type_of(self, fx_node):
        val = fx_node.meta.get("val")
        if val is None or not hasattr(val, "shape"):
            raise RefusedError(f"'{fx_node.name}' is not a tensor")
        dtype = DTYPE.get(str(val.dtype))
        if dtype is None:
            raise RefusedError(f"'{fx_node.name}' has dtype {val.dtype}, which cgc has not")
        return dtype, [self.dim(d) for d in val.shape]

    def dtype(self, fx_node):
        return self.type_of(fx_node)[0]

    def shape(self, fx_node):
        return self.type_of(fx_node)[1]

    # -- the program

    def run(self):
        import torch
        from torch.export.graph_signature import InputKind
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs}
        state = dict(self.ep.state_dict)
        state.update(getattr(self.ep, "constants", {}))
        for n in self.ep.graph.nodes:
            self.loc = source_line(n)
            if n.op == "placeholder":
                self.placeholder(n, specs.get(n.name), state, InputKind)
            elif n.op == "call_function":
                self.call(n, torch)
            elif n.op == "output":
                return self.outputs(n)
        raise RefusedError("the program has no output")

    def placeholder(self, n, spec, state, InputKind):
        dtype, shape = self.type_of(n)
        name = self.fresh(n.name)
        entry = {"name": name, "dtype": dtype, "shape": shape}
        if spec is not None and spec.kind != InputKind.USER_INPUT:
            tensor = state.get(spec.target)
            if tensor is None:
                raise RefusedError(f"no value for {spec.kind.name.lower()} '{spec.target}'")
            entry["kind"] = "parameter" if spec.kind == InputKind.PARAMETER else "buffer"
            entry["weight"] = name
            array = tensor.detach().cpu()
            self.weights[name] = array.float().numpy() if dtype == "bf16" else array.numpy()
            if dtype == "bf16":
                raise RefusedError(f"bfloat16 {entry['kind']} '{spec.target}' (the weights file "
                                   "is written from NumPy, which has no bfloat16)")
        self.inputs.append(entry)
        self.value[n.name] = name

    def as_dtype(self, a, dtype):
        """An fx argument as a cgc value of `dtype` (cast, or a constant)."""
        if not hasattr(a, "op"):
            return self.scalar(a, dtype)
        v = self.value[a.name]
        return v if self.dtype(a) == dtype else self.op("cast", [v], {"dtype": dtype})

    def operand(self, a, like=None):
        """The cgc value of an fx argument: a node, or a Python number made
        a constant of `like`'s dtype."""
        if hasattr(a, "op"):
            return self.value[a.name]
        dtype = self.dtype(like) if like is not None else ("f32" if isinstance(a, float) else "i64")
        return self.scalar(a, dtype)

    def call(self, n, torch):
        target = n.target
        key = getattr(target, "__name__", str(target))
        if key == "getitem":
            base, index = n.args
            v = self.value.get(f"{base.name}#{index}")
            if v is None:
                raise RefusedError(f"node '{n.name}': result #{index} of '{base.name}' "
                                   "(a layer_norm's mean or rstd) has no cgc value")
            self.value[n.name] = v
            return
        overload = str(target).replace("aten.", "", 1) if hasattr(target, "_schema") else key
        base, _, variant = overload.partition(".")
        rule = ATEN.get(overload) or (ATEN.get(base) if variant in PLAIN_OVERLOADS else None)
        where = f" ({self.loc})" if self.loc else ""
        if rule is None:
            raise RefusedError(f"node '{n.name}': the ATen op {overload} has no cgc mapping{where}")
        try:
            out = rule(self, n)
        except RefusedError as e:
            raise RefusedError(f"node '{n.name}' ({overload}): {e}{where}") from None
        if isinstance(out, (list, tuple)):
            for k, v in enumerate(out):
                self.value[f"{n.name}#{k}"] = v
        else:
            self.value[n.name] = out

    def outputs(self, n):
        out = []
        from torch.export.graph_signature import OutputKind
        specs = self.ep.graph_signature.output_specs
        for spec, a in zip(specs, n.args[0]):
            if spec.kind != OutputKind.USER_OUTPUT:
                raise RefusedError(f"output '{spec.arg.name}' mutates state "
                                   f"({spec.kind.name.lower()}); export in eval mode")
            v = self.value[a.name]
            name = safe_name(a.name)
            out.append(v if v == name else {"name": name, "value": v})
        return out


def source_line(n):
    trace = n.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    return f"{os.path.basename(frames[-1][0])}:{frames[-1][1]}" if frames else None


# ---- the ATen ops

ATEN = {}
# Overloads a rule registered under the base name takes; any other (such
# as div.Tensor_mode, whose rounding the rule would drop) must be listed
# by its full name, or it is refused.
PLAIN_OVERLOADS = {"default", "Tensor", "Scalar", "int", "dim", "dim_IntList", "self",
                   "Tensor_Scalar", "Tensor_Tensor", "Scalar_Tensor", "using_ints", "vec"}


aten = registrar(ATEN)


def unary(op):
    return lambda e, n: e.op(op, [e.operand(n.args[0])], name=n.name)


for _aten, _cgc in {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "exp": "exp",
                    "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "neg": "neg", "abs": "abs",
                    "erf": "erf", "sin": "sin", "cos": "cos", "logical_not": "logical_not"}.items():
    ATEN[_aten] = unary(_cgc)


COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"}


def binary(op):
    """PyTorch's type promotion: arithmetic computes in the result's dtype
    (int / int divides as floats), comparisons in their operands' promoted
    dtype; Python numbers take that dtype."""
    def fn(e, n):
        a, b = n.args[:2]
        if op in COMPARISONS:
            dtypes = [e.dtype(v) for v in (a, b) if hasattr(v, "op")]
            compute = "f32" if any(isinstance(v, float) for v in (a, b)) and \
                all(d in ("i32", "i64", "bool") for d in dtypes) else promote(dtypes)
        else:
            compute = e.dtype(n)
        x, y = (e.as_dtype(v, compute) for v in (a, b))
        alpha = n.kwargs.get("alpha", 1)
        if alpha != 1:
            y = e.op("mul", [y, e.scalar(alpha, compute)])
        return e.op(op, [x, y], name=n.name)
    return fn


def promote(dtypes):
    for d in ("f32", "bf16", "f16", "i64", "i32", "bool"):
        if d in dtypes:
            return d
    return "f32"


for _aten, _cgc in {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow",
                    "maximum": "maximum", "minimum": "minimum", "eq": "eq", "ne": "ne",
                    "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
                    "logical_and": "logical_and", "logical_or": "logical_or"}.items():
    ATEN[_aten] = binary(_cgc)


@aten("rsub")
def rsub(e, n):
    a, b = n.args[:2]
    return e.op("sub", [e.operand(b, a), e.operand(a)], name=n.name)


@aten("gelu")
def gelu(e, n):
    tanh = n.kwargs.get("approximate", "none") == "tanh"
    return e.op("gelu_tanh" if tanh else "gelu", [e.operand(n.args[0])], name=n.name)


@aten("where.self")
def where(e, n):
    c, a, b = n.args
    like = a if hasattr(a, "op") else b
    return e.op("where", [e.operand(c), e.operand(a, like), e.operand(b, like)], name=n.name)


@aten("_to_copy", "to")
def to_copy(e, n):
    return e.op("cast", [e.operand(n.args[0])], {"dtype": e.dtype(n)}, name=n.name)


@aten("clone", "alias", "detach", "contiguous", "lift_fresh_copy", "dropout")
def identity(e, n):
    if "dropout" in str(n.target) and len(n.args) > 2 and n.args[2]:
        raise RefusedError("dropout in training mode; export the module in eval mode")
    return e.operand(n.args[0])


@aten("_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size")
def assertion(e, n):
    return None  # Checks of the export's own metadata: nothing to compute.


@aten("linear")
def linear(e, n):
    return e.op("linear", [e.operand(a) for a in n.args if a is not None], name=n.name)


@aten("mm", "bmm", "matmul")
def matmul(e, n):
    return e.op("matmul", [e.operand(n.args[0]), e.operand(n.args[1])], name=n.name)


@aten("addmm")
def addmm(e, n):
    bias, a, b = n.args[:3]
    beta, alpha = n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1)
    if beta != 1 or alpha != 1:
        raise RefusedError("addmm with alpha or beta")
    prod = e.op("matmul", [e.operand(a), e.operand(b)])
    return e.op("add", [prod, e.operand(bias)], name=n.name)


@aten("t", "permute", "transpose")
def transpose(e, n):
    rank = len(e.shape(n.args[0]))
    name = str(n.target)
    if "permute" in name:
        perm = [d % rank for d in n.args[1]]
    else:
        perm = list(range(rank))
        if rank >= 2:
            i, j = (n.args[1] % rank, n.args[2] % rank) if "transpose" in name else (0, 1)
            perm[i], perm[j] = perm[j], perm[i]
    return e.op("transpose", [e.operand(n.args[0])], {"perm": perm}, name=n.name)


@aten("view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "flatten")
def reshape(e, n):
    return e.op("reshape", [e.operand(n.args[0])], {"shape": e.shape(n)}, name=n.name)


@aten("expand")
def expand(e, n):
    return e.op("broadcast_to", [e.operand(n.args[0])], {"shape": e.shape(n)}, name=n.name)


@aten("_softmax", "softmax")
def softmax(e, n):
    return e.op("softmax", [e.operand(n.args[0])], {"axis": int(n.args[1])}, name=n.name)


@aten("_log_softmax", "log_softmax")
def log_softmax(e, n):
    return e.op("log_softmax", [e.operand(n.args[0])], {"axis": int(n.args[1])}, name=n.name)


@aten("layer_norm", "native_layer_norm")
def layer_norm(e, n):
    x, normalized = n.args[0], n.args[1]
    w = n.args[2] if len(n.args) > 2 else None
    b = n.args[3] if len(n.args) > 3 else None
    eps = n.args[4] if len(n.args) > 4 else n.kwargs.get("eps", 1e-5)
    operands = [e.operand(x)]
    if w is not None:
        operands.append(e.operand(w))
        if b is not None:
            operands.append(e.operand(b))
    elif b is not None:
        raise RefusedError("a layer_norm with a bias and no weight")
    y = e.op("layernorm", operands, {"axis": -len(normalized), "eps": float(eps)}, name=n.name)
    if "native" in str(n.target):
        return [y, None, None]  # its mean and rstd: refused if read (getitem of None)
    return y


def reduction(op):
    def fn(e, n):
        x = n.args[0]
        rank = len(e.shape(x))
        dims = n.args[1] if len(n.args) > 1 and n.args[1] is not None else list(range(rank))
        keep = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
        return e.op(op, [e.operand(x)], {"axes": sorted(d % rank for d in dims), "keepdim": keep},
                    name=n.name)
    return fn


ATEN["mean"] = reduction("mean")
ATEN["sum"] = reduction("sum")
ATEN["amax"] = reduction("max")
ATEN["amin"] = reduction("min")


@aten("embedding")
def embedding(e, n):
    return e.op("embedding", [e.operand(n.args[0]), e.operand(n.args[1])], name=n.name)


@aten("cat")
def cat(e, n):
    dim = n.args[1] if len(n.args) > 1 else 0
    return e.op("concat", [e.operand(a) for a in n.args[0]], {"axis": int(dim)}, name=n.name)


@aten("slice")
def slice_(e, n):
    x, dim = n.args[0], n.args[1] if len(n.args) > 1 else 0
    start = n.args[2] if len(n.args) > 2 and n.args[2] is not None else 0
    end = n.args[3] if len(n.args) > 3 and n.args[3] is not None else 2 ** 62
    step = n.args[4] if len(n.args) > 4 else 1
    end = min(int(end), 2 ** 62) if isinstance(end, int) else end
    return e.op("slice", [e.operand(x)], {"starts": [int(start)], "ends": [end],
                                          "axes": [int(dim)], "steps": [int(step)]}, name=n.name)


@aten("split_with_sizes", "split")
def split(e, n):
    x, sizes = n.args[0], n.args[1]
    dim = n.args[2] if len(n.args) > 2 else n.kwargs.get("dim", 0)
    dim %= len(e.shape(x))
    extent = e.shape(x)[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, extent - k) for k in range(0, extent, sizes)]
    outs, begin = [], 0
    for size in sizes:
        outs.append(e.op("slice", [e.operand(x)], {"starts": [begin], "ends": [begin + size],
                                                   "axes": [dim]}, name=n.name))
        begin += size
    return outs


@aten("select")
def select(e, n):
    x, dim, index = n.args
    rank = len(e.shape(x))
    dim %= rank
    extent = e.shape(x)[dim]
    index = index % extent if isinstance(extent, int) else index
    s = e.op("slice", [e.operand(x)], {"starts": [int(index)], "ends": [int(index) + 1],
                                       "axes": [dim]})
    return e.op("reshape", [s], {"shape": e.shape(n)}, name=n.name)


@aten("full", "zeros", "ones", "scalar_tensor", "full_like", "zeros_like", "ones_like")
def full(e, n):
    name = str(n.target)
    value = 0 if "zeros" in name else 1 if "ones" in name else n.args[-1] if "full" in name else n.args[0]
    return e.op("fill", [], {"dtype": e.dtype(n), "shape": e.shape(n), "value": float(value)},
                name=n.name)


def export(module, example_args, path, dynamic_shapes=None, example_kwargs=None):
    """Exports `module` on `example_args` with torch.export and writes the
    IR to `path` (and its weights beside it). Returns the IR dict."""
    import torch
    ep = torch.export.export(module, tuple(example_args), kwargs=example_kwargs,
                             dynamic_shapes=dynamic_shapes)
    ep = decompose(ep, torch)
    ex = Exporter(ep)
    outputs = ex.run()
    ir = {"format_version": 1, "name": safe_name(type(module).__name__),
          "inputs": ex.inputs, "nodes": ex.nodes, "outputs": outputs}
    if ex.dims:
        ir["dims"] = list(ex.dims.values())
    if ex.weights:
        wpath = os.path.splitext(path)[0] + ".safetensors"
        write_safetensors(wpath, ex.weights)
        ir["weights_file"] = os.path.basename(wpath)
    ir = {k: ir[k] for k in ("format_version", "name", "dims", "weights_file", "inputs",
                             "nodes", "outputs") if k in ir}
    with open(path, "w") as f:
        json.dump(ir, f, indent=1)
        f.write("\n")
    return ir


KEPT = ("linear", "layer_norm", "gelu", "_softmax", "_log_softmax")


def decompose(ep, torch):
    """Core ATen, keeping the composites cgc has ops for."""
    try:
        table = torch.export.default_decompositions()
        aten_ops = torch.ops.aten
        for name in KEPT:
            packet = getattr(aten_ops, name)
            for overload in packet.overloads():
                table.pop(getattr(packet, overload), None)
        return ep.run_decompositions(table)
    except (AttributeError, TypeError):
        return ep.run_decompositions()
