#!/usr/bin/env python3
"""Data-parallel training steps: cgc's step with NCCL in its graph against
PyTorch DDP, on the GPUs of one host, at a fixed batch per GPU (weak
scaling). One process per GPU:

  torchrun --nproc-per-node=N bench/distributed.py --cgc build/tools/cgc \\
      [--log FILE] [--iters N] [--only NAME]

Run it for N = 1, 2 and 4: the scaling efficiency of each implementation is
its N-GPU throughput over N times its 1-GPU throughput, from the logs.
Workloads (per GPU; ../shared/workloads.md, f32 without TF32, SGD):
  mlp_train_small  Linear(128,256)-Dropout-Linear(256,16)-Dropout, MSE, batch 32
  mlp_train_large  the same shape, 4096-2048-1024, batch 640
  mlp_wide         three Linear(8192, 8192) with ReLU, MSE, batch 256
Implementations, each timed with CUDA events around N back-to-back steps,
median of 5 after warm-up, on every rank (rank 0 logs):
  cgc              cgc.compile_train(data_parallel=True): one graph launch a
                   step, the gradients' all-reduces inside it (1 GPU: no
                   data_parallel)
  ddp_eager        torch DDP: zero_grad, forward, backward (bucketed
                   all-reduces), step
  ddp_graph        the whole DDP step captured in one torch.cuda.graph
                   (PyTorch's recipe: DDP built on a side stream, 11 eager
                   warm-up steps, TORCH_NCCL_ASYNC_ERROR_HANDLING=0)
Lines: RESULT workload=... impl=... world=N us=... samples=...
Never enables NVLink multicast (NCCL_NVLS_ENABLE=0).
"""
import argparse, datetime, os, sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from torch_timing import time_events  # noqa: E402

WORKLOADS = {  # name: (batch per GPU, layer widths, dropout)
    "mlp_train_small": (32, (128, 256, 16), True),
    "mlp_train_large": (640, (4096, 2048, 1024), True),
    "mlp_wide": (256, (8192, 8192, 8192, 8192), False),
}


def model(torch, widths, dropout):
    nn = torch.nn
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        last = i == len(widths) - 2
        if dropout:
            layers.append(nn.Dropout(0.1 if last else 0.2))
        elif not last:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).cuda()


def eager_step(torch, module, opt, x, target):
    def step():
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(module(x), target)
        loss.backward()
        opt.step()
        return loss
    return step


def ddp_graph(torch, ddp_of, widths, dropout, x, target):
    """PyTorch's documented recipe for DDP in a CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        module = ddp_of(model(torch, widths, dropout))
        opt = torch.optim.SGD(module.parameters(), lr=0.01)
        step = eager_step(torch, module, opt, x, target)
        for _ in range(11):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=False)
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def say(log, rank, line):
    if rank == 0:
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--log")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--only")
    args = ap.parse_args()
    import torch
    import torch.distributed as dist
    os.environ["CGC"] = args.cgc
    import cgc
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.backends.cuda.matmul.allow_tf32 = False
    dist.init_process_group("nccl")
    log = None
    if rank == 0:
        gpu = torch.cuda.get_device_name().replace(" ", "-")
        path = args.log or os.path.join(
            HERE, "results", f"distributed-{gpu}-{datetime.date.today()}-x{world}.log")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        log = open(path, "w")
        say(log, rank, f"# bench/distributed.py world={world} {torch.cuda.get_device_name()} "
                       f"torch {torch.__version__} NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}")
    ddp_of = (lambda m: torch.nn.parallel.DistributedDataParallel(m)) if world > 1 else (lambda m: m)
    for name, (batch, widths, dropout) in WORKLOADS.items():
        if args.only and args.only not in name:
            continue
        iters = args.iters if batch * widths[0] < 10 ** 6 else max(args.iters // 10, 10)
        x = torch.randn(batch, widths[0], device="cuda")
        target = torch.randn(batch, widths[-1], device="cuda")
        module = model(torch, widths, dropout)
        opt = torch.optim.SGD(module.parameters(), lr=0.01)
        step = cgc.compile_train(module, torch.nn.functional.mse_loss, opt, (x, target),
                                 data_parallel=world > 1 or None)
        impls = [("cgc", lambda: step(x, target))]
        ddp = ddp_of(model(torch, widths, dropout))
        impls.append(("ddp_eager", eager_step(torch, ddp, torch.optim.SGD(ddp.parameters(), lr=0.01),
                                              x, target)))
        try:
            impls.append(("ddp_graph", ddp_graph(torch, ddp_of, widths, dropout, x, target)))
        except Exception as e:  # noqa: BLE001 - reported, the others still run
            say(log, rank, f"ERROR workload={name} impl=ddp_graph world={world} "
                           f"{type(e).__name__}: {str(e)[:200]}")
        for impl, fn in impls:
            dist.barrier()
            us, samples = time_events(fn, iters, max(iters // 10, 5))
            say(log, rank, f"RESULT workload={name} impl={impl} world={world} us={us:.3f} "
                           f"samples=" + ",".join(f"{s:.3f}" for s in samples))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
