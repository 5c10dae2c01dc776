"""ONNX's products, window ops and normalizations over channels (MatMul,
Gemm, Conv, ConvTranspose, the pools, Resize, BatchNormalization,
InstanceNormalization, GroupNormalization), as cgc ops. Registered into
rules.RULES."""
import numpy as np

from .rules import checked_axis, const, dtype, ints_operand, need_float, rule, shape, text_attr
from ..errors import RefusedError
from ..ir_builder import ceil_mode_kernel


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
    auto = text_attr(attrs, "auto_pad", "NOTSET")
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


def convolution_attrs(ctx, ins, attrs, what):
    """(spatial dims, kernel, strides, dilations, operands) of a Conv or
    ConvTranspose: x and w (and the bias where given), kernel_shape
    checked against w's."""
    x, w = ins[0], ins[1]
    need_float(ctx, x)
    dims, ws = spatial_of(ctx, x, what), shape(ctx, w)
    spatial = len(dims)
    kernel = [int(k) for k in attrs.get("kernel_shape", ws[2:])]
    if kernel != list(ws[2:]):
        raise RefusedError(f"kernel_shape {kernel} differs from the weight's {ws[2:]}")
    strides = [int(v) for v in attrs.get("strides", [1] * spatial)]
    dilations = [int(v) for v in attrs.get("dilations", [1] * spatial)]
    operands = [x, w] + ([ins[2]] if len(ins) > 2 and ins[2] is not None else [])
    return dims, kernel, strides, dilations, operands


@rule("Conv")
def conv(ctx, ins, attrs):
    """ONNX's Conv as cgc's conv."""
    dims, kernel, strides, dilations, operands = convolution_attrs(ctx, ins, attrs, "Conv")
    pads = window_pads(attrs, dims, kernel, strides, dilations)
    return [ctx.op("conv", operands, {"strides": strides, "pads": pads, "dilations": dilations,
                                      "groups": int(attrs.get("group", 1))})]


@rule("ConvTranspose")
def conv_transpose(ctx, ins, attrs):
    """ONNX's ConvTranspose as cgc's conv_transpose: explicit pads, or the
    padding that output_shape (or auto_pad SAME_*: in * stride) implies,
    its odd unit after with SAME_UPPER and before otherwise (the spec's
    rule), and an output_shape beyond the unpadded output as more
    output_padding."""
    dims, kernel, strides, dilations, operands = convolution_attrs(ctx, ins, attrs,
                                                                   "ConvTranspose")
    spatial = len(dims)
    extra = [int(v) for v in attrs.get("output_padding", [0] * spatial)]
    auto = text_attr(attrs, "auto_pad", "NOTSET")
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
        pads = small + big if auto == "SAME_UPPER" else big + small
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
    pads = window_pads(attrs, dims, kernel, strides, dilations)
    ceil_mode = bool(attrs.get("ceil_mode", 0))
    if ceil_mode:  # (as torch.onnx exports EfficientNet's last pool)
        kernel = ceil_mode_kernel(kernel, dims, pads, dilations)
    out = {"kernel": kernel, "strides": strides, "pads": pads, "ceil_mode": ceil_mode}
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
    """cgc's batch_norm: by the running statistics in test mode
    (training_mode 0; before opset 7, is_test 1), else by the batch's, with
    the running statistics' update as outputs 1 and 2 (opset 14+:
    running * momentum + batch * (1 - momentum), the biased variance)."""
    training = int(attrs.get("training_mode", 0)) != 0 or \
        (ctx.opset < 7 and not int(attrs.get("is_test", 0)))
    if int(attrs.get("spatial", 1)) == 0:
        raise RefusedError("BatchNormalization with spatial 0 (statistics per element)")
    if any(name for name in ctx.node.output[3:]) or (not training and
                                                       any(ctx.node.output[1:])):
        raise RefusedError("BatchNormalization's saved mean and variance outputs")
    x, scale, bias, mean, var = ins[:5]
    need_float(ctx, x)
    if len({dtype(ctx, v) for v in (x, scale, bias, mean, var)}) != 1:
        raise RefusedError("a BatchNormalization whose operands' dtypes differ")
    eps = float(attrs.get("epsilon", 1e-5))
    y = ctx.op("batch_norm", [x, scale, bias, mean, var], {"eps": eps, "training": training})
    if not training:
        return [y]
    momentum = float(attrs.get("momentum", 0.9))
    channels = [shape(ctx, x)[1]]
    rank, dt = len(shape(ctx, x)), dtype(ctx, x)
    reduce = {"axes": [0] + list(range(2, rank)), "keepdim": True}
    kept = [1, channels[0]] + [1] * (rank - 2)
    wide = x if dt == "f32" else ctx.g.op("cast", [x], {"dtype": "f32"}, "f32", shape(ctx, x))
    batch_mean = ctx.g.op("mean", [wide], reduce, "f32", kept)
    centered = ctx.g.op("sub", [wide, batch_mean], None, "f32", shape(ctx, x))
    batch_var = ctx.g.op("mean", [ctx.g.op("mul", [centered, centered], None, "f32",
                                           shape(ctx, x))], reduce, "f32", kept)

    def update(running, batch):
        batch = batch if dt == "f32" else ctx.g.op("cast", [batch], {"dtype": dt}, dt, kept)
        batch = ctx.g.op("reshape", [batch], {"shape": channels}, dt, channels)
        old = ctx.g.op("mul", [running, const(ctx, momentum, x)], None, dt, channels)
        new = ctx.g.op("mul", [batch, const(ctx, 1.0 - momentum, x)], None, dt, channels)
        return ctx.g.op("add", [old, new], None, dt, channels)
    return [y, update(mean, batch_mean), update(var, batch_var)]


def normalized_groups(ctx, x, groups, eps):
    """x [N, C, ...] normalized over each of `groups` channel groups (and the
    spatial dims) by cgc's layernorm over [N, G, C / G * HxW], as [N, G, C
    / G * HxW]."""
    xs = shape(ctx, x)
    if len(xs) < 2 or not all(isinstance(d, int) for d in xs[1:]) or groups < 1 or \
            xs[1] % groups:
        raise RefusedError(f"a normalization of {xs} in {groups} groups (x is [N, C, ...], "
                           "the groups dividing C)")
    rows = [xs[0], groups, int(np.prod(xs[1:], dtype=np.int64)) // groups]
    grouped = ctx.g.op("reshape", [x], {"shape": rows}, dtype(ctx, x), rows)
    return ctx.g.op("layernorm", [grouped], {"axis": -1, "eps": eps}, dtype(ctx, x), rows), rows


def scaled(ctx, y, scale, bias, column):
    """y * scale + bias, each reshaped to `column` to broadcast."""
    dt, ys = dtype(ctx, y), shape(ctx, y)
    for op, v in (("mul", scale), ("add", bias)):
        v = ctx.g.op("reshape", [v], {"shape": column}, dt, column)
        y = ctx.g.op(op, [y, v], None, dt, ys)
    return y


@rule("InstanceNormalization")
def instance_norm(ctx, ins, attrs):
    """Each (n, c) plane normalized (its mean and biased variance), then
    scaled and shifted per channel: a group norm with a group per channel."""
    x, scale, bias = ins[:3]
    need_float(ctx, x)
    xs = shape(ctx, x)
    y, _ = normalized_groups(ctx, x, xs[1], float(attrs.get("epsilon", 1e-5)))
    y = ctx.g.op("reshape", [y], {"shape": list(xs)}, dtype(ctx, x), list(xs))
    out = scaled(ctx, y, scale, bias, [xs[1]] + [1] * (len(xs) - 2))
    return [ctx.op("reshape", [out], {"shape": list(xs)})]


@rule("GroupNormalization")
def group_norm(ctx, ins, attrs):
    """Each group of num_groups normalized, then scaled and shifted: per
    channel (opset 21: scale and bias [C]) or per group (opset 18: [G])."""
    x, scale, bias = ins[:3]
    need_float(ctx, x)
    if int(attrs.get("stash_type", 1)) != 1:
        raise RefusedError("GroupNormalization with a stash_type other than float")
    xs, groups = shape(ctx, x), int(attrs["num_groups"])
    y, rows = normalized_groups(ctx, x, groups, float(attrs.get("epsilon", 1e-5)))
    if shape(ctx, scale)[0] == xs[1]:
        y = ctx.g.op("reshape", [y], {"shape": list(xs)}, dtype(ctx, x), list(xs))
        out = scaled(ctx, y, scale, bias, [xs[1]] + [1] * (len(xs) - 2))
    else:
        out = scaled(ctx, y, scale, bias, [groups, 1])
    return [ctx.op("reshape", [out], {"shape": list(xs)})]


@rule("Resize")
def resize(ctx, ins, attrs):
    """Resize of the spatial dims of [N, C, spatial...] (every coordinate
    rule but tf_crop_and_resize and half_pixel_symmetric): nearest or
    linear as cgc's interpolate, cubic by cubic_resize. With `scales`, the
    sizes are floor(in * scale) and the coordinates follow the scales;
    with `sizes`, the ratio."""
    x = ins[0]
    need_float(ctx, x)
    xs = shape(ctx, x)
    rank = len(xs)
    mode = text_attr(attrs, "mode", "nearest")
    coordinate = text_attr(attrs, "coordinate_transformation_mode",
                      "asymmetric" if ctx.opset < 11 else "half_pixel")
    if mode not in ("nearest", "linear", "cubic"):
        raise RefusedError(f"Resize mode {mode}")
    if coordinate in ("tf_crop_and_resize", "half_pixel_symmetric"):
        raise RefusedError(f"Resize coordinate_transformation_mode {coordinate}")
    if int(attrs.get("antialias", 0)):
        raise RefusedError("Resize with antialias")
    if text_attr(attrs, "keep_aspect_ratio_policy", "stretch") != "stretch":
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
    if mode == "cubic":
        return [ctx.op("reshape", [cubic_resize(ctx, x, xs, size, scale, coordinate, attrs)],
                       {"shape": [size[a] for a in range(rank)]})]
    # Opset 10's Resize (Upsample's successor) takes the floor of the source.
    rounding = "floor" if ctx.opset < 11 else text_attr(attrs, "nearest_mode", "round_prefer_floor")
    out = {"sizes": [size[a] for a in range(2, rank)], "mode": mode, "coordinate": coordinate,
           "nearest": rounding}
    if explicit:
        out["scales"] = [scale[a] for a in range(2, rank)]
    return [ctx.op("interpolate", [x], out)]


def source_coordinate(x, scale, length_in, coordinate):
    """Where output coordinate x samples the input, as ONNX's reference
    computes it (the output length there is scale * length_in, a float)."""
    length_out = scale * length_in
    if coordinate == "align_corners":
        return 0.0 if length_out == 1 else x * (length_in - 1) / (length_out - 1)
    if coordinate == "asymmetric":
        return x / scale
    if coordinate == "pytorch_half_pixel" and length_out == 1:
        return -0.5
    if coordinate in ("half_pixel", "pytorch_half_pixel"):
        return (x + 0.5) / scale - 0.5
    raise RefusedError(f"Resize coordinate_transformation_mode {coordinate}")


def cubic_taps(length_in, length_out, scale, coordinate, a, exclude_outside):
    """(the 4 source indices, their 4 weights) of each output position of
    one axis: Keys' cubic convolution with coefficient a at the 4 nearest
    inputs, an index outside the axis clamped to its edge (or, with
    exclude_outside, weighted 0 and the rest renormalized)."""
    indices = np.zeros((length_out, 4), np.int64)
    weights = np.zeros((length_out, 4), np.float64)
    for o in range(length_out):
        x = source_coordinate(float(o), scale, length_in, coordinate)
        base = int(np.floor(x))
        t = 1.0 if x == base else x - base  # an integer x: the 4 taps end at x+1
        first = base - 2 if x == base else base - 1
        d = [t + 1, t, 1 - t, 2 - t]
        w = np.array([((a * v - 5 * a) * v + 8 * a) * v - 4 * a if v > 1 else
                      ((a + 2) * v - (a + 3)) * v * v + 1 for v in d])
        taps = np.arange(first, first + 4)
        if exclude_outside:
            w = np.where((taps < 0) | (taps >= length_in), 0.0, w)
            w = w / w.sum()
        indices[o], weights[o] = np.clip(taps, 0, length_in - 1), w
    return indices, weights


def cubic_resize(ctx, x, xs, size, scale, coordinate, attrs):
    """Resize's cubic mode, one spatial axis after another (separable, as
    ONNX's reference computes it): 4 constant-index gathers along the
    axis, weighted by constants and summed, in f32."""
    a = float(attrs.get("cubic_coeff_a", -0.75))
    exclude = bool(int(attrs.get("exclude_outside", 0)))
    kind = dtype(ctx, x)
    y = x if kind == "f32" else ctx.g.op("cast", [x], {"dtype": "f32"})
    current = list(xs)
    for axis in range(2, len(xs)):
        if size[axis] == current[axis] and scale[axis] == 1.0:
            continue
        indices, weights = cubic_taps(current[axis], size[axis], scale[axis], coordinate, a,
                                      exclude)
        taps = ctx.g.op("gather", [y, ctx.g.constant(indices.reshape(-1), "cubic_taps")],
                        {"axis": axis})
        spread = current[:axis] + [size[axis], 4] + current[axis + 1:]
        shaped = [size[axis], 4] + [1] * (len(xs) - axis - 1)
        w = ctx.g.constant(weights.astype(np.float32).reshape(shaped), "cubic_weights")
        y = ctx.g.op("sum", [ctx.g.op("mul", [ctx.g.op("reshape", [taps], {"shape": spread}), w])],
                     {"axes": [axis + 1]})
        current[axis] = size[axis]
    return y if kind == "f32" else ctx.g.op("cast", [y], {"dtype": kind})
