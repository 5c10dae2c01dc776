"""The golden cases of `attention` (gen_golden.py runs them after the
others, on its random stream `g`): NumPy's softmax(q k^T * scale + mask) v
with each key and value head repeated for its group of query heads,
soft-capping, causal and window limits (top-left aligned), bool and
additive masks broadcast to the scores, a row with every key dropped
(0, as torch's scaled_dot_product_attention), one query row, and f32, f16 and bf16."""
import numpy as np


def attention(q, k, v, mask=None, scale=None, causal=False, window=0, softcap=0.0):
    groups = q.shape[-3] // k.shape[-3]
    keys, values = np.repeat(k, groups, axis=-3), np.repeat(v, groups, axis=-3)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    with np.errstate(invalid="ignore"):
        s = q @ np.swapaxes(keys, -1, -2) * scale
        if softcap:
            s = softcap * np.tanh(s / softcap)
        if mask is not None:
            s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
        rows, cols = np.arange(s.shape[-2])[:, None], np.arange(s.shape[-1])[None, :]
        dropped = (causal & (cols > rows)) | ((window > 0) & (cols <= rows - window))
        s = np.where(dropped, -np.inf, s)
        top = s.max(axis=-1, keepdims=True)
        empty = top == -np.inf
        e = np.exp(s - np.where(empty, 0.0, top))
        return np.where(empty, 0.0, e / np.where(empty, 1.0, e.sum(axis=-1, keepdims=True))) @ values


def gen_attention(g):
    cases = [  # name, q, k, v shapes, dtype, attrs, mask (shape, dtype) or None
        ("plain_f32", (1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 6), "f32", {}, None),
        ("causal_f16", (2, 2, 6, 8), (2, 2, 6, 8), (2, 2, 6, 8), "f16", {"causal": True}, None),
        ("causal_bf16", (1, 3, 4, 16), (1, 3, 4, 16), (1, 3, 4, 16), "bf16", {"causal": True}, None),
        ("gqa_scale", (2, 4, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4), "f32",
         {"causal": True, "scale": 0.3}, None),
        ("bool_mask", (2, 2, 4, 8), (2, 2, 7, 8), (2, 2, 7, 8), "f32", {}, ((2, 1, 1, 7), "bool")),
        ("additive_mask", (1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 8), "f32", {}, ((5, 7), "f32")),
        ("window_causal", (1, 1, 6, 4), (1, 1, 6, 4), (1, 1, 6, 4), "f32",
         {"causal": True, "window": 2}, None),
        ("window_only", (1, 1, 6, 4), (1, 1, 6, 4), (1, 1, 6, 4), "f32", {"window": 3}, None),
        ("softcap", (1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), "f32", {"softcap": 2.0}, None),
        ("rank3", (3, 4, 8), (3, 4, 8), (3, 4, 8), "f32", {}, None),
        ("one_row", (2, 4, 1, 8), (2, 2, 9, 8), (2, 2, 9, 8), "bf16", {}, ((2, 1, 1, 9), "bool")),
    ]
    for name, qs, ks, vs, dt, attrs, mask in cases:
        q, k, v = g.rand(qs, dt, -2, 2), g.rand(ks, dt, -2, 2), g.rand(vs, dt, -2, 2)
        ins = [("q", dt, q), ("k", dt, k), ("v", dt, v)]
        m = None
        if mask:
            m = g.rand(mask[0], mask[1], -3, 3)
            if mask[1] == "bool":
                m[..., 0] = 1  # no row with every key dropped
            ins.append(("mask", mask[1], m))
            m = m.astype(bool) if mask[1] == "bool" else m
        want = attention(q, k, v, m, attrs.get("scale"), attrs.get("causal", False),
                         attrs.get("window", 0), attrs.get("softcap", 0.0))
        g.one_op(f"attention_{name}", "attention", ins, attrs or None, want, dt)
    q = g.rand((1, 1, 2, 4), "f32")
    keep = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])  # row 1 keeps no key: 0
    k, v = g.rand((1, 1, 3, 4), "f32"), g.rand((1, 1, 3, 4), "f32")
    g.one_op("attention_row_all_dropped", "attention",
             [("q", "f32", q), ("k", "f32", k), ("v", "f32", v), ("mask", "bool", keep)], None,
             attention(q, k, v, keep.astype(bool)), "f32")
