"""ATen rules for the writes into a tensor at indices: scatter (of a
tensor or a value, plain or reducing), scatter_add, scatter_reduce,
index_add, index_fill, index_copy and index_put (a static KV cache's
update, a mask's fill, a write or an accumulation at index tuples),
through the shared indexed.py (algorithms and costs there). PyTorch
leaves the winner of a duplicate index undefined in a plain scatter; an
index out of range when the graph runs writes nothing, where PyTorch
raises a device-side assertion."""
import numpy as np

from .aten_indexing import static_extents
from .aten_rules import ATEN, reduced_axes
from .. import indexed
from ..dtypes import INTEGERS
from ..errors import RefusedError
from ..ir_builder import registrar

aten = registrar(ATEN)

# torch's names of the reductions, as indexed.py's.
REDUCTIONS = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul", "amax": "max",
              "amin": "min", "mean": "mean"}


def static(e, v, what):
    return list(static_extents(e, e.shape(v), what))


def scatter_operands(e, n):
    """(x's shape, the axis, the i64 index, its shape): checked as torch
    checks a scatter's (the index of x's rank, no extent above x's but
    along dim)."""
    x, dim, index = n.args[:3]
    shape = static(e, x, "scatter into a tensor")
    ishape = static(e, index, "scatter's index")
    rank = len(shape)
    if rank == 0:
        raise RefusedError("scatter into a 0-d tensor")
    axis = reduced_axes(dim, rank)[0]
    if len(ishape) != rank or any(ishape[k] > shape[k] for k in range(rank) if k != axis):
        raise RefusedError(f"scatter of an index {ishape} into {shape} along dim {axis} (the "
                           "index has x's rank and no extent above x's but along dim)")
    return shape, axis, e.as_dtype(index, "i64"), ishape


def source(e, n, src, ishape, dtype):
    """(the scattered values, their shape): a tensor at least the index's
    extents, or a number broadcast to the index's shape."""
    if isinstance(src, (int, float, bool)):
        return e.op("broadcast_to", [e.scalar(src, dtype)], {"shape": ishape}), ishape
    sshape = static(e, src, "scatter's source")
    if len(sshape) != len(ishape) or any(i > s for i, s in zip(ishape, sshape)):
        raise RefusedError(f"scatter of a source {sshape} by an index {ishape} (the source "
                           "has the index's rank, no extent below it)")
    return e.as_dtype(src, dtype), sshape


def reduction_of(reduce):
    if reduce not in REDUCTIONS:
        raise RefusedError(f"scatter with reduce={reduce!r} (cgc has "
                           f"{', '.join(sorted(REDUCTIONS))})")
    return REDUCTIONS[reduce]


def scattered(e, n, src, reduce=None, include_self=True):
    shape, axis, index, ishape = scatter_operands(e, n)
    x, dtype = n.args[0], e.dtype(n)
    values, sshape = source(e, n, src, ishape, dtype)
    if reduce is None:
        out = indexed.elements(e, e.as_dtype(x, dtype), shape, axis, index, ishape, values, sshape)
    else:
        out = indexed.reduced_elements(e, e.as_dtype(x, dtype), shape, dtype, axis, index, ishape,
                                       values, sshape, reduction_of(reduce), include_self,
                                       what=str(n.target).removeprefix("aten."))
    return e.op("reshape", [out], {"shape": shape}, name=n.name)


@aten("scatter.src", "scatter.value")
def scatter_(e, n):
    """x.scatter(dim, index, src or value)."""
    return scattered(e, n, n.args[3])


@aten("scatter.reduce", "scatter.value_reduce")
def scatter_reducing(e, n):
    """x.scatter(dim, index, src or value, reduce="add" or "multiply")."""
    return scattered(e, n, n.args[3], n.kwargs.get("reduce", n.args[4] if len(n.args) > 4
                                                   else None))


@aten("scatter_add")
def scatter_add(e, n):
    return scattered(e, n, n.args[3], "add")


@aten("scatter_reduce.two")
def scatter_reduce(e, n):
    """x.scatter_reduce(dim, index, src, reduce, include_self=True)."""
    include_self = n.args[5] if len(n.args) > 5 else n.kwargs.get("include_self", True)
    return scattered(e, n, n.args[3], n.args[4], bool(include_self))


def along_dim(e, n, what):
    """(x's shape, the axis, the i64 index [count]) of an index_* op whose
    index is a vector along dim."""
    x, dim, index = n.args[:3]
    shape = static(e, x, what)
    if not shape:
        raise RefusedError(f"{what} of a 0-d tensor")
    ishape = static(e, index, f"{what}'s index")
    if len(ishape) > 1 or e.dtype(index) not in INTEGERS:
        raise RefusedError(f"{what} by an index {ishape} of {e.dtype(index)} (a vector of "
                           "integers)")
    index = e.as_dtype(index, "i64")
    count = ishape[0] if ishape else 1
    return shape, reduced_axes(dim, len(shape))[0], e.op("reshape", [index], {"shape": [count]})


@aten("index_copy")
def index_copy(e, n):
    """x.index_copy(dim, index, source): cgc's index_copy (of duplicates,
    the last wins)."""
    shape, axis, index = along_dim(e, n, "index_copy")
    return e.op("index_copy", [e.operand(n.args[0]), index, e.operand(n.args[3])],
                {"axis": axis}, name=n.name)


@aten("index_fill.int_Scalar", "index_fill.int_Tensor")
def index_fill(e, n):
    """x.index_fill(dim, index, value): value in every slice index names."""
    shape, axis, index = along_dim(e, n, "index_fill")
    dtype = e.dtype(n)
    slices = list(shape)
    slices[axis] = e.shape(index)[0]
    value = e.op("broadcast_to", [e.as_dtype(n.args[3], dtype)], {"shape": slices})
    return e.op("index_copy", [e.as_dtype(n.args[0], dtype), index, value],
                {"axis": axis, "unique_indices": True}, name=n.name)


def dim_first(e, v, shape, axis):
    """(v with `axis` moved first, the perm back)."""
    perm = [axis] + [k for k in range(len(shape)) if k != axis]
    back = [perm.index(k) for k in range(len(shape))]
    return e.op("transpose", [v], {"perm": perm}), [shape[k] for k in perm], back


@aten("index_add")
def index_add(e, n):
    """x.index_add(dim, index, source, alpha=1): source's slice j added to
    x's slice index[j] (indexed.py's reducing scatter, dim moved first)."""
    shape, axis, index = along_dim(e, n, "index_add")
    dtype = e.dtype(n)
    alpha = n.args[4] if len(n.args) > 4 else n.kwargs.get("alpha", 1)
    src = e.as_dtype(n.args[3], dtype)
    if alpha != 1:
        src = e.op("mul", [src, e.scalar(alpha, dtype)])
    count = e.shape(index)[0]
    x, moved, back = dim_first(e, e.as_dtype(n.args[0], dtype), shape, axis)
    src, _, _ = dim_first(e, e.op("reshape", [src], {"shape": shape[:axis] + [count] +
                                                     shape[axis + 1:]}), shape, axis)
    out = indexed.reduced_nd(e, x, moved, dtype, e.op("reshape", [index], {"shape": [count, 1]}),
                             [count, 1], src, "add", what="index_add")
    return e.op("transpose", [out], {"perm": back}, name=n.name)


def broadcast_shape(shapes):
    try:
        return list(np.broadcast_shapes(*map(tuple, shapes)))
    except ValueError:
        raise RefusedError(f"index tensors of shapes {shapes} do not broadcast") from None


def masked_put(e, n, x, shape, dim, mask, values, accumulate):
    """x[..., mask] = value (a bool mask over dims from `dim`): where."""
    mshape = static(e, mask, "index_put's mask")
    if shape[dim:dim + len(mshape)] != mshape:
        raise RefusedError(f"index_put by a mask {mshape} of dims {dim}.. of {shape}")
    if any(d != 1 for d in e.shape(values)):
        raise RefusedError("x[mask] = values with more than one value (their count depends "
                           "on the mask's data: cgc compiles static shapes)")
    dtype = e.dtype(n)
    full = [1] * dim + mshape + [1] * (len(shape) - dim - len(mshape))
    where = e.op("reshape", [e.operand(mask)], {"shape": full})
    value = e.op("reshape", [e.as_dtype(values, dtype)], {"shape": []})
    if accumulate:
        return e.op("add", [e.as_dtype(x, dtype), e.op("where", [where, value,
                                                                 e.scalar(0, dtype)])],
                    name=n.name)
    return e.op("where", [where, value, e.as_dtype(x, dtype)], name=n.name)


@aten("index_put")
def index_put(e, n):
    """x.index_put(indices, values, accumulate): the values written (or
    added) at the index tuples of the given dims (torch's advanced
    indexing: the index tensors broadcast together; adjacent given dims
    keep their place in the values' shape, others put it first), or, for
    one bool mask, filled where it holds."""
    x, indices, values = n.args[:3]
    accumulate = n.args[3] if len(n.args) > 3 else n.kwargs.get("accumulate", False)
    shape = static(e, x, "index_put")
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) == 1 and e.dtype(given[0][1]) == "bool":
        return masked_put(e, n, x, shape, given[0][0], given[0][1], values, accumulate)
    if not given or any(e.dtype(i) not in INTEGERS for _, i in given):
        raise RefusedError("index_put by other than integer index tensors or one bool mask")
    if len(given) == 1 and len(e.shape(given[0][1])) == 1 and not accumulate:
        return cache_update(e, n, x, shape, given[0], values)
    dims = [d for d, _ in given]
    tuples = broadcast_shape([static(e, i, "index_put's index") for _, i in given])
    others = [d for d in range(len(shape)) if d not in dims]
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    before = [shape[d] for d in others if adjacent and d < dims[0]]
    after = [shape[d] for d in others if not adjacent or d > dims[-1]]
    dtype = e.dtype(n)
    # The values as index_put's indexed shape, then with the tuples' dims first.
    target = before + tuples + after
    vals = e.op("broadcast_to", [e.as_dtype(values, dtype)], {"shape": target})
    if before:
        t = len(tuples)
        vals = e.op("transpose", [vals], {"perm": list(range(len(before), len(before) + t)) +
                                          list(range(len(before))) +
                                          list(range(len(before) + t, len(target)))})
    coords = [e.op("reshape", [e.op("broadcast_to", [e.as_dtype(i, "i64")], {"shape": tuples})],
                   {"shape": tuples + [1]}) for _, i in given]
    index = coords[0] if len(coords) == 1 else e.op("concat", coords, {"axis": len(tuples)})
    perm = dims + others
    moved = [shape[d] for d in perm]
    xt = e.as_dtype(x, dtype)
    if perm != list(range(len(shape))):
        xt = e.op("transpose", [xt], {"perm": perm})
    ishape = tuples + [len(dims)]
    if accumulate:
        out = indexed.reduced_nd(e, xt, moved, dtype, index, ishape, vals, "add",
                                 what="index_put with accumulate")
    else:
        out = indexed.nd(e, xt, moved, index, ishape, vals)
    if perm == list(range(len(shape))):
        return e.op("reshape", [out], {"shape": shape}, name=n.name)
    back = [perm.index(k) for k in range(len(shape))]
    return e.op("transpose", [out], {"perm": back}, name=n.name)


def cache_update(e, n, x, shape, given, values):
    """x[:, ..., index] = values with one integer vector (a static KV
    cache's update): an index_copy of the values broadcast to the indexed
    shape, in x's layout (x's buffer is updated in place where x dies)."""
    dim, index = given
    slices = list(shape)
    slices[dim] = e.shape(index)[0]
    src = e.operand(values)
    if list(e.shape(values)) != slices:
        src = e.op("broadcast_to", [src], {"shape": slices})
    return e.op("index_copy", [e.operand(x), e.as_dtype(index, "i64"), src],
                {"axis": dim}, name=n.name)
