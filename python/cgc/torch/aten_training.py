"""The ATen ops that a module in training mode and its loss bring:
dropout and bernoulli draws (cgc's own Philox masks when the program is
lowered for training, docs/training.md; refused otherwise), nll_loss (kept whole through the
decomposition, capture.py KEPT: over a log_softmax of [N, C] logits it is
cgc's `cross_entropy`, a row kernel with its own derivative rule; over
other log-probabilities a one_hot product) and pow by 2 (the square of
mse_loss's decomposition: a product, exact, with a derivative rule)."""
from .aten_rules import ATEN, binary
from ..errors import RefusedError
from .record import RecordNode

NLL_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}  # at::Reduction


def native_dropout(e, n):
    """native_dropout(x, p, train): [result, mask]; the mask (backward's
    in PyTorch) has no value here."""
    x, p = n.args[0], n.args[1]
    train = n.args[2] if len(n.args) > 2 else n.kwargs.get("train", True)
    if not train or p == 0:
        return [e.operand(x)]
    if not e.training:
        raise RefusedError("dropout in training mode; export the module in eval mode "
                           "(or train it with cgc.compile_train)")
    return [e.dropout(e.operand(x), float(p), e.shape(x))]


def dropout(e, n):
    """dropout(x, p, train)."""
    return native_dropout(e, n)[0]


def bernoulli(e, n):
    """bernoulli.p(x, p): 1 with probability p, else 0, in x's shape and
    dtype (how torchvision's stochastic depth and an in-place dropout draw
    their masks): a dropout of p's that drops with probability 1 - p, so
    that a kept element is p / p = 1, drawn from the program's Philox
    stream as dropout's masks are (not from torch's generator), with its
    24 bits of resolution. The eval graph, where a dropout is its input
    (eval-mode), takes the draw's expectation p, as it takes dropout's:
    stochastic depth's mask / p is then 1 there, as PyTorch's eval skips
    the draw."""
    p = n.args[1] if len(n.args) > 1 else n.kwargs.get("p", 0.5)
    if isinstance(p, RecordNode):
        raise RefusedError("bernoulli with a tensor of probabilities (cgc draws with one p)")
    if n.kwargs.get("generator") is not None:
        raise RefusedError("bernoulli with a torch.Generator (cgc draws from its own stream)")
    if not e.training:
        raise RefusedError("bernoulli (a random draw) outside training: cgc.compile_train "
                           "draws it from cgc's own stream")
    dtype, shape, p = e.dtype(n), e.shape(n), float(p)
    dropped = 1.0 - p
    if dropped <= 0 or dropped >= 1:  # p 1 (or rounding to it), or p 0 and below
        return e.op("fill", [], {"dtype": dtype, "shape": shape, "value": float(dropped <= 0)},
                    name=n.name)
    probability = e.op("fill", [], {"dtype": "f32", "shape": shape, "value": p})
    return e.op("cast", [e.dropout(probability, dropped, shape)], {"dtype": dtype}, name=n.name)


def nll_loss(e, n):
    """nll_loss_forward(logp, target, weight, reduction, ignore_index):
    [loss, total_weight]."""
    logp, target, weight, reduction, ignore = (list(n.args) + [None] * 5)[:5]
    if weight is not None:
        raise RefusedError("nll_loss with class weights")
    reduction = NLL_REDUCTIONS.get(reduction, reduction)
    ignore = -100 if ignore is None else int(ignore)
    rank = len(e.shape(logp))
    if rank == 2 and isinstance(logp, RecordNode) and is_log_softmax_rows(logp):
        logits = e.operand(logp.args[0])
        loss = e.op("cross_entropy", [logits, e.operand(target)],
                    {"ignore_index": ignore, "reduction": reduction}, name=n.name)
        return [loss]
    if rank != 2:
        raise RefusedError(f"nll_loss over rank-{rank} log-probabilities (cgc takes [N, C])")
    return [nll_by_one_hot(e, n, logp, target, reduction, ignore)]


def is_log_softmax_rows(node):
    return node.target in ("aten._log_softmax.default", "aten.log_softmax.int") and \
        node.args[1] in (1, -1)


def nll_by_one_hot(e, n, logp, target, reduction, ignore):
    """-sum(one_hot(target) * logp) per row, rows of ignore_index left out;
    the mean over the rows kept."""
    classes = e.shape(logp)[1]
    t = e.operand(target)
    dtype = e.dtype(logp)
    picked = e.op("mul", [e.op("one_hot", [t], {"num_classes": classes, "dtype": dtype}),
                          e.operand(logp)])
    row = e.op("neg", [e.op("sum", [picked], {"axes": [1]})])
    keep = e.op("ne", [t, e.scalar(ignore, e.dtype(target))])
    row = e.op("where", [keep, row, e.scalar(0.0, dtype)])
    if reduction == "none":
        return row
    total = e.op("sum", [row], name=n.name if reduction == "sum" else None)
    if reduction == "sum":
        return total
    count = e.op("sum", [e.op("cast", [keep], {"dtype": dtype})])
    return e.op("div", [total, count], name=n.name)


_pow = binary("pow")


def pow_(e, n):
    """x ** 2 as x * x (exactly rounded either way); other exponents pow."""
    base, exponent = n.args[:2]
    if isinstance(base, RecordNode) and not isinstance(exponent, RecordNode) and exponent == 2:
        x = e.operand(base)
        return e.op("mul", [x, x], name=n.name)
    return _pow(e, n)


ATEN["native_dropout"] = native_dropout
ATEN["dropout"] = dropout
ATEN["bernoulli.p"] = bernoulli
ATEN["nll_loss_forward"] = nll_loss
ATEN["pow"] = pow_
