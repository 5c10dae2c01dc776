"""Elementwise functions cgc has no op for, composed of its ops on f32
values and shared by both front ends: log1p, asin, acos, atan and the
inverse hyperbolic functions. The inverse trigonometric ones are computed
as single-precision libms compute them (Cephes' asinf, acosf and atanf: a
minimax polynomial on a reduced range, within about 2 ulps of the exact
value):

- asin(x): for |x| <= 1/2, x + x z P(z) with z = x^2; beyond,
  pi/2 - 2 asin(sqrt((1 - |x|) / 2)) with the same polynomial, the sign
  of x put back; NaN outside [-1, 1] (sqrt of a negative).
- acos(x) = pi/2 - asin(x) for |x| <= 1/2; beyond, 2 asin(s) with
  s = sqrt((1 - |x|) / 2) for x > 0 and pi - 2 asin(s) for x < 0 (no
  cancellation near x = +-1).
- atan(x): for |x| > tan(3 pi / 8), pi/2 - atan(1 / |x|); for |x| >
  tan(pi / 8), pi/4 + atan((|x| - 1) / (|x| + 1)); then t + t z Q(z),
  z = t^2, the sign of x put back.
- log1p(u) in Goldberg's form: log(w) u / (w - 1) at w = 1 + u (u itself
  where w rounds to 1, and at +inf), exact near 0 where log(1 + u) is not.
- asinh(x) = log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x|, the sign of x
  put back; acosh(x) = log1p(t + sqrt(2t + t^2)), t = x - 1 (NaN below
  1, where t^2 would bring a huge negative x back into range); both
  log(a) + log(2) past 2^12, where a^2 would lose a's last bits (and
  overflow by 2^64). atanh(x) = log1p(2a / (1 - a)) / 2, the sign put
  back. NaN outside each domain.

`e` is a builder: op(op, inputs, attrs), scalar(value, dtype)."""
import math

ASIN = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1)
ATAN = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)


def scalar(e, value):
    return e.scalar(float(value), "f32")


def horner(e, z, coefficients):
    """The polynomial with `coefficients` (highest degree first) at z."""
    p = scalar(e, coefficients[0])
    for c in coefficients[1:]:
        p = e.op("add", [e.op("mul", [p, z]), scalar(e, c)])
    return p


def odd_series(e, t, coefficients):
    """t + t z P(z), z = t^2."""
    z = e.op("mul", [t, t])
    return e.op("add", [t, e.op("mul", [e.op("mul", [t, z]), horner(e, z, coefficients)])])


def with_sign_of(e, x, magnitude):
    return e.op("where", [e.op("lt", [x, scalar(e, 0)]), e.op("neg", [magnitude]), magnitude])


def asin_parts(e, x):
    """(asin(|x|) computed directly, the 2 asin(sqrt((1 - |x|) / 2)) of
    the outer range, whether |x| is in the outer range)."""
    a = e.op("abs", [x])
    half = sqrt_half_complement(e, a)
    return odd_series(e, a, ASIN), e.op("mul", [odd_series(e, half, ASIN), scalar(e, 2)]), \
        e.op("gt", [a, scalar(e, 0.5)])


def sqrt_half_complement(e, a):
    """sqrt((1 - a) / 2)."""
    return e.op("sqrt", [e.op("mul", [e.op("sub", [scalar(e, 1), a]), scalar(e, 0.5)])])


def asin(e, x):
    inner, outer, far = asin_parts(e, x)
    magnitude = e.op("where", [far, e.op("sub", [scalar(e, math.pi / 2), outer]), inner])
    return with_sign_of(e, x, magnitude)


def acos(e, x):
    inner, outer, far = asin_parts(e, x)
    middle = e.op("sub", [scalar(e, math.pi / 2), with_sign_of(e, x, inner)])
    ends = e.op("where", [e.op("lt", [x, scalar(e, 0)]),
                          e.op("sub", [scalar(e, math.pi), outer]), outer])
    return e.op("where", [far, ends, middle])


def atan(e, x):
    a = e.op("abs", [x])
    big = e.op("gt", [a, scalar(e, math.tan(3 * math.pi / 8))])
    mid = e.op("gt", [a, scalar(e, math.tan(math.pi / 8))])
    one = scalar(e, 1)
    # The reduced argument: -1/a, (a - 1) / (a + 1) or a, and its offset.
    reduced = e.op("where", [big, e.op("neg", [e.op("div", [one, a])]),
                             e.op("where", [mid, e.op("div", [e.op("sub", [a, one]),
                                                               e.op("add", [a, one])]), a])])
    offset = e.op("where", [big, scalar(e, math.pi / 2),
                            e.op("where", [mid, scalar(e, math.pi / 4), scalar(e, 0)])])
    return with_sign_of(e, x, e.op("add", [offset, odd_series(e, reduced, ATAN)]))


LARGE = 4096.0  # past it, asinh(a) and acosh(a) are log(2a) to f32's precision


def log1p(e, u):
    w = e.op("add", [u, scalar(e, 1)])
    scaled = e.op("mul", [u, e.op("div", [e.op("log", [w]), e.op("sub", [w, scalar(e, 1)])])])
    exact = e.op("logical_or", [e.op("eq", [w, scalar(e, 1)]),
                                e.op("eq", [u, scalar(e, math.inf)])])
    return e.op("where", [exact, u, scaled])


def log_twice(e, a):
    """log(2a), for the large arguments of asinh and acosh."""
    return e.op("add", [e.op("log", [a]), scalar(e, math.log(2))])


def asinh(e, x):
    a = e.op("abs", [x])
    square = e.op("mul", [a, a])
    root = e.op("add", [scalar(e, 1), e.op("sqrt", [e.op("add", [scalar(e, 1), square])])])
    small = log1p(e, e.op("add", [a, e.op("div", [square, root])]))
    large = e.op("gt", [a, scalar(e, LARGE)])
    return with_sign_of(e, x, e.op("where", [large, log_twice(e, a), small]))


def acosh(e, x):
    t = e.op("sub", [x, scalar(e, 1)])
    inner = e.op("add", [e.op("mul", [t, scalar(e, 2)]), e.op("mul", [t, t])])
    small = log1p(e, e.op("add", [t, e.op("sqrt", [inner])]))
    y = e.op("where", [e.op("gt", [x, scalar(e, LARGE)]), log_twice(e, x), small])
    return e.op("where", [e.op("lt", [x, scalar(e, 1)]), scalar(e, math.nan), y])


def atanh(e, x):
    a = e.op("abs", [x])
    ratio = e.op("div", [e.op("mul", [a, scalar(e, 2)]), e.op("sub", [scalar(e, 1), a])])
    return with_sign_of(e, x, e.op("mul", [log1p(e, ratio), scalar(e, 0.5)]))
