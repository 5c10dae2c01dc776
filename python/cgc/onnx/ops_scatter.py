"""ONNX's scatters (ScatterElements, its predecessor Scatter, and
ScatterND), as cgc ops through indexed.py: a plain one is an index_copy
at each update's linear position, a reducing one (add, mul, max, min) a
comparison of every update with every position of its axis. Registered
into rules.RULES."""
from .rules import checked_axis, dtype, rule, shape, text_attr
from .. import indexed
from ..errors import RefusedError


def static(ctx, v, what):
    s = shape(ctx, v)
    if not all(isinstance(d, int) for d in s):
        raise RefusedError(f"{what} of the dynamic shape {s} (cgc scatters static shapes)")
    return s


def as_i64(ctx, v):
    return v if dtype(ctx, v) == "i64" else ctx.g.op("cast", [v], {"dtype": "i64"})


def reduction_of(attrs):
    """ONNX's reduction, in indexed.py's name (None for a plain write)."""
    reduction = text_attr(attrs, "reduction", "none")
    if reduction == "none":
        return None
    if reduction not in indexed.REDUCTIONS:
        raise RefusedError(f"reduction {reduction!r}")
    return reduction


@rule("ScatterElements", "Scatter")
def scatter_elements(ctx, ins, attrs):
    """out = data with updates[p] written (or reduced) at data[p with
    p[axis] replaced by indices[p]]."""
    data, indices, updates = ins
    ds = static(ctx, data, "ScatterElements")
    ks = static(ctx, indices, "ScatterElements' indices")
    rank = len(ds)
    if rank == 0 or len(ks) != rank or any(k > d for k, d in zip(ks, ds)) \
            or static(ctx, updates, "ScatterElements' updates") != ks:
        raise RefusedError(f"indices {ks} and updates {shape(ctx, updates)} for data {ds} "
                           "(ScatterElements takes both of one shape, of data's rank, no "
                           "extent larger than data's)")
    axis = checked_axis(attrs.get("axis", 0), rank)
    reduction = reduction_of(attrs)
    index = as_i64(ctx, indices)
    if reduction is None:
        out = indexed.elements(ctx.g, data, ds, axis, index, ks, updates, ks)
    else:
        out = indexed.reduced_elements(ctx.g, data, ds, dtype(ctx, data), axis, index, ks,
                                       updates, ks, reduction, what="ScatterElements")
    return [ctx.op("reshape", [out], {"shape": ds})]


@rule("ScatterND")
def scatter_nd(ctx, ins, attrs):
    """out = data with updates[i] written (or reduced) at data[indices[i]],
    indices' last dim holding k coordinates into data's first k dims."""
    data, indices, updates = ins
    ds = static(ctx, data, "ScatterND")
    ks = static(ctx, indices, "ScatterND's indices")
    us = static(ctx, updates, "ScatterND's updates")
    if not ks or not 0 <= ks[-1] <= len(ds) or us != ks[:-1] + ds[ks[-1]:]:
        raise RefusedError(f"indices {ks} and updates {us} for data {ds} (ScatterND takes "
                           "indices [..., k] with k up to data's rank and updates "
                           "indices.shape[:-1] + data.shape[k:])")
    reduction = reduction_of(attrs)
    index = as_i64(ctx, indices)
    if reduction is None:
        out = indexed.nd(ctx.g, data, ds, index, ks, updates)
    else:
        out = indexed.reduced_nd(ctx.g, data, ds, dtype(ctx, data), index, ks, updates,
                                 reduction, what="ScatterND")
    return [ctx.op("reshape", [out], {"shape": ds})]
