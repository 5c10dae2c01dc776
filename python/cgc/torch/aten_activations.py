"""ATen rules for the activations and elementwise functions that Core ATen
keeps whole (torch.export does not decompose them) and cgc has no op for,
each a composition of cgc ops computed in f32 (then cast to the result's
dtype): leaky_relu, elu (ELU, SELU and CELU as PyTorch writes them),
expm1 (Kahan's form, exact near 0), sinh through it, cosh, exp2, log2
and log10, isinf and isnan; asin, acos, atan, asinh, acosh and atanh
from composed.py."""
import math

from .aten_rules import ATEN
from .. import composed
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
    return y if dtype == "f32" else e.op("cast", [y], {"dtype": dtype}, name=n.name)


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


def in_f32_rule(function):
    """The ATen rule of a composed.py function: in f32, the result in the
    node's dtype."""
    return lambda e, n: result(e, n, function(e, in_f32(e, n)))


for _name in ("asin", "acos", "atan", "asinh", "acosh", "atanh"):
    ATEN[_name] = in_f32_rule(getattr(composed, _name))
