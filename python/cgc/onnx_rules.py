"""What the ONNX operator rules share (ops.py lists them): the registry,
the decorator that fills it, and the helpers every rule uses."""
import numpy as np

from .ir_builder import registrar
from .onnx_types import RefusedError

RULES = {}
rule = registrar(RULES)


def dtype(ctx, v):
    return ctx.g.dtype(v)


def shape(ctx, v):
    return ctx.g.shape(v)


def const(ctx, value, like):
    """A scalar constant of `like`'s dtype."""
    return ctx.g.scalar(value, dtype(ctx, like))


def need_float(ctx, v, what="operand"):
    if dtype(ctx, v) not in ("f32", "f16", "bf16"):
        raise RefusedError(f"{what} has dtype {dtype(ctx, v)}; cgc's op takes floats only")


def ints_operand(ctx, v, what):
    return [int(x) for x in np.asarray(ctx.known(v, what)).reshape(-1)]
