"""Gathers and scatters at computed positions, for the front ends'
take-along-dim gathers (torch's gather, ONNX's GatherElements) and their
writes at indices (torch's scatter, scatter_add, scatter_reduce,
index_add and index_put; ONNX's ScatterElements and ScatterND).

Algorithm. An element-wise gather or a plain scatter (the written
element replaces x's) works on x flattened: each element's linear
position in x is its index along the indexed axes and its own
coordinates along the others. A negative index counts from the end; one
still outside its axis is made one past x's end, where a `gather` reads
zero and an `index_copy` writes nothing (instead of landing in another
row). The gather is one `gather`, the scatter one `index_copy` marked
`unique_indices` (torch and ONNX leave the winner of a duplicate index
undefined, so no write looks for a later one): one pass each.

An adding scatter is one `index_add` at the same linear positions (x
flattened; without include_self an `index_copy` of zeros there first):
each update added in order, one pass, no bound. The other reductions
(mul, max, min, mean) compare, in each row, every update with every
position of the scattered axis and reduce the updates that land on a
position, then combine that with x's element (a position no update lands
on keeps x's). That costs positions x updates comparisons per row, fused
by cgc into a few kernels; check_bounds refuses more than
MAX_COMPARISONS. `e` is a builder: op(op, inputs, attrs), scalar(value,
dtype)."""
import math

import numpy as np

from .dtypes import FLOATS, NUMPY
from .errors import RefusedError

MAX_COMPARISONS = 1 << 28   # of a reducing scatter: positions x updates
REDUCTIONS = ("add", "mul", "max", "min")


def numel(shape):
    return math.prod(shape)


def check_bounds(comparisons, what):
    if comparisons > MAX_COMPARISONS:
        raise RefusedError(f"{what}: cgc reduces a scattered update by comparing it with every "
                           f"position of its axis ({comparisons} comparisons), refused over "
                           f"{MAX_COMPARISONS}")


def wrapped(e, index, extent):
    """(index with a negative one counted from the end, whether it is
    inside [0, extent)): i64, the index's shape."""
    zero, n = e.scalar(0, "i64"), e.scalar(extent, "i64")
    index = e.op("where", [e.op("lt", [index, zero]), e.op("add", [index, n]), index])
    return index, e.op("logical_and", [e.op("ge", [index, zero]), e.op("lt", [index, n])])


def write_flat(e, x, shape, lead_dims, positions, updates):
    """x (of static `shape`) with the slices `updates` ([count] +
    shape[lead_dims:]) written at `positions` ([count] linear indices over
    shape[:lead_dims]; one past their end writes nothing)."""
    flat = e.op("reshape", [x], {"shape": [numel(shape[:lead_dims])] + list(shape[lead_dims:])})
    out = e.op("index_copy", [flat, positions, updates], {"axis": 0, "unique_indices": True})
    return e.op("reshape", [out], {"shape": list(shape)})


def add_flat(e, x, shape, dtype, lead_dims, positions, count, updates, include_self=True):
    """x (of static `shape`) with the slices `updates` ([count] +
    shape[lead_dims:]) added at `positions` ([count] linear indices over
    shape[:lead_dims]; one past their end adds nothing) in order; without
    include_self the elements an update lands on start from 0."""
    tail = list(shape[lead_dims:])
    flat = e.op("reshape", [x], {"shape": [numel(shape[:lead_dims])] + tail})
    if not include_self:  # every duplicate writes the same zeros
        zeros = e.op("fill", [], {"value": 0, "dtype": dtype,
                                  "shape": [count] + tail})
        flat = e.op("index_copy", [flat, positions, zeros], {"axis": 0, "unique_indices": True})
    out = e.op("index_add", [flat, positions, updates], {"axis": 0})
    return e.op("reshape", [out], {"shape": list(shape)})


def strides(shape):
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return out[::-1]


def leading(e, src, sshape, ishape):
    """src cut to `ishape` where it is larger (torch's scatter reads only
    the index's extent of src)."""
    if list(sshape) == list(ishape):
        return src
    return e.op("slice", [src], {"starts": [0] * len(ishape), "ends": list(ishape),
                                 "axes": list(range(len(ishape)))})


def element_positions(e, shape, axis, index, ishape):
    """The linear position in x (of static `shape`) of each element of the
    i64 `index` (of x's rank, no extent above x's but along `axis`): its
    value along `axis`, its coordinates elsewhere; one past x's end where
    the index is outside the axis. Flattened to [numel(ishape)]."""
    index, valid = wrapped(e, index, shape[axis])
    step = strides(shape)
    linear = e.op("mul", [index, e.scalar(step[axis], "i64")])
    for k, extent in enumerate(ishape):
        if k != axis and extent != 1:
            coord = e.op("iota", [], {"dtype": "i64", "shape": list(ishape), "axis": k})
            linear = e.op("add", [linear, e.op("mul", [coord, e.scalar(step[k], "i64")])])
    linear = e.op("where", [valid, linear, e.scalar(numel(shape), "i64")])
    return e.op("reshape", [linear], {"shape": [numel(ishape)]})


def gathered_elements(e, x, shape, dtype, axis, index, ishape):
    """out[p] = x[p with index[p] along `axis`] (GatherElements,
    torch.gather), of the index's shape; 0 where the index is outside the
    axis."""
    if numel(ishape) == 0 or numel(shape) == 0:  # nothing to read
        return e.op("fill", [], {"value": 0, "dtype": dtype, "shape": list(ishape)})
    flat = e.op("reshape", [x], {"shape": [numel(shape)]})
    out = e.op("gather", [flat, element_positions(e, shape, axis, index, ishape)], {"axis": 0})
    return e.op("reshape", [out], {"shape": list(ishape)})


def elements(e, x, shape, axis, index, ishape, src, sshape):
    """x with src[p] written at x[p with index[p] along `axis`] for every
    position p of the index (ScatterElements, torch.scatter): index i64 of
    x's rank, no extent above x's but along `axis`; src at least the
    index's extents."""
    if numel(ishape) == 0 or numel(shape) == 0:
        return x
    updates = e.op("reshape", [leading(e, src, sshape, ishape)], {"shape": [numel(ishape)]})
    return write_flat(e, x, shape, len(shape), element_positions(e, shape, axis, index, ishape),
                      updates)


def linear_positions(e, index, ishape, lead):
    """The linear position over the dims `lead` of each of index's
    coordinate tuples (i64 [..., k] flattened to [count]); one past their
    end where a coordinate is outside its dim."""
    k, count = ishape[-1], numel(ishape[:-1])
    step = strides(lead)
    linear = e.op("fill", [], {"value": 0, "dtype": "i64", "shape": [count]})
    valid = e.op("fill", [], {"value": 1, "dtype": "bool", "shape": [count]})
    for c in range(k):
        coord = e.op("slice", [index], {"starts": [c], "ends": [c + 1], "axes": [len(ishape) - 1]})
        coord, inside = wrapped(e, e.op("reshape", [coord], {"shape": [count]}), lead[c])
        linear = e.op("add", [linear, e.op("mul", [coord, e.scalar(step[c], "i64")])])
        valid = e.op("logical_and", [valid, inside])
    return e.op("where", [valid, linear, e.scalar(numel(lead), "i64")])


def nd(e, x, shape, index, ishape, updates):
    """x with updates[i] written at x[index[i]] (ScatterND, index_put):
    index i64 [..., k] of k coordinates into x's first k dims, updates
    index.shape[:-1] + shape[k:]."""
    k, count = ishape[-1], numel(ishape[:-1])
    if count == 0 or numel(shape) == 0:
        return x
    updates = e.op("reshape", [updates], {"shape": [count] + list(shape[k:])})
    return write_flat(e, x, shape, k, linear_positions(e, index, ishape, shape[:k]), updates)


def identity(reduction, dtype):
    """The value that leaves `reduction` unchanged, for `dtype`."""
    if reduction in ("add", "mean"):
        return 0
    if reduction == "mul":
        return 1
    if dtype in FLOATS:
        return float("-inf") if reduction == "max" else float("inf")
    info = np.iinfo(NUMPY[dtype])
    return int(info.min) if reduction == "max" else int(info.max)


def landed(e, hit, values, reduction, dtype, axis):
    """(the reduction over `axis` of the values that `hit`, how many hit)."""
    chosen = e.op("where", [hit, values, e.scalar(identity(reduction, dtype), dtype)])
    op = {"add": "sum", "mean": "sum", "mul": "prod", "max": "max", "min": "min"}[reduction]
    if op == "prod" and dtype not in FLOATS:
        raise RefusedError(f"a multiplying scatter of {dtype} (cgc's prod takes floats)")
    count = e.op("sum", [e.op("cast", [hit], {"dtype": "i64"})], {"axes": [axis]})
    return e.op(op, [chosen], {"axes": [axis]}), count


def combined(e, x, reduced, count, reduction, dtype, include_self):
    """x's element combined with the updates that landed on it (`reduced`,
    `count` of them): x itself where none did."""
    some = e.op("gt", [count, e.scalar(0, "i64")])
    if reduction == "mean":
        total = e.op("add", [x, reduced]) if include_self else reduced
        n = e.op("add", [count, e.scalar(1, "i64")]) if include_self else count
        n = e.op("cast", [e.op("where", [some, n, e.scalar(1, "i64")])], {"dtype": dtype})
        return e.op("where", [some, e.op("div", [total, n]), x])
    if not include_self:
        return e.op("where", [some, reduced, x])
    op = {"add": "add", "mul": "mul", "max": "maximum", "min": "minimum"}[reduction]
    return e.op("where", [some, e.op(op, [x, reduced]), x])


def check_reduction(reduction, dtype, what):
    if reduction not in REDUCTIONS + ("mean",):
        raise RefusedError(f"{what} with reduction {reduction!r} (cgc has "
                           f"{', '.join(REDUCTIONS + ('mean',))})")
    if dtype == "bool":
        raise RefusedError(f"{what} of bool values (cgc reduces numbers: cast them first)")
    if reduction == "mean" and dtype not in FLOATS:
        raise RefusedError(f"{what} with reduction 'mean' of {dtype} (cgc averages floats)")


def padded_to(e, v, vshape, shape, fill, dtype):
    """v extended to `shape` with `fill` after its end along each dim."""
    vshape = list(vshape)
    for k, (have, want) in enumerate(zip(vshape, shape)):
        if have < want:
            pad_shape = vshape[:k] + [want - have] + vshape[k + 1:]
            pad = e.op("fill", [], {"value": fill, "dtype": dtype, "shape": pad_shape})
            v = e.op("concat", [v, pad], {"axis": k})
            vshape[k] = want
    return v


def reduced_elements(e, x, shape, dtype, axis, index, ishape, src, sshape, reduction,
                     include_self=True, what="scatter"):
    """x with the src elements reduced into x[p with index[p] along `axis`]
    (ScatterElements with a reduction, torch's scatter_reduce and
    scatter_add): operands as elements'."""
    check_reduction(reduction, dtype, what)
    if numel(ishape) == 0 or numel(shape) == 0:
        return x
    if reduction == "add":
        updates = e.op("reshape", [leading(e, src, sshape, ishape)], {"shape": [numel(ishape)]})
        return add_flat(e, x, shape, dtype, len(shape),
                        element_positions(e, shape, axis, index, ishape), numel(ishape), updates,
                        include_self)
    rank, extent, count = len(shape), shape[axis], ishape[axis]
    check_bounds(numel(ishape) * extent, what)
    index, _ = wrapped(e, index, extent)  # one still outside matches no position
    src = leading(e, src, sshape, ishape)
    # [..., positions, 1] against [..., 1, updates], the axis's dims last.
    perm = [k for k in range(rank) if k != axis] + [axis]
    rows = [ishape[k] for k in perm[:-1]]
    as_row = lambda v: e.op("reshape", [e.op("transpose", [v], {"perm": perm})],  # noqa: E731
                            {"shape": rows + [1, count]})
    position = e.op("iota", [], {"dtype": "i64", "shape": [extent, 1], "axis": 0})
    hit = e.op("eq", [as_row(index), position])
    reduced, n = landed(e, hit, as_row(src), reduction, dtype, rank)
    back = [perm.index(k) for k in range(rank)]
    region = [ishape[k] if k != axis else extent for k in range(rank)]
    reduced = padded_to(e, e.op("transpose", [reduced], {"perm": back}), region, shape,
                        0, dtype)
    n = padded_to(e, e.op("transpose", [n], {"perm": back}), region, shape, 0, "i64")
    return combined(e, x, reduced, n, reduction, dtype, include_self)


def reduced_nd(e, x, shape, dtype, index, ishape, updates, reduction, what="scatter"):
    """x with updates[i] reduced into x[index[i]] (ScatterND with a
    reduction, index_put with accumulate): operands as nd's."""
    check_reduction(reduction, dtype, what)
    k, count = ishape[-1], numel(ishape[:-1])
    if count == 0 or numel(shape) == 0:
        return x
    lead, tail = list(shape[:k]), list(shape[k:])
    if reduction == "add":
        updates = e.op("reshape", [updates], {"shape": [count] + tail})
        return add_flat(e, x, shape, dtype, k, linear_positions(e, index, ishape, lead), count,
                        updates)
    positions = numel(lead)
    check_bounds(positions * count * numel(tail), what)
    ones = [1] * len(tail)  # (a position past the end matches none below)
    linear = e.op("reshape", [linear_positions(e, index, ishape, lead)],
                  {"shape": [1, count] + ones})
    position = e.op("iota", [], {"dtype": "i64", "shape": [positions, 1] + ones, "axis": 0})
    hit = e.op("eq", [linear, position])                       # [positions, count, 1...]
    values = e.op("reshape", [updates], {"shape": [1, count] + tail})
    reduced, n = landed(e, hit, values, reduction, dtype, 1)   # [positions, tail]
    n = e.op("broadcast_to", [n], {"shape": [positions] + tail})
    reduced = e.op("reshape", [reduced], {"shape": list(shape)})
    n = e.op("reshape", [n], {"shape": list(shape)})
    return combined(e, x, reduced, n, reduction, dtype, True)

