"""ONNX's elementwise operators and activations, as cgc's elementwise ops
(so that fusion sees them). Registered into rules.RULES."""
import numpy as np

from .rules import RULES, const, dtype, need_float, rule, text_attr
from .elem_types import cgc_dtype
from .. import composed
from ..errors import RefusedError

# ---- elementwise

UNARY = {"Abs": "abs", "Neg": "neg", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
         "Tanh": "tanh", "Sigmoid": "sigmoid", "Relu": "relu", "Erf": "erf", "Sin": "sin",
         "Cos": "cos", "Floor": "floor", "Ceil": "ceil", "Round": "round",
         "Not": "logical_not", "BitwiseNot": "bitwise_not"}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow",
          "Equal": "eq", "Less": "lt", "LessOrEqual": "le", "Greater": "gt",
          "GreaterOrEqual": "ge", "And": "logical_and", "Or": "logical_or", "Xor": "ne",
          "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}


def unary(op):
    return lambda ctx, ins, attrs: [ctx.op(op, [ins[0]])]


def binary(op):
    def fn(ctx, ins, attrs):
        a, b = ins
        if op == "pow":
            need_float(ctx, a, "the base")
            if dtype(ctx, b) != dtype(ctx, a):
                b = ctx.g.op("cast", [b], {"dtype": dtype(ctx, a)}, dtype(ctx, a), None)
        return [ctx.op(op, [a, b])]
    return fn


for _onnx, _cgc in UNARY.items():
    RULES[_onnx] = unary(_cgc)
for _onnx, _cgc in BINARY.items():
    RULES[_onnx] = binary(_cgc)


@rule("Identity")
def identity(ctx, ins, attrs):
    return [ins[0]]


@rule("Reciprocal")
def reciprocal(ctx, ins, attrs):
    return [ctx.op("div", [const(ctx, 1, ins[0]), ins[0]])]


@rule("CastLike")
def cast_like(ctx, ins, attrs):
    if attrs.get("saturate", 1) != 1:
        raise RefusedError("CastLike with saturate set")
    return [ctx.op("cast", [ins[0]], {"dtype": dtype(ctx, ins[1])})]


@rule("Mod")
def mod(ctx, ins, attrs):
    """fmod = 1: C's fmod, the sign of the dividend (cgc's `fmod`, exact,
    for floats; a - trunc(a / b) * b for integers, exact too); fmod = 0
    (integers only, as ONNX requires): the remainder takes the divisor's
    sign (Python's %). An integer remainder by 0 (undefined in ONNX) is 0,
    as NumPy's (and onnx.reference's)."""
    a, b = ins
    dt = dtype(ctx, a)
    if dt in ("f32", "f16", "bf16"):
        if not attrs.get("fmod", 0):
            raise RefusedError("Mod of floats with fmod = 0 (ONNX requires fmod = 1 for floats)")
        return [ctx.op("fmod", [a, b])]
    zero = const(ctx, 0, a)
    r = ctx.g.op("sub", [a, ctx.g.op("mul", [ctx.g.op("div", [a, b]), b])])
    if not attrs.get("fmod", 0):
        differ = ctx.g.op("ne", [ctx.g.op("lt", [r, zero]), ctx.g.op("lt", [b, zero])])
        fix = ctx.g.op("logical_and", [ctx.g.op("ne", [r, zero]), differ])
        r = ctx.g.op("where", [fix, ctx.g.op("add", [r, b]), r])
    return [ctx.op("where", [ctx.g.op("eq", [b, zero]), zero, r])]


@rule("Where")
def where(ctx, ins, attrs):
    return [ctx.op("where", ins)]


@rule("Cast")
def cast(ctx, ins, attrs):
    if attrs.get("saturate", 1) != 1 or attrs.get("round_mode", "up") != "up":
        raise RefusedError("Cast with saturate or round_mode set")
    return [ctx.op("cast", [ins[0]], {"dtype": cgc_dtype(attrs["to"], "the target")})]


def chain(ctx, op, ins):
    acc = ins[0]
    for v in ins[1:]:
        acc = ctx.g.op(op, [acc, v])
    return acc


@rule("Max")
def maximum(ctx, ins, attrs):
    return [chain(ctx, "maximum", ins)]


@rule("Min")
def minimum(ctx, ins, attrs):
    return [chain(ctx, "minimum", ins)]


@rule("Sum")
def sum_(ctx, ins, attrs):
    return [chain(ctx, "add", ins)]


@rule("Mean")
def mean(ctx, ins, attrs):
    if len(ins) == 1:
        return [ins[0]]
    return [ctx.op("div", [chain(ctx, "add", ins), const(ctx, len(ins), ins[0])])]


# Activations written with cgc's elementwise ops.

def alpha(attrs, default):
    return float(attrs.get("alpha", default))


@rule("LeakyRelu")
def leaky_relu(ctx, ins, attrs):
    x = ins[0]
    neg = ctx.g.op("lt", [x, const(ctx, 0, x)])
    return [ctx.op("where", [neg, ctx.g.op("mul", [x, const(ctx, alpha(attrs, 0.01), x)]), x])]


@rule("PRelu")
def prelu(ctx, ins, attrs):
    x, slope = ins
    neg = ctx.g.op("lt", [x, const(ctx, 0, x)])
    return [ctx.op("where", [neg, ctx.g.op("mul", [x, slope]), x])]


def expm1_scaled(ctx, x, a):
    e = ctx.g.op("sub", [ctx.g.op("exp", [x]), const(ctx, 1, x)])
    return ctx.g.op("mul", [e, const(ctx, a, x)])


@rule("Elu")
def elu(ctx, ins, attrs):
    x = ins[0]
    neg = ctx.g.op("lt", [x, const(ctx, 0, x)])
    return [ctx.op("where", [neg, expm1_scaled(ctx, x, alpha(attrs, 1.0)), x])]


@rule("Selu")
def selu(ctx, ins, attrs):
    x = ins[0]
    a = alpha(attrs, 1.67326319217681884765625)
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    pos = ctx.g.op("gt", [x, const(ctx, 0, x)])
    y = ctx.g.op("where", [pos, x, expm1_scaled(ctx, x, a)])
    return [ctx.op("mul", [y, const(ctx, gamma, x)])]


@rule("Celu")
def celu(ctx, ins, attrs):
    x = ins[0]
    a = alpha(attrs, 1.0)
    scaled = ctx.g.op("div", [x, const(ctx, a, x)])
    neg = ctx.g.op("minimum", [const(ctx, 0, x), expm1_scaled(ctx, scaled, a)])
    return [ctx.op("add", [ctx.g.op("maximum", [const(ctx, 0, x), x]), neg])]


@rule("ThresholdedRelu")
def thresholded_relu(ctx, ins, attrs):
    x = ins[0]
    above = ctx.g.op("gt", [x, const(ctx, alpha(attrs, 1.0), x)])
    return [ctx.op("where", [above, x, const(ctx, 0, x)])]


def clamp01(ctx, y, like):
    lo = ctx.g.op("maximum", [y, const(ctx, 0, like)])
    return lo, const(ctx, 1, like)


@rule("HardSigmoid")
def hard_sigmoid(ctx, ins, attrs):
    x = ins[0]
    y = ctx.g.op("add", [ctx.g.op("mul", [x, const(ctx, alpha(attrs, 0.2), x)]),
                         const(ctx, float(attrs.get("beta", 0.5)), x)])
    lo, one = clamp01(ctx, y, x)
    return [ctx.op("minimum", [lo, one])]


@rule("HardSwish")
def hard_swish(ctx, ins, attrs):
    x = ins[0]
    y = ctx.g.op("add", [ctx.g.op("mul", [x, const(ctx, 1 / 6, x)]), const(ctx, 0.5, x)])
    lo, one = clamp01(ctx, y, x)
    return [ctx.op("mul", [x, ctx.g.op("minimum", [lo, one])])]


def stable_softplus(ctx, x):
    """log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)): no exp overflows
    (the naive form is inf from x = 89 in f32, 12 in f16)."""
    tail = ctx.g.op("exp", [ctx.g.op("neg", [ctx.g.op("abs", [x])])])
    return ctx.g.op("add", [ctx.g.op("maximum", [x, const(ctx, 0, x)]),
                            ctx.g.op("log", [ctx.g.op("add", [tail, const(ctx, 1, x)])])])


@rule("Softplus")
def softplus(ctx, ins, attrs):
    return [stable_softplus(ctx, ins[0])]


@rule("Softsign")
def softsign(ctx, ins, attrs):
    x = ins[0]
    return [ctx.op("div", [x, ctx.g.op("add", [ctx.g.op("abs", [x]), const(ctx, 1, x)])])]


@rule("Mish")
def mish(ctx, ins, attrs):
    x = ins[0]
    return [ctx.op("mul", [x, ctx.g.op("tanh", [stable_softplus(ctx, x)])])]


def composed_rule(function):
    """Asin, Acos, Atan, Asinh, Acosh or Atanh: `function` of
    composed.py in f32, the result in the operand's float dtype."""
    def fn(ctx, ins, attrs):
        x = ins[0]
        need_float(ctx, x)
        wide = x if dtype(ctx, x) == "f32" else ctx.g.op("cast", [x], {"dtype": "f32"})
        y = function(ctx.g, wide)
        return [y if dtype(ctx, x) == "f32" else ctx.op("cast", [y], {"dtype": dtype(ctx, x)})]
    return fn


RULES["Asin"] = composed_rule(composed.asin)
RULES["Acos"] = composed_rule(composed.acos)
RULES["Atan"] = composed_rule(composed.atan)
RULES["Asinh"] = composed_rule(composed.asinh)
RULES["Acosh"] = composed_rule(composed.acosh)
RULES["Atanh"] = composed_rule(composed.atanh)


@rule("Sign")
def sign(ctx, ins, attrs):
    x = ins[0]
    zero = const(ctx, 0, x)
    pos = ctx.g.op("gt", [x, zero])
    neg = ctx.g.op("lt", [x, zero])
    inner = ctx.g.op("where", [neg, const(ctx, -1, x), zero])
    return [ctx.op("where", [pos, const(ctx, 1, x), inner])]


@rule("Gelu")
def gelu(ctx, ins, attrs):
    approximate = text_attr(attrs, "approximate", "none")
    return [ctx.op("gelu_tanh" if approximate == "tanh" else "gelu", [ins[0]])]


@rule("IsNaN")
def is_nan(ctx, ins, attrs):
    return [ctx.op("ne", [ins[0], ins[0]])]


@rule("IsInf")
def is_inf(ctx, ins, attrs):
    x = ins[0]
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    inf = const(ctx, np.inf, x)
    if pos and neg:
        return [ctx.op("eq", [ctx.g.op("abs", [x]), inf])]
    if pos:
        return [ctx.op("eq", [x, inf])]
    if neg:
        return [ctx.op("eq", [x, const(ctx, -np.inf, x)])]
    return [ctx.op("lt", [x, x])]  # detects nothing: all false


@rule("Clip")
def clip(ctx, ins, attrs):
    x = ins[0]
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else (
        const(ctx, attrs["min"], x) if "min" in attrs else None)
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else (
        const(ctx, attrs["max"], x) if "max" in attrs else None)
    y = x
    if lo is not None:
        y = ctx.g.op("maximum", [y, lo])
    if hi is not None:
        y = ctx.g.op("minimum", [y, hi])
    return [y]
