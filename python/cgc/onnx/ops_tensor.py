"""ONNX's normalizations, reductions, movement and sources, as cgc ops
(the products and window ops are ops_products.py's). Registered into
rules.RULES."""
import numpy as np

from .limits import check_constant_size
from .rules import (RULES, check_constant_indices, checked_axis, const, dtype, ints_operand,
                         need_float, rule, shape)
from .. import ranking
from ..errors import RefusedError

# ---- normalizations and reductions

def softmax_axis(ctx, x, attrs):
    rank = len(shape(ctx, x))
    axis = checked_axis(attrs.get("axis", -1 if ctx.opset >= 13 else 1), rank)
    if ctx.opset < 13 and axis != rank - 1:
        raise RefusedError("softmax over a coerced 2-D view (opset < 13, axis not last)")
    return axis


@rule("Softmax")
def softmax(ctx, ins, attrs):
    need_float(ctx, ins[0])
    return [ctx.op("softmax", [ins[0]], {"axis": softmax_axis(ctx, ins[0], attrs)})]


@rule("LogSoftmax")
def log_softmax(ctx, ins, attrs):
    need_float(ctx, ins[0])
    return [ctx.op("log_softmax", [ins[0]], {"axis": softmax_axis(ctx, ins[0], attrs)})]


@rule("Hardmax")
def hardmax(ctx, ins, attrs):
    x = ins[0]
    rank = len(shape(ctx, x))
    axis = softmax_axis(ctx, x, attrs)
    if axis % rank != rank - 1:
        raise RefusedError("Hardmax over an axis other than the last")
    idx = ctx.g.op("argmax", [x], {"axis": axis})
    return [ctx.op("one_hot", [idx], {"num_classes": shape(ctx, x)[-1], "dtype": dtype(ctx, x)})]


def normalized_stats(ctx, x, axis, eps):
    """mean and 1/sqrt(var + eps) over the axes from `axis` (kept as 1s)."""
    rank = len(shape(ctx, x))
    axes = list(range(checked_axis(axis, rank), rank))
    mean = ctx.g.op("mean", [x], {"axes": axes, "keepdim": True})
    d = ctx.g.op("sub", [x, mean])
    var = ctx.g.op("mean", [ctx.g.op("mul", [d, d])], {"axes": axes, "keepdim": True})
    inv = ctx.g.op("rsqrt", [ctx.g.op("add", [var, const(ctx, eps, x)])])
    return mean, inv


@rule("LayerNormalization")
def layer_norm(ctx, ins, attrs):
    if len(ctx.node.output) > 1 and any(ctx.node.output[1:]):
        return layer_norm_with_stats(ctx, ins, attrs)
    operands = [v for v in ins if v is not None]
    x = operands[0]
    axis = checked_axis(attrs.get("axis", -1), len(shape(ctx, x)))
    normalized = shape(ctx, x)[axis:]
    for k in range(1, len(operands)):  # scale and bias broadcast in ONNX
        if shape(ctx, operands[k]) != normalized:
            operands[k] = ctx.g.op("broadcast_to", [operands[k]], {"shape": normalized},
                                   dtype(ctx, operands[k]), normalized)
    return [ctx.op("layernorm", operands, {"axis": axis, "eps": float(attrs.get("epsilon", 1e-5))})]


def layer_norm_with_stats(ctx, ins, attrs):
    """LayerNormalization that also returns its Mean and InvStdDev: written
    out (in the input's dtype; stash_type 1 with f32 inputs)."""
    x = ins[0]
    need_float(ctx, x)
    if dtype(ctx, x) != "f32":
        raise RefusedError("Mean and InvStdDev of a non-f32 LayerNormalization")
    mean, inv = normalized_stats(ctx, x, int(attrs.get("axis", -1)),
                                 float(attrs.get("epsilon", 1e-5)))
    y = ctx.g.op("mul", [ctx.g.op("sub", [x, mean]), inv])
    if len(ins) > 1 and ins[1] is not None:
        y = ctx.g.op("mul", [y, ins[1]])
    if len(ins) > 2 and ins[2] is not None:
        y = ctx.g.op("add", [y, ins[2]])
    return [y, mean, inv][:len(ctx.node.output)]


@rule("RMSNormalization")
def rms_norm(ctx, ins, attrs):
    x = ins[0]
    need_float(ctx, x)
    rank = len(shape(ctx, x))
    axes = list(range(checked_axis(attrs.get("axis", -1), rank), rank))
    ms = ctx.g.op("mean", [ctx.g.op("mul", [x, x])], {"axes": axes, "keepdim": True})
    inv = ctx.g.op("rsqrt", [ctx.g.op("add", [ms, const(ctx, float(attrs.get("epsilon", 1e-5)), x)])])
    y = ctx.g.op("mul", [x, inv])
    return [ctx.op("mul", [y, ins[1]])]


@rule("LpNormalization")
def lp_norm(ctx, ins, attrs):
    x = ins[0]
    need_float(ctx, x)
    axis = checked_axis(attrs.get("axis", -1), len(shape(ctx, x)))
    p = int(attrs.get("p", 2))
    if p == 1:
        norm = ctx.g.op("sum", [ctx.g.op("abs", [x])], {"axes": [axis], "keepdim": True})
    elif p == 2:
        norm = ctx.g.op("sqrt", [ctx.g.op("sum", [ctx.g.op("mul", [x, x])],
                                          {"axes": [axis], "keepdim": True})])
    else:
        raise RefusedError(f"LpNormalization with p = {p}")
    zero = const(ctx, 0, x)
    return [ctx.op("where", [ctx.g.op("eq", [norm, zero]), zero, ctx.g.op("div", [x, norm])])]


@rule("Trilu")
def trilu(ctx, ins, attrs):
    """Keeps the elements with col - row >= k (upper) or <= k (lower)."""
    x = ins[0]
    s = shape(ctx, x)
    k = ints_operand(ctx, ins[1], "the k operand")[0] if len(ins) > 1 and ins[1] is not None else 0
    rows = ctx.g.op("iota", [], {"dtype": "i64", "shape": s[-2:], "axis": 0}, "i64", s[-2:])
    cols = ctx.g.op("iota", [], {"dtype": "i64", "shape": s[-2:], "axis": 1}, "i64", s[-2:])
    diff = ctx.g.op("sub", [cols, rows])
    keep = ctx.g.op("ge" if attrs.get("upper", 1) else "le", [diff, ctx.g.scalar(k, "i64")])
    return [ctx.op("where", [keep, x, const(ctx, 0, x)])]


def reduce_axes(ctx, ins, attrs, rank):
    """The axes of a Reduce* node (from its operand or, before opset 18,
    its attribute); None when it reduces nothing (noop_with_empty_axes)."""
    if len(ins) > 1 and ins[1] is not None:
        axes = ints_operand(ctx, ins[1], "the axes operand")
    else:
        axes = [int(a) for a in attrs.get("axes", [])]
    if not axes:
        return None if attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    return [checked_axis(a, rank) if rank else 0 for a in axes]


def reduction(op, pre=None, post=None):
    def fn(ctx, ins, attrs):
        x = ins[0]
        rank = len(shape(ctx, x))
        axes = reduce_axes(ctx, ins, attrs, rank)
        if pre:
            x = pre(ctx, x)
        if axes is None:
            y = x
        else:
            y = ctx.g.op(op, [x], {"axes": sorted(set(axes)),
                                   "keepdim": bool(attrs.get("keepdims", 1))})
        if post:
            y = post(ctx, y)
        return [y]
    return fn


RULES["ReduceSum"] = reduction("sum")
RULES["ReduceMean"] = reduction("mean")
RULES["ReduceMax"] = reduction("max")
RULES["ReduceMin"] = reduction("min")


def float_input(ctx, x):
    need_float(ctx, x, "the input of ReduceProd")
    return x


RULES["ReduceProd"] = reduction("prod", pre=float_input)
RULES["ReduceSumSquare"] = reduction("sum", pre=lambda ctx, x: ctx.g.op("mul", [x, x]))
RULES["ReduceL1"] = reduction("sum", pre=lambda ctx, x: ctx.g.op("abs", [x]))
RULES["ReduceL2"] = reduction("sum", pre=lambda ctx, x: ctx.g.op("mul", [x, x]),
                              post=lambda ctx, y: ctx.g.op("sqrt", [y]))
RULES["ReduceLogSum"] = reduction("sum", post=lambda ctx, y: ctx.g.op("log", [y]))


@rule("ReduceLogSumExp")
def reduce_log_sum_exp(ctx, ins, attrs):
    """log(sum(exp(x - m))) + m with m the maximum over the axes (so that
    no exp overflows); m taken as 0 where it is infinite (all -inf gives
    -inf, a +inf gives +inf, as the unshifted formula)."""
    x = ins[0]
    need_float(ctx, x, "the input of ReduceLogSumExp")
    s = shape(ctx, x)
    axes = reduce_axes(ctx, ins, attrs, len(s))
    if axes is None:
        return [x]
    axes = sorted(set(axes))
    keep = bool(attrs.get("keepdims", 1))
    m = ctx.g.op("max", [x], {"axes": axes, "keepdim": True})
    zero = const(ctx, 0, x)
    finite = ctx.g.op("lt", [ctx.g.op("abs", [m]), const(ctx, np.inf, x)])
    m = ctx.g.op("where", [finite, m, zero])
    total = ctx.g.op("sum", [ctx.g.op("exp", [ctx.g.op("sub", [x, m])])],
                     {"axes": axes, "keepdim": keep})
    if not keep:
        out = [d for k, d in enumerate(s) if k not in axes]
        m = ctx.g.op("reshape", [m], {"shape": out}, dtype(ctx, x), out)
    return [ctx.op("add", [ctx.g.op("log", [total]), m])]


def arg_reduce(negate):
    def fn(ctx, ins, attrs):
        if attrs.get("select_last_index", 0):
            raise RefusedError("select_last_index = 1 (cgc's argmax takes the first)")
        x = ins[0]
        s = shape(ctx, x)
        axis = int(attrs.get("axis", 0))
        if not -len(s) <= axis < len(s):
            raise RefusedError(f"axis {axis} of a rank-{len(s)} input")
        if s[axis] == 0:
            raise RefusedError(f"an arg-reduction over axis {axis} of extent 0 (it has no "
                               "index to return)")
        if negate:  # argmin x = argmax of -x, or of -x - 1 for integers (no overflow)
            dt = dtype(ctx, x)
            if dt not in ("f32", "f16", "bf16", "i32", "i64"):
                raise RefusedError(f"ArgMin of {dt}")
            x = ctx.g.op("neg", [x]) if dt in ("f32", "f16", "bf16") else \
                ctx.g.op("sub", [const(ctx, -1, x), x])
        return [ctx.op("argmax", [x], {"axis": int(attrs.get("axis", 0)),
                                       "keepdim": bool(attrs.get("keepdims", 1))})]
    return fn


RULES["ArgMax"] = arg_reduce(False)
RULES["ArgMin"] = arg_reduce(True)


@rule("TopK")
def topk(ctx, ins, attrs):
    """The K largest (or smallest) along `axis`, in rank order whatever
    `sorted` says; of equal elements the lower index first (the spec's
    order), a NaN counted the largest."""
    x = ins[0]
    s = shape(ctx, x)
    axis = checked_axis(attrs.get("axis", -1), len(s))
    k = ints_operand(ctx, ins[1], "TopK's K")[0]
    if not all(isinstance(d, int) for d in s):
        raise RefusedError(f"TopK of the dynamic shape {s} (cgc ranks static shapes)")
    ranking.check_bounds(s[axis], int(np.prod(s, dtype=np.int64)) // max(s[axis], 1), "TopK", k)
    if not 0 <= k <= s[axis]:
        raise RefusedError(f"TopK of K={k} along an axis of {s[axis]} elements")
    values, indices = ranking.ranked(ctx.g, x, s, dtype(ctx, x), axis, k,
                                     bool(attrs.get("largest", 1)))
    out = list(s)
    out[axis] = k
    return [ctx.op("reshape", [values], {"shape": out}, k=0),
            ctx.op("reshape", [indices], {"shape": out}, k=1)]


@rule("CumSum")
def cumsum(ctx, ins, attrs):
    if attrs.get("exclusive", 0) or attrs.get("reverse", 0):
        raise RefusedError("an exclusive or reversed CumSum")
    axis = ints_operand(ctx, ins[1], "the axis operand")[0]
    return [ctx.op("cumsum", [ins[0]], {"axis": axis})]


# ---- movement

@rule("Transpose")
def transpose(ctx, ins, attrs):
    rank = len(shape(ctx, ins[0]))
    perm = [int(p) for p in attrs.get("perm", list(range(rank))[::-1])]
    return [ctx.op("transpose", [ins[0]], {"perm": perm})]


def reshape_to(ctx, x):
    return [ctx.op("reshape", [x], {"shape": ctx.out_type()[1]})]


@rule("Reshape")
def reshape(ctx, ins, attrs):
    """ONNX's shape (an operand from opset 5, the attribute `shape`
    before): 0 copies the input's dim (unless allowzero), -1 takes what is
    left."""
    x = ins[0]
    if len(ins) > 1:
        target = ints_operand(ctx, ins[1], "the shape operand")
    elif isinstance(attrs.get("shape"), (list, tuple)):
        target = [int(t) for t in attrs["shape"]]
    else:
        raise RefusedError("no shape: an operand from opset 5, the attribute 'shape' before")
    s = shape(ctx, x)
    if target.count(-1) > 1 or any(t < -1 for t in target):
        raise RefusedError(f"the shape operand {list(target)}: one -1 at most, and no other "
                           "negative size")
    if not attrs.get("allowzero", 0):
        if any(t == 0 and k >= len(s) for k, t in enumerate(target)):
            raise RefusedError(f"the shape operand {list(target)} copies with 0 a dim past the "
                               f"input's rank {len(s)}")
        target = [s[k] if t == 0 else t for k, t in enumerate(target)]
    if -1 in target:
        known = int(np.prod([t for t in target if t != -1]))
        target[target.index(-1)] = int(np.prod(s)) // max(known, 1)
    out = ctx.g.op("reshape", [x], {"shape": target}, dtype(ctx, x), target,
                   name=ctx.node.output[0])
    return [out]


@rule("Flatten", "Squeeze", "Unsqueeze")
def flatten(ctx, ins, attrs):
    """The shape ONNX's inference gives; Flatten's axis checked first (in
    [-rank, rank]: ONNX's inference takes one far outside as 0)."""
    if ctx.node.op_type == "Flatten":
        rank = len(shape(ctx, ins[0]))
        axis = int(attrs.get("axis", 1))
        if not -rank <= axis <= rank:
            raise RefusedError(f"axis {axis} is out of range for a rank-{rank} input "
                               f"(valid: {-rank} to {rank})")
    for v in ins[1:]:
        if v is not None:
            ctx.known(v, "the axes operand")
    return reshape_to(ctx, ins[0])


@rule("Expand")
def expand(ctx, ins, attrs):
    """Bidirectional broadcasting of the input's shape and the operand."""
    x = ins[0]
    target = ints_operand(ctx, ins[1], "the shape operand")
    try:
        out = list(np.broadcast_shapes(tuple(shape(ctx, x)), tuple(target)))
    except ValueError:
        raise RefusedError(f"the shape operand {list(target)} does not broadcast with the "
                           f"input's shape {shape(ctx, x)}") from None
    return [ctx.g.op("broadcast_to", [x], {"shape": out}, dtype(ctx, x), out,
                     name=ctx.node.output[0])]


@rule("Concat")
def concat(ctx, ins, attrs):
    return [ctx.op("concat", [v for v in ins if v is not None], {"axis": int(attrs["axis"])})]


@rule("Slice")
def slice_(ctx, ins, attrs):
    x = ins[0]
    rank = len(shape(ctx, x))
    if ctx.opset < 10:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = ints_operand(ctx, ins[1], "the starts operand")
        ends = ints_operand(ctx, ins[2], "the ends operand")
        axes = (ints_operand(ctx, ins[3], "the axes operand")
                if len(ins) > 3 and ins[3] is not None else list(range(len(starts))))
        steps = (ints_operand(ctx, ins[4], "the steps operand")
                 if len(ins) > 4 and ins[4] is not None else [1] * len(starts))
    if any(s <= 0 for s in steps):
        raise RefusedError("a Slice with a negative step (cgc's slice takes steps > 0)")
    if rank == 0:
        raise RefusedError("a Slice of a rank-0 input (it has no axis to slice)")
    if any(not -rank <= int(a) < rank for a in axes):
        raise RefusedError(f"a Slice axis outside [-{rank}, {rank}) (axes {list(axes)} of a "
                           f"rank-{rank} input)")
    big = 2 ** 62
    clamp = lambda v: max(-big, min(big, int(v)))  # noqa: E731
    return [ctx.op("slice", [x], {"starts": [clamp(s) for s in starts],
                                  "ends": [clamp(e) for e in ends],
                                  "axes": [int(a) % rank for a in axes],
                                  "steps": steps})]


@rule("Gather")
def gather(ctx, ins, attrs):
    axis = int(attrs.get("axis", 0))
    check_constant_indices(ctx, ins[1], shape(ctx, ins[0]), axis)
    return [ctx.op("gather", [ins[0], ins[1]], {"axis": axis})]


@rule("Split")
def split(ctx, ins, attrs):
    x = ins[0]
    s = shape(ctx, x)
    axis = int(attrs.get("axis", 0)) % len(s)
    if len(ins) > 1 and ins[1] is not None:
        sizes = ints_operand(ctx, ins[1], "the split operand")
    elif "split" in attrs:
        sizes = [int(v) for v in attrs["split"]]
    else:
        n = int(attrs.get("num_outputs", len(ctx.node.output)))
        chunk = -(-s[axis] // n)
        sizes = [max(0, min(chunk, s[axis] - k * chunk)) for k in range(n)]
    outs, begin = [], 0
    for k, size in enumerate(sizes):
        outs.append(ctx.op("slice", [x], {"starts": [begin], "ends": [begin + size],
                                          "axes": [axis]}, k=k))
        begin += size
    return outs


@rule("Dropout")
def dropout(ctx, ins, attrs):
    if len(ins) > 2 and ins[2] is not None and bool(np.asarray(ctx.known(ins[2], "training_mode")).reshape(-1)[0]):
        raise RefusedError("Dropout in training mode (cgc's dropout draws its own masks)")
    outs = [ins[0]]
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        outs.append(ctx.op("fill", [], {"dtype": "bool", "shape": ctx.out_type(1)[1],
                                        "value": 1.0}, k=1))
    return outs


# ---- sources

@rule("Constant")
def constant(ctx, ins, attrs):
    import onnx
    if "value" in attrs:
        array = onnx.numpy_helper.to_array(attrs["value"])
    elif "value_float" in attrs:
        array = np.array(attrs["value_float"], np.float32)
    elif "value_int" in attrs:
        array = np.array(attrs["value_int"], np.int64)
    elif "value_floats" in attrs:
        array = np.array(attrs["value_floats"], np.float32)
    elif "value_ints" in attrs:
        array = np.array(attrs["value_ints"], np.int64)
    elif "sparse_value" in attrs:
        from .prepare import dense_array
        array = dense_array(onnx, attrs["sparse_value"], "its sparse value")
    else:
        raise RefusedError("a Constant of strings")
    return [ctx.g.constant(array, ctx.node.output[0])]


@rule("ConstantOfShape")
def constant_of_shape(ctx, ins, attrs):
    import onnx
    dims = ints_operand(ctx, ins[0], "the shape operand")
    value = onnx.numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    if any(d < 0 for d in dims):
        raise RefusedError(f"the shape operand {list(dims)} has a negative dim")
    if value.size != 1:
        raise RefusedError(f"attribute 'value' holds {value.size} elements (one, the fill value)")
    check_constant_size(int(np.prod([max(d, 0) for d in dims], dtype=object)), value.itemsize,
                        "the result")
    return [ctx.g.constant(np.full(dims, value.reshape(-1)[0], value.dtype), ctx.node.output[0])]


@rule("Shape")
def shape_op(ctx, ins, attrs):
    s = shape(ctx, ins[0])
    start, end = int(attrs.get("start", 0)), attrs.get("end")
    return [ctx.g.constant(np.array(s[start:None if end is None else int(end)], np.int64),
                           ctx.node.output[0])]


@rule("Size")
def size(ctx, ins, attrs):
    return [ctx.g.constant(np.array(int(np.prod(shape(ctx, ins[0]))), np.int64), ctx.node.output[0])]


@rule("Range")
def range_(ctx, ins, attrs):
    operands = [np.asarray(ctx.known(v, "a Range operand")).reshape(-1) for v in ins]
    if any(o.size != 1 for o in operands):
        raise RefusedError(f"a Range's start, limit and delta must each hold one element; they "
                           f"hold {[int(o.size) for o in operands]}")
    start, limit, delta = (o[0] for o in operands)
    count = range_count(start, limit, delta)
    result_dtype = np.asarray(ctx.known(ins[0], "start")).dtype
    check_constant_size(count, result_dtype.itemsize, "the Range")
    array = np.arange(start, limit, delta).astype(result_dtype)
    return [ctx.g.constant(array, ctx.node.output[0])]


def range_count(start, limit, delta):
    """ONNX's element count of a Range, max(ceil((limit - start) / delta), 0),
    in Python's numbers (no overflow); refuses a delta of 0 and operands
    that are not finite."""
    values = [v.item() if hasattr(v, "item") else v for v in (start, limit, delta)]
    if any(isinstance(v, float) and not np.isfinite(v) for v in values):
        raise RefusedError(f"a Range's start, limit and delta must be finite; they are "
                           f"{values[0]}, {values[1]}, {values[2]}")
    start, limit, delta = values
    if delta == 0:
        raise RefusedError("a Range with delta 0")
    if all(isinstance(v, int) for v in values):
        return max(-(-(limit - start) // delta), 0)
    count = np.ceil((limit - start) / delta)
    if not np.isfinite(count):  # past any float's range: past the IR's limits
        raise RefusedError(f"a Range from {start} to {limit} by {delta} has too many elements")
    return max(int(count), 0)


@rule("OneHot")
def one_hot(ctx, ins, attrs):
    indices, depth, values = ins
    n = int(np.asarray(ctx.known(depth, "the depth operand")).reshape(-1)[0])
    rank = len(shape(ctx, indices))
    if int(attrs.get("axis", -1)) % (rank + 1) != rank:
        raise RefusedError("OneHot along an axis other than the last")
    off_on = np.asarray(ctx.known(values, "the values operand")).reshape(-1)
    idx = indices
    if dtype(ctx, indices) not in ("i32", "i64"):
        idx = ctx.g.op("cast", [indices], {"dtype": "i64"}, "i64", shape(ctx, indices))
    wrapped = ctx.g.op("where", [ctx.g.op("lt", [idx, const(ctx, 0, idx)]),
                                 ctx.g.op("add", [idx, const(ctx, n, idx)]), idx])
    out_dtype = ctx.out_type()[0]
    hot = ctx.g.op("one_hot", [wrapped], {"num_classes": n, "dtype": out_dtype})
    off = ctx.g.scalar(off_on[0], out_dtype)
    on = ctx.g.scalar(off_on[1], out_dtype)
    return [ctx.op("where", [ctx.g.op("cast", [hot], {"dtype": "bool"}), on, off])]


@rule("Tile")
def tile(ctx, ins, attrs):
    """Each repeated dim d becomes [r, d] (a broadcast of a size-1 dim put
    before it), merged into r * d: the repeats must be known at import."""
    x = ins[0]
    repeats = ints_operand(ctx, ins[1], "the repeats operand")
    s = shape(ctx, x)
    if len(repeats) != len(s) or any(r < 0 for r in repeats):
        raise RefusedError(f"repeats {repeats} for an input of rank {len(s)}")
    split, broadcast = [], []
    for r, d in zip(repeats, s):
        split += [d] if r == 1 else [1, d]
        broadcast += [d] if r == 1 else [r, d]
    t = dtype(ctx, x)
    out = ctx.g.op("reshape", [x], {"shape": split}, t, split)
    out = ctx.g.op("broadcast_to", [out], {"shape": broadcast}, t, broadcast)
    return [ctx.op("reshape", [out], {"shape": [r * d for r, d in zip(repeats, s)]})]
