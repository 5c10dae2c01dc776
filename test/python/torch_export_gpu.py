#!/usr/bin/env python3
"""cgc.export on ordinary nn.Modules, checked on the GPU machine (PyTorch is
there, not on the CPU machine): each module is exported, compiled with
`cgc` and run with `cgc run` on random inputs, and its outputs compared
with the module's own (f32, rtol 1e-4 + atol 1e-5 of the largest output).
Prints one line per model; a module using torch.sort must be refused by
name with its source line. Exit status 1 if any is wrong or fails to
export or compile, 77 without PyTorch.

Usage: torch_export_gpu.py --cgc PATH [--work DIR]
"""
import argparse, os, subprocess, sys, tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def models(torch):
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(64, 256), nn.Linear(256, 64)
            self.ln = nn.LayerNorm(64)

        def forward(self, x):
            return self.ln(x + self.fc2(nn.functional.gelu(self.fc1(x))))

    class EncoderLayer(nn.Module):
        def __init__(self, d=64, heads=4):
            super().__init__()
            self.heads, self.d = heads, d
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            b, s, d = x.shape
            h = self.ln1(x)
            q, k, v = self.qkv(h).split(d, dim=-1)
            split = lambda t: t.view(b, s, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
            q, k, v = split(q), split(k), split(v)
            att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
            ctx = (self.drop(att) @ v).transpose(1, 2).reshape(b, s, d)
            x = x + self.out(ctx)
            return x + self.ff(self.ln2(x))

    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 32)
            self.head = nn.Linear(32, 10)

        def forward(self, tokens):
            return torch.log_softmax(self.head(self.emb(tokens).mean(dim=1)), dim=-1)

    class IntDivision(nn.Module):  # PyTorch's promotion: int / int is float
        def forward(self, x):
            return x / 3 + x * 0.5 + (x > 2.5).float()

    gen = torch.Generator().manual_seed(0)
    yield "mlp", MLP(), (torch.randn(8, 64, generator=gen),), None
    yield "encoder_layer", EncoderLayer(), (torch.randn(2, 16, 64, generator=gen),), None
    yield "embedding_pool", Pool(), (torch.randint(0, 100, (4, 12), generator=gen),), None
    yield "int_division", IntDivision(), (torch.randint(-50, 50, (16,), generator=gen),), None
    batch = torch.export.Dim("B", min=1, max=32)
    yield "mlp_dynamic_batch", MLP(), (torch.randn(5, 64, generator=gen),), ({0: batch},)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--work")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed")
        return 77
    import cgc
    from cgc.safetensors import read_safetensors, write_safetensors
    work = args.work or tempfile.mkdtemp(prefix="cgc-export-")
    os.makedirs(work, exist_ok=True)
    bad = 0
    for name, module, inputs, dynamic in models(torch):
        module.eval()
        path = os.path.join(work, name + ".json")
        try:
            ir = cgc.export(module, inputs, path, dynamic_shapes=dynamic)
        except Exception as e:  # noqa: BLE001 - reported per model
            print(f"FAIL {name}: export: {type(e).__name__}: {e}")
            bad += 1
            continue
        art = os.path.join(work, name + ".cgc")
        r = subprocess.run([args.cgc, path, "-o", art], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {name}: compile: {r.stderr.strip()[-400:]}")
            bad += 1
            continue
        user = [i["name"] for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"]
        feed = {n: t.numpy() for n, t in zip(user, inputs)}
        write_safetensors(os.path.join(work, name + ".in.safetensors"), feed)
        out = os.path.join(work, name + ".out.safetensors")
        r = subprocess.run([args.cgc, "run", art, "--inputs", os.path.join(work, name + ".in.safetensors"),
                            "--outputs", out, "--overwrite"], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {name}: run: {r.stderr.strip()[-400:]}")
            bad += 1
            continue
        with torch.no_grad():
            want = module(*inputs)
        want = [want] if isinstance(want, torch.Tensor) else list(want)
        got = read_safetensors(out)
        names = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
        for k, (o, w) in enumerate(zip(names, want)):
            w = w.numpy()
            g = got.get(o)
            tol = 1e-4 * np.abs(w).max() + 1e-5
            diff = np.abs(g - w).max() if g is not None and g.shape == w.shape else None
            ok = diff is not None and diff <= tol + 1e-4 * np.abs(w).max()
            nodes = len(ir["nodes"])
            print(f"{'OK' if ok else 'FAIL'} {name}: output {o} max abs diff "
                  f"{diff if diff is not None else 'shape ' + str(None if g is None else g.shape)} "
                  f"(tol {tol:.2g}; {nodes} IR nodes{', dims ' + str(ir.get('dims')) if ir.get('dims') else ''})")
            bad += 0 if ok else 1
    # An op with no mapping is refused by name, with the user's line.
    class Sorts(torch.nn.Module):
        def forward(self, x):
            return torch.sort(x).values

    try:
        cgc.export(Sorts(), (torch.randn(4),), os.path.join(work, "sorts.json"))
        print("FAIL refusal: torch.sort was exported")
        bad += 1
    except cgc.RefusedError as e:
        ok = "has no cgc mapping" in str(e) and "torch_export_gpu.py:" in str(e)
        print(f"{'OK' if ok else 'FAIL'} refusal: {e}")
        bad += 0 if ok else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
