#!/usr/bin/env python3
"""Writes generate-fixtures/: for small random decoders (Llama with
grouped-query heads, GPT-2, Mixtral's mixture of experts), the program records of their prompt
steps (prefill.json at max_prompt, prefill_wW.json at the narrower prompt buckets W) and
decoding step (cgc.torch.generation.capture_step), their weights, a
left- and right-padded batch of prompts, the generation settings and
transformers' greedy generate (tokens and scores, f32 on the CPU), for
generate_fixtures_test.py, which runs without PyTorch. Needs torch and
transformers; rerun it when the records' format changes.

Usage: PYTHONPATH=python make_generate_fixtures.py [OUT_DIR]
"""
import json
import os
import sys

import torch
from transformers import GPT2Config, LlamaConfig, MixtralConfig, AutoModelForCausalLM

from cgc.generate import penalty_skips_padding
from cgc.safetensors import write_safetensors
from cgc.torch.generation import capture_step

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH, PROMPT, NEW = 3, 7, 6
# Prompt widths of a graph each (compile_generate's prompt_buckets): the
# narrow prompts (5 columns) fit 5, the rows left-out batch 7.
BUCKETS = (4, 5, PROMPT)
SAMPLING = {"do_sample": True, "temperature": 0.7, "top_k": 12, "top_p": 0.8}


def models():
    return {
        "llama_gqa": (LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, vocab_size=64,
                                  max_position_embeddings=64),
                      {"eos_token_id": [33, 47], "min_new_tokens": 2, "repetition_penalty": 1.3}),
        "gpt2": (GPT2Config(n_layer=2, n_embd=32, n_head=2, n_positions=64, vocab_size=64),
                 {"eos_token_id": [18, 63]}),
        # A mixture of experts: top-2 routing and grouped products per step.
        "mixtral": (MixtralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, vocab_size=64,
                                  max_position_embeddings=64, num_local_experts=4,
                                  num_experts_per_tok=2),
                    {"eos_token_id": [21]}),
    }


def prompts(vocab):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(1, vocab, (BATCH, PROMPT), generator=g)
    mask = torch.ones(BATCH, PROMPT, dtype=torch.long)
    mask[0, :3] = 0   # left-padded
    mask[2, 5:] = 0   # right-padded
    ids[mask == 0] = 0  # the pad id, as a tokenizer pads
    return ids, mask


def left_aligned(ids, mask):
    out_ids, out_mask = torch.zeros_like(ids), torch.zeros_like(mask)
    for r in range(ids.shape[0]):
        real = ids[r][mask[r].bool()]
        out_ids[r, ids.shape[1] - real.numel():] = real
        out_mask[r, ids.shape[1] - real.numel():] = 1
    return out_ids, out_mask


def write_fixture(name, config, generation, folder):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval().requires_grad_(False)
    model.generation_config.pad_token_id = 0
    os.makedirs(folder, exist_ok=True)
    weights = {}
    steps = [(w, "prefill" if w == PROMPT else f"prefill_w{w}") for w in BUCKETS]
    for tokens, step in steps + [(1, "decode")]:
        record, given = capture_step(model, BATCH, tokens, PROMPT + NEW)
        with open(os.path.join(folder, f"{step}.json"), "w") as f:
            json.dump(record, f, indent=1)
        weights.update(given)
    write_safetensors(os.path.join(folder, "weights.safetensors"),
                      {k: v for k, v in weights.items()})
    ids, mask = prompts(config.vocab_size)
    # The prompts as given, and narrower than max_prompt (their first two
    # columns dropped: rows 1 and 2 are then unpadded, which the graph
    # pads to max_prompt without adding a pad id to what is penalized).
    for suffix, (x, m) in (("", (ids, mask)), ("_narrow", (ids[:, 2:], mask[:, 2:]))):
        left_ids, left_mask = left_aligned(x, m)
        out = model.generate(input_ids=left_ids, attention_mask=left_mask, max_new_tokens=NEW,
                             do_sample=False, output_scores=True,
                             return_dict_in_generate=True, pad_token_id=0, **generation)
        tokens = out.sequences[:, x.shape[1]:]
        scores = torch.stack(out.scores, dim=1)
        write_safetensors(os.path.join(folder, f"expected{suffix}.safetensors"),
                          {"input_ids": x.contiguous().numpy(),
                           "attention_mask": m.contiguous().numpy(),
                           "tokens": tokens.numpy(), "scores": scores.numpy()})
    # Sampling's first column: transformers' scores after its warpers
    # (temperature, top-k, top-p), the same whatever its draws.
    left_ids, left_mask = left_aligned(ids, mask)
    torch.manual_seed(1)
    out = model.generate(input_ids=left_ids, attention_mask=left_mask, max_new_tokens=1,
                         output_scores=True, return_dict_in_generate=True, pad_token_id=0,
                         **dict(generation, **SAMPLING))
    write_safetensors(os.path.join(folder, "expected_sample.safetensors"),
                      {"scores": out.scores[0].numpy()})
    with open(os.path.join(folder, "settings.json"), "w") as f:
        json.dump({"batch": BATCH, "max_prompt": PROMPT, "prompt_buckets": list(BUCKETS),
                   "pads_penalized": not penalty_skips_padding(),
                   "max_new_tokens": NEW,
                   "vocab": config.vocab_size, "generation": generation,
                   "sampling": SAMPLING}, f, indent=1)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "generate-fixtures")
    for name, (config, generation) in models().items():
        write_fixture(name, config, generation, os.path.join(out, name))
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
