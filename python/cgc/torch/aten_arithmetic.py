"""ATen rules for division, remainders and numeric functions, each a
composition of cgc ops computed as PyTorch computes it: div with a
rounding mode, remainder (Python's %) and fmod, log1p, reciprocal, and
the clamps (clamp, hardtanh, hardsigmoid, hardswish).

Integer division is cgc's div, which truncates; floor division and
Python's remainder step the truncated result where a nonzero remainder's
sign differs from the divisor's (stepped_down). Floats follow c10's
div_floor_floating, whose fmod-based form gives 1 // 0.1 = 9 where
floor(1 / 0.1) is 10."""
from .aten_rules import ATEN, CATEGORY, binary
from .. import composed
from ..ir_builder import registrar
from ..dtypes import INTEGERS
from ..errors import RefusedError

aten = registrar(ATEN)


def stepped_down(e, rest, y, dtype):
    """bool: where the remainder `rest` is nonzero and its sign differs
    from divisor y's (a truncated quotient then steps down by one, a
    truncated remainder up by y)."""
    zero = e.scalar(0, dtype)
    differ = e.op("ne", [e.op("lt", [rest, zero]), e.op("lt", [y, zero])])
    return e.op("logical_and", [e.op("ne", [rest, zero]), differ])


def truncated_remainder(e, x, y, dtype, name=None):
    """C's fmod, the sign of the dividend: cgc's fmod of floats, a - (a /
    b) * b of integers (cgc's integer div truncates; a zero divisor gives
    a)."""
    if dtype not in INTEGERS:
        return e.op("fmod", [x, y], name=name)
    return e.op("sub", [x, e.op("mul", [e.op("div", [x, y]), y])], name=name)


@aten("div.Tensor_mode", "div.Scalar_mode")
def div_rounding(e, n):
    """torch.div(a, b, rounding_mode): None divides as div does; "trunc"
    rounds toward zero, "floor" down, in the result's dtype (integers
    stay integers)."""
    a, b = n.args[:2]
    mode = n.kwargs.get("rounding_mode", n.args[2] if len(n.args) > 2 else None)
    if mode is None:
        return binary("div")(e, n)
    if mode not in ("trunc", "floor"):
        raise RefusedError(f"div with rounding_mode {mode!r}")
    dtype = e.dtype(n)
    if CATEGORY[dtype] == 2 and mode == "floor":
        return floor_divided(e, e.as_dtype(a, "f32"), e.as_dtype(b, "f32"), dtype, n.name)
    x, y = e.as_dtype(a, dtype), e.as_dtype(b, dtype)
    quotient = e.op("div", [x, y])
    if CATEGORY[dtype] == 2:
        negative = e.op("lt", [quotient, e.scalar(0, dtype)])
        return e.op("where", [negative, e.op("ceil", [quotient]), e.op("floor", [quotient])],
                    name=n.name)
    if mode == "trunc":
        return quotient
    step = stepped_down(e, truncated_remainder(e, x, y, dtype), y, dtype)
    return e.op("where", [step, e.op("sub", [quotient, e.scalar(1, dtype)]), quotient],
                name=n.name)


def floor_divided(e, x, y, dtype, name):
    """PyTorch's floor division of floats (c10's div_floor_floating) in
    f32, cast to `dtype`: (x - fmod(x, y)) / y, less 1 where the remainder
    steps down, floored and rounded up past .5; a zero quotient signed as
    x / y, a zero divisor x / y itself."""
    zero, one = e.scalar(0.0, "f32"), e.scalar(1.0, "f32")
    mod = e.op("fmod", [x, y])
    exact = e.op("div", [e.op("sub", [x, mod]), y])
    exact = e.op("where", [stepped_down(e, mod, y, "f32"), e.op("sub", [exact, one]), exact])
    down = e.op("floor", [exact])
    up = e.op("gt", [e.op("sub", [exact, down]), e.scalar(0.5, "f32")])
    down = e.op("where", [up, e.op("add", [down, one]), down])
    plain = e.op("div", [x, y])
    signed_zero = e.op("where", [e.op("lt", [plain, zero]), e.scalar(-0.0, "f32"), zero])
    out = e.op("where", [e.op("ne", [exact, zero]), down, signed_zero])
    out = e.op("where", [e.op("eq", [y, zero]), plain, out])
    return out if dtype == "f32" else e.op("cast", [out], {"dtype": dtype}, name=name)


@aten("remainder")
def remainder(e, n):
    """Python's %, the sign of the divisor, as PyTorch computes it: the
    truncated remainder, plus b where it steps (an integer zero divisor
    gives a, as cgc's div gives 0)."""
    a, b = n.args[:2]
    dtype = e.dtype(n)
    x, y = e.as_dtype(a, dtype), e.as_dtype(b, dtype)
    rest = truncated_remainder(e, x, y, dtype)
    return e.op("where", [stepped_down(e, rest, y, dtype), e.op("add", [rest, y]), rest],
                name=n.name)


@aten("fmod")
def fmod(e, n):
    """C's fmod: the sign of the dividend."""
    a, b = n.args[:2]
    dtype = e.dtype(n)
    return truncated_remainder(e, e.as_dtype(a, dtype), e.as_dtype(b, dtype), dtype,
                               name=n.name)


@aten("log1p")
def log1p(e, n):
    """log(1 + x) in f32 without log's cancellation near 0 (composed.py;
    softplus, as PyTorch decomposes it)."""
    y = composed.log1p(e, e.as_dtype(n.args[0], "f32"))
    return y if e.dtype(n) == "f32" else e.op("cast", [y], {"dtype": e.dtype(n)}, name=n.name)


@aten("reciprocal")
def reciprocal(e, n):
    dtype = e.dtype(n)
    return e.op("div", [e.scalar(1.0, dtype), e.as_dtype(n.args[0], dtype)], name=n.name)


@aten("clamp", "clamp.Tensor", "clamp_min", "clamp_max", "hardtanh")
def clamp(e, n):
    """max(x, lo) then min(., hi) in the result's dtype (a bound None is
    left out); hardtanh's bounds default to -1 and 1. NaN stays NaN, as
    PyTorch's."""
    args = list(n.args) + [None] * (3 - len(n.args))
    x, lo, hi = args[0], args[1], args[2]
    if "hardtanh" in n.target:
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    elif "clamp_max" in n.target:
        lo, hi = None, args[1]
    elif "clamp_min" not in n.target:
        lo = n.kwargs.get("min", lo)
        hi = n.kwargs.get("max", hi)
    compute = e.dtype(n)
    y = e.as_dtype(x, compute)
    if lo is not None:
        y = e.op("maximum", [y, e.as_dtype(lo, compute)],
                 name=n.name if hi is None else None)
    if hi is not None:
        y = e.op("minimum", [y, e.as_dtype(hi, compute)], name=n.name)
    return y


def hard_sigmoid(e, x, dt, name=None):
    """min(max(x + 3, 0), 6) / 6 of cgc value x."""
    y = e.op("minimum", [e.op("relu", [e.op("add", [x, e.scalar(3.0, dt)])]),
                         e.scalar(6.0, dt)])
    return e.op("div", [y, e.scalar(6.0, dt)], name=name)


@aten("hardsigmoid")
def hardsigmoid(e, n):
    return hard_sigmoid(e, e.operand(n.args[0]), e.dtype(n), name=n.name)


@aten("hardswish")
def hardswish(e, n):
    """x * hardsigmoid(x)."""
    x = e.operand(n.args[0])
    return e.op("mul", [x, hard_sigmoid(e, x, e.dtype(n))], name=n.name)


@aten("sign")
def sign(e, n):
    """-1, 0 or 1 in x's dtype: (x > 0) - (x < 0), so 0 for a NaN, as
    PyTorch gives."""
    x = n.args[0]
    dtype = e.dtype(n)
    if dtype == "bool":
        return e.operand(x)
    v, zero = e.operand(x), e.scalar(0, dtype)
    above = e.op("cast", [e.op("gt", [v, zero])], {"dtype": dtype})
    below = e.op("cast", [e.op("lt", [v, zero])], {"dtype": dtype})
    return e.op("sub", [above, below], name=n.name)
