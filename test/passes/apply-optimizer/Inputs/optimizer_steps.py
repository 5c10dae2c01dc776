#!/usr/bin/env python3
"""Three training steps of a small model through `cgc-opt --passes=autodiff,
apply-optimizer --interpret`, each step's parameter and optimizer-state
outputs fed back as the next step's inputs, compared with NumPy's
implementation of PyTorch's update rules (torch.optim.SGD, Adam, AdamW as
documented; written here independently of cgc's IR).

  optimizer_steps.py CGC_OPT WORKDIR '{"kind": "adam", "lr": 0.01, ...}'

Model: loss = mean((x @ w^T + b - y)^2), w f32[3,4], b f32[3], x [5,4].
Prints one line per step and "optimizer-steps: PASS" or exits 1.
"""
import json, os, struct, subprocess, sys

import numpy as np

DT = {"F32": np.float32, "I64": np.int64}


def write(path, tensors):
    header, off, blobs = {}, 0, []
    for k, a in tensors.items():
        a = np.array(a, order="C")  # ascontiguousarray would make a scalar 1-d
        header[k] = {"dtype": {np.float32: "F32", np.int64: "I64"}[a.dtype.type],
                     "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    out = {}
    for k, e in json.loads(data[8:8 + n]).items():
        if k != "__metadata__":
            s, t = e["data_offsets"]
            out[k] = np.frombuffer(data[8 + n + s:8 + n + t], DT[e["dtype"]]).reshape(e["shape"])
    return out


def grads(w, b, x, y):
    r = x @ w.T + b - y
    d = 2 * r / r.size
    return d.T @ x, d.sum(0)


def schedule_factor(schedule, t):
    """transformers' get_linear/cosine_schedule_with_warmup at update t (from 0)."""
    if not schedule:
        return 1.0
    w, total = schedule.get("warmup_steps", 0), schedule["total_steps"]
    if t < w:
        return t / max(1, w)
    progress = (t - w) / max(1, total - w)
    if schedule["kind"] == "linear":
        return max(0.0, (total - t) / max(1, total - w))
    return max(0.0, 0.5 * (1 + np.cos(np.pi * progress)))


def reference(opt, w, b, xs, y, steps):
    """PyTorch's rules (docs of torch.optim), in float64, with the training
    control of the declaration: the mean of `accumulate` gradients on every
    accumulate-th step, and no update at all when a gradient is not finite
    (skip_nonfinite)."""
    state = {"w": {}, "b": {}}
    params = {"w": w.astype(np.float64), "b": b.astype(np.float64)}
    out, k, t, acc = [], opt.get("accumulate", 1), 0, None
    norms = reference.norms = []  # the global gradient norm of each update
    for micro in range(1, steps + 1):
        gw, gb = grads(params["w"], params["b"], xs[micro - 1], y)
        acc = (gw, gb) if acc is None else (acc[0] + gw, acc[1] + gb)
        if micro % k:
            out.append((params["w"].copy(), params["b"].copy()))
            continue
        gw, gb = acc[0] / k, acc[1] / k
        acc = None
        if opt.get("max_grad_norm"):  # torch.nn.utils.clip_grad_norm_
            norm = np.sqrt(np.sum(gw * gw) + np.sum(gb * gb))
            norms.append(norm)
            coef = min(1.0, opt["max_grad_norm"] / (norm + 1e-6))
            gw, gb = gw * coef, gb * coef
        if opt.get("skip_nonfinite") and not (np.isfinite(gw).all() and np.isfinite(gb).all()):
            out.append((params["w"].copy(), params["b"].copy()))
            continue
        factor = schedule_factor(opt.get("schedule"), t)
        t += 1
        for name, g in (("w", gw), ("b", gb)):
            p, s = params[name], state[name]
            h = dict(opt)  # a group's hyperparameters over the declaration's
            for group in opt.get("groups", []):
                if name in group["params"]:
                    h.update(group)
            lr, wd = h["lr"] * factor, h.get("weight_decay", 0.0)
            if h["kind"] == "sgd":
                mu = h.get("momentum", 0.0)
                if wd:
                    g = g + wd * p
                if mu:
                    s["buf"] = g if "buf" not in s else mu * s["buf"] + g
                    g = g + mu * s["buf"] if h.get("nesterov") else s["buf"]
                p = p - lr * g
            else:
                b1, b2 = h.get("betas", [0.9, 0.999])
                eps = h.get("eps", 1e-8)
                if wd and h["kind"] == "adamw":
                    p = p * (1 - lr * wd)
                elif wd:
                    g = g + wd * p
                s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
                s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
                denom = np.sqrt(s["v"]) / np.sqrt(1 - b2 ** t) + eps
                p = p - lr / (1 - b1 ** t) * s["m"] / denom
            params[name] = p
        out.append((params["w"].copy(), params["b"].copy()))
    return out


def main():
    cgc_opt, work, opt = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    nan_step = opt.pop("nan_step", 0)  # a NaN in x at this step (1-based)
    steps = opt.pop("steps", 3)
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    y = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (3,)).astype(np.float32)
    model = {"format_version": 1, "name": "steps", "optimizer": opt,
             "inputs": [{"name": "x", "dtype": "f32", "shape": [5, 4]},
                        {"name": "y", "dtype": "f32", "shape": [5, 3]},
                        {"name": "w", "kind": "parameter", "dtype": "f32", "shape": [3, 4], "init": {"dist": "zeros"}},
                        {"name": "b", "kind": "parameter", "dtype": "f32", "shape": [3], "init": {"dist": "zeros"}}],
             "nodes": [{"name": "p", "op": "linear", "inputs": ["x", "w", "b"]},
                       {"name": "loss", "op": "mse_loss", "inputs": ["p", "y"]}],
             "outputs": [{"name": "loss", "value": "loss", "kind": "loss"}]}
    path = os.path.join(work, "model.json")
    json.dump(model, open(path, "w"))
    feed = {"x": x, "y": y, "w": w, "b": b}
    xs = [x.astype(np.float64) for _ in range(steps)]
    if nan_step:
        xs[nan_step - 1] = xs[nan_step - 1].copy()
        xs[nan_step - 1][0, 0] = np.nan
    want = reference(opt, w, b, xs, y.astype(np.float64), steps)
    ok = True
    for step, (ww, wb) in enumerate(want, 1):
        src, dst = os.path.join(work, f"in{step}.safetensors"), os.path.join(work, f"out{step}.safetensors")
        feed["x"] = xs[step - 1].astype(np.float32)
        write(src, feed)
        r = subprocess.run([cgc_opt, path, "--passes=autodiff,apply-optimizer", "--interpret",
                            "--inputs", src, "--outputs", dst, "--overwrite"], capture_output=True, text=True)
        if r.returncode:
            print(r.stderr)
            return 1
        got = read(dst)
        err = max(float(np.max(np.abs(got["w.next"] - ww))), float(np.max(np.abs(got["b.next"] - wb))))
        err = err if np.isfinite(err) else np.inf
        if "optimizer.grad_norm" in got:
            want_norm = reference.norms[step - 1]
            norm_err = abs(float(got["optimizer.grad_norm"]) - want_norm) / want_norm
            print(f"step {step}: gradient norm {float(got['optimizer.grad_norm']):.6g}, "
                  f"relative error {norm_err:.1e}")
            err = max(err, norm_err * 1e-2)  # 1e-3 relative on the norm
        print(f"step {step}: max |cgc - reference| = {err:.2e}")
        ok &= err < 1e-5
        # The updated parameters and optimizer state are the next inputs.
        for k, v in got.items():
            if k.endswith(".next"):
                feed[k[:-5]] = v
    changed = [i + 1 for i in range(1, len(want)) if not np.array_equal(want[i][0], want[i - 1][0])]
    print("reference updates after steps:", [1] * (not np.array_equal(want[0][0], w)) + changed)
    print("optimizer-steps:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
