"""Training a PyTorch module with cgc: forward, loss, backward and the
optimizer's update as one graph replay (docs/training.md).

    step = cgc.compile_train(model, F.cross_entropy, opt, (x, y))
    loss = step(x, y)            # on torch's current stream, no host sync
    step.copy_to(model)          # the trained parameters back in the module

The module is exported in training mode with the loss (capture.py
TrainProgram), lowered with the optimizer torch.optim describes
(torch/training.py), compiled with `cgc --train` and run by a TrainStep
over the artifact's `train` and `eval` graphs, which share the
parameters and optimizer state in the engine."""
import os

from .errors import RefusedError

KINDS = {"SGD": "sgd", "Adam": "adam", "AdamW": "adamw"}
# torch.optim flags that pick an implementation, not what a step computes.
IMPLEMENTATION_FLAGS = ("foreach", "fused", "capturable")
HYPER = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "betas",
         "eps", "amsgrad", "differentiable", "decoupled_weight_decay")
GRAD_NORM = "optimizer.grad_norm"  # apply-optimizer's output with max_grad_norm
STATES = {"sgd": ("momentum_buffer",), "adam": ("exp_avg", "exp_avg_sq"),
          "adamw": ("exp_avg", "exp_avg_sq")}


def describe_optimizer(optimizer, names):
    """(description, trained state_dict names in the optimizer's order) of
    a torch.optim optimizer whose parameters `names` ({id(param): name})
    names: the first param group's hyperparameters, and each later group
    as {"params": [state_dict names], its hyperparameters} under "groups"."""
    kind = KINDS.get(type(optimizer).__name__)
    if kind is None:
        raise RefusedError(f"the optimizer {type(optimizer).__name__}: cgc trains with "
                           "torch.optim.SGD, Adam and AdamW")
    described, groups, order = None, [], []
    for group in optimizer.param_groups:
        hyper = {k: (tuple(v) if isinstance(v, list) else v) for k, v in group.items()
                 if k in HYPER}
        if hasattr(hyper.get("lr"), "item"):
            hyper["lr"] = float(hyper["lr"])
        members = []
        for p in group["params"]:
            if id(p) not in names:
                raise RefusedError("the optimizer updates a tensor that is not a parameter "
                                   "of the module")
            members.append(names[id(p)])
        order += members
        if described is None:
            described = hyper
        else:
            groups.append(dict(hyper, params=members))
    out = dict(described, kind=kind)
    if groups:
        out["groups"] = groups
    return out, order


def compile_train(module, loss_fn, optimizer, example_batch, *, inputs=None,
                  returns_outputs=False, accumulate=None, skip_nonfinite=None,
                  max_grad_norm=None, lr_schedule=None, seed=0, path=None, cgc=None,
                  flags=(), data_parallel=None, autocast=None):
    """A TrainStep: `loss = step(*batch)` runs `loss_fn(module(*batch[:inputs]),
    *batch[inputs:])`, its backward and `optimizer`'s update (SGD, Adam or
    AdamW) as one graph replay. `inputs`: how many of the batch's tensors
    the module takes (all but the last by default). `returns_outputs`:
    the step returns (loss, module outputs). `accumulate=k` updates every
    k-th call with the mean gradient; `skip_nonfinite` keeps the state on
    a step whose gradients are not finite (both decided on the device);
    `max_grad_norm` clips the gradients by their global norm as
    torch.nn.utils.clip_grad_norm_ does (`step.grad_norm` holds the norm);
    `lr_schedule={"kind": "linear" | "cosine", "warmup_steps": W,
    "total_steps": T}` runs transformers' get_linear/cosine_schedule_with_warmup
    on the device, times each group's learning rate.
    `seed`: dropout's Philox seed.
    `autocast=torch.bfloat16` or `torch.float16`: mixed precision as
    torch.autocast does it (products in 16 bits, its float32 ops in f32,
    parameters and optimizer state in f32; `cgc --autocast`); float16
    scales the loss dynamically on the device as GradScaler does
    (`step.state_view("optimizer.loss_scale")`).
    `data_parallel=True` (or `{"bucket_mb": 25, "dtype": "f32" | "bf16",
    "timeout_s": 600}`), under an initialized torch.distributed (torchrun):
    every rank compiles the same step, whose gradients NCCL averages over
    the ranks inside the graph (docs/distributed.md); the module's state is
    first broadcast from rank 0, as DDP does, and each rank's step runs on
    its own batch on torch's current device."""
    import shutil
    import tempfile
    import torch
    from .runtime import compile_beside
    from .torch.capture import capture_train
    from .torch.training import lower_train_record
    example_batch = tuple(example_batch)
    inputs = len(example_batch) - 1 if inputs is None else inputs
    names = {}
    for name, p in module.named_parameters():
        names.setdefault(id(p), name)
    describe, trained = describe_optimizer(optimizer, names)
    describe.update({k: v for k, v in (("accumulate", accumulate),
                                       ("skip_nonfinite", skip_nonfinite),
                                       ("max_grad_norm", max_grad_norm),
                                       ("schedule", lr_schedule)) if v is not None})
    frozen = [n for p_id, n in names.items() if n not in trained]
    ranks, dp_flags = _data_parallel(module, data_parallel, torch)
    dp_flags += _autocast_flags(autocast, torch)
    record, weights = capture_train(module, loss_fn, example_batch, inputs, returns_outputs)
    work = tempfile.mkdtemp(prefix="cgc-train-")
    try:
        ir_path = os.path.join(work, "step.json")
        _, ir_names = lower_train_record(record, weights, ir_path, describe, frozen,
                                         2 if returns_outputs else 1)
        if ranks is not None and ranks[1] != 0:
            path = None  # Only rank 0 writes the caller's path; the others compile alike.
        art = compile_beside(ir_path, path, os.path.join(work, "step.cgc"),
                             ("--train", *dp_flags, *flags), cgc)
        micro_steps = accumulate if ranks is not None and (accumulate or 1) > 1 else 1
        return TrainStep(art, optimizer, describe["kind"], trained, ir_names, seed,
                         returns_outputs, torch, ranks, micro_steps)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _autocast_flags(dtype, torch):
    """The driver's flags for compile_train's `autocast`."""
    if dtype is None:
        return ()
    if dtype == torch.bfloat16:
        return ("--autocast", "bf16")
    if dtype == torch.float16:
        return ("--autocast", "f16")
    raise ValueError(f"cgc.compile_train: autocast must be torch.bfloat16 or "
                     f"torch.float16, got {dtype}")


DATA_PARALLEL_OPTIONS = {"bucket_mb": 25, "dtype": "f32", "timeout_s": 600}


def _data_parallel(module, options, torch):
    """(ranks for the engine, driver flags) of compile_train's
    `data_parallel`: (None, ()) without it. Broadcasts the module's state
    from rank 0 (as DDP does) so that every rank compiles the same step."""
    if not options:
        return None, ()
    options = dict(DATA_PARALLEL_OPTIONS, **({} if options is True else dict(options)))
    unknown = set(options) - set(DATA_PARALLEL_OPTIONS)
    if unknown:
        raise ValueError(f"cgc.compile_train: unknown data_parallel option(s) "
                         f"{', '.join(sorted(unknown))} (known: "
                         f"{', '.join(DATA_PARALLEL_OPTIONS)})")
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("cgc.compile_train(data_parallel=...) needs torch.distributed "
                           "initialized first (torchrun and init_process_group)")
    with torch.no_grad():
        for tensor in module.state_dict().values():
            dist.broadcast(tensor, src=0)
    from . import _native
    uid = [_native.nccl_unique_id() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(uid, src=0)
    ranks = (uid[0], dist.get_rank(), dist.get_world_size(),
             int(options["timeout_s"] * 1000))
    flags = ("--data-parallel", "--bucket-mb", str(options["bucket_mb"]),
             "--data-parallel-dtype", str(options["dtype"]))
    return ranks, flags


class TrainStep:
    """The compiled step of compile_train over one engine and context:
    `step(*batch)` replays `train`, `step.eval(*batch)` replays `eval`
    (the forward and loss, dropout off) over the same parameters."""

    def __init__(self, artifact, optimizer, kind, trained, ir_names, seed, returns_outputs,
                 torch, ranks=None, micro_steps=1):
        from .runtime import Artifact
        self.torch, self.optimizer, self.kind = torch, optimizer, kind
        self.artifact = Artifact(artifact, ranks=ranks)
        # Data parallelism with accumulate=k: micro-steps 1 to k-1 replay
        # `train.accumulate` (no collective), the k-th `train`; the host
        # counts the calls (docs/distributed.md).
        self.micro_steps, self.calls = micro_steps, 0
        self.trained, self.ir_names = trained, ir_names  # state_dict name -> IR input
        self.returns_outputs = returns_outputs
        self.graphs = {g: self.artifact._find_graph(g) for g in ("train", "eval")}
        if micro_steps > 1:
            self.graphs["train.accumulate"] = self.artifact._find_graph("train.accumulate")
        self.outputs = [t for t in self.artifact.outputs if t["kind"] in ("loss", "output")
                        and t["name"] != GRAD_NORM]
        norm = [t for t in self.artifact.outputs if t["name"] == GRAD_NORM]
        self._grad_norm = self.artifact._buffer(norm[0], "output").view(()) if norm else None
        self._views = {}
        self.lr = None
        rng = [n for n, t in self.artifact.states.items() if t["kind"] == "rng_state"]
        for name in rng:
            self.state_view(name).copy_(torch.tensor([seed, 0], dtype=torch.int64))
        torch.cuda.current_stream().synchronize()

    def state_view(self, name):
        """A torch tensor over persistent state `name` on the device: reads
        and writes on torch's stream are ordered with the steps."""
        if name not in self._views:
            self._views[name] = self.artifact.state_view(name)
        return self._views[name]

    def _hyperparameters(self):
        """Each param group's learning rate, written to the device by a
        kernel on torch's stream when it changed (a scheduler's or the
        user's): group k's is `optimizer.group<k>.lr` (the first's
        `optimizer.lr`)."""
        groups = self.optimizer.param_groups
        if self.lr is None:
            self.lr = [None] * len(groups)
        for k, group in enumerate(groups):
            lr = group["lr"]
            lr = float(lr) if hasattr(lr, "item") else lr
            if lr != self.lr[k]:
                self.state_view(f"optimizer.group{k}.lr" if k else "optimizer.lr").fill_(lr)
                self.lr[k] = lr

    def _run(self, graph, batch):
        art = self.artifact
        if len(batch) != len(art.inputs):
            raise TypeError(f"expected {len(art.inputs)} tensors "
                            f"({', '.join(t['name'] for t in art.inputs)}), got {len(batch)}")
        values = art._dims_of(batch)
        for spec, x in zip(art.inputs, batch):
            if x.data_ptr() % art._bind_alignment == 0 and not art._in_outputs(x):
                art._bind(spec["name"], x.data_ptr())
            else:
                art._bind(spec["name"], 0)
                art._buffer(spec, "input").copy_(x.reshape(-1))
        results = [art._real(art._buffer(spec, "output"), spec, values) for spec in self.outputs]
        art._run(graph, values, art._stream(art.device.index))
        return results

    def __call__(self, *batch):
        self._hyperparameters()
        last = (self.calls + 1) % self.micro_steps == 0
        results = self._run(self.graphs["train" if last else "train.accumulate"], batch)
        self.calls += 1  # Only a call that ran counts: every rank counts alike.
        return tuple(results) if self.returns_outputs else results[0]

    @property
    def grad_norm(self):
        """The global gradient norm of the last step, before clipping (with
        max_grad_norm): a device scalar, read without a sync until used."""
        if self._grad_norm is None:
            raise AttributeError("the step clips no gradients (compile_train's max_grad_norm)")
        return self._grad_norm

    def eval(self, *batch):
        """The loss (and outputs) of the current parameters, dropout off."""
        results = self._run(self.graphs["eval"], batch)
        return tuple(results) if self.returns_outputs else results[0]

    # -- parameters and optimizer state, both ways

    def _optimizer_states(self, name):
        """{torch.optim's name: the engine's state} of parameter `name`
        (SGD keeps a momentum buffer only where its group has a momentum)."""
        ir = self.ir_names[name]
        if self.kind == "sgd":
            index = self.trained.index(name)
            for group in self.optimizer.param_groups:
                if index < len(group["params"]):
                    break
                index -= len(group["params"])
            if not group.get("momentum"):
                return {}
        return {s: f"{ir}.{s}" for s in STATES[self.kind]}

    def state_dict(self):
        """torch.optim's state_dict of the compiled optimizer's state (CPU
        tensors after the work on torch's stream)."""
        torch = self.torch
        torch.cuda.current_stream().synchronize()
        state = {}
        step = None
        if self.kind != "sgd":
            step = self.state_view("optimizer.step").detach().cpu().reshape(())
        for i, name in enumerate(self.trained):
            entry = {k: self.state_view(v).detach().cpu().clone()
                     for k, v in self._optimizer_states(name).items()}
            if step is not None:
                entry["step"] = step.clone()
            if entry:
                state[i] = entry
        groups = []
        start = 0
        for g in self.optimizer.param_groups:
            count = len(g["params"])
            groups.append({**{k: v for k, v in g.items() if k != "params"},
                           "params": list(range(start, start + count))})
            start += count
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Writes a torch.optim state_dict's state (from this optimizer's
        parameters, in its order) into the engine, on torch's stream."""
        step = None
        for i, entry in state_dict["state"].items():
            name = self.trained[int(i)]
            for k, v in self._optimizer_states(name).items():
                self.state_view(v).copy_(entry[k])
            step = entry.get("step", step)
        if step is not None and self.kind != "sgd":
            self.state_view("optimizer.step").copy_(self.torch.as_tensor(step).reshape(()))

    def parameters(self):
        """{state_dict name: device view} of every parameter and buffer in
        the engine."""
        return {name: self.state_view(ir) for name, ir in self.ir_names.items()}

    def copy_to(self, module):
        """Copies the engine's parameters and buffers into `module` (on
        torch's stream)."""
        own = dict(module.named_parameters())
        own.update(dict(module.named_buffers()))
        with self.torch.no_grad():
            for name, view in self.parameters().items():
                if name in own:
                    own[name].copy_(view)

    def load_from(self, module):
        """Copies `module`'s parameters and buffers into the engine."""
        own = dict(module.named_parameters())
        own.update(dict(module.named_buffers()))
        with self.torch.no_grad():
            for name, view in self.parameters().items():
                if name in own:
                    view.copy_(own[name])
