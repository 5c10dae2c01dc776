#!/usr/bin/env python3
"""Writes golden cases for cgc's reference interpreter, computed with NumPy only.

For every op: a one-op (or few-op) IR file <case>.json, its inputs
<case>.in.safetensors and the expected outputs <case>.expected.safetensors,
plus cases.json listing every case. Covers several shapes and dtypes,
broadcasting corners, empty and size-1 dims, control flow, symbolic dims,
dropout (checked bit for bit against an independent Philox4x32-10:
golden_numerics.py) and the parameter initializers.

Usage: gen_golden.py OUT_DIR
"""
import json, math, os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_attention  # noqa: E402
import golden_convolution  # noqa: E402
import golden_edges  # noqa: E402
import golden_movement  # noqa: E402
from golden_numerics import (check_philox, exact_ints, philox_uniform,  # noqa: E402
                             round_to, saturate, write_safetensors)

# ----------------------------------------------------------------- cases ---
RNG = np.random.default_rng(1234)
CASES = []
OUT = None


def rand(shape, dtype, lo=-3.0, hi=3.0, rng=None):
    """Random values of dtype from rng (default the shared stream: a case
    added with its own rng leaves the others' values as they were)."""
    rng = rng or RNG
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.float64)
    if dtype in ("i32", "i64"):
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(np.float64)
    return round_to(dtype, rng.uniform(lo, hi, size=shape))


def emit(name, inputs, nodes, outputs, dims=None, exact=False, extra=None):
    """inputs: [(name, dtype, array, shape-or-None)]; outputs: [(name, dtype, expected)]."""
    if any(c["name"] == name for c in CASES):  # (it would overwrite the first one's files)
        sys.exit(f"gen_golden: two cases are named {name}")
    g = {"format_version": 1, "name": name, "inputs": [], "nodes": nodes,
         "outputs": [o[0] for o in outputs]}
    if dims:
        g["dims"] = dims
    feed = {}
    for inp in inputs:
        n, dt, arr = inp[:3]
        shape = inp[3] if len(inp) > 3 and inp[3] is not None else list(np.shape(arr))
        entry = {"name": n, "dtype": dt, "shape": shape}
        if len(inp) > 4:
            entry.update(inp[4])
        g["inputs"].append(entry)
        if arr is not None:
            feed[n] = (dt, arr)
    if extra:
        g.update(extra)
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(g, f, indent=1)
    write_safetensors(os.path.join(OUT, name + ".in.safetensors"), feed)
    write_safetensors(os.path.join(OUT, name + ".expected.safetensors"),
                      {n: (dt, v if np.issubdtype(np.asarray(v).dtype, np.integer)
                           else round_to(dt, np.asarray(v, dtype=np.float64)))
                       for n, dt, v in outputs})
    CASES.append({"name": name, "exact": exact})


def one_op(name, op, ins, attrs, expected, out_dtype, exact=False):
    """ins: [(name, dtype, array)]; expected: float64 array before rounding."""
    node = {"name": "r", "op": op, "inputs": [i[0] for i in ins]}
    if attrs:
        node["attrs"] = attrs
    emit(name, ins, [node], [("r", out_dtype, expected)], exact=exact)


def sname(shape):
    return "x".join(map(str, shape)) if shape else "scalar"


def gen_unary():
    with np.errstate(all="ignore"):
        ops = {
            "neg": (np.negative, None), "abs": (np.abs, None), "exp": (np.exp, None),
            "log": (np.log, "pos"), "sqrt": (np.sqrt, "pos"), "rsqrt": (lambda x: 1 / np.sqrt(x), "pos"),
            "tanh": (np.tanh, None), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None),
            "relu": (lambda x: np.where(x > 0, x, 0.0), None),
            "gelu": (lambda x: x * 0.5 * (1 + np.vectorize(math.erf, otypes=[float])(x / math.sqrt(2))), None),
            "gelu_tanh": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), None),
            "erf": (np.vectorize(math.erf, otypes=[float]), None), "sin": (np.sin, None), "cos": (np.cos, None),
            "floor": (np.floor, None), "ceil": (np.ceil, None), "round": (np.round, None),
        }
        for op, (f, dom) in ops.items():
            for dt, shapes in (("f32", [(), (0,), (1,), (3, 4), (2, 1, 5)]), ("f16", [(3, 4)]), ("bf16", [(3, 4)])):
                for shape in shapes:
                    lo, hi = (0.05, 4.0) if dom else (-3.0, 3.0)
                    x = rand(shape, dt, lo, hi)
                    one_op(f"{op}_{dt}_{sname(shape)}", op, [("x", dt, x)], None, f(x), dt)
        for op in ("neg", "abs", "relu"):
            for dt in ("i32", "i64"):
                x = rand((2, 5), dt, -9, 9)
                one_op(f"{op}_{dt}", op, [("x", dt, x)], None, ops[op][0](x), dt)
        x = rand((3, 3), "bool")
        one_op("logical_not_bool", "logical_not", [("x", "bool", x)], None, 1 - x, "bool")
        x = np.array([np.nan, -np.inf, np.inf, -0.0, 1e-30, 70000.0])
        one_op("exp_f16_overflow", "exp", [("x", "f16", round_to("f16", [0, 1, 10, 12, -20, 11.2]))],
               None, np.exp(round_to("f16", [0, 1, 10, 12, -20, 11.2])), "f16")
        one_op("relu_f32_specials", "relu", [("x", "f32", x)], None, np.where(np.isnan(x), x, np.where(x > 0, x, 0.0)), "f32")
        # Ties go to even (np.round); NaN, infinities and -0 stay.
        ties = [0.5, 1.5, 2.5, -0.5, -2.5, -0.0, 0.49999997, 8388609.0, np.nan, np.inf, -np.inf, 1e30]
        for op, f in (("round", np.round), ("floor", np.floor), ("ceil", np.ceil)):
            for dt in ("f32", "f16", "bf16"):
                x = round_to(dt, ties)
                one_op(f"{op}_{dt}_specials", op, [("x", dt, x)], None, f(x), dt)


def gen_binary():
    shapes = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((), (2, 3)), ((0, 3), (1, 3)), ((2, 1, 4), (3, 1)), ((1,), (5,))]
    fops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
            "pow": np.power, "maximum": np.maximum, "minimum": np.minimum}
    with np.errstate(all="ignore"):
        for op, f in fops.items():
            for dt in ("f32", "f16", "bf16"):
                for i, (sa, sb) in enumerate(shapes if dt == "f32" else shapes[:2]):
                    a = rand(sa, dt, 0.1, 3) if op == "pow" else rand(sa, dt)
                    b = rand(sb, dt, -2, 2)
                    if op == "div":
                        b = np.where(np.abs(b) < 0.25, 0.5, b)
                    one_op(f"{op}_{dt}_{i}", op, [("a", dt, a), ("b", dt, b)], None, f(a, b), dt)
        a = np.array([1.0, np.nan, 3.0, -np.inf]); b = np.array([np.nan, 2.0, 1.0, 0.0])
        one_op("maximum_nan", "maximum", [("a", "f32", a), ("b", "f32", b)], None, np.maximum(a, b), "f32")
        one_op("minimum_nan", "minimum", [("a", "f32", a), ("b", "f32", b)], None, np.minimum(a, b), "f32")
        for dt in ("i32", "i64"):
            a = np.array([7, -7, 7, -7, 5, 0, -9, 3], dtype=np.float64)
            b = np.array([2, 2, -2, -2, 0, 0, 4, 3], dtype=np.float64)
            q = np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b)))
            one_op(f"div_{dt}", "div", [("a", dt, a), ("b", dt, b)], None, q, dt)
            for op in ("add", "sub", "mul", "maximum", "minimum"):
                a, b = rand((2, 3), dt, -50, 50), rand((3,), dt, -50, 50)
                one_op(f"{op}_{dt}", op, [("a", dt, a), ("b", dt, b)], None, fops[op](a, b), dt)
        big = np.array([2147483647.0, -2147483648.0, 100000.0])
        one_op("add_i32_wrap", "add", [("a", "i32", big), ("b", "i32", np.array([1.0, -1.0, 0.0]))], None,
               (big.astype(np.int64) + np.array([1, -1, 0])).astype(np.int32).astype(np.float64), "i32")
        one_op("mul_i32_wrap", "mul", [("a", "i32", big), ("b", "i32", big)], None,
               (big.astype(np.int64) * big.astype(np.int64)).astype(np.int32).astype(np.float64), "i32")
    cmp = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
    for op, f in cmp.items():
        for dt in ("f32", "i32", "f16"):
            a, b = rand((3, 4), dt, -2, 2), rand((1, 4), dt, -2, 2)
            a[0, :] = b[0, :]  # ties
            one_op(f"{op}_{dt}", op, [("a", dt, a), ("b", dt, b)], None, f(a, b), "bool")
        a = np.array([0.0, np.nan, 1.0]); b = np.array([np.nan, np.nan, 1.0])
        one_op(f"{op}_f32_nan", op, [("a", "f32", a), ("b", "f32", b)], None, f(a, b), "bool")
    for op in ("eq", "ne"):
        a, b = rand((4,), "bool"), rand((4,), "bool")
        one_op(f"{op}_bool", op, [("a", "bool", a), ("b", "bool", b)], None, cmp[op](a, b), "bool")
    for op, f in (("logical_and", np.logical_and), ("logical_or", np.logical_or)):
        a, b = rand((2, 3), "bool"), rand((3,), "bool")
        one_op(f"{op}_bool", op, [("a", "bool", a), ("b", "bool", b)], None, f(a, b), "bool")
    for dt in ("f32", "i64", "bool", "bf16"):
        c, a, b = rand((2, 1, 3), "bool"), rand((4, 1), dt), rand((3,), dt)
        one_op(f"where_{dt}", "where", [("c", "bool", c), ("a", dt, a), ("b", dt, b)], None,
               np.where(c != 0, a, b), dt)


def gen_cast():
    x = np.array([0.0, -0.0, 1.5, -1.5, 2.7, -2.7, 1e10, -1e10, np.nan, np.inf, -np.inf, 0.4999])
    for to in ("i32", "i64", "bool"):
        one_op(f"cast_f32_{to}", "cast", [("x", "f32", x)], {"dtype": to}, saturate(to, x), to)
    y = np.array([1.0, 70000.0, -1e6, 1.0 / 3, 65519.0, 65520.0, 1e-8, 2.0 ** -24 * 1.5, np.nan])
    for to in ("f16", "bf16"):
        one_op(f"cast_f32_{to}", "cast", [("x", "f32", round_to("f32", y))], {"dtype": to}, round_to("f32", y), to)
    one_op("cast_f16_f32", "cast", [("x", "f16", round_to("f16", y))], {"dtype": "f32"}, round_to("f16", y), "f32")
    i = np.array([0.0, 1.0, -5.0, 123456789.0, 2049.0])
    one_op("cast_i64_f16", "cast", [("x", "i64", i)], {"dtype": "f16"}, i, "f16")
    wide = exact_ints([1, -3000000000, 3000000000, 2 ** 32 + 5, -2 ** 63, 2 ** 63 - 1])
    one_op("cast_i64_i32", "cast", [("x", "i64", wide)], {"dtype": "i32"},
           wide.astype(np.int32).astype(np.int64), "i32")  # wraps modulo 2^32
    b = rand((2, 2), "bool")
    one_op("cast_bool_f32", "cast", [("x", "bool", b)], {"dtype": "f32"}, b, "f32")


def gen_sources():
    def src(name, op, attrs, expected, dt):
        emit(name, [], [{"name": "r", "op": op, "attrs": attrs}], [("r", dt, expected)])
    src("constant_splat", "constant", {"dtype": "f32", "shape": [2, 3], "value": 0.1}, np.full((2, 3), 0.1), "f32")
    vals = [1.5, -2.25, 3.1, 4.0, 1e-3, 7.0]
    src("constant_full_bf16", "constant", {"dtype": "bf16", "shape": [3, 2], "value": vals}, np.reshape(vals, (3, 2)), "bf16")
    src("constant_scalar_i64", "constant", {"dtype": "i64", "shape": [], "value": 42}, np.array(42.0), "i64")
    src("fill_f16", "fill", {"dtype": "f16", "shape": [2, 0, 3], "value": 1.0}, np.ones((2, 0, 3)), "f16")
    src("fill_i32", "fill", {"dtype": "i32", "shape": [4], "value": -2.7}, np.full(4, -2.7), "i32")
    for axis in (0, 1, -1):
        src(f"iota_axis{axis}", "iota", {"dtype": "i64", "shape": [3, 4], "axis": axis},
            np.indices((3, 4))[axis], "i64")
    src("iota_f32", "iota", {"dtype": "f32", "shape": [5], "axis": 0}, np.arange(5.0), "f32")


def gen_reductions():
    fs = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
    variants = [((3, 4), None, False), ((3, 4), [1], False), ((3, 4), [0], True), ((2, 3, 4), [0, 2], False),
                ((2, 3, 4), [-1], True), ((), None, False), ((1, 5), [0], False)]
    with np.errstate(all="ignore"):
        for op, f in fs.items():
            for dt in ("f32", "f16", "bf16"):
                for i, (shape, axes, keep) in enumerate(variants if dt == "f32" else variants[:3]):
                    x = rand(shape, dt)
                    ax = tuple(range(len(shape))) if axes is None else tuple(a % len(shape) for a in axes)
                    attrs = {}
                    if axes is not None:
                        attrs["axes"] = axes
                    if keep:
                        attrs["keepdim"] = True
                    one_op(f"{op}_{dt}_{i}", op, [("x", dt, x)], attrs, f(x, axis=ax, keepdims=keep), dt)
            if op not in ("mean", "prod"):
                x = rand((3, 5), "i64", -100, 100)
                one_op(f"{op}_i64", op, [("x", "i64", x)], {"axes": [1]}, f(x, axis=1), "i64")
        x = np.zeros((0, 3))
        one_op("sum_empty", "sum", [("x", "f32", x)], {"axes": [0]}, np.zeros(3), "f32")
        one_op("mean_empty", "mean", [("x", "f32", x)], {"axes": [0]}, np.full(3, np.nan), "f32")
        one_op("max_empty", "max", [("x", "f32", x)], {"axes": [0]}, np.full(3, -np.inf), "f32")
        one_op("prod_empty", "prod", [("x", "f32", x)], {"axes": [0]}, np.ones(3), "f32")
        # Long rows, columns and one long row: the row, column and split
        # reduction kernels multiply (factors near 1 keep the product finite).
        for name, shape, axes in (("rows", (8, 1000), [1]), ("columns", (1000, 8), [0]),
                                  ("long_row", (1, 65536), [1])):
            x = rand(shape, "f32", 0.999, 1.001)
            one_op(f"prod_f32_{name}", "prod", [("x", "f32", x)], {"axes": axes}, np.prod(x, axis=tuple(axes)), "f32")
        # Half-precision rows: bf16 factors, and f16 ones with an exp before
        # the product (a fused prologue on the GPU, which keeps exp in float
        # where the interpreter rounds it to f16: 128 factors keep that
        # within the f16 tolerance, at most 0.48 of it in a NumPy model of
        # both; bf16's coarser rounding of exp would not stay within it).
        x = rand((4, 256), "bf16", 0.99, 1.01)
        one_op("prod_bf16_rows", "prod", [("x", "bf16", x)], {"axes": [1]}, np.prod(x, axis=1), "bf16")
        x = rand((4, 128), "f16", -0.01, 0.01)
        e = round_to("f16", np.exp(x))
        emit("prod_f16_exp_rows", [("x", "f16", x)],
             [{"name": "e", "op": "exp", "inputs": ["x"]},
              {"name": "r", "op": "prod", "inputs": ["e"], "attrs": {"axes": [1]}}],
             [("r", "f16", np.prod(e, axis=1))])
        one_op("max_nan", "max", [("x", "f32", np.array([[1.0, np.nan], [2.0, 3.0]]))], {"axes": [1]},
               np.array([np.nan, 3.0]), "f32")
    x = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 1.0, 5.0, 5.0], [-1.0, -2.0, -3.0, -1.0]])
    for axis, keep in ((1, False), (0, True), (-1, True)):
        one_op(f"argmax_axis{axis}_{int(keep)}", "argmax", [("x", "f32", x)],
               {"axis": axis, "keepdim": keep}, np.argmax(x, axis=axis, keepdims=keep), "i64")
    one_op("argmax_i32", "argmax", [("x", "i32", x)], {"axis": 1}, np.argmax(x, axis=1), "i64")
    for dt, axis in (("f32", 0), ("f32", 1), ("i32", 1), ("f16", -1)):
        x = rand((3, 4), dt)
        one_op(f"cumsum_{dt}_{axis}", "cumsum", [("x", dt, x)], {"axis": axis}, np.cumsum(x, axis=axis), dt)


def gen_matmul():
    cases = [((3, 4), (4, 5), False, False), ((2, 3, 4), (4, 2), False, False), ((2, 1, 3, 4), (3, 4, 2), False, False),
             ((4, 3), (4, 5), True, False), ((3, 4), (5, 4), False, True), ((2, 4, 3), (2, 5, 4), True, True),
             ((1, 1), (1, 1), False, False), ((3, 0), (0, 2), False, False)]
    for dt in ("f32", "f16", "bf16"):
        for i, (sa, sb, ta, tb) in enumerate(cases if dt == "f32" else cases[:2]):
            a, b = rand(sa, dt), rand(sb, dt)
            A = np.swapaxes(a, -1, -2) if ta else a
            B = np.swapaxes(b, -1, -2) if tb else b
            attrs = {}
            if ta:
                attrs["transpose_a"] = True
            if tb:
                attrs["transpose_b"] = True
            one_op(f"matmul_{dt}_{i}", "matmul", [("a", dt, a), ("b", dt, b)], attrs, np.matmul(A, B), dt)
    for dt in ("f32", "f16"):
        for i, (sx, bias) in enumerate((((4, 3), True), ((2, 3, 3), False), ((3,), True), ((0, 3), True))):
            x, w, b = rand(sx, dt), rand((5, 3), dt), rand((5,), dt)
            ins = [("x", dt, x), ("w", dt, w)] + ([("b", dt, b)] if bias else [])
            one_op(f"linear_{dt}_{i}", "linear", ins, None, x @ w.T + (b if bias else 0), dt)


def gen_movement():
    x = rand((2, 3, 4), "f32")
    one_op("transpose_default", "transpose", [("x", "f32", x)], None, np.transpose(x), "f32")
    one_op("transpose_perm", "transpose", [("x", "f32", x)], {"perm": [1, 0, 2]}, np.transpose(x, (1, 0, 2)), "f32")
    b = rand((2, 3), "bool")
    one_op("transpose_bool", "transpose", [("x", "bool", b)], None, b.T, "bool")
    one_op("reshape", "reshape", [("x", "f32", x)], {"shape": [4, 6]}, x.reshape(4, 6), "f32")
    one_op("reshape_scalar", "reshape", [("x", "i32", np.array([[7.0]]))], {"shape": []}, np.array(7.0), "i32")
    for i, (s, t) in enumerate((((3, 1), [2, 3, 4]), ((), [2, 2]), ((4,), [3, 4]), ((1, 0), [2, 0]))):
        y = rand(s, "f16")
        one_op(f"broadcast_to_{i}", "broadcast_to", [("x", "f16", y)], {"shape": t}, np.broadcast_to(y, t), "f16")
    a, b2, c = rand((2, 3), "i64"), rand((2, 0), "i64"), rand((2, 2), "i64")
    one_op("concat_axis1", "concat", [("a", "i64", a), ("b", "i64", b2), ("c", "i64", c)], {"axis": 1},
           np.concatenate([a, b2, c], axis=1), "i64")
    a, b2 = rand((1, 3), "f32"), rand((2, 3), "f32")
    one_op("concat_axis0", "concat", [("a", "f32", a), ("b", "f32", b2)], {"axis": -2}, np.concatenate([a, b2]), "f32")
    y = rand((5, 6), "f32")
    for i, (attrs, ref) in enumerate((
            ({"starts": [1], "ends": [4]}, y[1:4]),
            ({"starts": [-3, 0], "ends": [100, 6], "steps": [1, 2]}, y[-3:100, 0:6:2]),
            ({"starts": [2], "ends": [-1], "axes": [1], "steps": [3]}, y[:, 2:-1:3]),
            ({"starts": [4], "ends": [2]}, y[4:2]),
            ({"starts": [-100], "ends": [2], "axes": [-1]}, y[:, -100:2]))):
        one_op(f"slice_{i}", "slice", [("x", "f32", y)], attrs, ref, "f32")

    def take(data, idx, axis):
        n = data.shape[axis]
        k = np.where(idx < 0, idx + n, idx).astype(np.int64)
        valid = (k >= 0) & (k < n)
        out = np.take(data, np.where(valid, k, 0), axis=axis)
        mask = valid.reshape((1,) * axis + valid.shape + (1,) * (data.ndim - axis - 1))
        return np.where(mask, out, 0.0)
    d = rand((4, 5), "f32")
    for i, (idx, axis) in enumerate(((np.array([0, 3, -1, 2]), 0), (np.array([[1, 4], [-5, 0]]), 1),
                                     (np.array([7, -9, 2]), 0), (np.array(2), 1))):
        one_op(f"gather_{i}", "gather", [("x", "f32", d), ("i", "i64", idx.astype(float))], {"axis": axis},
               take(d, idx, axis), "f32")
    bd = rand((3, 2), "bool")
    one_op("gather_bool", "gather", [("x", "bool", bd), ("i", "i32", np.array([2.0, 0.0]))], {"axis": 0}, bd[[2, 0]], "bool")
    table = rand((6, 4), "bf16")
    idx = np.array([[0, 5, 2], [1, 1, 9]], dtype=float)
    one_op("embedding_bf16", "embedding", [("t", "bf16", table), ("i", "i64", idx)], None,
           take(table, idx.astype(np.int64), 0), "bf16")
    for i, (idx, dt) in enumerate(((np.array([0, 2, 4, 5, -1]), "f32"), (np.array([[1, 0], [3, 3]]), "i64"))):
        ref = (idx[..., None] == np.arange(5)).astype(float)
        attrs = {"num_classes": 5} if i == 0 else {"num_classes": 5, "dtype": dt}
        one_op(f"one_hot_{i}", "one_hot", [("i", "i64", idx.astype(float))], attrs, ref, dt)

    golden_movement.gen_index_copy(sys.modules[__name__])
    golden_movement.gen_index_add(sys.modules[__name__])
    golden_movement.gen_argtopk(sys.modules[__name__])


def gen_nn():
    def softmax(x, axis):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        return e / e.sum(axis=axis, keepdims=True)

    def log_softmax(x, axis):
        m = np.max(x, axis=axis, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))
    for dt in ("f32", "f16", "bf16"):
        for i, (shape, axis) in enumerate((((3, 5), -1), ((2, 3, 4), 1), ((4,), 0), ((2, 1), -1))):
            x = rand(shape, dt, -5, 5)
            one_op(f"softmax_{dt}_{i}", "softmax", [("x", dt, x)], {"axis": axis}, softmax(x, axis), dt)
            one_op(f"log_softmax_{dt}_{i}", "log_softmax", [("x", dt, x)], {"axis": axis}, log_softmax(x, axis), dt)
    x = np.array([[1000.0, 1001.0, 999.0]])
    one_op("softmax_large", "softmax", [("x", "f32", x)], None, softmax(x, -1), "f32")

    def layernorm(x, axis, eps, w, b):
        ax = tuple(range(axis % x.ndim, x.ndim))
        m = x.mean(axis=ax, keepdims=True)
        v = ((x - m) ** 2).mean(axis=ax, keepdims=True)
        y = (x - m) / np.sqrt(v + eps)
        return y * (1 if w is None else w) + (0 if b is None else b)
    for dt in ("f32", "f16", "bf16"):
        for i, (shape, axis, eps, wb) in enumerate((((4, 8), -1, 1e-5, 2), ((2, 3, 4), 1, 1e-3, 2),
                                                    ((3, 5), -1, 1e-5, 0), ((2, 6), 1, 1e-2, 1))):
            if dt != "f32" and i > 1:
                continue
            x = rand(shape, dt)
            ns = shape[axis % len(shape):]
            w, b = rand(ns, dt), rand(ns, dt)
            ins = [("x", dt, x)] + ([("w", dt, w)] if wb >= 1 else []) + ([("b", dt, b)] if wb >= 2 else [])
            one_op(f"layernorm_{dt}_{i}", "layernorm", ins, {"axis": axis, "eps": eps},
                   layernorm(x, axis, eps, w if wb >= 1 else None, b if wb >= 2 else None), dt)
    def rms_norm(x, axis, eps, w):
        ax = tuple(range(axis % x.ndim, x.ndim))
        y = x / np.sqrt((x * x).mean(axis=ax, keepdims=True) + eps)
        return y * (1 if w is None else w)
    own = np.random.default_rng(77)
    for dt in ("f32", "f16", "bf16"):
        for i, (shape, axis, eps, weighted) in enumerate((((4, 8), -1, 1e-6, True), ((2, 3, 4), 1, 1e-3, True),
                                                          ((3, 5), -1, 1e-5, False), ((2, 1), -1, 0.5, True))):
            if dt != "f32" and i > 1:
                continue
            x = rand(shape, dt, rng=own)
            w = rand(shape[axis % len(shape):], dt, rng=own)
            ins = [("x", dt, x)] + ([("w", dt, w)] if weighted else [])
            one_op(f"rms_norm_{dt}_{i}", "rms_norm", ins, {"axis": axis, "eps": eps},
                   rms_norm(x, axis, eps, w if weighted else None), dt)
    # dropout: bit-exact against the independent Philox above.
    for i, (shape, p, dt, seed, off, aoff, use_rng) in enumerate((
            ((4, 8), 0.5, "f32", 1234, 0, 0, True), ((3, 7), 0.1, "f32", 2 ** 40 + 5, 77, 3, True),
            ((2, 5), 0.3, "f16", 0, 0, 0, False), ((5, 3), 0.25, "bf16", 99, 0, 12, False), ((0, 3), 0.5, "f32", 1, 2, 0, True),
            ((1000,), 0.75, "f32", 7, 1 << 33, 5, True))):
        x = rand(shape, dt)
        n = x.size
        if use_rng:
            u = philox_uniform(seed, off + aoff, np.arange(n))
        else:
            u = philox_uniform(seed, aoff, np.arange(n))
        scale = float(np.float32(1.0 / (1.0 - p)))
        ref = np.where(u.reshape(shape) >= p, x * scale, 0.0)
        attrs = {"p": p}
        if aoff:
            attrs["offset"] = aoff
        ins = [("x", dt, x)]
        if use_rng:
            ins.append(("rng", "i64", np.array([float(seed), float(off)])))
        else:
            attrs["seed"] = seed
        one_op(f"dropout_{i}", "dropout", ins, attrs, ref, dt, exact=True)
    for dt in ("f32", "f16"):
        a, b = rand((3, 4), dt), rand((3, 4), dt)
        for red in ("mean", "sum", "none"):
            d = (a - b) ** 2
            ref = d.mean() if red == "mean" else d.sum() if red == "sum" else d
            one_op(f"mse_loss_{dt}_{red}", "mse_loss", [("a", dt, a), ("b", dt, b)], {"reduction": red}, ref, dt)

    def ce(logits, target, ignore, red):
        m = logits.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
        keep = target != ignore
        t = np.where(keep, target, 0).astype(np.int64)
        loss = np.where(keep, lse - logits[np.arange(len(t)), t], 0.0)
        if red == "none":
            return loss
        if red == "sum":
            return loss.sum()
        return loss.sum() / keep.sum() if keep.sum() else 0.0
    for dt in ("f32", "bf16"):
        logits = rand((5, 4), dt)
        for red in ("mean", "sum", "none"):
            target = np.array([0, 3, -100, 2, 1], dtype=float)
            one_op(f"cross_entropy_{dt}_{red}", "cross_entropy", [("l", dt, logits), ("t", "i64", target)],
                   {"reduction": red}, ce(logits, target, -100, red), dt)
    logits = rand((3, 4), "f32")
    target = np.array([1, 1, 1], dtype=float)
    one_op("cross_entropy_all_ignored", "cross_entropy", [("l", "f32", logits), ("t", "i64", target)],
           {"ignore_index": 1}, 0.0, "f32")
    target = np.array([2, 0, 3], dtype=float)
    one_op("cross_entropy_ignore0", "cross_entropy", [("l", "f32", logits), ("t", "i32", target)],
           {"ignore_index": 0}, ce(logits, target, 0, "mean"), "f32")


def gen_sync():
    for i, (x, dt) in enumerate(((np.array([[0.0, 1.0, 0.0], [2.0, 0.0, -1.0]]), "f32"), (rand((2, 2, 2), "bool"), "bool"),
                                 (np.zeros((3,)), "i32"))):
        emit(f"nonzero_{i}", [("x", dt, x)], [{"name": "r", "op": "nonzero", "inputs": ["x"]}],
             [("r", "i64", np.argwhere(x != 0).astype(float).reshape(-1, x.ndim))])
    x, m = rand((3, 4), "f16"), rand((3, 4), "bool")
    emit("masked_select", [("x", "f16", x), ("m", "bool", m)],
         [{"name": "r", "op": "masked_select", "inputs": ["x", "m"]}], [("r", "f16", x[m != 0])])
    x = rand((1, 1), "i64")
    one_op("item", "item", [("x", "i64", x)], None, x.reshape(()), "i64")


def gen_control():
    # if: y = c ? x*2 : -x
    for c in (0.0, 1.0):
        x = rand((2, 3), "f32")
        nodes = [{"name": "r", "op": "if", "inputs": ["c", "x"], "regions": {
            "then": {"inputs": [{"name": "a", "dtype": "f32", "shape": [2, 3]}],
                     "nodes": [{"name": "two", "op": "constant", "attrs": {"dtype": "f32", "shape": [], "value": 2.0}},
                               {"name": "y", "op": "mul", "inputs": ["a", "two"]}], "outputs": ["y"]},
            "else": {"inputs": [{"name": "a", "dtype": "f32", "shape": [2, 3]}],
                     "nodes": [{"name": "y", "op": "neg", "inputs": ["a"]}], "outputs": ["y"]}}}]
        emit(f"if_{int(c)}", [("c", "bool", np.array(c)), ("x", "f32", x)], nodes,
             [("r", "f32", x * 2 if c else -x)])
    # while: (i, acc) -> (i+1, acc*1.5) while i < n, with and without max_iterations
    for i, (n, cap) in enumerate(((5, None), (0, None), (10, 3))):
        acc = rand((3,), "f32")
        carried = [{"name": "i", "dtype": "i64", "shape": []}, {"name": "a", "dtype": "f32", "shape": [3]}]
        node = {"name": "w", "op": "while", "inputs": ["i0", "acc"], "outputs": ["wi", "wa"], "regions": {
            "cond": {"inputs": carried, "nodes": [
                {"name": "n", "op": "constant", "attrs": {"dtype": "i64", "shape": [], "value": n}},
                {"name": "c", "op": "lt", "inputs": ["i", "n"]}], "outputs": ["c"]},
            "body": {"inputs": carried, "nodes": [
                {"name": "one", "op": "constant", "attrs": {"dtype": "i64", "shape": [], "value": 1}},
                {"name": "k", "op": "constant", "attrs": {"dtype": "f32", "shape": [], "value": 1.5}},
                {"name": "i2", "op": "add", "inputs": ["i", "one"]},
                {"name": "a2", "op": "mul", "inputs": ["a", "k"]}], "outputs": ["i2", "a2"]}}}
        if cap:
            node["attrs"] = {"max_iterations": cap}
        iters = min(n, cap) if cap else n
        ref = acc.copy()
        for _ in range(iters):
            ref = round_to("f32", ref * 1.5)
        emit(f"while_{i}", [("i0", "i64", np.array(0.0)), ("acc", "f32", acc)], [node],
             [("wi", "i64", np.array(float(iters))), ("wa", "f32", ref)])


def gen_symbolic():
    for b in (1, 3):
        x, w = rand((b, 4), "f32"), rand((2, 4), "f32")
        nodes = [{"name": "h", "op": "linear", "inputs": ["x", "w"]},
                 {"name": "r", "op": "sum", "inputs": ["h"], "attrs": {"axes": [0]}},
                 {"name": "f", "op": "fill", "attrs": {"dtype": "f32", "shape": ["B", 2], "value": 0.5}},
                 {"name": "g", "op": "add", "inputs": ["h", "f"]}]
        emit(f"symbolic_B{b}", [("x", "f32", x, ["B", 4]), ("w", "f32", w)], nodes,
             [("r", "f32", (x @ w.T).sum(axis=0)), ("g", "f32", round_to("f32", x @ w.T) + 0.5)],
             dims=[{"name": "B", "min": 1, "max": 8}])


def gen_initializers():
    def normal(seed, mean, std, n):
        i = np.arange(n, dtype=np.uint64)
        u1 = philox_uniform(seed, 0, 2 * i)
        u2 = philox_uniform(seed, 0, 2 * i + 1)
        return mean + std * (np.sqrt(-2 * np.log(1 - u1)) * np.cos(2 * np.pi * u2))

    def uniform(seed, lo, hi, n):
        return lo + (hi - lo) * philox_uniform(seed, 0, np.arange(n, dtype=np.uint64))
    specs = [("pn", "f32", (4, 5), {"dist": "normal", "seed": 7, "mean": 0.5, "std": 2.0}, normal(7, 0.5, 2.0, 20)),
             ("pu", "f32", (33,), {"dist": "uniform", "seed": 2 ** 35 + 1, "low": -1, "high": 3}, uniform(2 ** 35 + 1, -1, 3, 33)),
             ("ph", "f16", (3, 3), {"dist": "normal", "seed": 1}, normal(1, 0, 1, 9)),
             ("pb", "bf16", (6,), {"dist": "uniform", "seed": 3}, uniform(3, 0, 1, 6)),
             ("pz", "f32", (2, 2), {"dist": "zeros"}, np.zeros(4)), ("po", "i32", (3,), {"dist": "ones"}, np.ones(3))]
    ins, nodes, outs = [], [], []
    for name, dt, shape, init, vals in specs:
        ins.append((name, dt, None, list(shape), {"kind": "parameter", "init": init}))
        nodes.append({"name": "o_" + name, "op": "reshape", "inputs": [name], "attrs": {"shape": list(shape)}})
        outs.append(("o_" + name, dt, np.reshape(vals, shape)))
    emit("initializers", ins, nodes, outs, exact=True)
    # weights file
    w = rand((3, 2), "f32")
    write_safetensors(os.path.join(OUT, "weights_case.weights.safetensors"), {"W": ("f32", w)})
    x = rand((2, 2), "f32")
    emit("weights_case", [("x", "f32", x), ("w", "f32", None, [3, 2], {"kind": "parameter", "weight": "W"})],
         [{"name": "r", "op": "linear", "inputs": ["x", "w"]}], [("r", "f32", x @ w.T)],
         extra={"weights_file": "weights_case.weights.safetensors"})


def edges(generator):
    """A generator of golden_edges.py bound to this module."""
    return lambda: generator(sys.modules[__name__])


def main():
    global OUT
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    OUT = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    check_philox()
    for gen in (gen_unary, gen_binary, gen_cast, gen_sources, gen_reductions, gen_matmul, gen_movement,
                gen_nn, gen_sync, gen_control, gen_symbolic, gen_initializers,
                edges(golden_edges.gen_bitwise), edges(golden_edges.gen_edges),
                edges(golden_edges.gen_constants_exact), edges(golden_attention.gen_attention),
                edges(golden_convolution.gen_convolution),
                edges(golden_convolution.interpolate_cases),
                edges(golden_convolution.conv_transpose_cases),
                edges(golden_convolution.batch_norm_cases),
                edges(golden_convolution.conv_weight_grad_cases)):
        gen()
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(CASES, f, indent=1)
    print(f"gen_golden: wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
