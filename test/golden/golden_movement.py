"""The golden cases of `index_copy` and `index_add` (gen_golden.py runs
them at the end of its movement cases, on its random stream `g`;
index_add's on a stream of their own). index_copy: NumPy's copy of each
source slice to its wrapped index along the axis, an index outside
[-n, n) writing nothing and the last of duplicates winning; into a graph
input (copied first), into a value that dies there (written in place),
into one read again after it, a constant index that repeats after
wrapping, i64 and bf16, and a cache carried through a `while`.
index_add: each source slice added in index order, each sum rounded to
the dtype (so bf16 sums of many duplicates are order-exact), the same
edges, inner widths of 1 (an element scatter) to 300, many outer slices,
and an embedding gradient's shape (2000 rows, 700 picks). argtopk: a
stable sort's first k (ties by index, a NaN the largest, -0 equal to +0),
largest and smallest, f32, bf16 over a 32000-wide vocabulary, i32 and
i64, k = n, k = 2048 (the kernel's widest) and one row past the grid's
65535 blocks."""
import numpy as np


def indexed_slices(x, idx, axis):
    """(x's slice at index j's wrapped position, source's slice j) for each
    in-range index j, in order: tuples of slices along `axis`."""
    n = x.shape[axis]
    for j, k in enumerate(np.asarray(idx, dtype=np.int64)):
        k = k + n if k < 0 else k
        if 0 <= k < n:
            dst, src = [slice(None)] * x.ndim, [slice(None)] * x.ndim
            dst[axis], src[axis] = k, j
            yield tuple(dst), tuple(src)


def index_copied(x, idx, source, axis):
    """torch.index_copy with the IR's edges: an index outside [-n, n)
    writes nothing; of duplicates the last wins."""
    out = x.copy()
    for dst, src in indexed_slices(x, idx, axis):
        out[dst] = source[src]
    return out


def gen_index_copy(g):
    """index_copy into a graph input (copied first), into a value that dies
    there (written in place) and into one read again after it."""
    cache = g.rand((2, 3, 6, 4), "f32")
    for i, (idx, dt) in enumerate(((np.array([4, 0]), "f32"), (np.array([1, 3, 1]), "f32"),
                                   (np.array([-1, 7, -9, 2]), "f32"), (np.array([5]), "bf16"))):
        x = g.round_to(dt, cache)
        src = g.rand((2, 3, len(idx), 4), dt)
        g.one_op(f"index_copy_{i}", "index_copy", [("x", dt, x), ("i", "i64", idx.astype(float)),
                                                 ("s", dt, src)], {"axis": 2},
               index_copied(x, idx, src, 2), dt)
    # A constant index whose wrapped positions repeat (-1 and 2 of 3): the
    # last write wins on the GPU too.
    x, src = g.rand((2, 3, 2), "f32"), g.rand((2, 2, 2), "f32")
    g.emit("index_copy_const_wrapped", [("x", "f32", x), ("s", "f32", src)],
         [{"name": "i", "op": "constant", "attrs": {"dtype": "i64", "shape": [2], "value": [-1, 2]}},
          {"name": "r", "op": "index_copy", "inputs": ["x", "i", "s"], "attrs": {"axis": 1}}],
         [("r", "f32", index_copied(x, [-1, 2], src, 1))])
    xi, si = g.rand((5, 3), "i64"), g.rand((2, 3), "i64")
    g.one_op("index_copy_i64_axis0", "index_copy", [("x", "i64", xi), ("i", "i32", np.array([3.0, -5.0])),
                                                  ("s", "i64", si)], {"axis": -2},
           index_copied(xi, [3, -5], si, 0), "i64", exact=True)
    x, src, idx = g.rand((2, 6, 4), "f32"), g.rand((2, 2, 4), "f32"), np.array([5, 2])
    nodes = [{"name": "y", "op": "neg", "inputs": ["x"]},
             {"name": "z", "op": "index_copy", "inputs": ["y", "i", "s"], "attrs": {"axis": 1}}]
    g.emit("index_copy_in_place", [("x", "f32", x), ("i", "i64", idx.astype(float)), ("s", "f32", src)],
         nodes + [{"name": "u", "op": "exp", "inputs": ["z"]}],
         [("u", "f32", np.exp(index_copied(-x, idx, src, 1)))])
    nodes.append({"name": "w", "op": "add", "inputs": ["y", "z"]})
    g.emit("index_copy_read_after", [("x", "f32", x), ("i", "i64", idx.astype(float)), ("s", "f32", src)],
         nodes, [("z", "f32", index_copied(-x, idx, src, 1)),
                 ("w", "f32", -x + index_copied(-x, idx, src, 1))])

    # A cache carried through a `while`, one slice per trip at the trip's
    # index (a decoding loop's KV cache update).
    cache, steps = g.rand((2, 6, 3), "f32"), 4
    body = {"inputs": [{"name": "i", "dtype": "i64", "shape": []},
                       {"name": "c", "dtype": "f32", "shape": [2, 6, 3]},
                       {"name": "v", "dtype": "f32", "shape": [2, 1, 3]}],
            "nodes": [{"name": "at", "op": "reshape", "inputs": ["i"], "attrs": {"shape": [1]}},
                      {"name": "c2", "op": "index_copy", "inputs": ["c", "at", "v"], "attrs": {"axis": 1}},
                      {"name": "one", "op": "constant", "attrs": {"dtype": "i64", "shape": [], "value": 1}},
                      {"name": "i2", "op": "add", "inputs": ["i", "one"]},
                      {"name": "two", "op": "constant", "attrs": {"dtype": "f32", "shape": [], "value": 2.0}},
                      {"name": "v2", "op": "mul", "inputs": ["v", "two"]}],
            "outputs": ["i2", "c2", "v2"]}
    cond = {"inputs": body["inputs"],
            "nodes": [{"name": "n", "op": "constant", "attrs": {"dtype": "i64", "shape": [], "value": steps}},
                      {"name": "go", "op": "lt", "inputs": ["i", "n"]}],
            "outputs": ["go"]}
    v = g.rand((2, 1, 3), "f32")
    expected = cache.copy()
    for k in range(steps):
        expected[:, k:k + 1, :] = v * 2.0 ** k
    g.emit("index_copy_while", [("c0", "f32", cache), ("v", "f32", v)],
         [{"name": "zero", "op": "constant", "attrs": {"dtype": "i64", "shape": [], "value": 0}},
          {"name": "cn", "op": "neg", "inputs": ["c0"]},
          {"name": "c1", "op": "neg", "inputs": ["cn"]},
          {"name": "loop", "op": "while", "inputs": ["zero", "c1", "v"], "outputs": ["i", "c", "vl"],
           "regions": {"cond": cond, "body": body}}],
         [("c", "f32", expected)])


def index_added(x, idx, source, axis, dt):
    """torch.index_add with the IR's edges and rounding: source slices
    added in index order, each sum rounded to `dt`; an index outside
    [-n, n) adds nothing."""
    from golden_numerics import round_to
    out = x.astype(np.float64).copy()
    for dst, src in indexed_slices(x, idx, axis):
        total = out[dst] + source[src]
        out[dst] = total if dt in ("i32", "i64") else round_to(dt, total)
    return out


def gen_index_add(g):
    """index_add: duplicates, negative and out-of-range indices, f32, bf16
    (many duplicates: each sum rounded in order), i64 with an i32 index,
    in place, an element scatter (inner 1), many outer slices, wide rows
    and an embedding gradient's shape."""
    rng = np.random.default_rng(4321)
    cases = [("f32_dups", "f32", (2, 6, 4), 1, np.array([-1, 2, 2, 7, -9, 0, 5, 2])),
             ("bf16_dups", "bf16", (5, 3), 0, rng.integers(-5, 5, size=40)),
             ("f16_axis_last", "f16", (3, 4, 7), 2, np.array([6, 0, 6, -7, 3])),
             ("element_scatter", "f32", (300,), 0, rng.integers(-300, 320, size=900)),
             ("many_slices", "f32", (70, 9, 2), 1, rng.integers(0, 9, size=13)),
             ("wide_rows", "f32", (5, 300), 0, np.array([4, 1, 4, 0, 4])),
             ("embedding_rows", "f32", (2000, 24), 0, rng.integers(0, 2000, size=700))]
    for name, dt, shape, axis, idx in cases:
        x = g.rand(shape, dt, rng=rng)
        sshape = list(shape)
        sshape[axis] = len(idx)
        src = g.rand(tuple(sshape), dt, rng=rng)
        g.one_op(f"index_add_{name}", "index_add",
                 [("x", dt, x), ("i", "i64", idx.astype(float)), ("s", dt, src)], {"axis": axis},
                 index_added(x, idx, src, axis, dt), dt)
    xi, si = g.rand((5, 3), "i64", rng=rng), g.rand((4, 3), "i64", rng=rng)
    g.one_op("index_add_i64_axis0", "index_add",
             [("x", "i64", xi), ("i", "i32", np.array([3.0, -5.0, 3.0, 9.0])), ("s", "i64", si)],
             {"axis": -2}, index_added(xi, [3, -5, 3, 9], si, 0, "i64"), "i64", exact=True)
    x, src, idx = g.rand((2, 6, 4), "f32", rng=rng), g.rand((2, 3, 4), "f32", rng=rng), \
        np.array([5, 2, 5])
    nodes = [{"name": "y", "op": "neg", "inputs": ["x"]},
             {"name": "z", "op": "index_add", "inputs": ["y", "i", "s"], "attrs": {"axis": 1}},
             {"name": "u", "op": "exp", "inputs": ["z"]}]
    g.emit("index_add_in_place", [("x", "f32", x), ("i", "i64", idx.astype(float)),
                                  ("s", "f32", src)],
           nodes, [("u", "f32", np.exp(index_added(-x, idx, src, 1, "f32")))])


def top_indices(x, k, largest):
    """The first k of each last-axis row's indices in rank order: a stable
    sort (ties by index), a NaN the largest, -0 equal to +0."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    out = []
    for row in rows:
        nan = np.isnan(row)
        value = np.where(nan, 0.0, row) + 0.0  # -0 as +0
        # lexsort: the last key first; NaN first for the largest, last for the smallest.
        order = np.lexsort((np.arange(row.size), -value if largest else value,
                            ~nan if largest else nan))
        out.append(order[:k])
    return np.array(out, dtype=np.float64).reshape(x.shape[:-1] + (k,))


def gen_argtopk(g):
    """argtopk over rows with ties, NaNs and signed zeros, several dtypes and
    widths (see the module's docstring)."""
    rng = np.random.default_rng(987)
    ties = np.array([[2.0, np.nan, -1.0, 2.0, 0.5, -1.0, 2.0, -0.0, 0.0, np.nan],
                     [0.0, 3.0, 3.0, -np.inf, np.nan, 1.0, np.inf, -0.0, 3.0, -2.0]])
    cases = [("ties_f32", "f32", ties, 4, True), ("ties_smallest", "f32", ties, 6, False),
             ("full_sort", "f32", ties, 10, True),
             ("vocab_bf16", "bf16", g.rand((3, 32000), "bf16", -8, 8, rng=rng), 50, True),
             ("i32", "i32", g.rand((4, 9), "i32", -3, 3, rng=rng), 5, True),
             ("i64_smallest", "i64", g.rand((2, 3, 40), "i64", -9, 9, rng=rng), 11, False),
             ("k2048", "f32", g.rand((2, 5000), "f32", rng=rng), 2048, True),
             ("many_rows", "f32", g.rand((65537, 3), "f32", rng=rng), 2, False)]
    for name, dt, x, k, largest in cases:
        attrs = {"k": k} if largest else {"k": k, "largest": False}
        g.one_op(f"argtopk_{name}", "argtopk", [("x", dt, x)], attrs,
                 top_indices(x, k, largest), "i64", exact=True)
