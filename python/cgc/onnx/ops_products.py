"""ONNX's products and window ops (MatMul, Gemm, Conv, the pools,
BatchNormalization, Resize), as cgc ops. Registered into rules.RULES."""
import numpy as np

from .rules import checked_axis, const, dtype, ints_operand, need_float, rule, shape
from ..errors import RefusedError


def as_matrix_operand(ctx, v, front):
    """A rank-1 operand of MatMul as a matrix ([1, K] in front, [K, 1] behind)."""
    s = shape(ctx, v)
    new = [1, s[0]] if front else [s[0], 1]
    return ctx.g.op("reshape", [v], {"shape": new}, dtype(ctx, v), new)


@rule("MatMul")
def matmul(ctx, ins, attrs):
    a, b = ins
    need_float(ctx, a)
    ra, rb = len(shape(ctx, a)), len(shape(ctx, b))
    if ra >= 2 and rb >= 2:
        return [ctx.op("matmul", [a, b])]
    a2 = as_matrix_operand(ctx, a, True) if ra == 1 else a
    b2 = as_matrix_operand(ctx, b, False) if rb == 1 else b
    prod = ctx.g.op("matmul", [a2, b2])
    return [ctx.op("reshape", [prod], {"shape": ctx.out_type()[1]})]


@rule("Gemm")
def gemm(ctx, ins, attrs):
    a, b = ins[0], ins[1]
    need_float(ctx, a)
    y = ctx.g.op("matmul", [a, b], {"transpose_a": bool(attrs.get("transA", 0)),
                                    "transpose_b": bool(attrs.get("transB", 0))})
    if float(attrs.get("alpha", 1.0)) != 1.0:
        y = ctx.g.op("mul", [y, const(ctx, float(attrs["alpha"]), a)])
    if len(ins) > 2 and ins[2] is not None:
        c = ins[2]
        if float(attrs.get("beta", 1.0)) != 1.0:
            c = ctx.g.op("mul", [c, const(ctx, float(attrs["beta"]), a)])
        return [ctx.op("add", [y, c])]
    return [y]


def window_pads(attrs, dims, kernel, strides, dilations):
    """ONNX's pads of a windowed operator over spatial `dims` (every begin,
    then every end, as cgc's): auto_pad SAME_UPPER / SAME_LOWER give the
    output ceil(in / stride), the odd pad after / before."""
    spatial = len(dims)
    auto = attrs.get("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        total = [max(0, (-(-i // s) - 1) * s + (k - 1) * d + 1 - i)
                 for i, s, k, d in zip(dims, strides, kernel, dilations)]
        small = [t // 2 for t in total]
        big = [t - t // 2 for t in total]
        return small + big if auto == "SAME_UPPER" else big + small
    if auto == "VALID":
        return [0] * 2 * spatial
    if auto == "NOTSET":
        return [int(v) for v in attrs.get("pads", [0] * 2 * spatial)]
    raise RefusedError(f"auto_pad {auto!r}")


def spatial_of(ctx, x, what):
    xs = shape(ctx, x)
    if len(xs) - 2 not in (1, 2, 3) or not all(isinstance(d, int) for d in xs[1:]):
        raise RefusedError(f"a {what} of {xs} (cgc takes 1 to 3 static spatial dims)")
    return xs[2:]


@rule("Conv")
def conv(ctx, ins, attrs):
    """ONNX's Conv as cgc's conv."""
    x, w = ins[0], ins[1]
    need_float(ctx, x)
    dims, ws = spatial_of(ctx, x, "Conv"), shape(ctx, w)
    spatial = len(dims)
    kernel = [int(k) for k in attrs.get("kernel_shape", ws[2:])]
    if kernel != list(ws[2:]):
        raise RefusedError(f"kernel_shape {kernel} differs from the weight's {ws[2:]}")
    strides = [int(v) for v in attrs.get("strides", [1] * spatial)]
    dilations = [int(v) for v in attrs.get("dilations", [1] * spatial)]
    pads = window_pads(attrs, dims, kernel, strides, dilations)
    operands = [x, w] + ([ins[2]] if len(ins) > 2 and ins[2] is not None else [])
    return [ctx.op("conv", operands, {"strides": strides, "pads": pads, "dilations": dilations,
                                      "groups": int(attrs.get("group", 1))})]


@rule("ConvTranspose")
def conv_transpose(ctx, ins, attrs):
    """ONNX's ConvTranspose as cgc's conv_transpose: explicit pads, or the
    padding that output_shape (or auto_pad SAME_*: in * stride) implies,
    its odd unit after (SAME_UPPER, and output_shape) or before, and an
    output_shape beyond the unpadded output as more output_padding."""
    x, w = ins[0], ins[1]
    need_float(ctx, x)
    dims, ws = spatial_of(ctx, x, "ConvTranspose"), shape(ctx, w)
    spatial = len(dims)
    kernel = [int(k) for k in attrs.get("kernel_shape", ws[2:])]
    if kernel != list(ws[2:]):
        raise RefusedError(f"kernel_shape {kernel} differs from the weight's {ws[2:]}")
    strides = [int(v) for v in attrs.get("strides", [1] * spatial)]
    dilations = [int(v) for v in attrs.get("dilations", [1] * spatial)]
    extra = [int(v) for v in attrs.get("output_padding", [0] * spatial)]
    auto = text(attrs, "auto_pad", "NOTSET")
    pads = [int(v) for v in attrs.get("pads", [0] * 2 * spatial)]
    wanted = attrs.get("output_shape")
    if wanted is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        wanted = [i * s for i, s in zip(dims, strides)]
    if wanted is not None:
        wanted = [int(v) for v in wanted][-spatial:]
        total = [s * (i - 1) + o + (k - 1) * d + 1 - want for i, s, o, k, d, want in
                 zip(dims, strides, extra, kernel, dilations, wanted)]
        extra = [o - min(t, 0) for o, t in zip(extra, total)]  # a larger output: more after
        total = [max(t, 0) for t in total]
        small, big = [t // 2 for t in total], [t - t // 2 for t in total]
        pads = big + small if auto == "SAME_LOWER" else small + big
    operands = [x, w] + ([ins[2]] if len(ins) > 2 and ins[2] is not None else [])
    return [ctx.op("conv_transpose", operands,
                   {"strides": strides, "pads": pads, "dilations": dilations,
                    "groups": int(attrs.get("group", 1)), "output_padding": extra})]


def pool(ctx, ins, attrs, op):
    x = ins[0]
    need_float(ctx, x)
    dims = spatial_of(ctx, x, op)
    spatial = len(dims)
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        raise RefusedError("a MaxPool's Indices output (cgc computes the values only)")
    kernel = [int(k) for k in attrs["kernel_shape"]]
    strides = [int(v) for v in attrs.get("strides", [1] * spatial)]
    dilations = [int(v) for v in attrs.get("dilations", [1] * spatial)]
    out = {"kernel": kernel, "strides": strides,
           "pads": window_pads(attrs, dims, kernel, strides, dilations),
           "ceil_mode": bool(attrs.get("ceil_mode", 0))}
    out["dilations"] = dilations
    if op == "avg_pool":
        out["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
    return [ctx.op(op, [x], out)]


@rule("MaxPool")
def max_pool(ctx, ins, attrs):
    return pool(ctx, ins, attrs, "max_pool")


@rule("AveragePool")
def average_pool(ctx, ins, attrs):
    return pool(ctx, ins, attrs, "avg_pool")


@rule("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx, ins, attrs):
    dims = spatial_of(ctx, ins[0], "global pool")
    op = "avg_pool" if ctx.node.op_type == "GlobalAveragePool" else "max_pool"
    need_float(ctx, ins[0])
    return [ctx.op(op, [ins[0]], {"kernel": list(dims)})]


@rule("BatchNormalization")
def batch_norm(ctx, ins, attrs):
    """Inference (test mode: training_mode 0, one output; before opset 7,
    is_test 1): (x - mean) * scale / sqrt(var + eps) + B per channel (axis
    1), as elementwise ops that fuse."""
    training = int(attrs.get("training_mode", 0)) != 0 or \
        (ctx.opset < 7 and not int(attrs.get("is_test", 0))) or \
        any(name for name in ctx.node.output[1:])
    if training:
        raise RefusedError("BatchNormalization in training mode (batch statistics)")
    if int(attrs.get("spatial", 1)) == 0:
        raise RefusedError("BatchNormalization with spatial 0 (statistics per element)")
    x, scale, bias, mean, var = ins[:5]
    need_float(ctx, x)
    rank = len(shape(ctx, x))
    column = [shape(ctx, x)[1]] + [1] * max(rank - 2, 0)

    def per_channel(v):
        return ctx.g.op("reshape", [v], {"shape": column}, dtype(ctx, v), column)

    factor = ctx.g.op("rsqrt", [ctx.g.op("add", [per_channel(var),
                                                 const(ctx, float(attrs.get("epsilon", 1e-5)), x)])])
    factor = ctx.g.op("mul", [factor, per_channel(scale)])
    y = ctx.g.op("mul", [ctx.g.op("sub", [x, per_channel(mean)]), factor])
    return [ctx.op("add", [y, per_channel(bias)])]


def text(attrs, name, default):
    value = attrs.get(name, default)
    return value.decode() if isinstance(value, bytes) else value


@rule("Resize")
def resize(ctx, ins, attrs):
    """Resize of the spatial dims of [N, C, spatial...] (nearest or linear,
    every coordinate rule but tf_crop_and_resize and half_pixel_symmetric)
    as cgc's interpolate: with `scales`, the sizes are floor(in * scale)
    and the coordinates follow the scales; with `sizes`, the ratio."""
    x = ins[0]
    need_float(ctx, x)
    xs = shape(ctx, x)
    rank = len(xs)
    mode = text(attrs, "mode", "nearest")
    coordinate = text(attrs, "coordinate_transformation_mode",
                      "asymmetric" if ctx.opset < 11 else "half_pixel")
    if mode not in ("nearest", "linear"):
        raise RefusedError(f"Resize mode {mode} (cgc interpolates nearest and linear)")
    if coordinate in ("tf_crop_and_resize", "half_pixel_symmetric"):
        raise RefusedError(f"Resize coordinate_transformation_mode {coordinate}")
    if int(attrs.get("antialias", 0)):
        raise RefusedError("Resize with antialias")
    if text(attrs, "keep_aspect_ratio_policy", "stretch") != "stretch":
        raise RefusedError("Resize keep_aspect_ratio_policy other than stretch")
    axes = [checked_axis(a, rank) for a in attrs.get("axes", range(rank))]
    operand = lambda i: ins[i] if len(ins) > i and ins[i] is not None else None  # noqa: E731
    scales_in = operand(1) if ctx.opset < 11 else operand(2)
    sizes_in = None if ctx.opset < 11 else operand(3)
    scale = {a: 1.0 for a in range(rank)}
    size = {a: xs[a] for a in range(rank)}
    if sizes_in is not None:
        for a, s in zip(axes, ints_operand(ctx, sizes_in, "Resize's sizes")):
            size[a] = s
            scale[a] = s / xs[a]
        explicit = False
    elif scales_in is not None:
        values = [float(v) for v in np.asarray(ctx.known(scales_in, "Resize's scales")).reshape(-1)]
        for a, s in zip(axes, values):
            scale[a], size[a] = s, int(np.floor(xs[a] * s))
        explicit = True
    else:
        raise RefusedError("Resize with neither scales nor sizes")
    if rank not in (3, 4, 5) or size[0] != xs[0] or size[1] != xs[1]:
        raise RefusedError(f"a Resize of {xs} to {[size[a] for a in range(rank)]} (cgc "
                           "resizes the spatial dims of [N, C, 1 to 3 spatial dims])")
    out = {"sizes": [size[a] for a in range(2, rank)], "mode": mode, "coordinate": coordinate,
           "nearest": text(attrs, "nearest_mode", "round_prefer_floor")}
    if explicit:
        out["scales"] = [scale[a] for a in range(2, rank)]
    return [ctx.op("interpolate", [x], out)]
