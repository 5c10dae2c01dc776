"""train_gpu.py's checks of full-size Hugging Face training steps, as the
training issue asks for them (run by train_gpu.py, not on their own):

- BERT-base fine-tuning (BertForSequenceClassification, batch 8 x 128)
  and GPT-2 small language modelling (GPT2LMHeadModel, batch 4 x 256),
  both on padded variable-length batches (attention_mask; GPT-2's labels
  -100 on the padding), 200 AdamW steps on fixed (seeded) data, a batch
  of its own each step so that nothing is memorized and the loss stays
  away from 0, where a relative bound would measure nothing but rounding,
  dropout off, f32 without TF32: every loss within 1e-4 relative of
  PyTorch's on the same GPU and the parameters (as one vector) within
  1e-3 relative L2 after the last step;
- the small BERT and GPT-2 of train_gpu.py under bf16 and f16 autocast
  against torch.autocast (f16 with GradScaler), 20 AdamW steps: the
  parameters within twice PyTorch's own 16-bit-against-f32 distance, and
  every loss within 2e-2 relative or twice PyTorch's own 16-bit-against-
  f32 loss difference, whichever is larger.
"""
from train_gpu import LOSS_RTOL, PARAM_RL2, autocast_reference, global_rel_l2, rel_l2

FULL_STEPS = 200


def hf_models(torch):
    """(name, module factory, loss, batch factory, model inputs) of a small
    Hugging Face BERT classifier and GPT-2 language model (random weights
    from configs; dropout as given)."""
    import transformers
    F = torch.nn.functional
    vocab, seq = 1000, 32

    def bert(p):
        cfg = transformers.BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                                      intermediate_size=256, vocab_size=vocab, num_labels=3,
                                      hidden_dropout_prob=p, attention_probs_dropout_prob=p)
        return transformers.BertForSequenceClassification(cfg)

    def gpt2(p):
        cfg = transformers.GPT2Config(n_layer=2, n_embd=128, n_head=2, vocab_size=vocab,
                                      n_positions=64, resid_pdrop=p, embd_pdrop=p, attn_pdrop=p,
                                      use_cache=False)
        return transformers.GPT2LMHeadModel(cfg)

    def bert_batch(k):
        g = torch.Generator(device="cuda").manual_seed(200 + k)
        ids = torch.randint(0, vocab, (4, seq), device="cuda", generator=g)
        mask = torch.ones(4, seq, dtype=torch.long, device="cuda")
        mask[1, seq // 2:] = 0  # a padded sequence
        return ids, mask, torch.randint(0, 3, (4,), device="cuda", generator=g)

    def gpt2_batch(k):
        g = torch.Generator(device="cuda").manual_seed(300 + k)
        ids = torch.randint(0, vocab, (2, seq), device="cuda", generator=g)
        return ids, ids

    def lm_loss(out, ids):
        return F.cross_entropy(out.logits[:, :-1].reshape(-1, vocab), ids[:, 1:].reshape(-1))

    return [("hf_bert", bert, lambda out, y: F.cross_entropy(out.logits, y), bert_batch, 2),
            ("hf_gpt2", gpt2, lm_loss, gpt2_batch, 1)]


def fine_tuning_groups(model, head_lr=2e-3):
    """Hugging Face's fine-tuning recipe: no weight decay on biases and
    LayerNorm weights, and (here) the head at its own learning rate."""
    decay, plain, head = [], [], []
    for n, p in model.named_parameters():
        if "classifier" in n or "score" in n:
            head.append(p)
        elif n.endswith("bias") or "LayerNorm" in n or ".ln_" in n:
            plain.append(p)
        else:
            decay.append(p)
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": plain, "weight_decay": 0.0}]
    if head:
        groups.append({"params": head, "weight_decay": 0.01, "lr": head_lr})
    return groups


def check_hf(torch, cgc, spec, steps, say):
    """Dropout off: losses and parameters against PyTorch's; dropout on:
    the loss falls."""
    name, make, loss_fn, make_batch, inputs = spec
    torch.manual_seed(0)
    ours, theirs, cpu = make(0.0).cuda(), make(0.0).cuda(), make(0.0)
    theirs.load_state_dict(ours.state_dict())
    cpu.load_state_dict(ours.state_dict())
    opt_c, opt_t, opt_cpu = (torch.optim.AdamW(fine_tuning_groups(m), lr=1e-3)
                             for m in (ours, theirs, cpu))
    warmup = [torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / 5))
              for o in (opt_c, opt_t, opt_cpu)]
    step = cgc.compile_train(ours, loss_fn, opt_c, make_batch(0), inputs=inputs)
    ok, worst = True, 0.0
    for k in range(steps):
        batch = make_batch(k)
        got = float(step(*batch))
        for model, opt, args in ((theirs, opt_t, batch),
                                 (cpu, opt_cpu, [b.cpu() for b in batch])):
            opt.zero_grad()
            loss = loss_fn(model.train()(*args[:inputs]), *args[inputs:])
            loss.backward()
            opt.step()
            if model is theirs:
                want = loss
        for w in warmup:
            w.step()
        err = abs(got - float(want)) / max(abs(float(want)), 1e-12)
        worst = max(worst, err)
        if err > LOSS_RTOL:
            say(f"FAIL {name}: step {k} loss {got} against PyTorch's {float(want)}")
            ok = False
            break
    params = step.parameters()
    dist, worst_tensors = global_rel_l2(torch, params, theirs)
    # PyTorch's own spread: the same training on the CPU against the GPU's.
    spread, _ = global_rel_l2(torch, {n: p.detach().cuda() for n, p in cpu.named_parameters()},
                              theirs)
    ok &= dist < max(PARAM_RL2, 2 * spread)
    torch.manual_seed(0)
    dropping = make(0.1).cuda()
    opt_d = torch.optim.AdamW(dropping.parameters(), lr=1e-3)
    fixed = make_batch(0)
    dstep = cgc.compile_train(dropping, loss_fn, opt_d, fixed, inputs=inputs)
    first = float(dstep(*fixed))
    for _ in range(60):
        last = float(dstep(*fixed))
    falls = last < 0.5 * first
    ok &= falls
    say(f"{'OK' if ok else 'FAIL'} {name}: {steps} AdamW steps (param groups, warmup), max loss "
        f"rel err {worst:.2e}, "
        f"params rel L2 {dist:.2e} (PyTorch CPU against GPU: {spread:.2e}; largest per tensor: "
        f"{worst_tensors}); dropout 0.1: loss "
        f"{first:.3f} -> {last:.3f} in 60 steps")
    return ok




def padded_mask(torch, g, rows, seq):
    """An attention_mask of real lengths drawn from 16..seq (the first row
    full) that zeroes each row's padding on the right."""
    lengths = torch.randint(16, seq + 1, (rows,), device="cuda", generator=g)
    lengths[0] = seq
    mask = (torch.arange(seq, device="cuda")[None, :] < lengths[:, None]).long()
    return mask


def full_size_models(torch):
    """(name, module factory, loss, batch k's factory, learning rate) of the
    training issue's two real-model steps; each module takes (ids, mask)."""
    import transformers
    F = torch.nn.functional

    class ByKeyword(torch.nn.Module):
        """GPT-2's second positional argument is its cache, not the mask."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            return self.model(input_ids=ids, attention_mask=mask)

    def bert():
        cfg = transformers.BertConfig(num_labels=2, hidden_dropout_prob=0.0,
                                      attention_probs_dropout_prob=0.0)
        return ByKeyword(transformers.BertForSequenceClassification(cfg)), cfg.vocab_size

    def gpt2():
        cfg = transformers.GPT2Config(use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attn_pdrop=0.0)
        return ByKeyword(transformers.GPT2LMHeadModel(cfg)), cfg.vocab_size

    def bert_batch(vocab, k):
        g = torch.Generator(device="cuda").manual_seed(500 + k)
        mask = padded_mask(torch, g, 8, 128)
        ids = torch.randint(1, vocab, (8, 128), device="cuda", generator=g) * mask
        return ids, mask, torch.randint(0, 2, (8,), device="cuda", generator=g)

    def gpt2_batch(vocab, k):
        g = torch.Generator(device="cuda").manual_seed(600 + k)
        mask = padded_mask(torch, g, 4, 256)
        ids = torch.randint(0, vocab, (4, 256), device="cuda", generator=g)
        ids = torch.where(mask.bool(), ids, torch.full_like(ids, 50256))
        labels = torch.where(mask.bool(), ids, torch.full_like(ids, -100))
        return ids, mask, labels

    def lm_loss(out, labels):
        logits = out.logits[:, :-1]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                               ignore_index=-100)

    return [("bert_base", bert, lambda out, y: F.cross_entropy(out.logits, y), bert_batch,
             5e-5),
            ("gpt2_small", gpt2, lm_loss, gpt2_batch, 1e-4)]


def check_full_size(torch, cgc, spec, say, steps=FULL_STEPS):
    """cgc's step against PyTorch's on the same GPU from the same weights."""
    name, make, loss_fn, make_batch, lr = spec
    torch.manual_seed(0)
    ours, vocab = make()
    theirs, _ = make()
    theirs.load_state_dict(ours.state_dict())
    ours, theirs = ours.cuda().train(), theirs.cuda().train()
    opt_c, opt_t = (torch.optim.AdamW(fine_tuning_groups(m, head_lr=2 * lr), lr=lr)
                    for m in (ours, theirs))
    warmup = [torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / 20))
              for o in (opt_c, opt_t)]
    step = cgc.compile_train(ours, loss_fn, opt_c, make_batch(vocab, 0), inputs=2)
    ok, worst, trail = True, 0.0, []
    for k in range(steps):
        batch = make_batch(vocab, k)
        got = float(step(*batch))
        opt_t.zero_grad()
        want = loss_fn(theirs(*batch[:2]), batch[2])
        want.backward()
        opt_t.step()
        want = float(want)
        for w in warmup:
            w.step()
        err = abs(got - want) / max(abs(want), 1e-12)
        worst = max(worst, err)
        if k % 50 == 0 or k == steps - 1:
            trail.append(f"{k}:{got:.4f}/{want:.4f}")
        if err > LOSS_RTOL:
            say(f"FAIL {name}: step {k} loss {got} against PyTorch's {want}")
            ok = False
            break
    dist, worst_tensors = global_rel_l2(torch, step.parameters(), theirs)
    ok &= dist < PARAM_RL2
    say(f"{'OK' if ok else 'FAIL'} {name}: {steps} AdamW steps on seeded padded batches, "
        f"max loss rel err {worst:.2e}, params rel L2 {dist:.2e} (largest per tensor: "
        f"{worst_tensors}); losses cgc/PyTorch by step: {' '.join(trail)}")
    return ok


def check_autocast_hf(torch, cgc, spec, dtype, say, steps=20):
    """A small Hugging Face model under autocast: cgc against torch.autocast
    (f16 with GradScaler), PyTorch's own 16-bit-against-f32 distance the
    yardstick for parameters and losses."""
    name, make, loss_fn, make_batch, inputs = spec
    data = [make_batch(k) for k in range(steps)]

    def module():
        torch.manual_seed(0)
        return make(0.0).cuda().train()

    ref32, losses32 = autocast_reference(torch, module, loss_fn, data, inputs, None)
    ref16, losses16 = autocast_reference(torch, module, loss_fn, data, inputs, dtype)
    m = module()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    step = cgc.compile_train(m, loss_fn, opt, data[0], inputs=inputs, autocast=dtype)
    losses = [float(step(*batch)) for batch in data]
    step.copy_to(m)
    got = torch.cat([p.detach().reshape(-1) for p in m.parameters()])
    spread, d = rel_l2(ref16, ref32), rel_l2(got, ref16)
    rel = lambda a, b: abs(a - b) / max(abs(b), 1e-6)  # noqa: E731
    loss_spread = max(rel(a, b) for a, b in zip(losses16, losses32))
    worst = max(rel(a, b) for a, b in zip(losses, losses16))
    ok = d <= 2 * spread and worst <= max(2e-2, 2 * loss_spread)
    say(f"{'OK' if ok else 'FAIL'} autocast {dtype} {name} ({steps} AdamW steps): parameters "
        f"{d:.2e} rel L2 from PyTorch's autocast (its own 16-bit-f32 distance {spread:.2e}), "
        f"losses within {worst:.2e} (PyTorch's own {loss_spread:.2e})")
    return ok


def checks(torch, cgc, only, say):
    """The checks whose name holds `only`, each a callable returning whether
    it passed: the small models, the full-size ones, then autocast."""
    out = [(lambda spec=spec: check_hf(torch, cgc, spec, 20, say))
           for spec in hf_models(torch) if only in spec[0]]
    out += [(lambda spec=spec: check_full_size(torch, cgc, spec, say))
            for spec in full_size_models(torch) if only in spec[0]]
    out += [(lambda spec=spec, dtype=dtype: check_autocast_hf(torch, cgc, spec, dtype, say))
            for spec in hf_models(torch)
            for dtype, label in ((torch.bfloat16, "bf16"), (torch.float16, "f16"))
            if only in f"autocast {label} {spec[0]}"]
    return out
