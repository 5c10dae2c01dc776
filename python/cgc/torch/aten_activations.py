"""ATen rules for the activations and elementwise functions that Core ATen
keeps whole and cgc has no op for, each a composition of cgc ops computed
in f32 (then cast to the result's dtype): leaky_relu, elu (ELU, SELU and
CELU as PyTorch writes them), hardshrink, softshrink, log_sigmoid, logit,
expm1 (Kahan's form, exact near 0), sinh and cosh through it, exp2, log2
and log10, isinf, isnan, nan_to_num and lerp (PyTorch's two-sided form)."""
import math

from .aten_rules import ATEN
from ..ir_builder import registrar

aten = registrar(ATEN)

INF = float("inf")


def arg(n, k, name, default):
    return n.args[k] if len(n.args) > k else n.kwargs.get(name, default)


def in_f32(e, n, k=0):
    return e.as_dtype(n.args[k], "f32")


def result(e, n, y):
    """y (f32) as node n's result."""
    dtype = e.dtype(n)
    return e.op("cast" if dtype != "f32" else "reshape", [y],
                {"dtype": dtype} if dtype != "f32" else {"shape": e.shape(n)}, name=n.name)


def scalar(e, value):
    return e.scalar(float(value), "f32")


def expm1_of(e, x):
    """exp(x) - 1 without the cancellation near 0 (Kahan): (u - 1) * x /
    log(u) at u = exp(x); x where u rounds to 1, -1 where u - 1 does, and
    u itself at +inf."""
    u = e.op("exp", [x])
    um1 = e.op("sub", [u, scalar(e, 1)])
    general = e.op("mul", [um1, e.op("div", [x, e.op("log", [u])])])
    y = e.op("where", [e.op("eq", [u, scalar(e, INF)]), u, general])
    y = e.op("where", [e.op("eq", [um1, scalar(e, -1)]), scalar(e, -1), y])
    return e.op("where", [e.op("eq", [u, scalar(e, 1)]), x, y])


@aten("expm1")
def expm1(e, n):
    return result(e, n, expm1_of(e, in_f32(e, n)))


@aten("sinh")
def sinh(e, n):
    x = in_f32(e, n)
    half = e.op("sub", [expm1_of(e, x), expm1_of(e, e.op("neg", [x]))])
    return result(e, n, e.op("mul", [half, scalar(e, 0.5)]))


@aten("cosh")
def cosh(e, n):
    x = in_f32(e, n)
    total = e.op("add", [e.op("exp", [x]), e.op("exp", [e.op("neg", [x])])])
    return result(e, n, e.op("mul", [total, scalar(e, 0.5)]))


@aten("exp2")
def exp2(e, n):
    return result(e, n, e.op("exp", [e.op("mul", [in_f32(e, n), scalar(e, math.log(2))])]))


def scaled_log(factor):
    return lambda e, n: result(e, n, e.op("mul", [e.op("log", [in_f32(e, n)]),
                                                  scalar(e, factor)]))


ATEN["log2"] = scaled_log(1 / math.log(2))
ATEN["log10"] = scaled_log(1 / math.log(10))


@aten("isinf")
def isinf(e, n):
    return e.op("eq", [e.op("abs", [in_f32(e, n)]), scalar(e, INF)], name=n.name)


@aten("isnan")
def isnan(e, n):
    x = e.operand(n.args[0])
    return e.op("ne", [x, x], name=n.name)


@aten("leaky_relu")
def leaky_relu(e, n):
    x = in_f32(e, n)
    slope = arg(n, 1, "negative_slope", 0.01)
    return result(e, n, e.op("where", [e.op("gt", [x, scalar(e, 0)]), x,
                                        e.op("mul", [x, scalar(e, slope)])]))


@aten("elu")
def elu(e, n):
    """scale * (x if x > 0 else alpha * expm1(x * input_scale)): ELU,
    SELU and CELU as PyTorch decomposes them."""
    x = in_f32(e, n)
    alpha, scale, input_scale = (arg(n, 1, "alpha", 1.0), arg(n, 2, "scale", 1.0),
                                 arg(n, 3, "input_scale", 1.0))
    negative = e.op("mul", [expm1_of(e, e.op("mul", [x, scalar(e, input_scale)])),
                            scalar(e, alpha * scale)])
    return result(e, n, e.op("where", [e.op("gt", [x, scalar(e, 0)]),
                                        e.op("mul", [x, scalar(e, scale)]), negative]))


@aten("hardshrink")
def hardshrink(e, n):
    x, lambd = in_f32(e, n), arg(n, 1, "lambd", 0.5)
    kept = e.op("gt", [e.op("abs", [x]), scalar(e, lambd)])
    return result(e, n, e.op("where", [kept, x, scalar(e, 0)]))


@aten("softshrink")
def softshrink(e, n):
    x, lambd = in_f32(e, n), arg(n, 1, "lambd", 0.5)
    above = e.op("sub", [x, scalar(e, lambd)])
    below = e.op("add", [x, scalar(e, lambd)])
    y = e.op("where", [e.op("gt", [x, scalar(e, lambd)]), above,
                       e.op("where", [e.op("lt", [x, scalar(e, -lambd)]), below,
                                      scalar(e, 0)])])
    return result(e, n, y)


@aten("log_sigmoid_forward")
def log_sigmoid_forward(e, n):
    """min(x, 0) - log1p(exp(-|x|)); its second result (a buffer for the
    backward) has no value."""
    x = in_f32(e, n)
    t = e.op("exp", [e.op("neg", [e.op("abs", [x])])])
    u = e.op("add", [t, scalar(e, 1)])   # log1p(t), t in (0, 1]: Goldberg's form
    log1p = e.op("where", [e.op("eq", [u, scalar(e, 1)]), t,
                           e.op("mul", [t, e.op("div", [e.op("log", [u]),
                                                         e.op("sub", [u, scalar(e, 1)])])])])
    y = e.op("sub", [e.op("minimum", [x, scalar(e, 0)]), log1p])
    dtype = e.dtype(n.args[0])
    return [y if dtype == "f32" else e.op("cast", [y], {"dtype": dtype}), None]


@aten("logit")
def logit(e, n):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] where eps is given."""
    x, eps = in_f32(e, n), arg(n, 1, "eps", None)
    if eps is not None:
        x = e.op("minimum", [e.op("maximum", [x, scalar(e, eps)]), scalar(e, 1 - eps)])
    return result(e, n, e.op("log", [e.op("div", [x, e.op("sub", [scalar(e, 1), x])])]))


@aten("nan_to_num")
def nan_to_num(e, n):
    """NaN to `nan` (0), +-inf to `posinf`/`neginf` (the dtype's extremes)."""
    x = in_f32(e, n)
    nan, posinf, neginf = (arg(n, 1, "nan", 0.0), arg(n, 2, "posinf", None),
                           arg(n, 3, "neginf", None))
    big = {"f32": 3.4028234663852886e38, "f16": 65504.0, "bf16": 3.3895313892515355e38}
    top = big.get(e.dtype(n), big["f32"])
    y = e.op("where", [e.op("ne", [x, x]), scalar(e, nan), x])
    y = e.op("where", [e.op("eq", [y, scalar(e, INF)]),
                       scalar(e, top if posinf is None else posinf), y])
    y = e.op("where", [e.op("eq", [y, scalar(e, -INF)]),
                       scalar(e, -top if neginf is None else neginf), y])
    return result(e, n, y)


@aten("lerp.Scalar", "lerp.Tensor")
def lerp(e, n):
    """PyTorch's form: a + w (b - a) where |w| < 0.5, else b - (b - a)(1 - w)."""
    a, b = in_f32(e, n, 0), in_f32(e, n, 1)
    w = in_f32(e, n, 2)
    diff = e.op("sub", [b, a])
    low = e.op("add", [a, e.op("mul", [w, diff])])
    high = e.op("sub", [b, e.op("mul", [diff, e.op("sub", [scalar(e, 1), w])])])
    small = e.op("lt", [e.op("abs", [w]), scalar(e, 0.5)])
    return result(e, n, e.op("where", [small, low, high]))
