"""The ATen rules of what mixture-of-experts layers route tokens with:
topk, sort and argsort, histc, and grouped products (torch._grouped_mm,
and transformers' grouped_mm_fallback custom op), written as cgc ops
whose results are static in shape.

Ranks. topk and sort order one axis by pairwise ranks (cgc/ranking.py:
stable, a NaN the largest as in PyTorch, within ranking's bounds).

Grouped products. grouped_mm(x [S, K], w [E, K, N], offs [E]) multiplies
row s by w[g(s)], where g(s) is the number of offsets <= s (rows at or
past offs[E-1] give zeros, as transformers' fallback writes them): every
expert's product of every row, [E, S, N], of which each row keeps its
expert's. That is E times the rows' product and reads every expert's
weights once, with no data-dependent shape."""
from .aten_rules import ATEN, CALLS, reduced_axes
from .. import ranking
from ..ir_builder import registrar
from ..dtypes import INTEGERS
from ..errors import RefusedError
from .record import RecordNode

aten = registrar(ATEN)
call = registrar(CALLS)

def ranked_extent(e, x, axis, what, k=None):
    """The static extent of x's ranked axis; refuses a symbolic one, or one
    past ranking's bounds for keeping `k` (None: all; every other axis
    counted at its maximum)."""
    shape = e.shape(x)
    n = shape[axis]
    if not isinstance(n, int):
        raise RefusedError(f"{what} along the dynamic dim {n} (cgc ranks a static axis)")
    rows, static = 1, True
    for a, d in enumerate(shape):
        if a != axis:
            rows *= d if isinstance(d, int) else e.dims[d]["max"]
            static &= isinstance(d, int)
    ranking.check_bounds(n, rows, what, k if static else None)
    return n


def ranked(e, x, axis, k, largest):
    """(values, indices) of the k first elements of x's `axis` in rank order."""
    return ranking.ranked(e, e.operand(x), e.shape(x), e.dtype(x), axis, k, largest)


def axis_of(e, x, dim):
    return reduced_axes(dim, len(e.shape(x)))[0] if e.shape(x) else 0


def scalar_ranked(e, x):
    """A 0-d tensor's sort or topk: itself, at index 0."""
    return e.operand(x), e.op("fill", [], {"dtype": "i64", "shape": [], "value": 0})


@aten("topk")
def topk(e, n):
    """torch.topk(x, k, dim=-1, largest=True, sorted=True): the k largest
    (or smallest) in rank order, whatever `sorted` asks (an order is
    allowed either way)."""
    x, k = n.args[:2]
    dim = n.args[2] if len(n.args) > 2 else n.kwargs.get("dim", -1)
    largest = n.args[3] if len(n.args) > 3 else n.kwargs.get("largest", True)
    if not e.shape(x):
        return list(scalar_ranked(e, x))
    axis = axis_of(e, x, dim)
    extent = ranked_extent(e, x, axis, "topk", k if isinstance(k, int) else None)
    if not isinstance(k, int) or not 0 <= k <= extent:
        raise RefusedError(f"topk of k={k!r} along an axis of {extent} elements")
    return list(ranked(e, x, axis, k, bool(largest)))


def sort_args(n):
    """(dim, descending) of sort.default (x, dim, descending) or
    sort.stable / argsort.stable (x, *, stable, dim, descending)."""
    if n.target.endswith(".stable"):
        return n.kwargs.get("dim", -1), bool(n.kwargs.get("descending", False))
    dim = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", -1)
    descending = n.args[2] if len(n.args) > 2 else n.kwargs.get("descending", False)
    return dim, bool(descending)


@aten("sort", "sort.stable")
def sort(e, n):
    """torch.sort: ascending (NaNs last) or descending (NaNs first), stable."""
    x = n.args[0]
    if not e.shape(x):
        return list(scalar_ranked(e, x))
    dim, descending = sort_args(n)
    axis = axis_of(e, x, dim)
    extent = ranked_extent(e, x, axis, "sort")
    return list(ranked(e, x, axis, extent, descending))


@aten("argsort", "argsort.stable")
def argsort(e, n):
    x = n.args[0]
    if not e.shape(x):
        return scalar_ranked(e, x)[1]
    dim, descending = sort_args(n)
    axis = axis_of(e, x, dim)
    extent = ranked_extent(e, x, axis, "argsort")
    return ranked(e, x, axis, extent, descending)[1]


@aten("histc")
def histc(e, n):
    """torch.histc(x, bins=100, min=0, max=0): counts in `bins` equal bins
    over [min, max] (both 0: the data's extremes, widened by 1 each way
    where they are equal), an element at max in the last bin, elements
    outside (and NaNs) uncounted; in x's dtype. The bin is
    floor((x - min) * bins / (max - min)) in f32, PyTorch's formula."""
    x = n.args[0]
    bins = n.args[1] if len(n.args) > 1 else n.kwargs.get("bins", 100)
    low = n.args[2] if len(n.args) > 2 else n.kwargs.get("min", 0)
    high = n.args[3] if len(n.args) > 3 else n.kwargs.get("max", 0)
    if not isinstance(bins, int) or bins <= 0:
        raise RefusedError(f"histc with bins={bins!r}")
    if low > high:
        raise RefusedError(f"histc with min {low} > max {high}")
    v = e.as_dtype(x, "f32")
    rank = len(e.shape(x))
    if low == high:  # The data's extremes.
        every = list(range(rank))
        lo, hi = (e.op(op, [v], {"axes": every}) for op in ("min", "max"))
        same = e.op("eq", [lo, hi])
        lo = e.op("where", [same, e.op("sub", [lo, e.scalar(1.0, "f32")]), lo])
        hi = e.op("where", [same, e.op("add", [hi, e.scalar(1.0, "f32")]), hi])
    else:
        lo, hi = e.scalar(float(low), "f32"), e.scalar(float(high), "f32")
    position = e.op("div", [e.op("mul", [e.op("sub", [v, lo]), e.scalar(float(bins), "f32")]),
                            e.op("sub", [hi, lo])])
    inside = e.op("logical_and", [e.op("ge", [v, lo]), e.op("le", [v, hi])])
    index = e.op("minimum", [e.op("cast", [e.op("floor", [position])], {"dtype": "i64"}),
                             e.scalar(bins - 1, "i64")])
    index = e.op("where", [inside, index, e.scalar(-1, "i64")])  # one_hot: an all-zero row
    counts = e.op("one_hot", [index], {"num_classes": bins, "dtype": "f32"})
    total = e.op("sum", [counts], {"axes": list(range(rank))})
    return e.op("cast", [total], {"dtype": e.dtype(n)}, name=n.name) \
        if e.dtype(n) != "f32" else total


def grouped_product(e, n, x, w, offs):
    """x [S, K] times w [E, K, N] by the groups of `offs` [E] (module
    docstring), in x's dtype."""
    (s, _), (experts, _, _) = e.shape(x), e.shape(w)
    if len(e.shape(offs)) != 1 or e.dtype(offs) not in INTEGERS:
        raise RefusedError("a grouped product whose offsets are not an integer vector")
    ends = e.op("reshape", [e.as_dtype(offs, "i64")], {"shape": [1, experts]})
    row = e.op("iota", [], {"dtype": "i64", "shape": [s, 1], "axis": 0})
    group = e.op("sum", [e.op("cast", [e.op("ge", [row, ends])], {"dtype": "i64"})], {"axes": [1]})
    every = e.op("matmul", [e.operand(x), e.operand(w)])            # [E, S, N]
    expert = e.op("iota", [], {"dtype": "i64", "shape": [experts, 1, 1], "axis": 0})
    mine = e.op("eq", [e.op("reshape", [group], {"shape": [1, s, 1]}), expert])
    kept = e.op("where", [mine, every, e.scalar(0, e.dtype(x))])
    return e.op("sum", [kept], {"axes": [0]}, name=n.name)


def check_grouped(e, x, w):
    if len(e.shape(x)) != 2 or len(e.shape(w)) != 3:
        raise RefusedError(f"a grouped product of {e.shape(x)} and {e.shape(w)}: cgc takes "
                           "x [S, K] by experts' weights [E, K, N] only")


@aten("_grouped_mm")
def grouped_mm(e, n):
    """torch._grouped_mm(x, w, offs, bias=None, out_dtype=None), the form
    x [S, K] by w [E, K, N] (torch.nn.functional.grouped_mm's too)."""
    x, w = n.args[:2]
    offs = n.args[2] if len(n.args) > 2 else n.kwargs.get("offs")
    bias = n.args[3] if len(n.args) > 3 else n.kwargs.get("bias")
    out_dtype = n.args[4] if len(n.args) > 4 else n.kwargs.get("out_dtype")
    if not isinstance(offs, RecordNode) or bias is not None or \
            (out_dtype is not None and e.dtype(n) != e.dtype(x)):
        raise RefusedError("_grouped_mm without offsets, or with a bias or another out_dtype")
    check_grouped(e, x, w)
    return grouped_product(e, n, x, w, offs)


@call("transformers.grouped_mm_fallback.default")
def grouped_mm_fallback(e, n):
    """transformers' custom op for grouped products (integrations/moe.py),
    which it calls where torch's grouped_mm takes no f32."""
    x, w, offs = n.args[:3]
    check_grouped(e, x, w)
    return grouped_product(e, n, x, w, offs)
