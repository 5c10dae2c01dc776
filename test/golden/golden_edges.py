"""The golden cases at the edges (gen_golden.py runs them, in its order
and on its random stream `g`): integers past 2^53 and wrapping, i32 wrap
on cast, -0.0, NaN, infinities, subnormals, ops whose naive formula
overflows or cancels, exact integer constants and fills, and the bitwise
ops. Each generator takes the gen_golden module (its one_op, emit, rand)."""
import math

import numpy as np

from golden_numerics import exact_ints, round_to


def wrap64(v):
    return ((v + 2 ** 63) % 2 ** 64) - 2 ** 63


def gen_bitwise(g):
    """The bitwise ops against NumPy's on i32, i64 (past 2^53, signed) and bool."""
    big = [2 ** 60 + 1, -2 ** 63, 2 ** 53 + 1, -1, 0, 12345]
    other = [2 ** 62 + 3, 2 ** 63 - 1, -(2 ** 53), 7, -1, 2 ** 40]
    for op, f in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                  ("bitwise_xor", np.bitwise_xor)):
        a, b = np.array(big, np.int64), np.array(other, np.int64)
        g.one_op(f"{op}_i64", op, [("a", "i64", exact_ints(big)), ("b", "i64", exact_ints(other))],
               None, exact_ints([int(v) for v in f(a, b)]), "i64")
        x = g.rand((2, 3), "i32")
        y = g.rand((3,), "i32")
        g.one_op(f"{op}_i32", op, [("a", "i32", x), ("b", "i32", y)], None,
               f(x.astype(np.int64), y.astype(np.int64)).astype(np.float64), "i32")
        p, q = g.rand((2, 3), "bool"), g.rand((3,), "bool")
        g.one_op(f"{op}_bool", op, [("a", "bool", p), ("b", "bool", q)], None,
               f(p.astype(bool), q.astype(bool)), "bool")
    g.one_op("bitwise_not_i64", "bitwise_not", [("x", "i64", exact_ints(big))], None,
           exact_ints([~v for v in big]), "i64")


def gen_edges(g):
    """Values at the edges: integers past 2^53, INT64_MIN/MAX wrapping, i32
    wrap on cast, -0.0, NaN, infinities, subnormals in f32/f16/bf16, and ops
    whose naive formula overflows or cancels (exact where the value is one
    double computation rounded once)."""
    big = [2 ** 60 + 1, 2 ** 53 + 1, 2 ** 63 - 1, -2 ** 63]
    add_b = [2, 0, 1, -1]
    g.one_op("add_i64_exact", "add", [("a", "i64", exact_ints(big)), ("b", "i64", exact_ints(add_b))], None,
           exact_ints([wrap64(x + y) for x, y in zip(big, add_b)]), "i64")
    g.one_op("sub_i64_wrap", "sub", [("a", "i64", exact_ints([-2 ** 63, 2 ** 53 + 1])), ("b", "i64", exact_ints([1, -2]))],
           None, exact_ints([2 ** 63 - 1, 2 ** 53 + 3]), "i64")
    ma, mb = [2 ** 62, 3037000500, 2 ** 32 + 1], [4, 3037000500, 2 ** 32 - 1]
    g.one_op("mul_i64_wrap", "mul", [("a", "i64", exact_ints(ma)), ("b", "i64", exact_ints(mb))], None,
           exact_ints([wrap64(x * y) for x, y in zip(ma, mb)]), "i64")
    g.one_op("neg_i64_min", "neg", [("x", "i64", exact_ints([-2 ** 63, 2 ** 53 + 1]))], None,
           exact_ints([-2 ** 63, -2 ** 53 - 1]), "i64")
    g.one_op("abs_i64_min", "abs", [("x", "i64", exact_ints([-2 ** 63, -2 ** 53 - 1]))], None,
           exact_ints([-2 ** 63, 2 ** 53 + 1]), "i64")
    g.one_op("div_i64_edges", "div", [("a", "i64", exact_ints([-2 ** 63, 7, -7, 2 ** 53 + 1])),
                                    ("b", "i64", exact_ints([-1, 0, 2, 1]))], None,
           exact_ints([-2 ** 63, 0, -3, 2 ** 53 + 1]), "i64")
    g.one_op("add_i32_wrap_edges", "add", [("a", "i32", exact_ints([2 ** 31 - 1, -2 ** 31])), ("b", "i32", exact_ints([1, -1]))],
           None, exact_ints([-2 ** 31, 2 ** 31 - 1]), "i32")
    g.one_op("eq_i64_exact", "eq", [("a", "i64", exact_ints([2 ** 53, 2 ** 63 - 1])),
                                  ("b", "i64", exact_ints([2 ** 53 + 1, 2 ** 63 - 2]))], None, exact_ints([0, 0]), "bool")
    g.one_op("lt_i64_exact", "lt", [("a", "i64", exact_ints([2 ** 53, 2 ** 63 - 2])),
                                  ("b", "i64", exact_ints([2 ** 53 + 1, 2 ** 63 - 1]))], None, exact_ints([1, 1]), "bool")
    row = exact_ints([[2 ** 53, 1, 1]])
    g.one_op("sum_i64_exact", "sum", [("x", "i64", row)], {"axes": [1]}, exact_ints([2 ** 53 + 2]), "i64")
    g.one_op("cumsum_i64_exact", "cumsum", [("x", "i64", row)], {"axis": 1},
           exact_ints([[2 ** 53, 2 ** 53 + 1, 2 ** 53 + 2]]), "i64")
    g.one_op("sum_i64_wrap", "sum", [("x", "i64", exact_ints([2 ** 63 - 1, 1]))], None, exact_ints(-2 ** 63), "i64")
    near = exact_ints([[2 ** 53, 2 ** 53 + 1, 2 ** 53 - 1]])
    g.one_op("max_i64_exact", "max", [("x", "i64", near)], {"axes": [1]}, exact_ints([2 ** 53 + 1]), "i64")
    g.one_op("argmax_i64_exact", "argmax", [("x", "i64", near)], {"axis": 1}, exact_ints([1]), "i64")
    # A NaN beats every number and the first NaN wins, also when the NaNs
    # sit in different warps of a long row (the block's combine sees them).
    nan_rows = np.tile(np.linspace(-1.0, 1.0, 1000, dtype=np.float32), (3, 1))
    nan_rows[0, 700] = nan_rows[1, 900] = nan_rows[1, 40] = np.nan
    g.one_op("argmax_f32_nan_warps", "argmax", [("x", "f32", nan_rows)], {"axis": 1},
           exact_ints([700, 40, 999]), "i64")
    g.one_op("gather_i64_exact", "gather", [("d", "i64", exact_ints([2 ** 60 + 1, 2 ** 60 + 3, -2 ** 63])),
                                          ("i", "i64", exact_ints([2, 0, -1, 5]))], {"axis": 0},
           exact_ints([-2 ** 63, 2 ** 60 + 1, -2 ** 63, 0]), "i64")
    g.one_op("where_i64_exact", "where", [("c", "bool", exact_ints([1, 0])), ("a", "i64", exact_ints([2 ** 60 + 1, 1])),
                                        ("b", "i64", exact_ints([3, 2 ** 62 + 1]))], None,
           exact_ints([2 ** 60 + 1, 2 ** 62 + 1]), "i64")
    nan, inf = float("nan"), float("inf")
    g.one_op("cast_f32_i32_edges", "cast", [("x", "f32", np.array([nan, inf, -inf, 3e9, -3e9, -2.7, 2.7, -0.0]))],
           {"dtype": "i32"}, exact_ints([0, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -2 ** 31, -2, 2, 0]), "i32")
    g.one_op("cast_f32_i64_edges", "cast", [("x", "f32", np.array([nan, inf, -inf, 1e19, -1e19, -2.5]))],
           {"dtype": "i64"}, exact_ints([0, 2 ** 63 - 1, -2 ** 63, 2 ** 63 - 1, -2 ** 63, -2]), "i64")
    wide = exact_ints([2 ** 53 + 1, 2 ** 60 + 1, -2 ** 63, 2 ** 24 + 1])
    g.one_op("cast_i64_f32_exact", "cast", [("x", "i64", wide)], {"dtype": "f32"},
           wide.astype(np.float32).astype(np.float64), "f32", exact=True)
    g.one_op("cast_i64_bool", "cast", [("x", "i64", exact_ints([0, 2 ** 40, -1, -2 ** 63]))], {"dtype": "bool"},
           exact_ints([0, 1, 1, 1]), "bool")
    g.one_op("cast_f32_bool_edges", "cast", [("x", "f32", np.array([nan, -0.0, 0.0, 1e-45]))], {"dtype": "bool"},
           exact_ints([1, 0, 0, 1]), "bool")
    g.one_op("neg_f32_signed_zero", "neg", [("x", "f32", np.array([0.0, -0.0]))], None, np.array([-0.0, 0.0]), "f32",
           exact=True)
    g.one_op("add_f32_nan_inf", "add", [("a", "f32", np.array([nan, inf, -inf, inf, 1.0, -0.0])),
                                      ("b", "f32", np.array([1.0, -inf, -inf, 1.0, nan, -0.0]))], None,
           np.array([nan, nan, -inf, inf, nan, -0.0]), "f32", exact=True)
    tiny32 = round_to("f32", np.array([1e-45, 1e-38]))
    g.one_op("mul_f32_subnormal", "mul", [("a", "f32", tiny32), ("b", "f32", np.array([1.0, 0.5]))], None,
           tiny32 * np.array([1.0, 0.5]), "f32", exact=True)
    g.one_op("add_f16_subnormal", "add", [("a", "f16", np.array([2.0 ** -24, 2.0 ** -20])),
                                        ("b", "f16", np.array([0.0, 2.0 ** -24]))], None,
           np.array([2.0 ** -24, 2.0 ** -20 + 2.0 ** -24]), "f16", exact=True)
    g.one_op("add_bf16_subnormal", "add", [("a", "bf16", np.array([2.0 ** -133, 2.0 ** -126])),
                                         ("b", "bf16", np.array([0.0, 2.0 ** -133]))], None,
           np.array([2.0 ** -133, 2.0 ** -126 + 2.0 ** -133]), "bf16", exact=True)
    # Stable formulas: each fails computed the naive way (exp overflows, or
    # 1 + erf(x) cancels to 0).
    g.one_op("log_softmax_large", "log_softmax", [("x", "f32", np.array([[1e4, 0.0, -1e4]]))], {"axis": -1},
           np.array([[0.0, -1e4, -2e4]]), "f32")
    g.one_op("softmax_large_edges", "softmax", [("x", "f32", np.array([[1000.0, 0.0], [-1000.0, -1000.0]]))], {"axis": -1},
           np.array([[1.0, 0.0], [0.5, 0.5]]), "f32")
    g.one_op("cross_entropy_large_logits", "cross_entropy",
           [("l", "f32", np.array([[1e4, 0.0], [0.0, 1e4], [1e8, 1e8]])), ("t", "i64", exact_ints([1, 1, 0]))],
           {"reduction": "none"}, np.array([1e4, 0.0, math.log(2.0)]), "f32")
    xs = [-100.0, -50.0, -10.0, 10.0]
    g.one_op("sigmoid_large_neg", "sigmoid", [("x", "f32", np.array(xs))], None,
           np.array([math.exp(x) / (1 + math.exp(x)) if x < 0 else 1 / (1 + math.exp(-x)) for x in xs]), "f32",
           exact=True)
    gs = [-10.0, -8.0, -20.0, 10.0]
    g.one_op("gelu_large_neg", "gelu", [("x", "f32", np.array(gs))], None,
           np.array([x * 0.5 * math.erfc(-x / math.sqrt(2.0)) for x in gs]), "f32", exact=True)


def gen_constants_exact(g):
    """Integer constants and fills past 2^53 as written in the JSON, through
    add/sub/mul/eq: a constant or fill read, stored or folded through a
    double turns 2^53+1 into 2^53 and 2^60+1 into 2^60, which every output
    here would show."""
    k = [2 ** 53 + 1, 2 ** 60 + 1, -2 ** 63, 2 ** 63 - 1]
    x = [3, 2, -1, 1]
    ki = lambda name, value, shape: {"name": name, "op": "constant",
                                     "attrs": {"dtype": "i64", "shape": shape, "value": value}}
    fi = lambda name, value, shape: {"name": name, "op": "fill",
                                     "attrs": {"dtype": "i64", "shape": shape, "value": value}}
    binop = lambda name, op, a, b: {"name": name, "op": op, "inputs": [a, b]}
    nodes = [ki("k", k, [4]), fi("f", 2 ** 60 + 1, [4]), ki("odd", 2 ** 53 + 1, []),
             fi("lo", -2 ** 63, []), fi("hi", 2 ** 63 - 1, []),
             binop("d", "sub", "k", "f"), binop("a", "add", "k", "x"), binop("m", "mul", "k", "x"),
             binop("e", "eq", "k", "f"), binop("e2", "eq", "k", "odd"),
             binop("lx", "add", "lo", "x"), binop("hx", "sub", "hi", "x"), binop("fm", "mul", "f", "x")]
    outs = [("d", "i64", exact_ints([wrap64(v - (2 ** 60 + 1)) for v in k])),
            ("a", "i64", exact_ints([wrap64(v + y) for v, y in zip(k, x)])),
            ("m", "i64", exact_ints([wrap64(v * y) for v, y in zip(k, x)])),
            ("e", "bool", exact_ints([0, 1, 0, 0])),
            ("e2", "bool", exact_ints([1, 0, 0, 0])),
            ("lx", "i64", exact_ints([wrap64(-2 ** 63 + y) for y in x])),
            ("hx", "i64", exact_ints([wrap64(2 ** 63 - 1 - y) for y in x])),
            ("fm", "i64", exact_ints([wrap64((2 ** 60 + 1) * y) for y in x]))]
    g.emit("constants_i64_exact", [("x", "i64", exact_ints(x))], nodes, outs)
    # i32 at its edges, and a constant folded into f32 from an exact integer
    # literal (2^24+1 rounds to 2^24 once, as float(int) does).
    nodes = [{"name": "c", "op": "constant", "attrs": {"dtype": "i32", "shape": [2], "value": [-2 ** 31, 2 ** 31 - 1]}},
             {"name": "one", "op": "fill", "attrs": {"dtype": "i32", "shape": [], "value": 1}},
             binop("s", "sub", "c", "one"),
             {"name": "g", "op": "constant", "attrs": {"dtype": "f32", "shape": [1], "value": 2 ** 24 + 1}}]
    g.emit("constants_i32_edges", [], nodes,
         [("s", "i32", exact_ints([2 ** 31 - 1, 2 ** 31 - 2])), ("g", "f32", np.array([2.0 ** 24]))])
