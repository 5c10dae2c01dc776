"""The golden cases of `conv` (gen_golden.py runs them after the others,
on its random stream `g`): NumPy's sum over each output position's
window of the zero-padded input, per group, for 1-D, 2-D and 3-D inputs
with strides, asymmetric padding, dilation, groups (depthwise too), a
bias, 1x1 kernels and non-overlapping patches (a ViT's), in f32, f16 and
bf16; and `max_pool` and `avg_pool` over the same windows: padding,
dilation, ceil_mode's last partial window, count_include_pad both ways, a
global average; `conv_transpose` as each input element's products
scattered into the output; `conv_weight_grad` as each weight's sum of the
inputs it met times the result's gradient there; `batch_norm` by running or batch statistics;
and `interpolate` (nearest and linear, each coordinate
rule, explicit scales) as the weighted sum over each output position's
2^d corner inputs."""
import itertools

import numpy as np


def conv(x, w, b=None, strides=None, pads=None, dilations=None, groups=1):
    d = x.ndim - 2
    strides = strides or [1] * d
    dilations = dilations or [1] * d
    pads = pads or [0] * 2 * d
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[d + i]) for i in range(d)])
    kernel = w.shape[2:]
    out = [(xp.shape[2 + i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1
           for i in range(d)]
    n, o, cg = x.shape[0], w.shape[0], w.shape[1]
    og = o // groups
    y = np.zeros([n, o] + out)
    for e in itertools.product(*[range(v) for v in out]):
        index = tuple(slice(e[i] * strides[i],
                            e[i] * strides[i] + dilations[i] * (kernel[i] - 1) + 1,
                            dilations[i]) for i in range(d))
        window = xp[(slice(None), slice(None)) + index]  # [N, C, K...]
        for g in range(groups):
            part = window[:, g * cg:(g + 1) * cg].reshape(n, -1)
            weights = w[g * og:(g + 1) * og].reshape(og, -1)
            y[(slice(None), slice(g * og, (g + 1) * og)) + e] = part @ weights.T
    if b is not None:
        y += b.reshape([o] + [1] * d)
    return y


def pool(x, kernel, strides=None, pads=None, dilations=None, ceil_mode=False, include=False,
         mode="max"):
    """Max or mean over the positions of each window inside x (include:
    inside the padded input, for the divisor)."""
    d = x.ndim - 2
    strides = strides or [1] * d
    dilations = dilations or [1] * d
    pads = pads or [0] * 2 * d
    out = []
    for i in range(d):
        span = dilations[i] * (kernel[i] - 1) + 1
        steps = x.shape[2 + i] + pads[i] + pads[d + i] - span
        e = steps // strides[i] + 1
        if ceil_mode and steps % strides[i] and e * strides[i] < x.shape[2 + i] + pads[i]:
            e += 1
        out.append(e)
    y = np.zeros(list(x.shape[:2]) + out)
    for e in itertools.product(*[range(v) for v in out]):
        vals, count = [], 0
        for k in itertools.product(*[range(v) for v in kernel]):
            pos = [e[i] * strides[i] - pads[i] + k[i] * dilations[i] for i in range(d)]
            inside = all(0 <= p < x.shape[2 + i] for i, p in enumerate(pos))
            count += (all(p < x.shape[2 + i] + pads[d + i] for i, p in enumerate(pos))
                      if include else inside)
            if inside:
                vals.append(x[(slice(None), slice(None)) + tuple(pos)])
        stacked = np.stack(vals)
        y[(slice(None), slice(None)) + e] = (stacked.max(axis=0) if mode == "max"
                                             else stacked.sum(axis=0) / count)
    return y


def last(a):
    """Channels first to channels last: [N, C, D...] to [N, D..., C]."""
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def gen_convolution(g):
    cases = [  # name, x, w, bias, dtype, attrs
        ("basic_f32", (2, 3, 5, 6), (4, 3, 3, 3), True, "f32", {"pads": [1, 1, 1, 1]}),
        ("strided_asymmetric", (1, 2, 9, 8), (3, 2, 3, 2), False, "f32",
         {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2]}),
        ("grouped", (2, 4, 5, 5), (6, 2, 2, 3), True, "f32", {"groups": 2, "strides": [1, 2]}),
        ("depthwise", (1, 4, 6, 6), (4, 1, 3, 3), True, "f32", {"groups": 4, "pads": [1, 1, 1, 1]}),
        ("pointwise", (2, 5, 3, 4), (7, 5, 1, 1), True, "f32", {}),
        ("patches", (1, 3, 8, 8), (5, 3, 4, 4), True, "f32", {"strides": [4, 4]}),
        ("conv1d_f16", (2, 3, 10), (4, 3, 3), True, "f16", {"pads": [2, 0], "dilations": [2]}),
        ("conv3d_bf16", (1, 2, 4, 5, 3), (2, 1, 2, 3, 1), False, "bf16",
         {"groups": 2, "pads": [1, 1, 0, 0, 1, 0], "strides": [1, 2, 1]}),
        # Channels last (NHWC): the shapes below are channels first; the
        # case's operands and result are those transposed.
        ("nhwc_bf16", (1, 16, 7, 7), (32, 16, 3, 3), True, "bf16",
         {"pads": [1, 1, 1, 1], "channels_last": True}),
        ("nhwc_strided_f32", (2, 8, 9, 8), (8, 8, 5, 3), False, "f32",
         {"strides": [2, 1], "pads": [2, 1, 1, 1], "channels_last": True}),
        ("nhwc_depthwise_f16", (1, 16, 6, 6), (16, 1, 3, 3), True, "f16",
         {"groups": 16, "pads": [1, 1, 1, 1], "channels_last": True}),
        ("nhwc_grouped_bf16", (2, 16, 5, 5), (32, 8, 1, 1), True, "bf16",
         {"groups": 2, "channels_last": True}),
        ("nhwc_conv1d_f16", (2, 8, 10), (16, 8, 3), True, "f16",
         {"pads": [1, 1], "strides": [2], "channels_last": True}),
        ("nhwc_conv3d_f32", (1, 4, 3, 4, 5), (8, 4, 2, 2, 3), True, "f32",
         {"pads": [0, 1, 1, 1, 0, 1], "channels_last": True}),
    ]
    for name, xs, ws, bias, dt, attrs in cases:
        x, w = g.rand(xs, dt), g.rand(ws, dt)
        ins = [("x", dt, x), ("w", dt, w)]
        b = None
        if bias:
            b = g.rand((ws[0],), dt)
            ins.append(("b", dt, b))
        want = conv(x, w, b, attrs.get("strides"), attrs.get("pads"), attrs.get("dilations"),
                    attrs.get("groups", 1))
        if attrs.get("channels_last"):
            ins = [(n, t, last(v) if n != "b" else v) for n, t, v in ins]
            want = last(want)
        g.one_op(f"conv_{name}", "conv", ins, attrs or None, want, dt)
    pools = [  # name, x, op, dtype, attrs
        ("max_padded", (2, 3, 7, 8), "max_pool", "f32",
         {"kernel": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ("max_ceil_dilated", (1, 2, 7, 8), "max_pool", "f32",
         {"kernel": [2, 3], "strides": [2, 2], "ceil_mode": True, "dilations": [1, 2]}),
        ("max_1d_bf16", (2, 3, 9), "max_pool", "bf16", {"kernel": [3], "strides": [2]}),
        ("avg_ceil", (2, 3, 7, 8), "avg_pool", "f32",
         {"kernel": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1], "ceil_mode": True}),
        ("avg_include_pad", (1, 2, 7, 8), "avg_pool", "f32",
         {"kernel": [3, 3], "strides": [2, 3], "pads": [1, 1, 1, 1],
          "count_include_pad": True, "ceil_mode": True}),
        ("avg_global_f16", (2, 4, 5, 6), "avg_pool", "f16", {"kernel": [5, 6]}),
        ("avg_3d", (1, 2, 4, 5, 6), "avg_pool", "f32",
         {"kernel": [2, 2, 3], "strides": [2, 2, 3], "pads": [0, 1, 0, 0, 0, 1]}),
        ("max_nhwc_f16", (1, 8, 9, 9), "max_pool", "f16",
         {"kernel": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "channels_last": True}),
        ("avg_nhwc_f32", (2, 4, 6, 7), "avg_pool", "f32",
         {"kernel": [2, 3], "strides": [2, 2], "ceil_mode": True, "channels_last": True}),
    ]
    for name, xs, op, dt, attrs in pools:
        x = g.rand(xs, dt)
        want = pool(x, attrs["kernel"], attrs.get("strides"), attrs.get("pads"),
                    attrs.get("dilations"), attrs.get("ceil_mode", False),
                    attrs.get("count_include_pad", False), "max" if op == "max_pool" else "avg")
        if attrs.get("channels_last"):
            x, want = last(x), last(want)
        g.one_op(f"{op}_{name}", op, [("x", dt, x)], attrs, want, dt)


def source(o, n_in, rule, scale):
    """ONNX Resize's source coordinate of output index o (its length_resized
    is n_in * scale)."""
    resized = n_in * scale
    if rule == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if rule == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if resized > 1 else 0.0
    if rule == "align_corners":
        return o * (n_in - 1) / (resized - 1) if resized > 1 else 0.0
    if rule == "asymmetric":
        return o / scale
    return (o + 0.5) / scale  # tf_half_pixel_for_nearest


def interpolate(x, sizes, mode="nearest", coordinate="half_pixel", nearest="round_prefer_floor",
                scales=None):
    """Each output element as the sum over its 2^d corners (linear) or its
    one nearest input, in double."""
    d = x.ndim - 2
    rounding = {"floor": np.floor, "ceil": np.ceil,
                "round_prefer_ceil": lambda v: np.floor(v + 0.5),
                "round_prefer_floor": lambda v: np.ceil(v - 0.5)}[nearest]
    out = np.zeros(list(x.shape[:2]) + list(sizes))
    for e in itertools.product(*[range(s) for s in sizes]):
        corners = [[]]
        for a in range(d):
            n_in = x.shape[2 + a]
            scale = scales[a] if scales else sizes[a] / n_in
            c = source(e[a], n_in, coordinate, scale)
            if mode == "nearest":
                taps = [(int(min(max(rounding(c), 0), n_in - 1)), 1.0)]
            else:
                c = min(max(c, 0.0), n_in - 1)
                lo = int(np.floor(c))
                taps = [(lo, 1 - (c - lo)), (min(lo + 1, n_in - 1), c - lo)]
            corners = [p + [t] for p in corners for t in taps]
        for corner in corners:
            weight = np.prod([w for _, w in corner])
            out[(slice(None), slice(None)) + tuple(e)] += \
                weight * x[(slice(None), slice(None)) + tuple(i for i, _ in corner)]
    return out


def interpolate_cases(g):
    cases = [  # name, x, dtype, attrs
        ("nearest_up_f32", (1, 2, 3, 4), "f32",
         {"sizes": [6, 8], "coordinate": "asymmetric", "nearest": "floor"}),
        ("nearest_exact_f16", (2, 2, 5, 3), "f16",
         {"sizes": [3, 7], "coordinate": "half_pixel", "nearest": "round_prefer_ceil"}),
        ("nearest_round_1d", (1, 3, 7), "f32", {"sizes": [4]}),
        ("bilinear_f32", (2, 3, 5, 6), "f32", {"sizes": [9, 4], "mode": "linear"}),
        ("bilinear_corners_bf16", (1, 2, 4, 4), "bf16",
         {"sizes": [7, 1], "mode": "linear", "coordinate": "align_corners"}),
        ("linear_scaled_1d", (1, 2, 6), "f32",
         {"sizes": [3], "mode": "linear", "scales": [0.6]}),
        ("trilinear_pytorch_half", (1, 1, 2, 3, 4), "f32",
         {"sizes": [4, 1, 6], "mode": "linear", "coordinate": "pytorch_half_pixel"}),
    ]
    for name, xs, dt, attrs in cases:
        x = g.rand(xs, dt)
        want = interpolate(x, attrs["sizes"], attrs.get("mode", "nearest"),
                           attrs.get("coordinate", "half_pixel"),
                           attrs.get("nearest", "round_prefer_floor"), attrs.get("scales"))
        g.one_op(f"interpolate_{name}", "interpolate", [("x", dt, x)], attrs, want, dt)


def conv_transpose(x, w, b=None, strides=None, pads=None, dilations=None, groups=1,
                   output_padding=None):
    """Each input element scatters x * w[c, o'] into the output at i * s -
    before + k * d (one output per group's channels), in double."""
    d = x.ndim - 2
    strides, dilations = strides or [1] * d, dilations or [1] * d
    pads, output_padding = pads or [0] * 2 * d, output_padding or [0] * d
    kernel = w.shape[2:]
    out = [(x.shape[2 + i] - 1) * strides[i] - pads[i] - pads[d + i] +
           dilations[i] * (kernel[i] - 1) + output_padding[i] + 1 for i in range(d)]
    n, c = x.shape[:2]
    og = w.shape[1]
    y = np.zeros([n, og * groups] + out)
    for ci in range(c):
        g = ci // (c // groups)
        for i in itertools.product(*[range(v) for v in x.shape[2:]]):
            for k in itertools.product(*[range(v) for v in kernel]):
                pos = [i[a] * strides[a] - pads[a] + k[a] * dilations[a] for a in range(d)]
                if all(0 <= p < out[a] for a, p in enumerate(pos)):
                    at = (slice(None), slice(g * og, (g + 1) * og)) + tuple(pos)
                    y[at] += x[(slice(None), ci) + tuple(i)][:, None] * \
                        w[(ci, slice(None)) + tuple(k)][None, :]
    if b is not None:
        y += b.reshape([1, -1] + [1] * d)
    return y


def conv_transpose_cases(g):
    cases = [  # name, x, w, bias, dtype, attrs
        ("stride2_f32", (2, 3, 4, 5), (3, 2, 3, 3), True, "f32",
         {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
        ("groups_dilated_f32", (1, 4, 3, 3), (4, 3, 2, 3), False, "f32",
         {"groups": 2, "dilations": [2, 1], "pads": [0, 1, 2, 0]}),
        ("1d_f16", (2, 2, 6), (2, 4, 4), True, "f16", {"strides": [3], "pads": [1, 2]}),
        ("3d_bf16", (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), False, "bf16", {"strides": [2, 1, 2]}),
    ]
    for name, xs, ws, bias, dt, attrs in cases:
        x, w = g.rand(xs, dt), g.rand(ws, dt)
        ins = [("x", dt, x), ("w", dt, w)]
        b = None
        if bias:
            b = g.rand((ws[1] * attrs.get("groups", 1),), dt)
            ins.append(("b", dt, b))
        want = conv_transpose(x, w, b, attrs.get("strides"), attrs.get("pads"),
                              attrs.get("dilations"), attrs.get("groups", 1),
                              attrs.get("output_padding"))
        g.one_op(f"conv_transpose_{name}", "conv_transpose", ins, attrs, want, dt)


def conv_weight_grad(x, gy, kernel, strides=None, pads=None, dilations=None, groups=1):
    """dw[o, c', k] = sum over n and the output positions e of the padded
    x at e * s + k * d times gy[n, o, e], per group, in double."""
    d = x.ndim - 2
    strides, dilations = strides or [1] * d, dilations or [1] * d
    pads = pads or [0] * 2 * d
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[d + i]) for i in range(d)])
    o, cg = gy.shape[1], x.shape[1] // groups
    og = o // groups
    dw = np.zeros([o, cg] + list(kernel))
    for k in itertools.product(*[range(v) for v in kernel]):
        index = tuple(slice(k[i] * dilations[i],
                            k[i] * dilations[i] + strides[i] * (gy.shape[2 + i] - 1) + 1,
                            strides[i]) for i in range(d))
        seen = xp[(slice(None), slice(None)) + index]  # [N, C, E...]
        for grp in range(groups):
            part = seen[:, grp * cg:(grp + 1) * cg].reshape(x.shape[0], cg, -1)
            grads = gy[:, grp * og:(grp + 1) * og].reshape(x.shape[0], og, -1)
            dw[(slice(grp * og, (grp + 1) * og), slice(None)) + k] = \
                np.einsum("noe,nce->oc", grads, part)
    return dw


def conv_weight_grad_cases(g):
    cases = [  # name, x, gy, dtype, attrs (kernel among them)
        ("strided_f32", (2, 4, 9, 8), (2, 6, 5, 7), "f32",
         {"kernel": [3, 2], "strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2],
          "groups": 2}),
        ("depthwise_f32", (2, 4, 6, 6), (2, 4, 6, 6), "f32",
         {"kernel": [3, 3], "pads": [1, 1, 1, 1], "groups": 4}),
        ("pointwise_bf16", (2, 8, 4, 5), (2, 16, 4, 5), "bf16", {"kernel": [1, 1]}),
        ("1d_f16", (3, 2, 10), (3, 4, 5), "f16",
         {"kernel": [3], "strides": [2], "pads": [1, 0]}),
        ("3d_f32", (1, 2, 4, 5, 3), (1, 2, 3, 3, 3), "f32",
         {"kernel": [2, 3, 1], "strides": [1, 2, 1], "pads": [0, 1, 0, 0, 1, 0]}),
    ]
    for name, xs, gs, dt, attrs in cases:
        x, gy = g.rand(xs, dt), g.rand(gs, dt)
        want = conv_weight_grad(x, gy, attrs["kernel"], attrs.get("strides"), attrs.get("pads"),
                                attrs.get("dilations"), attrs.get("groups", 1))
        g.one_op(f"conv_weight_grad_{name}", "conv_weight_grad", [("x", dt, x), ("g", dt, gy)],
                 attrs, want, dt)


def batch_norm_cases(g):
    """batch_norm by the running statistics, and (training) by the batch's
    mean and biased variance over every axis but 1, in double."""
    cases = [("running_f32", (2, 3, 4, 5), "f32", {}),
             ("running_bf16", (2, 4, 3), "bf16", {"eps": 0.01}),
             ("batch_f32", (4, 3, 2, 2), "f32", {"training": True}),
             ("batch_f16_1d", (3, 2, 5), "f16", {"training": True, "eps": 0.001}),
             ("batch_3d_f32", (2, 2, 2, 3, 2), "f32", {"training": True})]
    for name, xs, dt, attrs in cases:
        x = g.rand(xs, dt)
        c = xs[1]
        weight, bias, mean = g.rand((c,), dt), g.rand((c,), dt), g.rand((c,), dt)
        var = np.abs(g.rand((c,), dt)) + np.asarray(0.5, dtype=x.dtype)
        axes = tuple(a for a in range(len(xs)) if a != 1)
        column = [1, c] + [1] * (len(xs) - 2)
        xd = x.astype(np.float64)
        if attrs.get("training"):
            m = xd.mean(axis=axes, keepdims=True)
            v = ((xd - m) ** 2).mean(axis=axes, keepdims=True)
        else:
            m, v = mean.astype(np.float64).reshape(column), var.astype(np.float64).reshape(column)
        want = (xd - m) / np.sqrt(v + attrs.get("eps", 1e-5)) * \
            weight.astype(np.float64).reshape(column) + bias.astype(np.float64).reshape(column)
        ins = [("x", dt, x), ("w", dt, weight), ("b", dt, bias), ("m", dt, mean), ("v", dt, var)]
        g.one_op(f"batch_norm_{name}", "batch_norm", ins, attrs or None, want, dt)
