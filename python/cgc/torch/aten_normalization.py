"""The ATen rules of the normalizations (registered in aten_rules.ATEN):
layer_norm (its mean and rstd made when read) and rms_norm."""
import functools
import math

from ..errors import RefusedError
from .aten_rules import aten


@aten("layer_norm", "native_layer_norm")
def layer_norm(e, n):
    x, normalized = n.args[0], n.args[1]
    w = n.args[2] if len(n.args) > 2 else None
    b = n.args[3] if len(n.args) > 3 else None
    eps = n.args[4] if len(n.args) > 4 else n.kwargs.get("eps", 1e-5)
    if not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps < 0:
        raise RefusedError(f"a layer_norm eps of {eps!r} (a finite number, at least 0)")
    check_normalized_shape(normalized, e.shape(x))
    operands = [e.operand(x)]
    if w is not None:
        operands.append(e.operand(w))
        if b is not None:
            operands.append(e.operand(b))
    elif b is not None:
        raise RefusedError("a layer_norm with a bias and no weight")
    y = e.op("layernorm", operands, {"axis": -len(normalized), "eps": float(eps)}, name=n.name)
    if "native" in n.target:  # its mean and rstd, made when a getitem reads them
        vals = n.val if isinstance(n.val, list) else []
        dtypes = [e.dtype_of_val(v) for v in vals[1:3]]
        if len(dtypes) != 2 or None in dtypes:
            return [y, None, None]
        moments = functools.lru_cache(maxsize=None)(
            lambda: layer_norm_moments(e, x, len(normalized), float(eps)))
        return [y, lambda: e.as_ir_dtype(moments()[0], dtypes[0]),
                lambda: e.as_ir_dtype(moments()[1], dtypes[1])]
    return y


# torch.finfo(dtype).eps: rms_norm's eps when none is given.
MACHINE_EPSILON = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f64": 2.0 ** -52}


@aten("rms_norm")
def rms_norm(e, n):
    """torch.nn.functional.rms_norm (when the export keeps it whole; a
    decomposed one is the arithmetic form-rms-norm recognizes)."""
    x, normalized = n.args[0], n.args[1]
    w = n.args[2] if len(n.args) > 2 else n.kwargs.get("weight")
    eps = n.args[3] if len(n.args) > 3 else n.kwargs.get("eps")
    if eps is None:
        eps = MACHINE_EPSILON.get(e.dtype(x), 2.0 ** -23)
    if not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
        raise RefusedError(f"an rms_norm eps of {eps!r} (a finite number above 0)")
    check_normalized_shape(normalized, e.shape(x))
    operands = [e.operand(x)] + ([e.operand(w)] if w is not None else [])
    return e.op("rms_norm", operands, {"axis": -len(normalized), "eps": float(eps)}, name=n.name)


def layer_norm_moments(e, x, count, eps):
    """(mean, 1 / sqrt(variance + eps)) of `x` over its last `count`
    dims, kept, in f32: native_layer_norm's second and third results."""
    v = e.as_dtype(x, "f32")
    axes = list(range(len(e.shape(x)) - count, len(e.shape(x))))
    mean = e.op("mean", [v], {"axes": axes, "keepdim": True})
    centered = e.op("sub", [v, mean])
    variance = e.op("mean", [e.op("mul", [centered, centered])], {"axes": axes, "keepdim": True})
    rstd = e.op("rsqrt", [e.op("add", [variance, e.scalar(eps, "f32")])])
    return mean, rstd


def check_normalized_shape(normalized, shape):
    """layer_norm's normalized_shape must be the input's last dims (at
    least one; a symbolic one is taken as it comes), as PyTorch requires."""
    if not isinstance(normalized, (list, tuple)) or not 0 < len(normalized) <= len(shape) or \
            any(isinstance(d, int) and isinstance(s, int) and d != s
                for d, s in zip(normalized, shape[len(shape) - len(normalized):])):
        raise RefusedError(f"a layer_norm over normalized_shape {normalized!r} of an input of "
                           f"shape {list(shape)} (it must be the input's last dims, at least one)")
