"""asin, acos and atan of f32 values, composed of cgc's elementwise ops
for both front ends (cgc has no op for them), as single-precision libms
compute them (Cephes' asinf, acosf and atanf: a minimax polynomial on a
reduced range, within about 2 ulps of the exact value):

- asin(x): for |x| <= 1/2, x + x z P(z) with z = x^2; beyond,
  pi/2 - 2 asin(sqrt((1 - |x|) / 2)) with the same polynomial, the sign
  of x put back; NaN outside [-1, 1] (sqrt of a negative).
- acos(x) = pi/2 - asin(x) for |x| <= 1/2; beyond, 2 asin(s) with
  s = sqrt((1 - |x|) / 2) for x > 0 and pi - 2 asin(s) for x < 0 (no
  cancellation near x = +-1).
- atan(x): for |x| > tan(3 pi / 8), pi/2 - atan(1 / |x|); for |x| >
  tan(pi / 8), pi/4 + atan((|x| - 1) / (|x| + 1)); then t + t z Q(z),
  z = t^2, the sign of x put back.

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
