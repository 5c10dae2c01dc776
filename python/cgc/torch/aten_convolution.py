"""ATen rules for convolutions (transposed too), pooling, resizing and
batch and group norm, as cgc's conv, conv_transpose, max_pool, avg_pool,
interpolate, batch_norm and layernorm ops and elementwise arithmetic
(aten_rules.py has the one-op rules)."""
from ..errors import RefusedError
from ..ir_builder import ceil_mode_kernel
from .aten_rules import aten, element_count


def conv_list(value, spatial, name):
    """A conv attribute (an int or one int per spatial dim) as a list."""
    values = [value] * spatial if isinstance(value, int) else list(value)
    if len(values) == 1 and spatial > 1:
        values = values * spatial
    if len(values) != spatial or not all(isinstance(v, int) for v in values):
        raise RefusedError(f"a convolution {name} of {value!r} for {spatial} spatial dims")
    return values


def conv_op(e, n, x, w, bias, stride, padding, dilation, groups):
    """One `conv` node: x [N, C, spatial...], w [O, C / groups, kernel...]."""
    spatial = len(e.shape(x)) - 2
    if spatial not in (1, 2, 3):
        raise RefusedError(f"a convolution over {spatial} spatial dims (cgc takes 1 to 3)")
    dilation = conv_list(dilation, spatial, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            pads = [0] * 2 * spatial
        elif padding == "same":
            kernel = e.shape(w)[2:]
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
        else:
            raise RefusedError(f"a convolution padding of {padding!r}")
    else:
        pads = conv_list(padding, spatial, "padding") * 2
    operands = [e.operand(x), e.operand(w)] + ([e.operand(bias)] if bias is not None else [])
    attrs = {"strides": conv_list(stride, spatial, "stride"), "pads": pads,
             "dilations": dilation, "groups": groups}
    return e.op("conv", operands, attrs, name=n.name)


def conv_transpose_op(e, n, x, w, bias, stride, padding, output_padding, groups, dilation):
    """One `conv_transpose` node: x [N, C, spatial...], w [C, O / groups,
    kernel...]."""
    spatial = len(e.shape(x)) - 2
    if spatial not in (1, 2, 3):
        raise RefusedError(f"a transposed convolution over {spatial} spatial dims (cgc takes 1 "
                           "to 3)")
    operands = [e.operand(x), e.operand(w)] + ([e.operand(bias)] if bias is not None else [])
    attrs = {"strides": conv_list(stride, spatial, "stride"),
             "pads": conv_list(padding, spatial, "padding") * 2,
             "dilations": conv_list(dilation, spatial, "dilation"), "groups": groups,
             "output_padding": conv_list(output_padding, spatial, "output_padding")}
    return e.op("conv_transpose", operands, attrs, name=n.name)


@aten("convolution")
def convolution(e, n):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = n.args[:9]
    if transposed:
        return conv_transpose_op(e, n, x, w, bias, stride, padding, output_padding, groups,
                                 dilation)
    return conv_op(e, n, x, w, bias, stride, padding, dilation, groups)


@aten("conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input",
      "conv_transpose2d", "conv_transpose3d")
def conv_transpose_nd(e, n):
    args = list(n.args) + [None] * (8 - len(n.args))
    x, w, bias = args[0], args[1], args[2]
    pick = lambda k, name, default: args[k] if args[k] is not None else \
        n.kwargs.get(name, default)  # noqa: E731
    return conv_transpose_op(e, n, x, w, bias, pick(3, "stride", 1), pick(4, "padding", 0),
                             pick(5, "output_padding", 0), pick(6, "groups", 1),
                             pick(7, "dilation", 1))


@aten("conv1d", "conv2d", "conv3d", "conv1d.padding", "conv2d.padding", "conv3d.padding")
def conv_nd(e, n):
    args = list(n.args) + [None] * (7 - len(n.args))
    x, w, bias = args[0], args[1], args[2]
    stride = args[3] if args[3] is not None else n.kwargs.get("stride", 1)
    padding = args[4] if args[4] is not None else n.kwargs.get("padding", 0)
    dilation = args[5] if args[5] is not None else n.kwargs.get("dilation", 1)
    groups = args[6] if args[6] is not None else n.kwargs.get("groups", 1)
    return conv_op(e, n, x, w, bias, stride, padding, dilation, groups)


def pool_attrs(e, x, kernel, stride, padding, dilation, ceil_mode):
    """The window attributes of a pool over x's spatial dims (an empty
    stride is the kernel, as PyTorch's)."""
    spatial = len(e.shape(x)) - 2
    if spatial not in (1, 2, 3):
        raise RefusedError(f"a pooling over {spatial} spatial dims (cgc takes 1 to 3)")
    kernel = conv_list(kernel, spatial, "kernel_size")
    stride = kernel if stride is None or stride == [] else conv_list(stride, spatial, "stride")
    pads = conv_list(padding, spatial, "padding")
    dilations = [1] * spatial if dilation is None else conv_list(dilation, spatial, "dilation")
    if ceil_mode:
        kernel = ceil_mode_kernel(kernel, e.shape(x)[2:], pads * 2, dilations)
    attrs = {"kernel": kernel, "strides": stride, "pads": pads * 2, "ceil_mode": bool(ceil_mode)}
    if dilation is not None:
        attrs["dilations"] = dilations
    return attrs


@aten("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
      "max_pool2d_with_indices", "max_pool3d_with_indices")
def max_pool(e, n):
    args = list(n.args) + [None] * (6 - len(n.args))
    x = args[0]
    stride = args[2] if args[2] is not None else n.kwargs.get("stride")
    padding = args[3] if args[3] is not None else n.kwargs.get("padding", 0)
    dilation = args[4] if args[4] is not None else n.kwargs.get("dilation", 1)
    ceil_mode = args[5] if args[5] is not None else n.kwargs.get("ceil_mode", False)
    y = e.op("max_pool", [e.operand(x)],
             pool_attrs(e, x, args[1], stride, padding, dilation, ceil_mode), name=n.name)
    if "with_indices" in n.target:
        return [y, None]  # its indices: refused if read (getitem of None)
    return y


@aten("avg_pool1d", "avg_pool2d", "avg_pool3d")
def avg_pool(e, n):
    args = list(n.args) + [None] * (7 - len(n.args))
    x = args[0]
    stride = args[2] if args[2] is not None else n.kwargs.get("stride")
    padding = args[3] if args[3] is not None else n.kwargs.get("padding", 0)
    ceil_mode = args[4] if args[4] is not None else n.kwargs.get("ceil_mode", False)
    include = args[5] if args[5] is not None else n.kwargs.get("count_include_pad", True)
    override = args[6] if len(n.args) > 6 else n.kwargs.get("divisor_override")
    if override is not None:
        raise RefusedError("an avg_pool with divisor_override")
    attrs = pool_attrs(e, x, args[1], stride, padding, None, ceil_mode)
    attrs["count_include_pad"] = bool(include)
    return e.op("avg_pool", [e.operand(x)], attrs, name=n.name)


AVERAGING_LIMIT = 1 << 24  # an adaptive pool's constant [S, D] weights, per dim


@aten("adaptive_avg_pool1d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d",
      "adaptive_avg_pool3d", "_adaptive_avg_pool3d")
def adaptive_avg_pool(e, n):
    """Output i of a spatial dim of extent D averages inputs floor(i D / S)
    to ceil((i + 1) D / S) - 1 (PyTorch's windows). Sizes that divide the
    input's: one avg_pool (windows of one size); others: per spatial dim a
    product with the constant [S, D] matrix of each window's 1 / count
    (the average over a box is the product of the per-dim averages)."""
    x, size = n.args[0], n.args[1]
    dims = e.shape(x)[2:]
    size = conv_list(size, len(dims), "output_size")
    if not all(isinstance(d, int) for d in dims):
        raise RefusedError(f"an adaptive average pool of the dynamic dims {dims}")
    if any(s < 1 or s * d > AVERAGING_LIMIT for s, d in zip(size, dims)):
        raise RefusedError(f"an adaptive average pool of {dims} to {size} (sizes from 1, "
                           f"at most {AVERAGING_LIMIT} averaging weights per dim)")
    if not any(d % s for d, s in zip(dims, size)):
        kernel = [d // s for d, s in zip(dims, size)]
        return e.op("avg_pool", [e.operand(x)], {"kernel": kernel, "strides": kernel},
                    name=n.name)
    y, rank = e.operand(x), len(e.shape(x))
    for a, (d, s) in enumerate(zip(dims, size)):
        if d == s:
            continue
        weights = [[0.0] * d for _ in range(s)]
        for i in range(s):
            lo, hi = i * d // s, -(-(i + 1) * d // s)
            for j in range(lo, hi):
                weights[i][j] = 1.0 / (hi - lo)
        matrix = e.op("constant", [], {"dtype": e.dtype(x), "shape": [s, d],
                                       "value": [w for row in weights for w in row]})
        # Move dim a last, multiply by the matrix transposed, move it back.
        axis = 2 + a
        perm = [k for k in range(rank) if k != axis] + [axis]
        moved = e.op("transpose", [y], {"perm": perm}) if axis != rank - 1 else y
        moved = e.op("matmul", [moved, matrix], {"transpose_b": True})
        back = [perm.index(k) for k in range(rank)]
        y = e.op("transpose", [moved], {"perm": back}) if axis != rank - 1 else moved
    return y


def batch_norm_op(e, n, x, weight, bias, mean, var, training, eps):
    """One `batch_norm` node (expand-batch-norm writes it out as
    per-channel arithmetic that fuses); a missing weight or bias (affine
    False) is ones or zeros, missing running statistics (training without
    them) zeros and ones that training never reads."""
    channels = e.shape(x)[1]
    dt = e.dtype(x)

    def channel_operand(v, fill):
        if v is not None:
            return e.operand(v)
        return e.op("fill", [], {"dtype": dt, "shape": [channels], "value": fill})

    operands = [e.operand(x), channel_operand(weight, 1.0), channel_operand(bias, 0.0),
                channel_operand(mean, 0.0), channel_operand(var, 1.0)]
    return e.op("batch_norm", operands, {"eps": float(eps), "training": bool(training)},
                name=n.name)


@aten("_native_batch_norm_legit_no_training")
def batch_norm_inference(e, n):
    """Normalization by the running statistics (the module in eval mode)."""
    x, weight, bias, mean, var = n.args[:5]
    eps = n.args[6] if len(n.args) > 6 else n.kwargs.get("eps", 1e-5)
    return [batch_norm_op(e, n, x, weight, bias, mean, var, False, eps), None, None]


def batch_statistics(e, x, dt):
    """The per-channel batch mean and biased variance of x ([C] each, in
    `dt`), written as expand-batch-norm writes them (f32 sums, axes kept),
    so that cse shares them with the normalization."""
    rank = len(e.shape(x))
    reduce = {"axes": [0] + list(range(2, rank)), "keepdim": True}
    wide = e.as_dtype(x, "f32")
    mean = e.op("mean", [wide], reduce)
    centered = e.op("sub", [wide, mean])
    var = e.op("mean", [e.op("mul", [centered, centered])], reduce)

    def as_channels(v):
        v = v if dt == "f32" else e.op("cast", [v], {"dtype": dt})
        return e.op("reshape", [v], {"shape": [e.shape(x)[1]]})
    return as_channels(mean), as_channels(var)


@aten("_native_batch_norm_legit_functional", "_native_batch_norm_legit.no_stats")
def batch_norm_training(e, n):
    """Training mode: normalization by the batch statistics, and with
    running statistics their update, (1 - momentum) * running + momentum *
    batch (the variance unbiased), as the functional op returns it and the
    export writes back as buffer mutations (lower_record's outputs)."""
    args = list(n.args)
    x, weight, bias = args[:3]
    mean, var = (None, None) if "no_stats" in n.target else args[3:5]
    training, momentum, eps = args[-3:]
    y = batch_norm_op(e, n, x, weight, bias, mean, var, training, eps)
    updates = mean is not None  # the functional op returns the new statistics
    if not training:  # the running statistics pass through unchanged
        return [y, None, None] + ([e.operand(mean), e.operand(var)] if updates else [])
    # The saved statistics in the record's dtype: f32 for a 16-bit x on
    # CUDA (cuDNN's), x's own on the CPU; the update in the running
    # statistics' own.
    vals = n.val if isinstance(n.val, list) else []
    saved = (e.dtype_of_val(vals[1]) if len(vals) > 1 else None) or e.dtype(x)
    batch_mean, batch_var = batch_statistics(e, x, saved)
    save_invstd = e.op("rsqrt", [e.op("add", [batch_var, e.scalar(float(eps), saved)])])
    if not updates:
        return [y, batch_mean, save_invstd]
    dt = e.dtype(mean)
    if dt != saved:
        batch_mean, batch_var = (e.op("cast", [v], {"dtype": dt}) for v in (batch_mean, batch_var))
    shape = e.shape(x)
    count = element_count([shape[0]] + list(shape[2:]))
    if count is None:
        raise RefusedError(f"a batch norm in training mode over the dynamic shape {shape} "
                           "(its running variance is unbiased by the static count)")
    unbiased = e.op("mul", [batch_var, e.scalar(count / max(count - 1, 1), dt)])

    def update(running, batch):
        kept = e.op("mul", [e.operand(running), e.scalar(1.0 - momentum, dt)])
        return e.op("add", [kept, e.op("mul", [batch, e.scalar(float(momentum), dt)])])
    return [y, batch_mean, save_invstd, update(mean, batch_mean), update(var, unbiased)]


UPSAMPLE_MODES = {  # ATen name: its mode
    "upsample_nearest1d": "nearest", "upsample_nearest2d": "nearest",
    "upsample_nearest3d": "nearest", "_upsample_nearest_exact1d": "nearest_exact",
    "_upsample_nearest_exact2d": "nearest_exact", "_upsample_nearest_exact3d": "nearest_exact",
    "upsample_linear1d": "linear", "upsample_bilinear2d": "linear",
    "upsample_trilinear3d": "linear",
}


@aten(*[f"{name}{overload}" for name in UPSAMPLE_MODES for overload in ("", ".vec")])
def upsample(e, n):
    """F.interpolate's nearest, nearest-exact and (bi/tri)linear modes as
    one `interpolate`: nearest maps output index o to floor(o * in / out),
    nearest-exact to floor((o + 0.5) * in / out), linear by the half-pixel
    rule (align_corners: the corners). A scale_factor whose inverse is not
    the sizes' ratio (PyTorch then maps by the factor) is refused."""
    base = n.target.split(".")[1]
    mode = UPSAMPLE_MODES[base]
    linear = mode == "linear"
    x = n.args[0]
    dims = e.shape(x)[2:]
    sizes = list(n.val.shape[2:])
    if not all(isinstance(v, int) for v in dims + sizes):
        raise RefusedError(f"an interpolation of dynamic spatial dims {dims} to {sizes}")
    args = list(n.args) + [None] * 5
    if n.target.endswith(".vec"):
        factors = args[3] if linear else args[2]
        align = bool(args[2]) if linear else False
    else:
        align = bool(args[2]) if linear else False
        factors = args[3:3 + len(dims)] if linear else args[2:2 + len(dims)]
    factors = [f for f in (factors or []) if f is not None]
    if factors and any(abs(1.0 / f - d / s) > 1e-9 * (d / s) for f, d, s in zip(factors, dims, sizes)):
        raise RefusedError(f"an interpolation of {dims} by scale factors {factors} whose "
                           f"sizes {sizes} are not exact multiples (cgc maps coordinates by "
                           "the sizes: give size= instead)")
    attrs = {"sizes": sizes, "mode": "linear" if linear else "nearest"}
    if linear:
        attrs["coordinate"] = "align_corners" if align else "half_pixel"
    elif mode == "nearest":
        attrs.update({"coordinate": "asymmetric", "nearest": "floor"})
    else:
        attrs.update({"coordinate": "half_pixel", "nearest": "round_prefer_ceil"})
    return e.op("interpolate", [e.operand(x)], attrs, name=n.name)


@aten("native_group_norm")
def group_norm(e, n):
    """GroupNorm: x [N, C, ...] as [N, G, C / G * HxW] normalized over its
    last axis by cgc's layernorm (the mean and biased variance of each
    group), then scaled and shifted per channel."""
    x, weight, bias = n.args[:3]
    groups, eps = n.args[6], n.args[7]
    shape = e.shape(x)
    if not all(isinstance(d, int) for d in shape[1:]):
        raise RefusedError(f"a group_norm of {shape} (cgc needs static channels and spatial dims)")
    channels = shape[1]
    if channels % groups:
        raise RefusedError(f"a group_norm of {channels} channels in {groups} groups")
    rows = e.op("reshape", [e.operand(x)],
                {"shape": [shape[0], groups, channels // groups * element_count(shape[2:])]})
    y = e.op("reshape", [e.op("layernorm", [rows], {"axis": -1, "eps": float(eps)})],
             {"shape": list(shape)})
    column = [channels] + [1] * (len(shape) - 2)
    if weight is not None:
        y = e.op("mul", [y, e.op("reshape", [e.operand(weight)], {"shape": column})])
    if bias is not None:
        y = e.op("add", [y, e.op("reshape", [e.operand(bias)], {"shape": column})])
    return [y, None, None]
