"""Ranking along one axis in cgc ops, for the front ends' topk and sort
(torch's topk/sort/argsort, ONNX's TopK).

Algorithm: element i's rank along the axis is the number of elements
ahead of it (larger, or for ascending order smaller; a NaN counts as the
largest, as in PyTorch) plus the equal ones before it, so ties keep their
index order (a stable sort; ONNX's TopK asks the lower index first).
Result r is the element of rank r, found as a sum over the n elements of
the one whose rank is r. It costs n^2 comparisons per row, [..., n, n]
and [..., k, n] boolean intermediates that cgc fuses into a few kernels.
Past that bound (more than MAX_RANKED elements or MAX_COMPARISONS in
all), the k first in rank order come from one `argtopk` (the same order:
a radix select and a sort of the k in one kernel a row) when k is at
most MAX_SELECTED, and their values from a gather; check_bounds refuses
the rest. `e` is a builder: op(op, inputs, attrs) and scalar(value,
dtype)."""
from .dtypes import INTEGERS
from .errors import RefusedError

MAX_RANKED = 16384          # elements along a ranked axis
MAX_COMPARISONS = 1 << 28   # pairwise comparisons of one ranked tensor
MAX_SELECTED = 2048         # the largest k argtopk's kernel takes


def compared(n, rows):
    """Whether `rows` rows of `n` elements are ranked by comparisons."""
    return n <= MAX_RANKED and rows * n * n <= MAX_COMPARISONS


def check_bounds(n, rows, what, k=None):
    """Refuses ranking `n` elements in each of `rows` rows, keeping the `k`
    first (None: all, or rows with a symbolic dim, which argtopk's flat
    gather does not take), past both ways' bounds."""
    if compared(n, rows) or (k is not None and k <= MAX_SELECTED):
        return
    raise RefusedError(f"{what} of {n} elements in {rows} rows, keeping {n if k is None else k}: "
                       f"cgc ranks them by pairwise comparisons ({rows * n * n}), refused over "
                       f"{MAX_RANKED} elements or {MAX_COMPARISONS} comparisons, or selects at "
                       f"most {MAX_SELECTED} a row")


def moved_last(e, v, axis, rank):
    """v with `axis` moved last (itself where it is last), and the perm back."""
    if axis == rank - 1:
        return v, None
    perm = [k for k in range(rank) if k != axis] + [axis]
    back = [perm.index(k) for k in range(rank)]
    return e.op("transpose", [v], {"perm": perm}), back


def is_nan(e, v):
    return e.op("ne", [v, v])


def ranks(e, v, shape, dtype, largest):
    """i64 [..., n]: each element's rank along the last axis of v (of
    `shape`): the elements ahead of it plus the equal ones before it."""
    *lead, n = shape
    a = e.op("reshape", [v], {"shape": lead + [n, 1]})   # element i
    b = e.op("reshape", [v], {"shape": lead + [1, n]})   # element j
    ahead = e.op("gt" if largest else "lt", [b, a])
    tie = e.op("eq", [b, a])
    if dtype not in INTEGERS + ("bool",):  # a NaN is the largest; NaNs tie
        nan_a, nan_b = is_nan(e, a), is_nan(e, b)
        nan_ahead = e.op("logical_and", [nan_b if largest else nan_a,
                                         e.op("logical_not", [nan_a if largest else nan_b])])
        ahead = e.op("logical_or", [ahead, nan_ahead])
        tie = e.op("logical_or", [tie, e.op("logical_and", [nan_a, nan_b])])
    j = e.op("iota", [], {"dtype": "i64", "shape": [n, n], "axis": 1})
    i = e.op("iota", [], {"dtype": "i64", "shape": [n, n], "axis": 0})
    counted = e.op("logical_or", [ahead, e.op("logical_and", [tie, e.op("lt", [j, i])])])
    return e.op("sum", [e.op("cast", [counted], {"dtype": "i64"})], {"axes": [len(shape)]})


def ranked(e, v, shape, dtype, axis, k, largest):
    """(values, indices) of the k first elements of `axis` of v (of
    `shape` and `dtype`) in rank order, each of v's shape with k along
    `axis`: the k largest (or smallest) of each row."""
    if dtype == "bool":
        raise RefusedError("ranking bool values (cgc ranks numbers: cast them first)")
    rank = len(shape)
    v, back = moved_last(e, v, axis, rank)
    last = [d for a, d in enumerate(shape) if a != axis] + [shape[axis]]
    *lead, n = last
    rows = 1
    for d in lead:  # a symbolic dim: ranked by comparisons (check_bounds said so)
        rows = rows * d if isinstance(d, int) and rows is not None else None
    if rows is not None and not compared(n, rows):
        values, indices = selected(e, v, lead, n, rows, dtype, k, largest)
    else:
        values, indices = by_comparisons(e, v, last, dtype, k, largest)
    if back is not None:
        indices = e.op("transpose", [indices], {"perm": back})
        values = e.op("transpose", [values], {"perm": back})
    return values, indices


def selected(e, v, lead, n, rows, dtype, k, largest):
    """(values, indices) [*lead, k] of the k first of v's rows (the last
    axis, n wide) in rank order: argtopk, and a gather of v flattened at
    row * n + index."""
    if k == 0:
        return (e.op("fill", [], {"dtype": dtype, "shape": lead + [0], "value": 0}),
                e.op("fill", [], {"dtype": "i64", "shape": lead + [0], "value": 0}))
    indices = e.op("argtopk", [v], {"k": k, "largest": bool(largest)})
    values = picked(e, v, rows, n, e.op("reshape", [indices], {"shape": [rows, k]}), k)
    return e.op("reshape", [values], {"shape": lead + [k]}), indices


def picked(e, v, rows, n, indices, k):
    """[rows, k]: each of v's rows (`rows` x `n` elements, v of any shape
    holding them in row-major order) at its k `indices` ([rows, k]): a
    gather of v flattened at row * n + index."""
    starts = e.op("mul", [e.op("iota", [], {"dtype": "i64", "shape": [rows, 1], "axis": 0}),
                          e.scalar(n, "i64")])
    at = e.op("reshape", [e.op("add", [indices, starts])], {"shape": [rows * k]})
    flat = e.op("reshape", [v], {"shape": [rows * n]})
    return e.op("reshape", [e.op("gather", [flat, at], {"axis": 0})], {"shape": [rows, k]})


def by_comparisons(e, v, last, dtype, k, largest):
    """(values, indices) [*lead, k] by pairwise ranks (the module's
    docstring), v's last axis ranked."""
    *lead, n = last
    order = ranks(e, v, last, dtype, largest)
    r = e.op("iota", [], {"dtype": "i64", "shape": [k, 1], "axis": 0})
    chosen = e.op("eq", [e.op("reshape", [order], {"shape": lead + [1, n]}), r])  # [..., k, n]
    position = e.op("iota", [], {"dtype": "i64", "shape": [1, n], "axis": 1})
    zero = e.scalar(0, "i64")
    indices = e.op("sum", [e.op("where", [chosen, position, zero])], {"axes": [len(last)]})
    row = e.op("reshape", [v], {"shape": lead + [1, n]})
    values = e.op("sum", [e.op("where", [chosen, row, e.scalar(0, dtype)])],
                  {"axes": [len(last)]})
    return values, indices
