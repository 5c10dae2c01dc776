#!/usr/bin/env python3
"""Training steps: cgc's whole step in one graph against PyTorch.

  bench/training.py --cgc build/tools/cgc [--out DIR] [--log FILE] [--iters N]

Workloads (../shared/workloads.md), compiled with `cgc --train` (forward,
autodiff, the declared optimizer's update, the dropout stream advanced by
the graph) and timed with `cgc bench` (CUDA events around N back-to-back
step replays, median of 5 repeats after warm-up), PyTorch timed in this
process on the same GPU the same way, f32 without TF32:
  mlp_train_small  Linear(128,256)-Dropout(0.2)-Linear(256,16)-Dropout(0.1),
                   MSE loss, SGD(lr 0.1), batch 32 (examples/mlp_train_small.json)
  mlp_train_large  the same with batch 640, 4096-2048-1024
Peers: PyTorch eager (zero_grad, forward, backward, step), the whole step
captured in one torch.cuda.graph, and torch.compile(mode="reduce-overhead")
of the step. Correctness: without dropout, 10 steps of `cgc run --steps 10`
against 10 PyTorch steps from the same weights on the same batch, for SGD
and Adam: the largest parameter difference is printed and checked (1e-4).
Writes RESULT/CHECK lines to --log (default
bench/results/training-<gpu>-<date>.log); bench/make_perf_md.py --training
LOG renders them in docs/perf.md.
"""
import argparse, json, os, sys, tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from torch_timing import BenchLog, time_events, capture  # noqa: E402
from cgc_tool import Runner  # noqa: E402

STEPS, TOLERANCE = 10, 1e-4
TRAIN = ("--train",)  # cgc's flags: a whole training step


def mlp(batch, dims, optimizer, dropout=True):
    """The mlp_train workload as cgc JSON (mlp_train_small.json's layout)."""
    with open(os.path.join(ROOT, "examples/mlp_train_small.json")) as f:
        m = json.load(f)
    d_in, d_hidden, d_out = dims
    shapes = {"x": [batch, d_in], "target": [batch, d_out], "fc1.w": [d_hidden, d_in],
              "fc1.b": [d_hidden], "fc2.w": [d_out, d_hidden], "fc2.b": [d_out]}
    for i in m["inputs"]:
        if i["name"] in shapes:
            i["shape"] = shapes[i["name"]]
        if "init" in i and i["init"]["dist"] == "uniform":
            fan_in = d_in if i["name"].startswith("fc1") else d_hidden
            i["init"]["low"], i["init"]["high"] = -fan_in ** -0.5, fan_in ** -0.5
    m["optimizer"] = optimizer
    m["name"] = f"mlp_train_{batch}x{d_in}"
    for n in m["nodes"]:
        if n["op"] == "dropout" and n["name"] == "pred":
            n["attrs"]["offset"] = batch * d_hidden
    if not dropout:
        m["inputs"] = [i for i in m["inputs"] if i.get("kind") != "rng_state"]
        m["nodes"] = [n for n in m["nodes"] if n["op"] != "dropout"]
        for n in m["nodes"]:
            n["inputs"] = [{"h.drop": "h", "pred": "o"}.get(v, v) for v in n["inputs"]]
        m["outputs"] = [{"name": "loss", "value": "loss", "kind": "loss"}, {"name": "pred", "value": "o"}]
    return m


def torch_model(torch, dims, p_drop):
    nn = torch.nn
    layers = [nn.Linear(dims[0], dims[1])]
    if p_drop:
        layers.append(nn.Dropout(0.2))
    layers.append(nn.Linear(dims[1], dims[2]))
    if p_drop:
        layers.append(nn.Dropout(0.1))
    return nn.Sequential(*layers).cuda()


def torch_step(torch, model, opt, x, target):
    def step():
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        return loss
    return step


def timing_peers(torch, b, name, batch, dims, iters):
    x = torch.randn(batch, dims[0], device="cuda")
    target = torch.randn(batch, dims[2], device="cuda")
    model = torch_model(torch, dims, True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = torch_step(torch, model, opt, x, target)
    us, samples = time_events(step, iters, max(iters // 10, 5))
    b.say(f"RESULT workload={name} impl=torch_eager us={us:.3f} samples=" + ",".join(f"{s:.3f}" for s in samples))
    try:
        g = capture(torch, step)
        us, samples = time_events(g.replay, iters, max(iters // 10, 5))
        b.say(f"RESULT workload={name} impl=torch_graph us={us:.3f} samples=" + ",".join(f"{s:.3f}" for s in samples))
    except Exception as e:
        b.say(f"ERROR workload={name} impl=torch_graph {type(e).__name__}: {str(e)[:200]}")
    try:
        compiled = torch.compile(step, mode="reduce-overhead")
        for _ in range(5):
            compiled()
        us, samples = time_events(compiled, iters, max(iters // 10, 5))
        b.say(f"RESULT workload={name} impl=torch_compile_ro us={us:.3f} samples=" + ",".join(f"{s:.3f}" for s in samples))
    except Exception as e:
        b.say(f"ERROR workload={name} impl=torch_compile_ro {type(e).__name__}: {str(e)[:200]}")


def check_steps(torch, b, name, batch, dims, optimizer):
    """STEPS steps without dropout, cgc against PyTorch from the same weights."""
    m = mlp(batch, dims, optimizer, dropout=False)
    art = b.compile(f"{name}_{optimizer['kind']}_nodrop", m, TRAIN)
    if not art:
        return
    rng = np.random.default_rng(3)
    t = {"x": rng.standard_normal((batch, dims[0])).astype(np.float32),
         "target": rng.standard_normal((batch, dims[2])).astype(np.float32)}
    for layer, (i, o) in (("fc1", (dims[0], dims[1])), ("fc2", (dims[1], dims[2]))):
        t[layer + ".w"] = rng.uniform(-i ** -0.5, i ** -0.5, (o, i)).astype(np.float32)
        t[layer + ".b"] = rng.uniform(-i ** -0.5, i ** -0.5, o).astype(np.float32)
    got = b.run(name, optimizer["kind"], art, t, STEPS)
    model = torch_model(torch, dims, False)
    with torch.no_grad():
        for k, layer in (("fc1", model[0]), ("fc2", model[1])):
            layer.weight.copy_(torch.from_numpy(t[k + ".w"]))
            layer.bias.copy_(torch.from_numpy(t[k + ".b"]))
    opt = (torch.optim.SGD(model.parameters(), lr=optimizer["lr"]) if optimizer["kind"] == "sgd"
           else torch.optim.Adam(model.parameters(), lr=optimizer["lr"]))
    step = torch_step(torch, model, opt, torch.from_numpy(t["x"]).cuda(), torch.from_numpy(t["target"]).cuda())
    for _ in range(STEPS):
        step()
    if got is None:
        return
    diff = 0.0
    for k, layer in (("fc1", model[0]), ("fc2", model[1])):
        diff = max(diff, float(np.max(np.abs(got[k + ".w.next"] - layer.weight.detach().cpu().numpy()))),
                   float(np.max(np.abs(got[k + ".b.next"] - layer.bias.detach().cpu().numpy()))))
    ok = diff <= TOLERANCE
    b.say(f"CHECK workload={name} optimizer={optimizer['kind']} steps={STEPS} max_param_diff={diff:.3g} "
          f"tolerance={TOLERANCE} ok={int(ok)}")
    if not ok:
        b.status = 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--log", default="")
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    out_dir = args.out or tempfile.mkdtemp(prefix="cgc-train-")
    say = BenchLog(torch, "training", args.log,
                   f"CUDA events around {args.iters} back-to-back steps (large: {args.iters // 10}), "
                   "median of 5 repeats after warm-up; f32 without TF32")
    b = Runner(args.cgc, out_dir, say)
    sgd = {"kind": "sgd", "lr": 0.1}
    for name, batch, dims, iters in (("mlp_train_small", 32, (128, 256, 16), args.iters),
                                     ("mlp_train_large", 640, (4096, 2048, 1024), max(args.iters // 10, 10))):
        art = b.compile(name, mlp(batch, dims, sgd), TRAIN)
        if art:
            b.bench(name, "cgc", art, None, iters)
        timing_peers(torch, b, name, batch, dims, iters)
        for optimizer in (sgd, {"kind": "adam", "lr": 0.001}):
            check_steps(torch, b, name, batch, dims, optimizer)
    say.write()
    return b.status


if __name__ == "__main__":
    sys.exit(main())
