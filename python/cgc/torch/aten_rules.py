"""The ATen rules of the torch.export way in: each ATen op of a program
record (record.py) as cgc ops, built on export.py's Lowering
(`e`) from a RecordNode (`n`); PyTorch's type promotion where operands
differ. An op without a rule is refused by export.py."""
import math

from ..ir_builder import json_number, registrar
from ..errors import RefusedError
from .record import RecordNode, Sym, TorchValue

ATEN = {}
# Calls outside ATen that libraries register as custom ops, by their whole
# target ("transformers.grouped_mm_fallback.default").
CALLS = {}
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
                    "erf": "erf", "sin": "sin", "cos": "cos"}.items():
    ATEN[_aten] = unary(_cgc)


def truth(e, v):
    """A value's truth as PyTorch's logical ops read it: nonzero."""
    if not isinstance(v, RecordNode):
        return e.scalar(bool(v), "bool")
    x = e.operand(v)
    return x if e.dtype(v) == "bool" else e.op("ne", [x, e.scalar(0, e.dtype(v))])


def logical(op):
    """logical_and, _or, _xor and _not: of their operands' truth, any dtype."""
    arity = 1 if op == "logical_not" else 2

    def fn(e, n):
        if len(n.args) != arity:
            raise RefusedError(f"{n.target} takes {arity} operand(s); the record gives "
                               f"{len(n.args)}")
        return e.op(op, [truth(e, v) for v in n.args], name=n.name)
    return fn


for _aten, _cgc in {"logical_and": "logical_and", "logical_or": "logical_or",
                    "logical_xor": "ne", "logical_not": "logical_not"}.items():
    ATEN[_aten] = logical(_cgc)


def identity_on_integers(op):
    """floor, ceil and round: the identity on integer tensors, as in PyTorch."""
    def fn(e, n):
        x = e.operand(n.args[0])
        return x if e.dtype(n.args[0]) in ("i32", "i64", "bool") else e.op(op, [x], name=n.name)
    return fn


for _aten in ("floor", "ceil", "round"):
    ATEN[_aten] = identity_on_integers(_aten)


COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
ORDERINGS = {"lt", "le", "gt", "ge"}


def binary(op):
    """PyTorch's type promotion: arithmetic computes in the result's dtype
    (int / int divides as floats), comparisons in their operands' promoted
    dtype; Python numbers take that dtype."""
    def fn(e, n):
        a, b = n.args[:2]
        if op in COMPARISONS:
            dtypes = [e.dtype(v) for v in (a, b) if isinstance(v, RecordNode)]
            compute = "f32" if any(isinstance(v, float) for v in (a, b)) and \
                all(d in ("i32", "i64", "bool") for d in dtypes) else promote(dtypes)
            if compute == "bool" and op in ORDERINGS:  # False < True, as integers
                compute = "i32"
        else:
            compute = e.dtype(n)
        x, y = (e.as_dtype(v, compute) for v in (a, b))
        if op not in COMPARISONS:
            check_category(op, compute, [e.dtype(v) if isinstance(v, RecordNode) else v
                                         for v in (a, b)])
            check_promotion(e, op, compute, (a, b))
        alpha = n.kwargs.get("alpha", 1)
        if alpha != 1:
            y = e.op("mul", [y, e.scalar(alpha, compute)])
        return e.op(op, [x, y], name=n.name)
    return fn


# PyTorch's promotion categories: the result of arithmetic is of its
# operands' highest (true division's is a float).
CATEGORY = {"bool": 0, "i32": 1, "i64": 1, "f16": 2, "bf16": 2, "f32": 2}


def check_category(op, recorded, operands):
    """Refuses an arithmetic node whose recorded result dtype is not of
    the category PyTorch's promotion gives its operands (IR dtypes, or
    Python numbers): the rule computes in the recorded dtype, so a record
    that disagrees would be followed silently."""
    def category(v):
        if isinstance(v, str):
            return CATEGORY.get(v, 2)
        return 0 if isinstance(v, bool) else 1 if isinstance(v, int) else 2
    want = 2 if op == "div" else max(category(v) for v in operands)
    if CATEGORY.get(recorded, 2) != want:
        kinds = ("bool", "integer", "float")
        raise RefusedError(f"the record gives the result dtype {recorded}, but {op} of "
                           f"these operands gives a {kinds[want]} result")


def check_promotion(e, op, recorded, operands):
    """Refuses an arithmetic node whose recorded result dtype is not the
    one PyTorch's promotion gives its operands, where that is decidable
    here: every tensor operand of rank 1 or more (a 0-d tensor promotes
    like a number, and its record may not say so)."""
    tensors = [v for v in operands if isinstance(v, RecordNode)]
    if not tensors or any(not e.shape(v) for v in tensors):
        return
    want = promoted(op, [e.dtype(v) for v in tensors],
                    [v for v in operands if not isinstance(v, RecordNode)])
    if want is not None and want != recorded:
        raise RefusedError(f"the record gives the result dtype {recorded}, but {op} of these "
                           f"operands gives {want}")


def promoted(op, tensor_dtypes, numbers):
    """PyTorch's result dtype of arithmetic `op` on tensors of rank >= 1
    of `tensor_dtypes` and Python `numbers` (f32 as the default float
    dtype, i64 the default integer); None for a number of another kind."""
    floats = sorted({d for d in tensor_dtypes if CATEGORY.get(d) == 2})
    if floats:
        result = floats[0] if len(floats) == 1 else "f32"  # f16 with bf16 gives f32
    else:
        result = next(d for d in ("i64", "i32", "bool") if d in tensor_dtypes)
    for v in numbers:
        if not isinstance(v, (bool, int, float)):
            return None
        kind = 0 if isinstance(v, bool) else 1 if isinstance(v, int) else 2
        if kind > CATEGORY[result]:
            result = "f32" if kind == 2 else "i64"
    if op == "div" and CATEGORY[result] < 2:
        result = "f32"
    return result


def promote(dtypes):
    for d in ("f32", "bf16", "f16", "i64", "i32", "bool"):
        if d in dtypes:
            return d
    return "f32"


for _aten, _cgc in {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow",
                    "maximum": "maximum", "minimum": "minimum", "eq": "eq", "ne": "ne",
                    "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}.items():
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
    like = a if isinstance(a, RecordNode) else b
    return e.op("where", [e.operand(c), e.operand(a, like), e.operand(b, like)], name=n.name)


@aten("_to_copy", "to")
def to_copy(e, n):
    """A cast to the dtype its arguments give (the input's where none
    does); the record's val is declared on it and checked, not followed."""
    from ..dtypes import IR_OF_TORCH as DTYPE
    given = n.kwargs.get("dtype", next((a for a in n.args[1:] if isinstance(a, TorchValue)
                                        and a.kind == "dtype"), None))
    if given is None:
        dtype = e.dtype(n.args[0])
    elif not isinstance(given, TorchValue) or DTYPE.get(given.text) is None:
        raise RefusedError(f"a cast to {given!r}, a dtype cgc has not")
    else:
        dtype = DTYPE[given.text]
    return e.op("cast", [e.operand(n.args[0])], {"dtype": dtype}, name=n.name)


@aten("clone", "alias", "detach", "contiguous", "lift_fresh_copy")
def identity(e, n):
    return e.operand(n.args[0])


@aten("_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size")
def assertion(e, n):
    return None  # Checks of the export's own metadata: nothing to compute.


@aten("linear")
def linear(e, n):
    operands = [a for a in n.args if a is not None]
    if not 2 <= len(operands) <= 3:
        raise RefusedError(f"linear takes an input, a weight and an optional bias; the record "
                           f"gives {len(operands)} operands")
    return e.op("linear", [e.operand(a) for a in operands], name=n.name)


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
    name = n.target
    if "permute" in name:
        perm = [d % rank for d in n.args[1]]
    else:
        perm = list(range(rank))
        if rank >= 2:
            i, j = (n.args[1] % rank, n.args[2] % rank) if "transpose" in name else (0, 1)
            perm[i], perm[j] = perm[j], perm[i]
    return e.op("transpose", [e.operand(n.args[0])], {"perm": perm}, name=n.name)


def check_sizes(n, sizes, keep=None):
    """Refuses a node whose recorded result shape disagrees with the sizes
    its arguments give (a view's or expand's target, a full's size),
    where both are numbers: -1 (a view's inferred dim, an expand's kept
    one) and symbolic sizes are not compared. `keep`: the input's shape,
    for expand's leading new dims."""
    shape = list(n.val.shape)
    if not isinstance(sizes, (list, tuple)) or len(sizes) != len(shape):
        raise RefusedError(f"the sizes {sizes!r} do not give the recorded shape {shape}")
    for given, recorded in zip(sizes, shape):
        if isinstance(given, int) and not isinstance(given, bool) and given >= 0 and \
                isinstance(recorded, int) and given != recorded:
            raise RefusedError(f"the sizes {list(sizes)} do not give the recorded shape {shape}")


def element_count(shape):
    total = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        total *= d
    return total


@aten("view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "flatten")
def reshape(e, n):
    x = n.args[0]
    if n.target.split(".")[1] in ("view", "_unsafe_view", "reshape") and len(n.args) > 1:
        check_sizes(n, n.args[1])
    before, after = element_count(e.shape(x)), element_count(e.shape(n))
    if before is not None and after is not None and before != after:
        raise RefusedError(f"a view of {before} elements recorded with {after}")
    return e.op("reshape", [e.operand(x)], {"shape": e.shape(n)}, name=n.name)


@aten("expand")
def expand(e, n):
    if len(n.args) > 1:
        check_sizes(n, n.args[1])
    return e.op("broadcast_to", [e.operand(n.args[0])], {"shape": e.shape(n)}, name=n.name)


def normalized(op):
    """softmax and log_softmax along one dim (checked: an integer of the
    tensor's rank)."""
    def fn(e, n):
        x = n.args[0]
        axis = reduced_axes(n.args[1], len(e.shape(x)))[0]
        return e.op(op, [e.operand(x)], {"axis": axis}, name=n.name)
    return fn


ATEN["_softmax"] = ATEN["softmax"] = normalized("softmax")
ATEN["_log_softmax"] = ATEN["log_softmax"] = normalized("log_softmax")


def reduction_attrs(e, n):
    """A reduction's {"axes", "keepdim"} from (x, dim=None, keepdim=False):
    every dim where `dim` is None or [] (sum.dim_IntList's "every dim")."""
    return reduction_attrs_at(e, n, 1)


def reduction_attrs_at(e, n, at):
    """reduction_attrs where `dim` is argument `at` and keepdim the next."""
    rank = len(e.shape(n.args[0]))
    dims = n.args[at] if len(n.args) > at else n.kwargs.get("dim")
    if not dims:
        dims = list(range(rank))
    keep = bool(n.args[at + 1]) if len(n.args) > at + 1 else bool(n.kwargs.get("keepdim", False))
    return {"axes": sorted(reduced_axes(dims, rank)), "keepdim": keep}


def reduction(op):
    def fn(e, n):
        x = n.args[0]
        # PyTorch sums bools and narrower integers as int64, and casts to a
        # `dtype` given: in the result's dtype.
        v = e.as_dtype(x, e.dtype(n)) if op in ("sum", "mean") else e.operand(x)
        return e.op(op, [v], reduction_attrs(e, n), name=n.name)
    return fn


def reduced_axes(dims, rank):
    """A reduction's (or select's) dims, integers in [-rank, rank), as axes
    in [0, rank); refuses any other."""
    dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or not -max(rank, 1) <= d < max(rank, 1):
            raise RefusedError(f"dim {d!r} of a tensor of rank {rank}")
    return [d % max(rank, 1) for d in dims]


def truth_reduction(op):
    """any (op "max") or all ("min") over dims: whether some or every
    element is nonzero, as the max or min of 0/1 in i32."""
    def fn(e, n):
        x = n.args[0]
        v = e.operand(x)
        if e.dtype(x) != "bool":
            v = e.op("ne", [v, e.scalar(0, e.dtype(x))])
        v = e.op(op, [e.op("cast", [v], {"dtype": "i32"})], reduction_attrs(e, n))
        return e.op("cast", [v], {"dtype": "bool"}, name=n.name)
    return fn


ATEN["any"] = ATEN["any.dims"] = truth_reduction("max")
ATEN["all"] = ATEN["all.dims"] = truth_reduction("min")
ATEN["mean"] = reduction("mean")
ATEN["sum"] = reduction("sum")
ATEN["amax"] = reduction("max")
ATEN["amin"] = reduction("min")


@aten("linalg_vector_norm")
def vector_norm(e, n):
    """torch.linalg.vector_norm(x, ord, dim, keepdim, dtype): ord 2 as
    sqrt(sum(x * x)), 1 as sum(|x|), inf and -inf as max and min of |x|,
    another p > 0 as sum(|x|^p)^(1/p); in the result's dtype."""
    x = n.args[0]
    order = n.args[1] if len(n.args) > 1 else n.kwargs.get("ord", 2)
    attrs = reduction_attrs_at(e, n, 2)
    v = e.as_dtype(x, e.dtype(n))
    if order == 2:
        total = e.op("sum", [e.op("mul", [v, v])], attrs)
        return e.op("sqrt", [total], name=n.name)
    magnitude = e.op("abs", [v])
    if order == 1:
        return e.op("sum", [magnitude], attrs, name=n.name)
    if order in (math.inf, -math.inf):
        return e.op("max" if order > 0 else "min", [magnitude], attrs, name=n.name)
    if not isinstance(order, (int, float)) or not order > 0:
        raise RefusedError(f"a vector norm of order {order!r} (cgc takes p > 0 and inf)")
    powered = e.op("pow", [magnitude, e.scalar(float(order), e.dtype(n))])
    total = e.op("sum", [powered], attrs)
    return e.op("pow", [total, e.scalar(1.0 / order, e.dtype(n))], name=n.name)


@aten("prod", "prod.dim_int")
def prod(e, n):
    """prod of a float tensor over all dims or one (cgc's prod is float)."""
    x = n.args[0]
    if e.dtype(n) != e.dtype(x) or e.dtype(x) not in ("f32", "f16", "bf16"):
        raise RefusedError(f"prod of {e.dtype(x)} into {e.dtype(n)} (cgc's prod keeps a "
                           "float dtype)")
    rank = len(e.shape(x))
    dims = reduced_axes(n.args[1], rank) if len(n.args) > 1 and rank else list(range(rank))
    keep = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    return e.op("prod", [e.operand(x)], {"axes": dims, "keepdim": keep}, name=n.name)


@aten("embedding")
def embedding(e, n):
    """embedding(weight, indices, padding_idx=-1, scale_grad_by_freq, sparse):
    padding_idx's row gets no gradient (an attribute the derivative reads)."""
    padding = n.args[2] if len(n.args) > 2 else n.kwargs.get("padding_idx", -1)
    if (n.args[3] if len(n.args) > 3 else n.kwargs.get("scale_grad_by_freq", False)):
        raise RefusedError("embedding with scale_grad_by_freq")
    attrs = {"padding_idx": int(padding)} if padding is not None and padding >= 0 else {}
    return e.op("embedding", [e.operand(n.args[0]), e.operand(n.args[1])], attrs, name=n.name)


@aten("cat")
def cat(e, n):
    """torch.cat: a 1-D tensor of no elements is skipped whatever its dim
    (PyTorch's legacy rule; XLM concatenates onto one)."""
    dim = n.args[1] if len(n.args) > 1 else 0
    parts = [a for a in n.args[0] if e.shape(a) != [0]]
    if not parts:
        return e.operand(n.args[0][0])
    axis = reduced_axes(dim, len(e.shape(parts[0])))[0]
    return e.op("concat", [e.operand(a) for a in parts], {"axis": axis}, name=n.name)


@aten("slice")
def slice_(e, n):
    x, dim = n.args[0], n.args[1] if len(n.args) > 1 else 0
    start, end, step = (size_text(e, n.args[k]) if len(n.args) > k and n.args[k] is not None
                        else default for k, default in ((2, 0), (3, 2 ** 62), (4, 1)))
    dim = reduced_axes(dim, len(e.shape(x)))[0]
    if isinstance(end, str) and isinstance(start, int) and isinstance(step, int):
        return slice_to_size(e, n, x, dim, start, end, step)
    if not all(isinstance(v, int) for v in (start, end, step)):
        raise RefusedError("a slice bound computed when the graph runs (from a symbolic size)")
    extent = e.shape(x)[dim]
    if not isinstance(extent, int) and (start < 0 or end < 0):
        raise RefusedError(f"a slice from the end of dynamic dim {extent} (cgc slices a dynamic "
                           "dim from its start)")
    if start == 0 and step == 1 and end >= 2 ** 62 and not isinstance(extent, int):
        return e.operand(x)  # x[:] of a dynamic dim (AOTAutograd's graphs keep those)
    return e.op("slice", [e.operand(x)], {"starts": [start], "ends": [min(end, 2 ** 62)],
                                          "axes": [dim], "steps": [step]}, name=n.name)


def size_text(e, value):
    """A slice bound as a number, or as the text of the size it reads
    (a dim's name, or an expression of dims)."""
    if isinstance(value, RecordNode) and value.name in e.sizes:
        return e.sizes[value.name]
    return value.expr if isinstance(value, Sym) else value


def slice_to_size(e, n, x, dim, start, end, step):
    """x[start:end:step] along `dim` where `end` is a symbolic size (BERT's
    `position_ids[:, :seq_length]`): the whole dim where it is that dim
    from 0; from a static dim, a `gather` at start + step * iota over the
    result's extent, refused unless the dim holds the range at its max (no
    clamping happens when the graph runs)."""
    extent, result = e.shape(x)[dim], e.shape(n)[dim]
    if extent == result and start == 0 and step == 1:
        return e.operand(x)
    if not isinstance(extent, int) or not isinstance(result, str) or start < 0 or step <= 0:
        raise RefusedError(f"a slice [{start}:{end}:{step}] of dim {extent} into {result} (cgc "
                           "slices to a symbolic end from a static dim, or a whole dynamic dim)")
    last = start + step * (e.dims[result]["max"] - 1)
    if last >= extent:
        raise RefusedError(f"a slice [{start}:{end}:{step}] of a dim of extent {extent} reads "
                           f"index {last} at the max of {result} ({e.dims[result]['max']}): "
                           f"give {result} a max the dim holds")
    index = e.op("iota", [], {"dtype": "i64", "shape": [result], "axis": 0})
    if step != 1:
        index = e.op("mul", [index, e.scalar(step, "i64")])
    if start != 0:
        index = e.op("add", [index, e.scalar(start, "i64")])
    return e.op("gather", [e.operand(x), index], {"axis": dim}, name=n.name)


@aten("split_with_sizes", "split")
def split(e, n):
    x, sizes = n.args[0], n.args[1]
    dim = n.args[2] if len(n.args) > 2 else n.kwargs.get("dim", 0)
    dim %= len(e.shape(x))
    extent = e.shape(x)[dim]
    if not isinstance(extent, int):
        raise RefusedError(f"a split of dynamic dim {extent}")
    if isinstance(sizes, int):
        pieces = len(n.val) if isinstance(n.val, list) else 0
        if sizes <= 0 or -(-extent // sizes) != pieces:  # (before making the list)
            raise RefusedError(f"a split of {extent} by {sizes} recorded with {pieces} results")
        sizes = [min(sizes, extent - k) for k in range(0, extent, sizes)]
    if not all(isinstance(size, int) for size in sizes):
        raise RefusedError("a split into sizes computed when the graph runs (data-dependent "
                           "shapes, such as a mixture of experts' tokens per expert: cgc "
                           "compiles static shapes)")
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
    dim = reduced_axes(dim, rank)[0]
    extent = e.shape(x)[dim]
    if isinstance(index, bool) or not isinstance(index, int):
        raise RefusedError(f"a select index {index!r}")
    if not isinstance(extent, int) and index < 0:
        raise RefusedError(f"an index from the end of dynamic dim {extent} (cgc indexes a "
                           "dynamic dim from its start)")
    if isinstance(extent, int) and not -extent <= index < extent:
        raise RefusedError(f"index {index} out of range for dim {dim} of extent {extent}")
    index = index % extent if isinstance(extent, int) else index
    s = e.op("slice", [e.operand(x)], {"starts": [int(index)], "ends": [int(index) + 1],
                                       "axes": [dim]})
    # The result's shape computed, not the record's (declare() checks that).
    result = e.shape(x)[:dim] + e.shape(x)[dim + 1:]
    return e.op("reshape", [s], {"shape": result}, name=n.name)


@aten("full", "zeros", "ones", "scalar_tensor", "full_like", "zeros_like", "ones_like")
def full(e, n):
    name = n.target
    value = 0 if "zeros" in name else 1 if "ones" in name else n.args[-1] if "full" in name else n.args[0]
    if name.split(".")[1] in ("full", "zeros", "ones") and n.args:
        check_sizes(n, n.args[0])
    return e.op("fill", [], {"dtype": e.dtype(n), "shape": e.shape(n),
                             "value": json_number(value, "f32")}, name=n.name)


@aten("empty.memory_format", "empty_permuted", "empty_like", "empty_strided", "new_empty")
def empty(e, n):
    """An uninitialized tensor: zeros (any value is PyTorch's)."""
    return e.op("fill", [], {"dtype": e.dtype(n), "shape": e.shape(n), "value": 0},
                name=n.name)
