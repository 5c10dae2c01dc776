"""The golden cases of `conv` (gen_golden.py runs them after the others,
on its random stream `g`): NumPy's sum over each output position's
window of the zero-padded input, per group, for 1-D, 2-D and 3-D inputs
with strides, asymmetric padding, dilation, groups (depthwise too), a
bias, 1x1 kernels and non-overlapping patches (a ViT's), in f32, f16 and
bf16."""
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
        g.one_op(f"conv_{name}", "conv", ins, attrs or None, want, dt)
