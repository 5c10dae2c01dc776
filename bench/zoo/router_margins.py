#!/usr/bin/env python3
"""How close a mixture of experts' routing is to a tie: for a zoo entry,
each router's logits in f32 on the CPU, the smallest margin per token
between the last expert chosen and the first one left out (absolute and
relative to the logits), against bf16's spacing, and the tokens that eager
bf16 routes to other experts than eager f32.

  bench/zoo/router_margins.py ENTRY [--top-k K]

A margin under bf16's relative spacing (2^-8) means that any bf16
implementation may route that token either way: an output that differs
from eager's by an expert's contribution is then not a wrong kernel. The
routers are found by their class name (transformers' `*TopKRouter`, whose
forward returns the logits last) or, failing that, as `nn.Linear` modules
named `gate` or `router`.
"""
import argparse
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from entries import ENTRIES  # noqa: E402


def routers(module):
    found = [(n, m) for n, m in module.named_modules() if type(m).__name__.endswith("TopKRouter")]
    if found:
        return found, (lambda out: out[-1])
    linear = [(n, m) for n, m in module.named_modules()
              if isinstance(m, torch.nn.Linear) and n.rsplit(".", 1)[-1] in ("gate", "router")]
    return linear, (lambda out: out)


def router_logits(module, args, kwargs, dtype):
    """{router name: [tokens, experts] f32 logits} of one eager call in dtype."""
    found, logits_of = routers(module)
    seen, hooks = {}, []

    def keep(name):
        def hook(m, inputs, out):  # returns None: the output stays the module's
            seen.setdefault(name, logits_of(out).detach().float())
        return hook
    for name, m in found:
        hooks.append(m.register_forward_hook(keep(name)))

    def cast(x):
        return x.to(dtype) if torch.is_tensor(x) and x.is_floating_point() else x
    with torch.no_grad():
        module(*map(cast, args), **{k: cast(v) for k, v in kwargs.items()})
    for h in hooks:
        h.remove()
    return {n: v.reshape(-1, v.shape[-1]) for n, v in seen.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("entry")
    ap.add_argument("--top-k", type=int, default=2)
    args = ap.parse_args()
    entry = next(e for e in ENTRIES if e.name == args.entry)
    module, (call_args, call_kwargs) = entry.build(torch)
    f32 = router_logits(module, call_args, call_kwargs, torch.float32)
    bf16 = router_logits(copy.deepcopy(module).to(torch.bfloat16), call_args, call_kwargs,
                         torch.bfloat16)
    if not f32:
        sys.exit(f"router_margins: {args.entry}: no router found")
    k = args.top_k
    for name, logits in f32.items():
        ranked = logits.sort(-1, descending=True).values
        margin = ranked[:, k - 1] - ranked[:, k]
        relative = margin / ranked.abs().max(-1).values
        t = int(relative.argmin())
        chosen = logits.topk(k, -1).indices.sort(-1).values
        chosen16 = bf16[name].topk(k, -1).indices.sort(-1).values
        moved = (chosen != chosen16).any(-1).nonzero().flatten().tolist()
        print(f"{name}: {logits.shape[0]} tokens x {logits.shape[1]} experts; smallest margin "
              f"token {t}: {margin[t]:.3e} ({relative[t]:.2e} of its largest logit; bf16 "
              f"spacing {2 ** -8:.2e}); eager bf16 routes tokens {moved} elsewhere")
        for i in moved:
            print(f"  token {i}: f32 {[round(x, 4) for x in logits[i].tolist()]} "
                  f"bf16 {[round(x, 4) for x in bf16[name][i].tolist()]}")


if __name__ == "__main__":
    main()
