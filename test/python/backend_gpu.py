#!/usr/bin/env python3
"""torch.compile(model, backend="cgc") on the GPU machine against eager
PyTorch on the same inputs (f32, TF32 off: within 1e-4 relative to each
output's largest magnitude; bf16: within 2x eager bf16's own difference
from eager f32, + 1e-6):

- the backend is found by name (the wheel's torch_dynamo_backends entry
  point);
- an op cgc has no mapping for in the middle of a model: two cgc parts
  and that op in PyTorch, cgc.explain naming it with its source line;
- a view of an input that the model returns still aliases the input;
- a non-contiguous input to a part (a transpose computed in PyTorch);
- a tiny BERT and Llama (transformers, random weights) in f32 and bf16,
  entirely in cgc, with a second call on new inputs;
- dynamic sizes: Dynamo's dynamic graph (after a call at a new size)
  in cgc parts over padded dims, within the f32 bound at every size,
  and a batch past the dim's max run by PyTorch;
- a training step (grad mode on): the loss of a tiny BERT within 1e-4
  relative of eager's, every parameter's gradient within 1e-4 of the
  largest gradient;
- nn.TransformerEncoder's inference fast path (its fused op, a padding
  mask) in cgc.

Usage: backend_gpu.py --cgc PATH [--only TEXT]
Exit status 1 on a failed check; 77 without PyTorch or a GPU.
"""
import argparse
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cuda_torch import SKIPPED, cuda_torch  # noqa: E402

F32_RTOL = 1e-4


def relative(torch, got, want):
    scale = want.float().abs().max().clamp_min(1e-30)
    return ((got.float() - want.float()).abs().max() / scale).item()


def leaves(torch, value):
    if isinstance(value, torch.Tensor):
        return [value]
    if hasattr(value, "to_tuple"):
        value = value.to_tuple()
    if isinstance(value, dict):
        value = list(value.values())
    return [t for v in value for t in leaves(torch, v)] if isinstance(value, (list, tuple)) \
        else []


def compiled(torch, model, reports):
    torch._dynamo.reset()
    return torch.compile(model, backend="cgc", dynamic=False, options={"report": reports})


def report(name, problem, say):
    say(f"{'FAIL' if problem else 'OK'} {name}{': ' + problem if problem else ''}")
    return not problem


def check_erfcx(torch, cgc, say):
    class Erfcx(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(64, 128), torch.nn.Linear(128, 32)

        def forward(self, x):
            return self.b(torch.special.erfcx(torch.relu(self.a(x)))).softmax(-1)
    model = Erfcx().cuda().eval()
    x = torch.randn(8, 64, device="cuda")
    reports = []
    with torch.no_grad():
        got, want = compiled(torch, model, reports)(x), model(x)
        explained = str(cgc.explain(model, x))
    parts = [p for r in reports for p in r.parts]
    problem = ""
    if len(parts) != 2:
        problem = f"{len(parts)} cgc parts, expected 2"
    elif "special_erfcx" not in explained or "backend_gpu.py:" not in explained:
        problem = f"cgc.explain does not name erfcx with its line: {explained}"
    elif relative(torch, got, want) > F32_RTOL:
        problem = f"error {relative(torch, got, want):.2e}"
    return report("an unmapped op between two cgc parts", problem, say)


def check_views(torch, say):
    class Views(torch.nn.Module):
        def forward(self, x, w):
            y = torch.tanh(x.t() @ w)       # the transpose is cgc's (a copy)
            return x.t(), y.t().sin()       # a view of x; a non-contiguous y^T
    model = Views()
    x, w = torch.randn(32, 16, device="cuda"), torch.randn(32, 24, device="cuda")
    with torch.no_grad():
        alias, got = compiled(torch, model, [])(x, w)
        _, want = model(x, w)
    problem = ""
    if alias.data_ptr() != x.data_ptr() or alias.stride() != x.t().stride():
        problem = "the returned x.t() is not a view of x"
    elif relative(torch, got, want) > F32_RTOL:
        problem = f"error {relative(torch, got, want):.2e}"
    return report("a returned view of an input, a non-contiguous part input", problem, say)


def tiny_models(torch):
    import transformers
    bert = transformers.BertModel(transformers.BertConfig(
        num_hidden_layers=2, hidden_size=128, num_attention_heads=4, intermediate_size=256,
        vocab_size=1000, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    llama = transformers.LlamaModel(transformers.LlamaConfig(
        num_hidden_layers=2, hidden_size=128, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=256, vocab_size=1000, use_cache=False))
    return [("bert", bert), ("llama", llama)]


def token_inputs(torch, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 1000, (2, 32), generator=g)
    mask = torch.ones(2, 32, dtype=torch.long)
    mask[1, 20:] = 0
    return {"input_ids": ids.cuda(), "attention_mask": mask.cuda()}


def check_transformers(torch, say):
    ok = True
    for name, model in tiny_models(torch):
        model = model.cuda().eval()
        for dtype in (torch.float32, torch.bfloat16):
            typed = copy.deepcopy(model).to(dtype)
            reports = []
            fn = compiled(torch, typed, reports)
            problem = ""
            for seed in (0, 1):
                kwargs = token_inputs(torch, seed)
                with torch.no_grad():
                    want = leaves(torch, model(**kwargs))[0]
                    got = leaves(torch, fn(**kwargs))[0]
                    eager = leaves(torch, typed(**kwargs))[0]
                error = relative(torch, got, want)
                bound = F32_RTOL if dtype == torch.float32 else \
                    2 * relative(torch, eager, want) + 1e-6
                if error > bound:
                    problem = f"call {seed}: error {error:.2e} > {bound:.2e}"
            kept = {op for r in reports for op, _, _ in r.kept_out.values()
                    if "view" not in op and "permute" not in op}
            if not problem and kept:
                problem = f"left to PyTorch: {sorted(kept)}"
            ok &= report(f"{name} {str(dtype)[6:]}", problem, say)
    return ok


def check_dynamic(torch, say):
    """Calls at new sizes: Dynamo's dynamic graph, cgc's padded dims; a
    batch past the dim's max (64 by the default policy) runs in PyTorch."""
    model = tiny_models(torch)[0][1].cuda().eval()
    torch._dynamo.reset()
    reports = []
    fn = torch.compile(model, backend="cgc", options={"report": reports})
    problem = ""
    for batch, seq in ((2, 32), (3, 40), (2, 17), (4, 64), (80, 16)):
        g = torch.Generator().manual_seed(batch * 100 + seq)
        ids = torch.randint(1, 1000, (batch, seq), generator=g).cuda()
        mask = torch.ones(batch, seq, dtype=torch.long, device="cuda")
        mask[0, seq // 2:] = 0
        with torch.no_grad():
            got = leaves(torch, fn(input_ids=ids, attention_mask=mask))[0]
            want = leaves(torch, model(input_ids=ids, attention_mask=mask))[0]
        if relative(torch, got, want) > F32_RTOL:
            problem = problem or f"at {batch}x{seq}: error {relative(torch, got, want):.2e}"
    dynamic = [r for r in reports if len(r.parts) > 0 and r.graph != reports[0].graph]
    if not problem and not dynamic:
        problem = "no dynamic graph was compiled into cgc parts"
    return report("dynamic sizes (padded dims, a batch past the max)", problem, say)


def check_training(torch, say):
    model = tiny_models(torch)[0][1].cuda().train()
    reference = copy.deepcopy(model)
    kwargs = token_inputs(torch, 2)
    # A loss that a layer norm's output does not make constant (the mean
    # square of one with unit weight is, which leaves only rounding noise
    # for gradients).
    probe = torch.randn(2, 32, 128, generator=torch.Generator().manual_seed(3)).cuda()
    fn = compiled(torch, model, [])
    loss = (leaves(torch, fn(**kwargs))[0] * probe).sum()
    loss.backward()
    want = (leaves(torch, reference(**kwargs))[0] * probe).sum()
    want.backward()
    problem = ""
    if abs(loss.item() - want.item()) > F32_RTOL * abs(want.item()):
        problem = f"loss {loss.item()} against {want.item()}"
    # Relative to the largest gradient of any parameter: some are 0 but for
    # rounding (a key bias's, which softmax cancels), whose own scale is noise.
    scale = max(q.grad.abs().max().item() for q in reference.parameters() if q.grad is not None)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        # A parameter the loss does not reach (the pooler's) has no gradient
        # in eager and a zero one through AOTAutograd, as under any backend.
        got = p.grad if p.grad is not None else torch.zeros_like(p)
        want = q.grad if q.grad is not None else torch.zeros_like(q)
        if (got - want).abs().max().item() > F32_RTOL * scale:
            problem = problem or (f"{name}: gradient error "
                                  f"{(got - want).abs().max().item() / scale:.2e}")
    return report("a training step (forward and backward graphs)", problem, say)


def check_encoder(torch, say):
    layer = torch.nn.TransformerEncoderLayer(256, 4, 512, batch_first=True, norm_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).cuda().eval()
    x = torch.randn(2, 48, 256, device="cuda")
    padding = torch.zeros(2, 48, dtype=torch.bool, device="cuda")
    padding[1, 40:] = True
    reports = []
    with torch.no_grad():
        got = compiled(torch, model, reports)(x, src_key_padding_mask=padding)
        want = model(x, src_key_padding_mask=padding)
    kept = {op for r in reports for op, _, _ in r.kept_out.values()}
    problem = f"left to PyTorch: {sorted(kept)}" if kept else ""
    if not problem and relative(torch, got, want) > F32_RTOL:
        problem = f"error {relative(torch, got, want):.2e}"
    return report("nn.TransformerEncoder's fast path", problem, say)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", default="")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    torch = cuda_torch()
    if torch is None:
        return SKIPPED
    if args.cgc:
        os.environ["CGC"] = args.cgc
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    import cgc
    checks = {"erfcx": lambda: check_erfcx(torch, cgc, print),
              "views": lambda: check_views(torch, print),
              "transformers": lambda: check_transformers(torch, print),
              "training": lambda: check_training(torch, print),
              "dynamic": lambda: check_dynamic(torch, print),
              "encoder": lambda: check_encoder(torch, print)}
    ok = True
    for name, check in checks.items():
        if args.only in name:
            try:
                ok &= check()
            except Exception as e:  # noqa: BLE001 - a crash is a failed check
                import traceback
                traceback.print_exc()
                ok &= report(name, f"{type(e).__name__}: {e}", print)
    print("backend_gpu:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
