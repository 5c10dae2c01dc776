"""What the ONNX operator rules share (ops.py lists them): the registry,
the decorator that fills it, and the helpers every rule uses."""
import numpy as np

from ..dtypes import FLOATS
from ..ir_builder import registrar
from ..errors import RefusedError

RULES = {}
rule = registrar(RULES)


def dtype(ctx, v):
    return ctx.g.dtype(v)


def shape(ctx, v):
    return ctx.g.shape(v)


def const(ctx, value, like):
    """A scalar constant of `like`'s dtype."""
    return ctx.g.scalar(value, dtype(ctx, like))


def text_attr(attrs, name, default):
    """A string attribute as text (bytes that are not UTF-8 replaced, so a
    rule refuses the value by name instead of crashing)."""
    value = attrs.get(name, default)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def need_float(ctx, v, what="operand"):
    if dtype(ctx, v) not in FLOATS:
        raise RefusedError(f"{what} has dtype {dtype(ctx, v)}; cgc's op takes floats only")


def ints_operand(ctx, v, what):
    return [int(x) for x in np.asarray(ctx.known(v, what)).reshape(-1)]


def checked_axis(axis, rank, what="axis"):
    """`axis` in [-rank, rank) made non-negative; refused otherwise (ONNX
    leaves an axis out of range undefined)."""
    axis = int(axis)
    if not -rank <= axis < rank:
        raise RefusedError(f"{what} {axis} is out of range for a rank-{rank} input "
                           f"(valid: {-rank} to {rank - 1})")
    return axis % rank


def check_constant_indices(ctx, indices, data_shape, axis):
    """Refuses constant indices outside [-n, n) for an axis of extent n
    (ONNX leaves them undefined; cgc's gather reads zeros there). Indices
    known only at run time are not checked (docs/onnx.md)."""
    rank = len(data_shape)
    if not -rank <= axis < rank:
        raise RefusedError(f"axis {axis} of a rank-{rank} input")
    if indices not in ctx.g.known:
        return
    n = data_shape[axis]
    values = np.asarray(ctx.g.known[indices]).reshape(-1)
    bad = values[(values < -n) | (values >= n)]
    if bad.size:
        raise RefusedError(f"index {int(bad[0])} is out of range for axis {axis} of "
                           f"extent {n} (valid: {-n} to {n - 1})")
