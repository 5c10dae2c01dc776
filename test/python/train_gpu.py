#!/usr/bin/env python3
"""cgc.compile_train on the GPU machine against PyTorch training the same
module from the same weights on the same batches (f32, TF32 off):

- the loss at every step within 1e-4 relative of PyTorch's, and the
  parameters after the last step within 1e-3 relative L2 distance, for
  SGD with momentum and weight decay, Adam, AdamW (tied weights and a
  frozen layer norm), with a torch.optim.lr_scheduler changing the
  learning rate every step (read from the optimizer at each call and
  written on the stream);
- state_dict() equal to torch.optim's (moments and step), a
  load_state_dict() round trip, copy_to(module), and the eval callable's
  loss equal to PyTorch's in eval mode;
- with dropout on (cgc's own masks), the loss falls as PyTorch's does;
- (train_gpu_hf.py) a Hugging Face BERT classifier (a padded sequence in
  the batch) and a GPT-2 language model (2 layers, random weights): 20 AdamW steps with
  the fine-tuning recipe's param groups (no decay on biases and LayerNorm,
  the head at its own learning rate) under a warmup schedule, dropout
  off: every loss within 1e-4 relative, the parameters (as one vector)
  within 1e-3 relative L2 or twice PyTorch's own spread (the same
  training on the CPU against the GPU's), whichever is larger; with
  dropout 0.1 the loss of a fixed batch falls below half in 60 steps;
  the same two under bf16 and f16 autocast against torch.autocast; and
  full-size BERT-base and GPT-2 steps, 200 of them on padded batches;
- accumulation over 2 micro-batches with clipping by the global norm
  against PyTorch's mean of 2 micro-batches and clip_grad_norm_ (the norm
  too), and a step whose gradients hold an inf skipped on the device;
- torchvision's ResNet-18 (batch norm in training mode, its running
  statistics updated) for 10 SGD steps on batches of 32 32x32 images:
  the first loss within 1e-4 and the parameters after one step within
  1e-5 relative L2; later losses, the parameters and running statistics
  after the last step and the eval callable's loss within 1e-3 or twice
  PyTorch's own CPU-against-GPU distance, whichever is larger;
- bf16 and f16 autocast (compile_train(autocast=...); f16 with its
  device loss scaling against torch's GradScaler) against torch.autocast
  on an MLP with GELU and LayerNorm, 20 AdamW steps: losses within 2e-2,
  parameters within twice PyTorch's own 16-bit-f32 distance; in f16 a
  step whose input holds an inf is skipped and halves the loss scale,
  its call returning while the GPU is still busy (no host read);
- no host synchronization in a step: 200 steps are queued faster than
  they run (the host returns before the GPU is done);
- transformers' linear and cosine schedules with warmup run on the device
  (lr_schedule), two param groups, clipping and the logits returned
  (returns_outputs), against transformers' scheduler objects and
  clip_grad_norm_: losses, logits and the gradient norm within 1e-4,
  parameters within 1e-3 relative L2.

Usage: train_gpu.py --cgc PATH [--steps N] [--only TEXT]
Exit status 1 on a failed check; 77 without PyTorch or a GPU.
"""
import argparse, os, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cuda_torch import SKIPPED, cuda_torch  # noqa: E402

LOSS_RTOL, PARAM_RL2 = 1e-4, 1e-3
# ResNet-18's losses: sums over thousands of products per output in another
# order than cuDNN's, amplified by batch norm over 10 steps.
CNN_LOSS_RTOL = 1e-3


def rel_l2(a, b):
    return float((a.double() - b.double()).norm() / max(float(b.double().norm()), 1e-30))


def models(torch):
    nn, F = torch.nn, torch.nn.functional

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(64)
            self.a, self.b = nn.Linear(64, 64), nn.Linear(64, 64)
            self.b.weight = self.a.weight
            self.head = nn.Linear(64, 10)
            self.norm.requires_grad_(False)

        def forward(self, x):
            return self.head(F.gelu(self.b(torch.tanh(self.a(self.norm(x))))))

    def mlp(p=0.0):
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Dropout(p), nn.Linear(256, 10))

    sched = lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda s: 1.0 / (1 + 0.1 * s))  # noqa: E731
    return [
        ("mlp_sgd", mlp, F.mse_loss, lambda ps: torch.optim.SGD(
            ps, lr=0.05, momentum=0.9, weight_decay=1e-4), None, "mse"),
        ("mlp_adam_sched", mlp, F.cross_entropy, lambda ps: torch.optim.Adam(ps, lr=3e-3),
         sched, "ce"),
        ("tied_adamw", Tied, lambda o, y: F.cross_entropy(o, y, label_smoothing=0.1),
         lambda ps: torch.optim.AdamW(ps, lr=2e-3, weight_decay=0.05), None, "ce"),
    ]


def batch(torch, kind, k):
    g = torch.Generator(device="cuda").manual_seed(100 + k)
    x = torch.randn(32, 64, device="cuda", generator=g)
    y = (torch.randn(32, 10, device="cuda", generator=g) if kind == "mse"
         else torch.randint(0, 10, (32,), device="cuda", generator=g))
    return x, y


def check_model(torch, cgc, spec, steps, say):
    name, make, loss_fn, make_opt, make_sched, kind = spec
    torch.manual_seed(0)
    ours, theirs = make().cuda(), make().cuda()
    theirs.load_state_dict(ours.state_dict())
    opt_c = make_opt([p for p in ours.parameters() if p.requires_grad])
    opt_t = make_opt([p for p in theirs.parameters() if p.requires_grad])
    sched_c, sched_t = (make_sched(opt_c), make_sched(opt_t)) if make_sched else (None, None)
    step = cgc.compile_train(ours, loss_fn, opt_c, batch(torch, kind, 0))
    ok, worst = True, 0.0
    for k in range(steps):
        x, y = batch(torch, kind, k)
        got = float(step(x, y))
        opt_t.zero_grad()
        want = loss_fn(theirs(x), y)
        want.backward()
        opt_t.step()
        want = float(want)
        for s in (sched_c, sched_t):
            if s:
                s.step()
        err = abs(got - want) / max(abs(want), 1e-12)
        worst = max(worst, err)
        if err > LOSS_RTOL:
            say(f"FAIL {name}: step {k} loss {got} against PyTorch's {want}")
            ok = False
            break
    params = step.parameters()
    dist = max(rel_l2(params[n], p) for n, p in theirs.named_parameters() if n in params)
    ok &= dist < PARAM_RL2
    # state_dict against torch.optim's, a round trip, copy_to, eval.
    mine, ref = step.state_dict(), opt_t.state_dict()
    sd = 0.0
    for i, entry in ref["state"].items():
        for key, value in entry.items():
            if key in mine["state"].get(i, {}):
                sd = max(sd, rel_l2(mine["state"][i][key].float(), value.float().cpu()))
            else:
                say(f"FAIL {name}: state_dict lacks state[{i}][{key}]")
                ok = False
    ok &= sd < PARAM_RL2
    step.load_state_dict(mine)
    again = step.state_dict()
    same = all(torch.equal(again["state"][i][k], v) for i, e in mine["state"].items()
               for k, v in e.items())
    fresh = make().cuda()
    step.copy_to(fresh)
    copied = max(rel_l2(dict(fresh.named_parameters())[n], p) for n, p in
                 theirs.named_parameters())
    x, y = batch(torch, kind, 999)
    theirs.eval()
    with torch.no_grad():
        want = float(loss_fn(theirs(x), y))
    got = float(step.eval(x, y))
    eval_err = abs(got - want) / max(abs(want), 1e-12)
    ok &= same and copied < PARAM_RL2 and eval_err < LOSS_RTOL
    say(f"{'OK' if ok else 'FAIL'} {name}: {steps} steps, max loss rel err {worst:.2e}, "
        f"params rel L2 {dist:.2e}, optimizer state rel L2 {sd:.2e}, round trip "
        f"{'equal' if same else 'DIFFERS'}, copy_to {copied:.2e}, eval rel err {eval_err:.2e}")
    return ok


def global_rel_l2(torch, params, module):
    """The relative L2 distance of all parameters together, and the three
    tensors of the largest relative distance (name: distance, norm)."""
    pairs = [(n, params[n], p) for n, p in module.named_parameters() if n in params]
    diff = torch.cat([(a.double() - b.double()).flatten() for _, a, b in pairs])
    ref = torch.cat([b.double().flatten() for _, _, b in pairs])
    each = sorted(((rel_l2(a, b), n, float(b.norm())) for n, a, b in pairs), reverse=True)[:3]
    return float(diff.norm() / ref.norm()), ", ".join(f"{n}: {d:.1e} of norm {m:.2g}"
                                                      for d, n, m in each)


def check_resnet(torch, cgc, steps, say):
    """torchvision's ResNet-18 (10 classes; batch norm in training mode)
    on batches of 32 32x32 images, SGD with momentum and weight decay,
    against PyTorch on the GPU, with PyTorch on the CPU as the measure of
    f32's own spread (the step is chaotic: rounding grows step by step):
    the first loss within 1e-4 relative and the parameters after the first
    step within 1e-5 relative L2 (or twice the spread); every later loss
    within CNN_LOSS_RTOL or twice the CPU's largest distance so far; the
    parameters and running statistics after the last step within 1e-3
    relative L2 or twice the spread; the eval callable (running statistics) within the
    same bound as the losses (the training's spread included)."""
    import torchvision
    F = torch.nn.functional
    torch.manual_seed(0)
    ours, theirs, cpu = (torchvision.models.resnet18(num_classes=10) for _ in range(3))
    theirs.load_state_dict(ours.state_dict())
    cpu.load_state_dict(ours.state_dict())
    ours, theirs = ours.cuda(), theirs.cuda()
    opt_c, opt_t, opt_cpu = (torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9,
                                             weight_decay=5e-4) for m in (ours, theirs, cpu))

    def images(k):
        g = torch.Generator(device="cuda").manual_seed(400 + k)
        return (torch.randn(32, 3, 32, 32, device="cuda", generator=g),
                torch.randint(0, 10, (32,), device="cuda", generator=g))
    step = cgc.compile_train(ours, F.cross_entropy, opt_c, images(0))
    cpu_params = lambda: {n: p.detach().cuda() for n, p in cpu.named_parameters()}  # noqa: E731
    rel = lambda a, b: abs(a - b) / max(abs(b), 1e-12)  # noqa: E731
    ok, worst, first, trail, envelope = True, 0.0, None, [], 0.0
    for k in range(steps):
        x, y = images(k)
        got = float(step(x, y))
        losses = []
        for model, opt, args in ((theirs, opt_t, (x, y)), (cpu, opt_cpu, (x.cpu(), y.cpu()))):
            opt.zero_grad()
            loss = F.cross_entropy(model.train()(args[0]), args[1])
            loss.backward()
            opt.step()
            losses.append(float(loss))
        want, on_cpu = losses
        # The CPU's distance so far measures f32's own spread: rounding
        # grows step by step, and one step's losses may agree by chance.
        envelope = max(envelope, rel(on_cpu, want))
        err, bound = rel(got, want), (1e-4 if k == 0 else max(CNN_LOSS_RTOL, 2 * envelope))
        worst = max(worst, err)
        trail.append(f"{got:.4f}/{want:.4f}/{on_cpu:.4f}")
        if k == 0:
            first = (global_rel_l2(torch, step.parameters(), theirs)[0],
                     global_rel_l2(torch, cpu_params(), theirs)[0])
            ok &= first[0] < max(1e-5, 2 * first[1])
        if err > bound:
            say(f"FAIL resnet18: step {k} loss {got} against PyTorch's {want} (CPU {on_cpu})")
            ok = False
    dist, worst_tensors = global_rel_l2(torch, step.parameters(), theirs)
    spread, _ = global_rel_l2(torch, cpu_params(), theirs)
    ok &= dist < max(PARAM_RL2, 2 * spread)
    fresh = torchvision.models.resnet18(num_classes=10).cuda()
    step.copy_to(fresh)
    buffers = [n for n, _ in theirs.named_buffers() if n.endswith(("running_mean", "running_var"))]
    stat_dist = lambda m: max(rel_l2(dict(m.named_buffers())[n].cuda(),  # noqa: E731
                                     dict(theirs.named_buffers())[n]) for n in buffers)
    stats, stats_spread = stat_dist(fresh), stat_dist(cpu)
    ok &= stats < max(PARAM_RL2, 2 * stats_spread)
    x, y = images(999)
    theirs.eval()
    cpu.eval()
    with torch.no_grad():
        want = float(F.cross_entropy(theirs(x), y))
        on_cpu = float(F.cross_entropy(cpu(x.cpu()), y.cpu()))
    eval_err = rel(float(step.eval(x, y)), want)
    envelope = max(envelope, rel(on_cpu, want))
    ok &= eval_err < max(CNN_LOSS_RTOL, 2 * envelope)
    say(f"{'OK' if ok else 'FAIL'} resnet18: {steps} SGD steps (batch 32, 32x32), max loss rel "
        f"err {worst:.2e}, params rel L2 after one step {first[0]:.2e} (PyTorch CPU against "
        f"GPU: {first[1]:.2e}), after {steps} {dist:.2e} ({spread:.2e}; largest per tensor: "
        f"{worst_tensors}), running statistics rel L2 {stats:.2e} ({stats_spread:.2e}), "
        f"eval rel err {eval_err:.2e} ({rel(on_cpu, want):.2e}); losses cgc/GPU/CPU by step: "
        f"{' '.join(trail)}")
    return ok


def check_control(torch, cgc, say):
    """Accumulation over 2 micro-batches, clipping by the global norm and
    skipping a non-finite step, on the device, against PyTorch doing the
    same by hand (the mean of 2 micro-batches' gradients, clip_grad_norm_)."""
    F = torch.nn.functional
    torch.manual_seed(2)
    make = lambda: torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(),  # noqa: E731
                                       torch.nn.Linear(128, 10)).cuda()
    ours, theirs = make(), make()
    theirs.load_state_dict(ours.state_dict())
    opt_c = torch.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    step = cgc.compile_train(ours, F.cross_entropy, opt_c, batch(torch, "ce", 0), accumulate=2,
                             max_grad_norm=0.5, skip_nonfinite=True)
    ok, norms = True, []
    for k in range(0, 20, 2):
        a, b = batch(torch, "ce", k), batch(torch, "ce", k + 1)
        step(*a)
        step(*b)
        opt_t.zero_grad()
        ((F.cross_entropy(theirs(a[0]), a[1]) + F.cross_entropy(theirs(b[0]), b[1])) / 2).backward()
        want = float(torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5))
        opt_t.step()
        norms.append(abs(float(step.grad_norm) - want) / want)
    params = step.parameters()
    dist = max(rel_l2(params[n], p) for n, p in theirs.named_parameters())
    before = {n: p.clone() for n, p in params.items()}
    x, y = batch(torch, "ce", 99)
    x[0, 0] = float("inf")
    step(x, y)
    step(x, y)  # the update of this accumulation sees an inf: skipped
    skipped = all(torch.equal(before[n], p) for n, p in step.parameters().items())
    ok = dist < PARAM_RL2 and max(norms) < 1e-4 and skipped
    say(f"{'OK' if ok else 'FAIL'} accumulate 2, clip 0.5, skip: params rel L2 {dist:.2e}, "
        f"gradient norm rel err {max(norms):.2e}, non-finite step "
        f"{'skipped' if skipped else 'APPLIED'}")
    return ok


def check_device_schedule(torch, cgc, kind, say):
    """lr_schedule run on the device (transformers' linear or cosine
    schedule with warmup) with two param groups, clipping and the outputs
    returned, against PyTorch with transformers' scheduler object and
    clip_grad_norm_: every loss within 1e-4, the logits each step within
    1e-4 of their scale, the gradient norm within 1e-4, the parameters
    after the last step within 1e-3 relative L2."""
    import transformers
    F = torch.nn.functional
    torch.manual_seed(3)
    make = lambda: torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),  # noqa: E731
                                       torch.nn.Linear(128, 10)).cuda()
    ours, theirs = make(), make()
    theirs.load_state_dict(ours.state_dict())

    def groups(m):
        return [{"params": m[0].parameters(), "lr": 2e-3},
                {"params": m[2].parameters(), "lr": 5e-3, "weight_decay": 0.0}]
    opt_c, opt_t = torch.optim.AdamW(groups(ours)), torch.optim.AdamW(groups(theirs))
    warmup, total = 4, 24
    schedule = {"linear": transformers.get_linear_schedule_with_warmup,
                "cosine": transformers.get_cosine_schedule_with_warmup}[kind](
                    opt_t, warmup, total)
    step = cgc.compile_train(ours, F.cross_entropy, opt_c, batch(torch, "ce", 0),
                             returns_outputs=True, max_grad_norm=1.0,
                             lr_schedule={"kind": kind, "warmup_steps": warmup,
                                          "total_steps": total})
    worst = {"loss": 0.0, "logits": 0.0, "norm": 0.0}
    steps = total + 4  # past total_steps too (linear's 0, cosine's rise)
    for k in range(steps):
        x, y = batch(torch, "ce", k)
        loss, logits = step(x, y)
        opt_t.zero_grad()
        out = theirs(x)
        want = F.cross_entropy(out, y)
        want.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0))
        opt_t.step()
        schedule.step()
        worst["loss"] = max(worst["loss"], abs(float(loss) - float(want)) / abs(float(want)))
        worst["logits"] = max(worst["logits"], float((logits - out).abs().max() /
                                                     out.abs().max()))
        worst["norm"] = max(worst["norm"], abs(float(step.grad_norm) - norm) / norm)
    params = step.parameters()
    dist = max(rel_l2(params[n], p) for n, p in theirs.named_parameters())
    ok = max(worst.values()) < LOSS_RTOL and dist < PARAM_RL2
    say(f"{'OK' if ok else 'FAIL'} device {kind} schedule ({steps} AdamW steps, warmup "
        f"{warmup}, total {total}, 2 groups, clip 1.0, outputs returned): loss rel err "
        f"{worst['loss']:.2e}, "
        f"logits {worst['logits']:.2e}, gradient norm {worst['norm']:.2e}, params rel L2 "
        f"{dist:.2e}")
    return ok


def check_dropout_and_sync(torch, cgc, say):
    """Dropout on: the loss falls for both; steps queue without a sync."""
    F = torch.nn.functional
    torch.manual_seed(1)
    make = lambda: torch.nn.Sequential(  # noqa: E731
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Dropout(0.2),
        torch.nn.Linear(256, 10)).cuda()
    ours, theirs = make(), make()
    theirs.load_state_dict(ours.state_dict())
    opt_c = torch.optim.Adam(ours.parameters(), lr=1e-3)
    opt_t = torch.optim.Adam(theirs.parameters(), lr=1e-3)
    x, y = batch(torch, "ce", 0)
    step = cgc.compile_train(ours, F.cross_entropy, opt_c, (x, y))
    first_c = first_t = None
    for k in range(100):
        lc = step(x, y).clone()
        opt_t.zero_grad()
        lt = F.cross_entropy(theirs.train()(x), y)
        lt.backward()
        opt_t.step()
        if k == 0:
            first_c, first_t = float(lc), float(lt)
    last_c, last_t = float(lc), float(lt)
    falls = last_c < 0.5 * first_c and last_t < 0.5 * first_t
    # Queue 200 steps: with no host sync the host is done long before the GPU.
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    big = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                              torch.nn.Linear(4096, 1024)).cuda()
    xb = torch.randn(512, 1024, device="cuda")
    yb = torch.randn(512, 1024, device="cuda")
    big_step = cgc.compile_train(big, F.mse_loss, torch.optim.SGD(big.parameters(), lr=1e-3),
                                 (xb, yb))
    big_step(xb, yb)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    start.record()
    for _ in range(200):
        big_step(xb, yb)
    host = time.perf_counter() - t0
    end.record()
    end.synchronize()
    gpu = start.elapsed_time(end) / 1000.0
    nosync = host < 0.5 * gpu
    say(f"{'OK' if falls and nosync else 'FAIL'} dropout and sync: loss {first_c:.3f} -> "
        f"{last_c:.3f} (PyTorch {first_t:.3f} -> {last_t:.3f}); 200 steps queued in "
        f"{host * 1e3:.1f} ms of host time, {gpu * 1e3:.1f} ms on the GPU")
    return falls and nosync


def autocast_reference(torch, make, loss_fn, data, inputs, half):
    """PyTorch's AdamW training (lr 1e-3) of make() on the batches under
    torch.autocast(half) (None: f32; f16 with GradScaler): its parameters
    as one vector and its losses."""
    m = make()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=half == torch.float16)
    losses = []
    for batch in data:
        opt.zero_grad()
        with torch.autocast("cuda", dtype=half or torch.float32, enabled=half is not None):
            loss = loss_fn(m(*batch[:inputs]), *batch[inputs:])
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss))
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()]), losses


def check_autocast(torch, cgc, steps, say, dtype=None):
    """Autocast (bf16; f16 with torch's GradScaler against cgc's device
    loss scaling): cgc's step against PyTorch's under torch.autocast from
    the same weights on the same batches. The yardstick is PyTorch's own
    autocast spread: its 16-bit parameters' distance from its f32 run;
    cgc's must be within twice that of PyTorch's 16-bit run, and every
    loss within 2e-2 relative."""
    dtype = dtype or torch.bfloat16
    nn, F = torch.nn, torch.nn.functional

    def mlp():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256),
                             nn.Linear(256, 10)).cuda()

    g = torch.Generator(device="cuda").manual_seed(5)
    data = [(torch.randn(32, 64, device="cuda", generator=g),
             torch.randint(0, 10, (32,), device="cuda", generator=g)) for _ in range(steps)]

    ref32, _ = autocast_reference(torch, mlp, F.cross_entropy, data, 1, None)
    ref16, losses16 = autocast_reference(torch, mlp, F.cross_entropy, data, 1, dtype)
    m = mlp()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    step = cgc.compile_train(m, F.cross_entropy, opt, data[0], autocast=dtype)
    losses = [float(step(x, y)) for x, y in data]
    step.copy_to(m)
    got = torch.cat([p.detach().reshape(-1) for p in m.parameters()])
    spread = rel_l2(ref16, ref32)
    d = rel_l2(got, ref16)
    worst = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(losses, losses16))
    ok = d <= 2 * spread and worst <= 2e-2
    backoff = ""
    if dtype == torch.float16:
        skipped, backoff = injected_inf(torch, step, data[0])
        ok &= skipped
    say(f"{'OK' if ok else 'FAIL'} autocast {dtype} MLP ({steps} AdamW steps): parameters "
        f"{d:.2e} rel L2 from PyTorch's autocast (its own 16-bit-f32 spread {spread:.2e}), "
        f"losses within {worst:.2e}{backoff}")
    return ok


def injected_inf(torch, step, batch):
    """An f16 step whose input holds an inf, queued behind a long kernel:
    the call returns while the GPU is still busy (no host read decides the
    skip), the parameters stay as they were and the loss scale halves."""
    x, y = batch
    x = x.clone()
    x[0, 0] = float("inf")
    scale = step.state_view("optimizer.loss_scale")
    torch.cuda.synchronize()
    before = {n: p.clone() for n, p in step.parameters().items()}
    scale_before = float(scale)
    busy = torch.cuda.Event()
    torch.cuda._sleep(int(2e9))  # about a second of one thread spinning
    step(x, y)
    busy.record()
    returned_early = not busy.query()
    torch.cuda.synchronize()
    kept = all(torch.equal(before[n], p) for n, p in step.parameters().items())
    halved = float(scale) == scale_before / 2
    return returned_early and kept and halved, (
        f"; an injected inf: step {'skipped' if kept else 'APPLIED'}, loss scale "
        f"{scale_before:g} -> {float(scale):g}, the call returned "
        f"{'before' if returned_early else 'AFTER'} the GPU was done")


def check_half_parameters(torch, cgc, steps, say):
    """A module converted to bf16 (no autocast), AdamW: cgc's step against
    PyTorch's bf16 training from the same weights on the same batches; the
    yardstick PyTorch's own distance from its f32 training of the same
    start. cgc's parameters within twice that of PyTorch's bf16 ones, in
    bf16, and its optimizer state in torch.optim's dtypes."""
    nn, F = torch.nn, torch.nn.functional

    def mlp(dtype):
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256),
                             nn.Linear(256, 10)).cuda().to(torch.bfloat16).to(dtype)

    g = torch.Generator(device="cuda").manual_seed(5)
    data = [(torch.randn(32, 64, device="cuda", generator=g),
             torch.randint(0, 10, (32,), device="cuda", generator=g)) for _ in range(steps)]

    def torch_run(dtype):
        m = mlp(dtype)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        for x, y in data:
            opt.zero_grad()
            F.cross_entropy(m(x.to(dtype)), y).backward()
            opt.step()
        return torch.cat([p.detach().float().reshape(-1) for p in m.parameters()])

    ref32, ref16 = torch_run(torch.float32), torch_run(torch.bfloat16)
    m = mlp(torch.bfloat16)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    step = cgc.compile_train(m, F.cross_entropy, opt, (data[0][0].bfloat16(), data[0][1]))
    for x, y in data:
        step(x.bfloat16(), y)
    step.copy_to(m)
    got = torch.cat([p.detach().float().reshape(-1) for p in m.parameters()])
    moments = {v.dtype for s in step.state_dict()["state"].values() for v in s.values()
               if torch.is_tensor(v) and v.dim() > 0}
    spread, d = rel_l2(ref16, ref32), rel_l2(got, ref16)
    ok = d <= 2 * spread and moments == {torch.bfloat16} and \
        all(p.dtype == torch.bfloat16 for p in m.parameters())
    say(f"{'OK' if ok else 'FAIL'} bf16 parameters MLP ({steps} AdamW steps): parameters "
        f"{d:.2e} rel L2 from PyTorch's bf16 training (its own distance from f32 "
        f"{spread:.2e}), moments in {sorted(map(str, moments))}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", default="")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--only", default="", help="run the checks whose name has this text")
    ap.add_argument("--shard", default="0/1", metavar="I/N",
                    help="run every Nth check from the Ith (0-based): N processes share a GPU")
    args = ap.parse_args()
    torch = cuda_torch()
    if torch is None:
        return SKIPPED
    if args.cgc:
        os.environ["CGC"] = args.cgc
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False  # PyTorch's convolutions in f32, as cgc's
    import cgc
    import train_gpu_hf  # Hugging Face models: small ones, full-size ones, autocast
    checks = [(lambda spec=spec: check_model(torch, cgc, spec, args.steps, print))
              for spec in models(torch) if args.only in spec[0]]
    named = [("resnet18", lambda: check_resnet(torch, cgc, 10, print)),
             ("accumulate clip skip", lambda: check_control(torch, cgc, print)),
             ("autocast bf16", lambda: check_autocast(torch, cgc, 20, print, torch.bfloat16)),
             ("autocast f16", lambda: check_autocast(torch, cgc, 20, print, torch.float16)),
             ("bf16 parameters", lambda: check_half_parameters(torch, cgc, 20, print)),
             ("dropout and sync", lambda: check_dropout_and_sync(torch, cgc, print))]
    named += [(f"device {kind} schedule",
               lambda kind=kind: check_device_schedule(torch, cgc, kind, print))
              for kind in ("linear", "cosine")]
    checks += [check for name, check in named if args.only in name]
    checks += train_gpu_hf.checks(torch, cgc, args.only, print)
    index, count = (int(part) for part in args.shard.split("/"))
    ok = True
    for check in checks[index::count]:
        ok &= check()
    print("train_gpu:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
