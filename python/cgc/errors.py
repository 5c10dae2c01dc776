"""The exceptions cgc raises to its users (re-exported from `cgc`):

RefusedError  a front end (the ONNX importer, the torch.export lowering)
              cannot express the model: the message names the node.
SizeOutOfRange  a call's dynamic size lies outside its dim's range (a
              ValueError, raised by the callable before anything runs).
CgcError      the `cgc` driver refused a model, or the runtime failed (a
              RuntimeError): defined by the runtime's extension cgc._native,
              so only where the package holds it, and loaded when named.
"""


class RefusedError(Exception):
    """What a front end cannot express, located at the node (an ONNX node,
    or a record's node with the user's source line)."""


class SizeOutOfRange(ValueError):
    """A call's dynamic size outside its dim's [min, max]."""


def __getattr__(name):
    if name == "CgcError":
        from ._native import CgcError
        return CgcError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
