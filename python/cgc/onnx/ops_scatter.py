"""ONNX's scatters (ScatterElements, its predecessor Scatter, and
ScatterND), as cgc ops through indexed.py: a plain one is an index_copy
at each update's linear position, a reducing one (add, mul, max, min) a
comparison of every update with every position of its axis; and Col2Im,
one plain scatter per kernel offset, summed. Registered into
rules.RULES."""
import math

import numpy as np

from .rules import checked_axis, dtype, ints_operand, need_float, rule, shape, text_attr
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


@rule("Col2Im")
def col2im(ctx, ins, attrs):
    """The adjoint of Im2Col (torch's F.fold): out[n, c, p] sums
    input[n, c * K + k, b] over the kernel offsets k (K of them) and
    blocks b with p = b * stride - pad_begin + k * dilation. For one offset
    the blocks land on distinct positions, so each offset is one plain
    scatter of its [L, N, C] columns (those landing inside the image) into
    a zero [P, N, C] image (indexed.write_flat, P the image's positions),
    and the K images are summed."""
    x, image, block = ins
    need_float(ctx, x, "Col2Im's input")
    image = ints_operand(ctx, image, "Col2Im's image_shape")
    block = ints_operand(ctx, block, "Col2Im's block_shape")
    xs, spatial = static(ctx, x, "Col2Im"), len(image)
    strides = [int(v) for v in attrs.get("strides", [1] * spatial)]
    dilations = [int(v) for v in attrs.get("dilations", [1] * spatial)]
    pads = [int(v) for v in attrs.get("pads", [0] * 2 * spatial)]
    kernel = math.prod(block)
    counts = [(i + pads[d] + pads[d + spatial] - (b - 1) * dil - 1) // s + 1
              for d, (i, b, s, dil) in enumerate(zip(image, block, strides, dilations))]
    if len(xs) != 3 or len(block) != spatial or xs[1] % kernel or \
            min(counts + image + block + strides + dilations) < 1 or math.prod(counts) != xs[2]:
        raise RefusedError(f"Col2Im of {xs} into image {image} by blocks {block} (the "
                           "input must be [N, C * blocks' size, their count in the image])")
    n, c, blocks = xs[0], xs[1] // kernel, xs[2]
    cols = ctx.g.op("reshape", [x], {"shape": [n, c, kernel, blocks]})
    cols = ctx.g.op("transpose", [cols], {"perm": [2, 3, 0, 1]})  # [K, L, N, C]
    size = [math.prod(image), n, c]
    zeros = ctx.g.op("fill", [], {"dtype": dtype(ctx, x), "shape": size, "value": 0.0})
    grid = np.indices(counts).reshape(spatial, -1).T  # each block's coordinates
    total = None
    for k, offset in enumerate(np.ndindex(*block)):
        at = grid * strides - pads[:spatial] + np.array(offset) * dilations
        inside = np.flatnonzero(np.all((at >= 0) & (at < image), axis=1))
        if not inside.size:
            continue
        part = ctx.g.op("slice", [cols], {"starts": [k], "ends": [k + 1], "axes": [0]})
        part = ctx.g.op("reshape", [part], {"shape": [blocks, n, c]})
        if inside.size < blocks:
            part = ctx.g.op("gather", [part, ctx.g.constant(inside, "col2im_blocks")],
                            {"axis": 0})
        linear = np.ravel_multi_index(tuple(at[inside].T), image).astype(np.int64)
        part = indexed.write_flat(ctx.g, zeros, size, 1, ctx.g.constant(linear, "col2im_at"),
                                  part)
        total = part if total is None else ctx.g.op("add", [total, part])
    total = ctx.g.op("reshape", [zeros if total is None else total], {"shape": image + [n, c]})
    perm = [spatial, spatial + 1] + list(range(spatial))
    return [ctx.op("transpose", [total], {"perm": perm})]
