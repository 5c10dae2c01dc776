"""How each ONNX operator maps onto cgc ops (opset 13 and later semantics;
the attributes of earlier opsets where they differ are read too).

A rule takes (ctx, ins, attrs): ins are the cgc values of the node's
operands (None for an omitted optional one), attrs the node's attributes;
it returns the cgc values of the node's results, or raises RefusedError
naming what it cannot express. RULES maps ONNX operator names to rules;
docs/onnx.md lists them. Operators with no rule that ONNX defines as
functions are expanded into their bodies first (functions.py).
"""
from . import ops_composite, ops_einsum, ops_elementwise, ops_products, ops_scatter, ops_tensor  # noqa: F401 - their rules register
from .rules import RULES  # noqa: F401
from .ops_elementwise import BINARY, UNARY  # noqa: F401
