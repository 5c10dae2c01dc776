"""The exceptions cgc raises to its users (re-exported from `cgc`):

RefusedError  a front end (the ONNX importer, the torch.export lowering)
              cannot express the model: the message names the node.
CgcError      the `cgc` driver refused a model, or the runtime failed (a
              RuntimeError): defined by the runtime's extension cgc._native,
              so only where the package holds it, and loaded when named.
"""


class RefusedError(Exception):
    """What a front end cannot express, located at the node (an ONNX node,
    or a record's node with the user's source line)."""


def __getattr__(name):
    if name == "CgcError":
        from ._native import CgcError
        return CgcError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
