"""ATen rules for strided views and scatters into slices, each a
composition of cgc ops: as_strided (a reshape and transpose where the
strides are a permuted contiguous layout, else a gather at constant flat
indices), slice_scatter (concats of slices) and copy (src broadcast and
cast to dst)."""
import numpy as np

from .aten_indexing import static_extents
from .aten_rules import ATEN
from ..ir_builder import registrar
from ..errors import RefusedError

aten = registrar(ATEN)
GATHERED_LIMIT = 1 << 24  # elements of a constant flat index


@aten("as_strided")
def as_strided(e, n):
    """x.as_strided(size, stride, offset) over x's elements in row-major
    order (the functional program's view of its storage)."""
    x, size, stride = n.args[0], list(n.args[1]), list(n.args[2])
    offset = n.args[3] if len(n.args) > 3 and n.args[3] is not None else 0
    extents = static_extents(e, e.shape(x), "an as_strided view")
    count = int(np.prod(extents, dtype=np.int64)) if extents else 1
    if not all(isinstance(v, int) for v in size + stride + [offset]):
        raise RefusedError("an as_strided view with symbolic sizes or strides")
    flat = np.full(size, offset, dtype=np.int64) if size else np.array(offset, dtype=np.int64)
    for axis, (s, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[axis] = s
        flat = flat + np.arange(s, dtype=np.int64).reshape(shape) * st
    if flat.size and (flat.min() < 0 or flat.max() >= count):
        raise RefusedError(f"an as_strided view {size} by strides {stride} at {offset} reads "
                           f"outside its input's {count} elements")
    whole = e.op("reshape", [e.operand(x)], {"shape": [count]})
    order = sorted(range(len(size)), key=lambda a: -stride[a])
    permuted = [size[a] for a in order]
    if flat.size == count and np.array_equal(
            np.transpose(flat, order).reshape(-1), np.arange(count)):
        laid = e.op("reshape", [whole], {"shape": permuted})
        inverse = [order.index(a) for a in range(len(size))]
        if inverse == list(range(len(size))):
            return e.op("reshape", [laid], {"shape": size}, name=n.name)
        return e.op("transpose", [laid], {"perm": inverse}, name=n.name)
    if flat.size > GATHERED_LIMIT:
        raise RefusedError(f"an as_strided view of {flat.size} elements that is no "
                           "permutation of its input (cgc gathers at most "
                           f"{GATHERED_LIMIT} by a constant index)")
    index = e.op("constant", [], {"dtype": "i64", "shape": list(flat.shape),
                                  "value": [int(v) for v in flat.reshape(-1)]})
    return e.op("gather", [whole, index], {"axis": 0}, name=n.name)


@aten("slice_scatter")
def slice_scatter(e, n):
    """base with base[dim][start:end] = src (step 1): the slices of base
    before and after, concatenated around src."""
    args = list(n.args) + [None] * 6
    base, src = args[0], args[1]
    dim = args[2] if args[2] is not None else n.kwargs.get("dim", 0)
    start = args[3] if args[3] is not None else n.kwargs.get("start")
    end = args[4] if args[4] is not None else n.kwargs.get("end")
    step = args[5] if args[5] is not None else n.kwargs.get("step", 1)
    shape = list(static_extents(e, e.shape(base), "a slice_scatter"))
    dim %= len(shape)
    extent = shape[dim]
    start = 0 if start is None else (start + extent if start < 0 else start)
    end = extent if end is None else (end + extent if end < 0 else end)
    start, end = max(0, min(start, extent)), max(0, min(end, extent))
    end = max(end, start)  # an empty slice
    if step != 1:
        raise RefusedError(f"a slice_scatter with step {step} (cgc writes step-1 slices)")
    parts = []
    for lo, hi in ((0, start), (end, extent)):
        if hi > lo:
            parts.append((lo, e.op("slice", [e.operand(base)],
                                   {"starts": [lo], "ends": [hi], "axes": [dim], "steps": [1]})))
    middle = e.as_dtype(src, e.dtype(base))
    pieces = [p for lo, p in parts if lo < start] + [middle] + [p for lo, p in parts if lo >= end]
    if len(pieces) == 1:
        return e.op("reshape", [middle], {"shape": shape}, name=n.name)
    return e.op("concat", pieces, {"axis": dim}, name=n.name)


@aten("copy")
def copy(e, n):
    """dst.copy_(src) made functional: src broadcast to dst's shape, in
    dst's dtype."""
    dst, src = n.args[0], n.args[1]
    value = e.as_dtype(src, e.dtype(dst))
    if list(e.shape(src)) == list(e.shape(dst)):
        return value
    return e.op("broadcast_to", [value], {"shape": list(e.shape(dst))}, name=n.name)
