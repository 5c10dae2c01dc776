#!/usr/bin/env python3
"""Writes test/python/train-fixtures/, what train_fixtures_test.py checks
cgc.compile_train's lowering on without PyTorch: each training program of
TRAINING below captured as compile_train captures it (capture_train, in
training mode with the loss), with PyTorch's parameters after STEPS
optimizer steps on fixed batches. For each, under train-fixtures/<name>/:

  program.json         the record (python/cgc/torch/record.py)
  weights.safetensors  the parameters' and buffers' values before training
  steps.safetensors    step<k>.<input> (the batch of step k, by the
                       record's input order: in0, in1, ...) and
                       after.<state_dict name>: PyTorch's parameters after
                       the last step; for a module in 16 bits also
                       f32.<state_dict name>: the same training of the
                       module in f32 from the same start (the yardstick of
                       16-bit training: PyTorch's own distance from f32)
  train.json           {"optimizer": describe_optimizer's description,
                        "trained": [names], "frozen": [names], "steps": k}

Needs PyTorch (CPU) and transformers (moe_adamw, hf_*). Rerun it after changing this file or the training
capture, and commit the folder.

Usage: PYTHONPATH=python make_train_fixtures.py [--out DIR] [--only NAME,...]
"""
import argparse
import copy
import json
import os
import shutil

import torch
import torch.nn.functional as F

from cgc.safetensors import write_safetensors
from cgc.torch.capture import capture_train
from cgc.train import describe_optimizer

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 3


class Tied(torch.nn.Module):
    """Two products sharing one weight, a frozen layer norm before them."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
        self.b.weight = self.a.weight
        self.head = torch.nn.Linear(8, 5)
        self.norm.requires_grad_(False)

    def forward(self, x):
        return self.head(F.gelu(self.b(torch.tanh(self.a(self.norm(x))))))


def small_cnn():
    """Convolutions, batch norm in training mode (running statistics
    updated), max and adaptive average pooling, a linear head."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, stride=2, padding=1),
                         nn.BatchNorm2d(6, momentum=0.3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(6, 5))


def cumulative_cnn():
    """Batch norms with momentum=None (a cumulative average of the batch
    statistics, 1 / num_batches_tracked), 2-D and 1-D."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4, momentum=None),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 6),
                         nn.BatchNorm1d(6, momentum=None), nn.Linear(6, 5))


class MixtureOfExperts(torch.nn.Module):
    """Mixtral's sparse block (transformers' own: router softmax, top-2,
    tokens sorted by expert, grouped products, the inverse permutation)
    between two linear layers."""

    def __init__(self):
        super().__init__()
        import transformers
        import transformers.integrations.moe  # noqa: F401 - registers grouped_mm_fallback
        from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
        config = transformers.MixtralConfig(hidden_size=16, intermediate_size=32,
                                            num_local_experts=4, num_experts_per_tok=2)
        config._experts_implementation = "grouped_mm"  # what its models set
        self.inp, self.head = torch.nn.Linear(6, 16), torch.nn.Linear(16, 4)
        self.moe = MixtralSparseMoeBlock(config)
        with torch.no_grad():  # (the block alone leaves its weights uninitialized; a
            for p in self.moe.parameters():  # router of zeros would tie every expert)
                p.normal_(0.0, 0.3)

    def forward(self, x):
        return self.head(self.moe(self.inp(x).unsqueeze(0)).squeeze(0))


def mlp(act):
    return torch.nn.Sequential(torch.nn.Linear(6, 16), act, torch.nn.Dropout(0.0),
                               torch.nn.Linear(16, 4))


def batches(x_shape, target):
    gen = torch.Generator().manual_seed(5)
    return [(torch.randn(x_shape, generator=gen), target(gen)) for _ in range(STEPS)]


def smoothed(out, y):
    return F.cross_entropy(out, y, label_smoothing=0.1, ignore_index=2)


class ByKeyword(torch.nn.Module):
    """A Hugging Face model called as (ids, mask): GPT-2's second positional
    argument is its cache, not the mask."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, mask):
        return self.model(input_ids=ids, attention_mask=mask)


def tiny_gpt2():
    import transformers
    return ByKeyword(transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16, use_cache=False,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)))


def tiny_bert():
    import transformers
    return ByKeyword(transformers.BertForSequenceClassification(transformers.BertConfig(
        num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
        vocab_size=64, max_position_embeddings=16, num_labels=3, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)))


def padded_batches(labels):
    """(ids, attention_mask, target) batches of 3 rows of 12 tokens: the
    first full, the second padded on the right, the third on the left (so
    that a causal model's tokens see padding, which only the mask hides),
    to random lengths; `labels(ids, mask, gen)` makes the target."""
    gen = torch.Generator().manual_seed(6)
    out = []
    for _ in range(STEPS):
        lengths = torch.randint(3, 12, (3,), generator=gen)
        lengths[0] = 12
        at = torch.arange(12)[None, :]
        mask = (at < lengths[:, None]).long()
        mask[2] = (at[0] >= 12 - lengths[2]).long()
        ids = torch.randint(1, 64, (3, 12), generator=gen) * mask
        out.append((ids, mask, labels(ids, mask, gen)))
    return out


def lm_loss(out, labels):
    """Next-token cross entropy, padding labelled -100 (ignored)."""
    logits = out.logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                           ignore_index=-100)


# name: (module, loss, optimizer factory, batches: tuples of the module's
# inputs, then the loss's)
TRAINING = {
    "mlp_sgd_nesterov": (lambda: mlp(torch.nn.ReLU()), F.mse_loss,
                         lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                                    weight_decay=0.01),
                         lambda: batches((5, 6), lambda g: torch.randn(5, 4, generator=g))),
    "mlp_adam_cross_entropy": (lambda: mlp(torch.nn.Tanh()), F.cross_entropy,
                               lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.1),
                               lambda: batches((7, 6), lambda g: torch.randint(0, 4, (7,),
                                                                                generator=g))),
    "tied_adamw_smoothing": (Tied, smoothed,
                             lambda ps: torch.optim.AdamW(ps, lr=0.02, betas=(0.8, 0.99)),
                             lambda: batches((6, 8), lambda g: torch.randint(0, 5, (6,),
                                                                              generator=g))),
    "cnn_sgd_batch_norm": (small_cnn, F.cross_entropy,
                           lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=5e-4),
                           lambda: batches((4, 3, 8, 8), lambda g: torch.randint(0, 5, (4,),
                                                                                 generator=g))),
    "cnn_sgd_cumulative_batch_norm": (cumulative_cnn, F.cross_entropy,
                                      lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
                                      lambda: batches((4, 3, 8, 8),
                                                      lambda g: torch.randint(0, 5, (4,),
                                                                              generator=g))),
    "moe_adamw": (MixtureOfExperts, F.cross_entropy, lambda ps: torch.optim.AdamW(ps, lr=0.01),
                  lambda: batches((7, 6), lambda g: torch.randint(0, 4, (7,), generator=g))),
    # Parameters in 16 bits (the module converted, no autocast): torch.optim
    # keeps the moments in f16 and rounds after each of its ops. f16 Adam
    # needs gradients whose (1 - beta2) g^2 stays above f16's smallest
    # values and an eps f16 holds (PyTorch adds eps in f16, where the
    # default 1e-8 is 0: every parameter turns NaN): targets of scale 4,
    # beta2 0.99 and eps 1e-3 keep PyTorch's f16 run within 6e-3 of its f32
    # one (with eps 1e-4, 0.1), a yardstick that tells a 20% error in lr.
    "mlp_f16_adamw": (lambda: mlp(torch.nn.GELU()).half(), F.mse_loss,
                      lambda ps: torch.optim.AdamW(ps, lr=0.01, betas=(0.9, 0.99),
                                                   weight_decay=0.1, eps=1e-3),
                      lambda: batches((7, 6), lambda g: 4 * torch.randn(7, 4, generator=g))),
    "mlp_f16_sgd_momentum": (lambda: mlp(torch.nn.Tanh()).half(), F.mse_loss,
                             lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                        weight_decay=0.01),
                             lambda: batches((5, 6), lambda g: torch.randn(5, 4, generator=g))),
    "mlp_adamw_groups": (lambda: mlp(torch.nn.GELU()), F.cross_entropy,
                         lambda ps: torch.optim.AdamW(groups_by_decay(ps), lr=0.01),
                         lambda: batches((7, 6), lambda g: torch.randint(0, 4, (7,),
                                                                          generator=g))),
    # Hugging Face models on padded variable-length batches (attention
    # masks; the language model's padding labelled -100). eps 1e-3: a key
    # bias's gradient is zero but for rounding (softmax ignores a shift of
    # a row of scores), which Adam with eps 1e-8 turns into steps of the
    # full learning rate, in cgc and PyTorch alike but with other signs.
    "hf_gpt2_padded_adamw": (tiny_gpt2, lm_loss,
                             lambda ps: torch.optim.AdamW(ps, lr=0.01, eps=1e-3),
                             lambda: padded_batches(lambda ids, mask, g: torch.where(
                                 mask.bool(), ids, torch.full_like(ids, -100)))),
    "hf_bert_padded_adamw": (tiny_bert, lambda out, y: F.cross_entropy(out.logits, y),
                             lambda ps: torch.optim.AdamW(groups_by_decay(ps), lr=0.01,
                                                          eps=1e-3),
                             lambda: padded_batches(lambda ids, mask, g: torch.randint(
                                 0, 3, (3,), generator=g))),
}


def groups_by_decay(params):
    """The fine-tuning recipe's param groups: weights with decay, biases
    without and at twice the learning rate."""
    params = list(params)
    return [{"params": [p for p in params if p.dim() > 1], "weight_decay": 0.1},
            {"params": [p for p in params if p.dim() <= 1], "weight_decay": 0.0, "lr": 0.02}]


def in_dtype(batch, dtype):
    """The batch's floating tensors in `dtype`."""
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in batch)


def train_on(module, loss_fn, optimizer, data):
    """Trains module on the batches (each cast to its dtype); the last
    tensor of a batch is the loss's, the others the module's."""
    dtype = next(module.parameters()).dtype
    for batch in data:
        optimizer.zero_grad()
        batch = in_dtype(batch, dtype)
        loss_fn(module(*batch[:-1]), batch[-1]).backward()
        optimizer.step()
    values = dict(module.state_dict())
    values.update(module.named_buffers())  # those outside the state_dict too (position ids)
    return {n: p.detach().numpy().copy() for n, p in values.items()}


def write_fixture(name, folder):
    make, loss_fn, make_opt, make_batches = TRAINING[name]
    torch.manual_seed(0)
    module = make()
    reference = copy.deepcopy(module).float()
    optimizer = make_opt([p for p in module.parameters() if p.requires_grad])
    data = make_batches()
    dtype = next(module.parameters()).dtype
    if dtype != torch.float32:
        data = [in_dtype(batch, dtype) for batch in data]
    record, weights = capture_train(module, loss_fn, data[0], len(data[0]) - 1, False)
    names = {}
    for n, p in module.named_parameters():
        names.setdefault(id(p), n)
    describe, trained = describe_optimizer(optimizer, names)
    frozen = [n for n in names.values() if n not in trained]
    os.makedirs(folder)
    with open(os.path.join(folder, "program.json"), "w") as f:
        json.dump(record, f, indent=1)
    write_safetensors(os.path.join(folder, "weights.safetensors"), weights)
    steps = {}
    for k, batch in enumerate(data, 1):
        for j, tensor in enumerate(batch):
            steps[f"step{k}.in{j}"] = tensor.numpy()
    for n, value in train_on(module, loss_fn, optimizer, data).items():
        steps["after." + n] = value
    if dtype != torch.float32:
        f32 = train_on(reference, loss_fn, make_opt(list(reference.parameters())), data)
        for n, value in f32.items():
            steps["f32." + n] = value
    write_safetensors(os.path.join(folder, "steps.safetensors"), steps)
    with open(os.path.join(folder, "train.json"), "w") as f:
        json.dump({"optimizer": describe, "trained": trained, "frozen": frozen,
                   "steps": STEPS}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "train-fixtures"))
    ap.add_argument("--only", default="", help="rewrite only these fixtures (comma-separated)")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(TRAINING)
    if not args.only:
        shutil.rmtree(args.out, ignore_errors=True)
    for name in names:
        shutil.rmtree(os.path.join(args.out, name), ignore_errors=True)
        write_fixture(name, os.path.join(args.out, name))
        print("wrote", name)


if __name__ == "__main__":
    main()
