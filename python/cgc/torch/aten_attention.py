"""scaled_dot_product_attention, kept whole through the export's
decomposition (capture.py KEPT) and lowered here to cgc's `attention` op
(docs/ir.md) with every argument of PyTorch's: a bool mask (False: masked
out) or an additive float mask, is_causal (the top-left aligned lower
triangle, as PyTorch's), scale (default 1/sqrt(E)) and grouped-query
attention (enable_gqa: each key and value head serves query heads /
key heads consecutive query heads). A query of rank 2 ([L, E]) is
attention over one head."""
from .aten_rules import ATEN
from ..errors import RefusedError
from .record import RecordNode


def argument(n, index, name, default):
    return n.args[index] if len(n.args) > index else n.kwargs.get(name, default)


def sdpa(e, n):
    q, k, v = n.args[:3]
    mask = argument(n, 3, "attn_mask", None)
    dropout = argument(n, 4, "dropout_p", 0.0)
    causal = argument(n, 5, "is_causal", False)
    scale = argument(n, 6, "scale", None)
    gqa = n.kwargs.get("enable_gqa", False)
    if dropout:
        raise RefusedError("attention dropout (dropout_p > 0); export the module in eval mode")
    dtype = e.dtype(q)
    qshape, kshape = e.shape(q), e.shape(k)
    if scale is None and not isinstance(qshape[-1], int):
        raise RefusedError(f"attention over a dynamic head width {qshape[-1]} with no scale")
    if len(qshape) >= 3 and qshape[-3] != kshape[-3]:
        if not gqa or not all(isinstance(h, int) for h in (qshape[-3], kshape[-3])) or \
                qshape[-3] % kshape[-3]:
            raise RefusedError(f"grouped-query attention of {qshape[-3]} query heads over "
                               f"{kshape[-3]} key heads")
    operands = [e.operand(a) for a in (q, k, v)]
    if isinstance(mask, RecordNode):
        operands.append(e.operand(mask) if e.dtype(mask) == "bool" else e.as_dtype(mask, dtype))
    elif mask is not None:
        raise RefusedError(f"an attention mask {mask!r} that is not a tensor")
    attrs = {"causal": bool(causal)} if causal else {}
    if scale is not None:
        attrs["scale"] = float(scale)
    if len(qshape) >= 3:
        return e.op("attention", operands, attrs, name=n.name)
    one_head = [[1] + e.shape(a) for a in (q, k, v)]  # [L, E]: one head of rank 3
    operands[:3] = [e.op("reshape", [x], {"shape": shape})
                    for x, shape in zip(operands[:3], one_head)]
    out = e.op("attention", operands, attrs)
    return e.op("reshape", [out], {"shape": e.shape(n)}, name=n.name)


ATEN["scaled_dot_product_attention"] = sdpa
