#!/usr/bin/env python3
"""Training steps of real models: cgc.compile_train against PyTorch in the
same process on the same GPU, f32 without TF32.

  bench/train_models.py --cgc build/tools/cgc [--only NAME] [--iters N] [--log FILE]
                        [--autocast bf16] [--profile] [--compile]

Workloads (the training issue's): a BERT-base fine-tuning step
(BertForSequenceClassification, 2 labels, batch 8, sequence 128, AdamW)
and a GPT-2 small language-model step (GPT2LMHeadModel, batch 4,
sequence 256, AdamW), random weights from the configs, dropout as
configured (0.1); and the convolution issue's torchvision ResNet-18 step
(10 classes, batch 32 of 32x32 images, batch norm in training mode, SGD
with momentum 0.9 and weight decay 5e-4). Each is timed as one whole step
(forward, loss, backward, optimizer) with CUDA events around N
back-to-back steps, median of 5 after warm-up: cgc's step; PyTorch eager
(zero_grad, forward, backward, step); the whole step captured in one
torch.cuda.graph (capturable optimizer, static batch); with --compile,
the module under torch.compile(mode="reduce-overhead") with the eager
optimizer. RESULT lines give µs per step and items (tokens or images)
per second; COMPILE lines the cold compile_train time. With --autocast
bf16, every implementation runs the forward and the loss in mixed
precision: cgc.compile_train(autocast=torch.bfloat16) against the same
step under torch.autocast("cuda", dtype=torch.bfloat16) (parameters,
gradients and optimizer state f32 on both sides). With --profile,
the kernels of one cgc step and of one torch.cuda.graph replay by kind
and the longest (bench/zoo/kernel_profile.py's tables) follow. Writes
bench/results/train-models-<gpu>-<date>.log (or --log).
"""
import argparse, contextlib, os, sys, time

os.environ.setdefault("CGC_CACHE", "0")  # the cold compile time: no cgc compile cache

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "zoo"))
from torch_timing import BenchLog, capture, time_events  # noqa: E402


def workloads(torch, transformers):
    F = torch.nn.functional

    def bert():
        cfg = transformers.BertConfig(num_labels=2)
        model = transformers.BertForSequenceClassification(cfg)
        ids = torch.randint(0, cfg.vocab_size, (8, 128), device="cuda")
        batch = (ids, torch.ones_like(ids), torch.randint(0, 2, (8,), device="cuda"))
        return model, lambda out, y: F.cross_entropy(out.logits, y), batch, 2, 8 * 128, adamw

    def gpt2():
        cfg = transformers.GPT2Config(use_cache=False)
        model = transformers.GPT2LMHeadModel(cfg)
        ids = torch.randint(0, cfg.vocab_size, (4, 256), device="cuda")

        def lm(out, ids):
            logits = out.logits[:, :-1]
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        return model, lm, (ids, ids), 1, 4 * 256, adamw

    def resnet18():
        import torchvision
        model = torchvision.models.resnet18(num_classes=10)
        batch = (torch.randn(32, 3, 32, 32, device="cuda"),
                 torch.randint(0, 10, (32,), device="cuda"))

        def sgd(params, capturable=False):
            del capturable  # SGD's step has no host-side state to capture
            return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=5e-4)
        return model, F.cross_entropy, batch, 1, 32, sgd

    def adamw(params, capturable=False):
        return torch.optim.AdamW(params, lr=1e-5, capturable=capturable)

    return {"bert_base_finetune": bert, "gpt2_small_lm": gpt2, "resnet18_cifar": resnet18}


def torch_step(model, loss_fn, opt, batch, inputs, precision):
    """PyTorch's whole step; precision() is the forward's context (autocast or none)."""
    def step():
        opt.zero_grad(set_to_none=False)
        with precision():
            loss = loss_fn(model(*batch[:inputs]), *batch[inputs:])
        loss.backward()
        opt.step()
        return loss
    return step


def profile(torch, say, label, us, fn, iters):
    from kernel_profile import describe, kernels_per_call
    lines = []
    describe(label, us, kernels_per_call(torch, fn, iters), lines)
    for line in lines:
        say("PROFILE " + line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--only", default="",
                    help="workloads whose name contains one of these (comma-separated)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--log", default="")
    ap.add_argument("--profile", action="store_true",
                    help="the kernels of cgc's step and of the captured step, by kind")
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile(mode='reduce-overhead')")
    ap.add_argument("--autocast", choices=["bf16"], default=None,
                    help="mixed precision on every side (forward and loss in bf16)")
    args = ap.parse_args()
    os.environ["CGC"] = args.cgc
    import torch
    import transformers
    import cgc
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    autocast = {None: None, "bf16": torch.bfloat16}[args.autocast]

    def precision():
        if autocast is None:
            return contextlib.nullcontext()
        return torch.autocast("cuda", dtype=autocast)
    say = BenchLog(torch, "train-models", args.log,
                   f"CUDA events around {args.iters} back-to-back steps, median of 5 after "
                   f"warm-up; {args.autocast or 'f32'}{' autocast' if autocast else ''} "
                   "without TF32")
    status = 0
    wanted = [part for part in args.only.split(",") if part]
    for name, make in workloads(torch, transformers).items():
        if wanted and not any(part in name for part in wanted):
            continue
        torch.manual_seed(0)
        model, loss_fn, batch, inputs, items, make_opt = make()
        model = model.cuda().train()

        def result(impl, us):
            say(f"RESULT workload={name} impl={impl} us={us:.1f} "
                f"items_per_s={items / us * 1e6:.0f}")
        opt = make_opt(model.parameters())
        t0 = time.perf_counter()
        try:
            step = cgc.compile_train(model, loss_fn, opt, batch, inputs=inputs,
                                     autocast=autocast)
            say(f"COMPILE workload={name} impl=cgc s={time.perf_counter() - t0:.1f}")
            us = time_events(lambda: step(*batch), args.iters, 3)[0]
            result("cgc", us)
            if args.profile:
                profile(torch, say, "cgc step", us, lambda: step(*batch), args.iters)
            del step
        except Exception as e:  # noqa: BLE001 - reported, the peers still run
            say(f"ERROR workload={name} impl=cgc {type(e).__name__}: {str(e)[:300]}")
            status = 1
        torch.cuda.empty_cache()
        opt = make_opt(model.parameters())
        result("torch_eager", time_events(torch_step(model, loss_fn, opt, batch, inputs, precision),
                                          args.iters, 3)[0])
        try:
            opt = make_opt(model.parameters(), capturable=True)
            g = capture(torch, torch_step(model, loss_fn, opt, batch, inputs, precision))
            us = time_events(g.replay, args.iters, 3)[0]
            result("torch_graph", us)
            if args.profile:
                profile(torch, say, "torch.cuda.graph step", us, g.replay, args.iters)
            del g
        except Exception as e:  # noqa: BLE001
            say(f"ERROR workload={name} impl=torch_graph {type(e).__name__}: {str(e)[:300]}")
        if args.compile:
            try:
                opt = make_opt(model.parameters())
                compiled = torch.compile(model, mode="reduce-overhead")
                t0 = time.perf_counter()
                run = torch_step(compiled, loss_fn, opt, batch, inputs, precision)
                for _ in range(3):
                    run()
                torch.cuda.synchronize()
                say(f"COMPILE workload={name} impl=torch_reduce_overhead "
                    f"s={time.perf_counter() - t0:.1f}")
                result("torch_reduce_overhead", time_events(run, args.iters, 3)[0])
                del compiled
            except Exception as e:  # noqa: BLE001
                say(f"ERROR workload={name} impl=torch_reduce_overhead "
                    f"{type(e).__name__}: {str(e)[:300]}")
        del model, opt
        torch.cuda.empty_cache()
    say.write()
    return status


if __name__ == "__main__":
    sys.exit(main())
