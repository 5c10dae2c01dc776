"""ONNX operators that cgc writes out from several of its ops:
GatherElements (one gather of the data flattened) and Pad (constant borders
concatenated, or one gather by constant indices for the edge, reflect and
wrap modes). Registered into rules.RULES."""
import numpy as np

from .rules import (check_constant_indices, checked_axis, dtype, ints_operand, rule, shape,
                    text_attr)
from .. import indexed
from ..errors import RefusedError


@rule("GatherElements")
def gather_elements(ctx, ins, attrs):
    """out[p] = data[p with p[axis] replaced by indices[p]]: one gather of
    data flattened (indexed.py)."""
    data, indices = ins
    ds, ks = shape(ctx, data), shape(ctx, indices)
    rank = len(ds)
    if len(ks) != rank or rank == 0:
        raise RefusedError(f"indices of rank {len(ks)} for data of rank {rank} (GatherElements "
                           "takes both of the same rank, at least 1)")
    if not all(isinstance(d, int) for d in ds + ks):
        raise RefusedError(f"GatherElements of the dynamic shapes {ds} and {ks}")
    axis = checked_axis(attrs.get("axis", 0), rank)
    if any(k > d for a, (k, d) in enumerate(zip(ks, ds)) if a != axis):
        raise RefusedError(f"indices {ks} for data {ds} (no extent above data's but along "
                           f"axis {axis})")
    check_constant_indices(ctx, indices, ds, axis)
    index = indices
    if dtype(ctx, indices) != "i64":
        index = ctx.g.op("cast", [indices], {"dtype": "i64"}, "i64", ks)
    out = indexed.gathered_elements(ctx.g, data, ds, dtype(ctx, data), axis, index, ks)
    return [ctx.op("reshape", [out], {"shape": ks})]


PAD_MODES = ("constant", "edge", "reflect", "wrap")


@rule("Pad")
def pad(ctx, ins, attrs):
    x = ins[0]
    s = list(shape(ctx, x))
    rank = len(s)
    mode = text_attr(attrs, "mode", "constant")
    if mode not in PAD_MODES:
        raise RefusedError(f"Pad mode '{mode}'")
    if ctx.opset < 11:  # attributes: `paddings` before opset 2, then `pads`
        pads = [int(p) for p in attrs.get("pads", attrs.get("paddings", []))]
        value = float(attrs.get("value", 0.0))
    else:
        pads = ints_operand(ctx, ins[1], "the pads operand")
        value = 0.0
        if len(ins) > 2 and ins[2] is not None:  # a number, or a value the graph computes
            value = (np.asarray(ctx.g.known[ins[2]]).reshape(-1)[0] if ins[2] in ctx.g.known
                     else ins[2])
    axes = list(range(rank))
    if len(ins) > 3 and ins[3] is not None:
        axes = [a % rank for a in ints_operand(ctx, ins[3], "the axes operand")]
    y = x
    for axis, before, after in zip(axes, pads[:len(axes)], pads[len(axes):]):
        y = crop(ctx, y, s, axis, max(-before, 0), max(-after, 0))
        before, after = max(before, 0), max(after, 0)
        if before or after:
            y = pad_axis(ctx, y, s, axis, before, after, mode, value)
    return [y]


def crop(ctx, y, s, axis, front, back):
    """`y` without `front` and `back` elements on `axis` (negative pads)."""
    if not front and not back:
        return y
    y = ctx.g.op("slice", [y], {"starts": [front], "ends": [s[axis] - back], "axes": [axis]},
                 dtype(ctx, y), s[:axis] + [s[axis] - front - back] + s[axis + 1:])
    s[axis] -= front + back
    return y


def pad_axis(ctx, y, s, axis, before, after, mode, value):
    """`y` padded on `axis`; updates `s` to the padded shape."""
    n, kind = s[axis], dtype(ctx, y)
    padded = s[:axis] + [n + before + after] + s[axis + 1:]
    if mode == "constant":
        parts = []
        for width in (before, None, after):
            if width is None:
                parts.append(y)
            elif width:
                parts.append(border(ctx, kind, s[:axis] + [width] + s[axis + 1:], value))
        out = ctx.g.op("concat", parts, {"axis": axis}, kind, padded)
    else:
        index = border_indices(n, before, after, mode)
        out = ctx.g.op("gather", [y, ctx.g.constant(index, "pad_index")], {"axis": axis},
                       kind, padded)
    s[axis] += before + after
    return out


def border(ctx, kind, border_shape, value):
    """A constant border: `value` (a number, or a one-element value of the
    graph) at every position of `border_shape`."""
    if not isinstance(value, str):
        return ctx.g.op("fill", [], {"dtype": kind, "shape": border_shape, "value": float(value)},
                        kind, border_shape)
    ones = [1] * len(border_shape)
    one = ctx.g.op("reshape", [value], {"shape": ones}, kind, ones)
    return ctx.g.op("broadcast_to", [one], {"shape": border_shape}, kind, border_shape)


def border_indices(n, before, after, mode):
    """The source index of every padded position along an axis of `n`
    (any width: a reflection or a wrap repeats as numpy.pad's does)."""
    if n == 0:
        raise RefusedError(f"Pad mode '{mode}' of an empty axis")
    positions = np.arange(-before, n + after)
    if mode == "edge":
        index = np.clip(positions, 0, n - 1)
    elif mode == "reflect":
        period = 2 * (n - 1) if n > 1 else 1
        index = np.abs(positions) % period
        index = np.where(index >= n, period - index, index)
    else:  # wrap
        index = positions % n
    return index.astype(np.int64)


@rule("GatherND")
def gather_nd(ctx, ins, attrs):
    """out[b, i] = data[b, indices[b, i, 0], ..., indices[b, i, k-1], :]
    over `batch_dims` leading batch axes: the k index components (each
    wrapped once if negative) and the batch position fold into one flat
    row index of data reshaped to [rows] + data.shape[b+k:], read by one
    gather. A component still out of range makes the row index `rows`,
    which reads zeros, as cgc's gather does (ONNX leaves it undefined);
    constant indices out of range are refused."""
    data, indices = ins
    ds, ks = list(shape(ctx, data)), list(shape(ctx, indices))
    b = int(attrs.get("batch_dims", 0))
    if not ks:
        raise RefusedError("GatherND indices of rank 0 (the schema needs rank >= 1)")
    k = ks[-1]
    if not 0 <= b < min(len(ds), len(ks)):
        raise RefusedError(f"batch_dims {b} for a rank-{len(ds)} data and rank-{len(ks)} indices")
    if ds[:b] != ks[:b]:
        raise RefusedError(f"the batch dims of data {ds[:b]} and indices {ks[:b]} differ")
    if not 1 <= k <= len(ds) - b:
        raise RefusedError(f"indices' last dim {k} must be in [1, {len(ds) - b}] "
                           f"(data rank {len(ds)}, batch_dims {b})")
    extents = ds[b:b + k]
    if indices in ctx.g.known:
        values = np.asarray(ctx.g.known[indices]).reshape(-1, k)
        for j, n in enumerate(extents):
            bad = values[:, j][(values[:, j] < -n) | (values[:, j] >= n)]
            if bad.size:
                raise RefusedError(f"index {int(bad[0])} is out of range for axis {b + j} of "
                                   f"extent {n} (valid: {-n} to {n - 1})")
    kind = dtype(ctx, data)
    where = ks[:-1]  # one row index per position of indices without its last axis
    index = indices
    if dtype(ctx, indices) != "i64":
        index = ctx.g.op("cast", [indices], {"dtype": "i64"}, "i64", ks)
    flat, bad = None, None
    if b:  # the batch position: an iota per batch axis
        for a in range(b):
            at = ctx.g.op("iota", [], {"dtype": "i64", "shape": where, "axis": a}, "i64", where)
            flat = at if flat is None else ctx.g.op(
                "add", [ctx.g.op("mul", [flat, ctx.g.scalar(ds[a], "i64")], None, "i64", where), at],
                None, "i64", where)
    for j, n in enumerate(extents):
        part = ctx.g.op("slice", [index], {"starts": [j], "ends": [j + 1], "axes": [len(ks) - 1]},
                        "i64", where + [1])
        part = ctx.g.op("reshape", [part], {"shape": where}, "i64", where)
        part = ctx.g.op("where", [ctx.g.op("lt", [part, ctx.g.scalar(0, "i64")], None, "bool", where),
                                  ctx.g.op("add", [part, ctx.g.scalar(n, "i64")], None, "i64", where),
                                  part], None, "i64", where)
        outside = ctx.g.op("bitwise_or", [
            ctx.g.op("lt", [part, ctx.g.scalar(0, "i64")], None, "bool", where),
            ctx.g.op("ge", [part, ctx.g.scalar(n, "i64")], None, "bool", where)], None, "bool", where)
        bad = outside if bad is None else ctx.g.op("bitwise_or", [bad, outside], None, "bool", where)
        flat = part if flat is None else ctx.g.op(
            "add", [ctx.g.op("mul", [flat, ctx.g.scalar(n, "i64")], None, "i64", where), part],
            None, "i64", where)
    rows = int(np.prod(ds[:b + k], dtype=np.int64))
    flat = ctx.g.op("where", [bad, ctx.g.scalar(rows, "i64"), flat], None, "i64", where)
    rest = ds[b + k:]
    table = ctx.g.op("reshape", [data], {"shape": [rows] + rest}, kind, [rows] + rest)
    return [ctx.op("gather", [table, flat], {"axis": 0})]
