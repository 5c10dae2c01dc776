#!/usr/bin/env python3
"""Data-parallel training on several GPUs of one host (docs/distributed.md),
one process per GPU, launched by torchrun (scripts/gpu-run.sh runs it when
more than one GPU is visible):

    torchrun --nproc-per-node=N test/python/distributed_gpu.py --cgc PATH

Each rank compiles the same cgc.compile_train step with data_parallel and
trains an MLP (f32, TF32 off; SGD with momentum, weight decay and
clipping) for 20 steps on its shard of a global batch. Checked:
- the parameters are bitwise equal on every rank after every step (an
  all-gather of their bytes);
- they match PyTorch training the same module on one GPU on the whole
  global batch within 1e-5 relative L2 (the all-reduce sums in NCCL's
  order: f32 rounding);
- with bf16 on the wire (`dtype: "bf16"`), within 1e-2;
- with accumulate=2 (each rank's shard as two micro-batches: the
  micro-step graph, then the one that reduces), within 1e-5;
- a rank that compiled another artifact (another bucket size) makes every
  rank's join fail with "the ranks loaded different artifacts";
- a rank that stops (it returns without its next step) makes the other
  ranks' next step fail with a cgc error within the watchdog's timeout
  (5 s here) instead of hanging.

Exit status 1 on a failed check; 77 without PyTorch, two GPUs or torchrun.
"""
import argparse, os, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cuda_torch import SKIPPED, cuda_torch  # noqa: E402

STEPS, PER_RANK = 20, 16
failures = []


def check(ok, what):
    print(("OK   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def rel_l2(a, b):
    return float((a.double() - b.double()).norm() / max(float(b.double().norm()), 1e-30))


def mlp(torch, seed):
    torch.manual_seed(seed)
    nn = torch.nn
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10)).cuda()


def batches(torch, world):
    g = torch.Generator(device="cuda").manual_seed(1234)
    return [(torch.randn(PER_RANK * world, 64, device="cuda", generator=g),
             torch.randint(0, 10, (PER_RANK * world,), device="cuda", generator=g))
            for _ in range(STEPS)]


def optimizer_of(torch, module):
    return torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)


def flat(module):
    import torch
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


def reference(torch, world):
    """PyTorch on one GPU, the whole global batch, the same recipe."""
    module = mlp(torch, seed=0)
    opt = optimizer_of(torch, module)
    for x, y in batches(torch, world):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(module(x), y).backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        opt.step()
    return flat(module)


def train(cgc, torch, dist, rank, world, options, steps=STEPS, accumulate=None):
    # Each rank starts from other weights: the step must broadcast rank 0's.
    module = mlp(torch, seed=rank)
    opt = optimizer_of(torch, module)
    data = batches(torch, world)
    shard = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    k = accumulate or 1
    micro = PER_RANK // k
    step = cgc.compile_train(module, torch.nn.functional.cross_entropy, opt,
                             (data[0][0][shard][:micro], data[0][1][shard][:micro]),
                             max_grad_norm=1.0, data_parallel=options, accumulate=accumulate)
    equal = True
    for x, y in data[:steps]:
        for m in range(k):
            part = slice(rank * PER_RANK + m * micro, rank * PER_RANK + (m + 1) * micro)
            step(x[part], y[part])
        step.copy_to(module)
        mine = flat(module)
        gathered = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(gathered, mine)
        equal &= all(torch.equal(g, gathered[0]) for g in gathered)
    return flat(module), equal


def different_artifacts(cgc, torch, rank, world):
    module = mlp(torch, seed=0)
    opt = optimizer_of(torch, module)
    x, y = torch.randn(PER_RANK, 64, device="cuda"), torch.randint(0, 10, (PER_RANK,), device="cuda")
    try:
        cgc.compile_train(module, torch.nn.functional.cross_entropy, opt, (x, y),
                          data_parallel={"bucket_mb": 25 if rank == 0 else 0.01})
        return "joined"
    except Exception as e:  # noqa: BLE001 - the message is what is checked
        return str(e)


def lost_peer(cgc, torch, dist, rank, world):
    module = mlp(torch, seed=0)
    opt = optimizer_of(torch, module)
    x, y = torch.randn(PER_RANK, 64, device="cuda"), torch.randint(0, 10, (PER_RANK,), device="cuda")
    step = cgc.compile_train(module, torch.nn.functional.cross_entropy, opt, (x, y),
                             data_parallel={"timeout_s": 5})
    step(x, y)
    torch.cuda.synchronize()
    dist.barrier()
    if rank == world - 1:
        return "stopped"  # This rank takes no further step.
    start = time.time()
    try:
        for _ in range(3):
            step(x, y)
            torch.cuda.synchronize()
            time.sleep(2)
        return "no error"
    except Exception as e:  # noqa: BLE001
        return f"{time.time() - start:.1f}s: {e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    args = ap.parse_args()
    torch = cuda_torch()
    if torch is None or "WORLD_SIZE" not in os.environ:
        print("skipped: needs PyTorch, CUDA and torchrun")
        return SKIPPED
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ["CGC"] = args.cgc
    import cgc
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.backends.cuda.matmul.allow_tf32 = False
    dist.init_process_group("nccl")
    want = reference(torch, world)
    got, equal = train(cgc, torch, dist, rank, world, True)
    check(equal, f"rank {rank}: parameters bitwise equal on {world} ranks after every step")
    d = rel_l2(got, want)
    check(d < 1e-5, f"rank {rank}: {STEPS} steps on {world} GPUs vs one GPU on the global "
                    f"batch: rel L2 {d:.2e} (< 1e-5)")
    got, equal = train(cgc, torch, dist, rank, world, {"dtype": "bf16", "bucket_mb": 0.1})
    d = rel_l2(got, want)
    check(equal and d < 1e-2, f"rank {rank}: bf16 on the wire, small buckets: rel L2 {d:.2e} "
                              f"(< 1e-2), ranks equal {equal}")
    got, equal = train(cgc, torch, dist, rank, world, True, accumulate=2)
    d = rel_l2(got, want)
    check(equal and d < 1e-5, f"rank {rank}: accumulate=2: rel L2 {d:.2e} (< 1e-5), "
                              f"ranks equal {equal}")
    message = different_artifacts(cgc, torch, rank, world)
    check("different artifacts" in message,
          f"rank {rank}: another artifact on one rank is refused: {message[:200]}")
    dist.barrier()
    outcome = lost_peer(cgc, torch, dist, rank, world)
    check(outcome == "stopped" or ("collective" in outcome or "NCCL" in outcome),
          f"rank {rank}: a stopped peer: {outcome[:300]}")
    print(f"distributed_gpu: rank {rank}: {len(failures)} failures", flush=True)
    os._exit(1 if failures else 0)  # The lost peer's communicator is aborted.


if __name__ == "__main__":
    sys.exit(main())
