"""ONNX's Einsum as cgc products, sums, broadcasts and transposes.

Algorithm: the equation is parsed into one list of labels per operand
(an ellipsis becomes labels of its own, right-aligned across operands as
broadcasting aligns them) and the output's (given, or for the implicit
form the labels used once, in alphabetical order after the ellipsis).
The operands are folded left to right: a label of one operand that no
later operand and not the output needs is summed out first; then the
pair's shared labels that are still needed are batch dims, the shared
ones that are not are contracted by one batched `matmul` ([batch, M, K]
by [batch, K, N]; a broadcast product where nothing is contracted), and
each operand's own labels are M and N. A transpose puts the result in
the output's order. Integers (cgc's products take floats) are contracted
by a broadcast product and a sum. Refused: a label repeated within one
operand (a diagonal).
Registered into rules.RULES."""
import math
import string

from .rules import dtype, rule, shape, text_attr
from ..dtypes import FLOATS
from ..errors import RefusedError

LETTERS = set(string.ascii_letters)


def parse(equation, ranks):
    """([labels of each operand], output labels): an ellipsis's dims are
    labels '.0', '.1', ... counted from the right."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise RefusedError(f"Einsum equation {equation!r} names {len(terms)} operands, the node "
                           f"has {len(ranks)}")
    ellipsis = 0
    operands = []
    for term, rank in zip(terms, ranks):
        head, dots, tail = term.partition("...")
        if not set(head + tail) <= LETTERS or "." in tail:
            raise RefusedError(f"Einsum term {term!r} (letters and one ellipsis)")
        extra = rank - len(head) - len(tail)
        if extra < 0 or (extra and not dots):
            raise RefusedError(f"Einsum term {term!r} for an operand of rank {rank}")
        ellipsis = max(ellipsis, extra)
        labels = list(head) + [f".{k}" for k in reversed(range(extra))] + list(tail)
        if len(set(labels)) != len(labels):
            raise RefusedError(f"Einsum term {term!r} repeats a label (a diagonal; cgc has none)")
        operands.append(labels)
    dots = [f".{k}" for k in reversed(range(ellipsis))]
    if arrow:
        head, has_dots, tail = rhs.partition("...")
        out = list(head) + (dots if has_dots else []) + list(tail)
        if not set(head + tail) <= LETTERS or len(set(out)) != len(out):
            raise RefusedError(f"Einsum output {rhs!r}")
        if not has_dots and ellipsis:
            raise RefusedError(f"Einsum output {rhs!r} drops the ellipsis's dims")
    else:
        used = [label for labels in operands for label in labels]
        out = dots + sorted(x for x in set(used) if x in LETTERS and used.count(x) == 1)
    if not set(out) <= {label for labels in operands for label in labels}:
        raise RefusedError(f"Einsum output {rhs!r} names a label no operand has")
    return operands, out


class Operand:
    """A cgc value with one label per dim and their extents."""
    def __init__(self, value, labels, extents):
        self.value, self.labels, self.extents = value, list(labels), list(extents)

    def extent(self, label):
        return self.extents[self.labels.index(label)]


def summed_out(ctx, a, needed):
    """a with its labels outside `needed` summed away."""
    gone = [k for k, label in enumerate(a.labels) if label not in needed]
    if not gone:
        return a
    value = ctx.g.op("sum", [a.value], {"axes": gone, "keepdim": False})
    keep = [k for k in range(len(a.labels)) if k not in gone]
    return Operand(value, [a.labels[k] for k in keep], [a.extents[k] for k in keep])


def arranged(ctx, a, labels, extents):
    """a's value transposed to `labels` and broadcast to `extents`."""
    value = a.value
    perm = [a.labels.index(label) for label in labels]
    if perm != list(range(len(perm))):
        value = ctx.g.op("transpose", [value], {"perm": perm})
    if [a.extent(label) for label in labels] != list(extents):
        value = ctx.g.op("broadcast_to", [value], {"shape": list(extents)})
    return value


def contracted(ctx, a, b, needed, floating):
    """The pair's product over the labels shared and not `needed` (by a
    matmul where `floating`)."""
    a, b = summed_out(ctx, a, needed | set(b.labels)), summed_out(ctx, b, needed | set(a.labels))
    extent = {label: max(x.extent(label) for x in (a, b) if label in x.labels)
              for label in a.labels + b.labels}
    shared = [label for label in a.labels if label in b.labels]
    batch = [label for label in shared if label in needed]
    inner = [label for label in shared if label not in needed]
    left = [label for label in a.labels if label not in shared]
    right = [label for label in b.labels if label not in shared]
    sizes = lambda labels: [extent[label] for label in labels]  # noqa: E731
    labels = batch + left + right
    if not inner or not floating:
        # A broadcast product [batch, left, 1..., inner] * [batch, 1..., right,
        # inner], its inner dims summed (integers, or nothing to contract).
        av = ctx.g.op("reshape", [arranged(ctx, a, batch + left + inner,
                                           sizes(batch + left + inner))],
                      {"shape": sizes(batch + left) + [1] * len(right) + sizes(inner)})
        bv = ctx.g.op("reshape", [arranged(ctx, b, batch + right + inner,
                                           sizes(batch + right + inner))],
                      {"shape": sizes(batch) + [1] * len(left) + sizes(right + inner)})
        value = ctx.g.op("mul", [av, bv])
        if inner:
            value = ctx.g.op("sum", [value], {"axes": list(range(len(labels), len(labels) +
                                                                 len(inner)))})
        return Operand(value, labels, sizes(labels))
    m, k, n = (math.prod(sizes(x)) for x in (left, inner, right))
    bt = math.prod(sizes(batch))
    av = ctx.g.op("reshape", [arranged(ctx, a, batch + left + inner, sizes(batch + left + inner))],
                  {"shape": [bt, m, k]})
    bv = ctx.g.op("reshape", [arranged(ctx, b, batch + inner + right,
                                       sizes(batch + inner + right))], {"shape": [bt, k, n]})
    product = ctx.g.op("matmul", [av, bv])
    return Operand(ctx.g.op("reshape", [product], {"shape": sizes(labels)}), labels, sizes(labels))


@rule("Einsum")
def einsum(ctx, ins, attrs):
    shapes = [shape(ctx, v) for v in ins]
    if not all(isinstance(d, int) for s in shapes for d in s):
        raise RefusedError(f"Einsum of the dynamic shapes {shapes}")
    kinds = {dtype(ctx, v) for v in ins}
    if len(kinds) != 1 or "bool" in kinds:
        raise RefusedError(f"Einsum of {sorted(kinds)} (one numeric dtype)")
    labels, out = parse(text_attr(attrs, "equation", ""), [len(s) for s in shapes])
    operands = [Operand(v, ls, s) for v, ls, s in zip(ins, labels, shapes)]
    for label in {x for ls in labels for x in ls}:
        extents = {o.extent(label) for o in operands if label in o.labels} - {1}
        if len(extents) > 1:
            raise RefusedError(f"Einsum label {label!r} has the extents {sorted(extents)}")
    acc = operands[0]
    for k, b in enumerate(operands[1:], start=1):
        needed = set(out).union(*(o.labels for o in operands[k + 1:]))
        acc = contracted(ctx, acc, b, needed, kinds <= set(FLOATS))
    acc = summed_out(ctx, acc, set(out))
    extents = [acc.extent(label) for label in out]
    return [ctx.op("reshape", [arranged(ctx, acc, out, extents)], {"shape": extents})]
