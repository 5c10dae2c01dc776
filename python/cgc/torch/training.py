"""A training program's IR from its program record, without torch: the
record of `loss, *outputs = loss_fn(module(*inputs), *targets)` captured in
training mode (capture.capture_train), lowered with dropouts drawing
cgc's masks, its first output the `loss`, its frozen parameters buffers,
and the optimizer a plain description turns into (docs/training.md).

    describe = {"kind": "adamw", "lr": 1e-3, "betas": [0.9, 0.999], ...}
    ir = lower_train_record(record, weights, "step.json", describe, frozen)

`optimizer_ir` checks a description against what apply-optimizer does
(docs/ir.md, optimizer) and refuses the rest by name."""
from ..errors import RefusedError
from .export import lower_record

# Each kind's fields and the PyTorch default of each.
FIELDS = {
    "sgd": {"lr": None, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
            "nesterov": False, "maximize": False},
    "adam": {"lr": None, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
             "amsgrad": False, "maximize": False},
    "adamw": {"lr": None, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01,
              "amsgrad": False, "maximize": False},
}
# Options that change what a step computes, which cgc does not do: refused
# when they differ from the value that leaves the step PyTorch's plain one.
UNSUPPORTED = {"dampening": 0.0, "amsgrad": False, "maximize": False,
               "differentiable": False, "decoupled_weight_decay": None}


def optimizer_ir(describe, ir_names=None):
    """The IR's `optimizer` of a description (a dict with `kind` and
    PyTorch's hyperparameter names; training control `accumulate` and
    `skip_nonfinite` as docs/ir.md has them; `groups`, each with `params`
    (state_dict names, which `ir_names` maps to IR inputs; parameters it
    lacks are frozen, and left out) and its hyperparameters)."""
    out = hyperparameters(describe)
    for field in ("accumulate", "skip_nonfinite", "max_grad_norm", "schedule"):
        if describe.get(field) is not None:
            out[field] = describe[field]
    groups = []
    for group in describe.get("groups", []):
        params = [ir_names.get(p) if ir_names is not None else p for p in group["params"]]
        params = [p for p in params if p is not None]
        if params:
            hyper = hyperparameters(dict(group, kind=describe.get("kind")))
            hyper = {k: v for k, v in hyper.items() if k != "kind"}
            groups.append(dict(hyper, params=params))
    if groups:
        out["groups"] = groups
    return out


def hyperparameters(describe):
    """The kind and hyperparameters of a description (or of one group)."""
    kind = describe.get("kind")
    if kind not in FIELDS:
        raise RefusedError(f"the optimizer {kind!r}: cgc trains with SGD, Adam and AdamW")
    for option, plain in UNSUPPORTED.items():
        value = describe.get(option, plain)
        if option == "decoupled_weight_decay" and value is not None:
            if bool(value) != (kind == "adamw"):
                raise RefusedError(f"{kind} with decoupled_weight_decay={value}: use AdamW")
            continue
        if value != plain:
            raise RefusedError(f"{kind} with {option}={value!r}, which cgc does not implement")
    out = {"kind": kind}
    for field, default in FIELDS[kind].items():
        if field in UNSUPPORTED:
            continue
        value = describe.get(field, default)
        if value is None:
            raise RefusedError(f"{kind} without a learning rate")
        out[field] = list(value) if isinstance(value, tuple) else value
    if describe.get("nesterov") and not describe.get("momentum"):
        raise RefusedError("nesterov needs a momentum")
    return out


def lower_train_record(record, weights, path, describe, frozen=(), outputs=1):
    """Writes the training IR of a record whose program returns the loss
    first (then `outputs - 1` more values): the loss an output of kind
    `loss`, the parameters named (state_dict names) in `frozen` buffers,
    the optimizer `describe`'s. Returns (IR dict, {state_dict name: IR input})."""
    optimizer_ir(describe)  # refuses what cgc does not implement, before the export
    names = {}

    def extend(ir, lowering):
        names.update(lowering.weight_names)
        returned = [o for o in ir["outputs"]
                    if isinstance(o, str) or o.get("kind") != "buffer_mutation"]
        if not returned:
            raise RefusedError("the loss function returned no tensor")
        if len(returned) != outputs:
            raise RefusedError(f"the training program returns {len(returned)} tensors, "
                               f"expected the loss and {outputs - 1} more")
        loss = ir["outputs"][0]
        value = loss if isinstance(loss, str) else loss["value"]
        ir["outputs"][0] = {"name": "loss", "value": value, "kind": "loss"}
        still = {lowering.weight_names.get(t) for t in frozen} - {None}
        for entry in ir["inputs"]:
            if entry["name"] in still and entry.get("kind") == "parameter":
                entry["kind"] = "buffer"
        trained = {t: v for t, v in lowering.weight_names.items() if t not in frozen}
        ir["optimizer"] = optimizer_ir(describe, trained)

    ir = lower_record(record, weights, path, training=True, extend=extend)
    return ir, names
