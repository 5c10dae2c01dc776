#!/usr/bin/env python3
"""cgc.compile_generate against transformers' generate on the GPU
(scripts/gpu-run.sh runs it; it exits 1 on any failure and 77 when it
cannot run: no CUDA device, or no torch or transformers).

For each decoder family (random weights from small configs, f32), at
batch 1 and 4 with prompts of different lengths padded on the left or
the right, greedy: cgc's tokens equal transformers' at every column up
to the first where they differ, and there transformers' own top two
scores are within TIE of each other (a near-tie may flip: the check
says so and stops comparing that row); cgc's scores (output_scores)
equal transformers' within SCORE_TOL at every compared column. Then
stopping: with an end token that one sequence emits early, that
sequence pads after it and the others go on; with an end every
sequence emits, the loop ends early (the steps output says so).
Sampling (temperature 0.8, top_k 20, top_p 0.9, batch 4): at most 20
ids kept a column, the same seed gives the same
tokens, another seed others, and every token is the one the draw rule
gives for cgc's scores of its column and the Philox stream's uniform
number (generate_fixtures_test.py's independent Philox); the
log-probabilities are log softmax of those scores at the tokens.
Streaming (streaming=True): gen.stream yields, one column a replay, the
tokens a call of the same generator makes, ending when every row has.
An encoder-decoder (T5) is refused by name.

    generate_gpu.py --cgc build/tools/cgc [--only llama]
"""
import argparse
import os
import sys

SCORE_TOL = 2e-3   # |cgc - HF| of a score (f32 logits of random models, |x| < 10)
TIE = 1e-3         # HF's top-two gap under which a flipped token is a near-tie


def configs():
    from transformers import (GPT2Config, LlamaConfig, MistralConfig, Qwen2Config,
                              Phi3Config, GemmaConfig, MixtralConfig)
    small = dict(vocab_size=512, max_position_embeddings=512)
    return {
        "gpt2": GPT2Config(n_layer=2, n_embd=128, n_head=4, n_positions=512, vocab_size=512),
        "llama": LlamaConfig(hidden_size=128, intermediate_size=344, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, **small),
        "qwen2": Qwen2Config(hidden_size=128, intermediate_size=344, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, **small),
        "mistral": MistralConfig(hidden_size=128, intermediate_size=344, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=1,
                                 sliding_window=None, **small),
        "phi3": Phi3Config(hidden_size=128, intermediate_size=344, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=4, pad_token_id=0,
                           **small),
        "gemma": GemmaConfig(hidden_size=128, intermediate_size=344, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=1, head_dim=32,
                             **small),
        "mixtral": MixtralConfig(hidden_size=128, intermediate_size=344, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2,
                                 num_local_experts=4, num_experts_per_tok=2, **small),
    }


def model_of(name, config):
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).cuda().eval().requires_grad_(False)
    model.generation_config.pad_token_id = 0
    model.generation_config.eos_token_id = None
    return model


def prompts(batch, longest, vocab, left):
    """input_ids and attention_mask [batch, longest], row r holding
    longest - 3r real tokens, padded on the left or the right."""
    import torch
    g = torch.Generator().manual_seed(batch)
    ids = torch.randint(1, vocab, (batch, longest), generator=g)
    mask = torch.zeros(batch, longest, dtype=torch.long)
    for r in range(batch):
        n = max(longest - 3 * r, 1)
        if left:
            mask[r, longest - n:] = 1
        else:
            mask[r, :n] = 1
    return ids.cuda(), mask.cuda()


def hf_generate(model, ids, mask, new, **config):
    """transformers' tokens [B, new] and scores [B, new, V], greedy, from
    prompts padded on the left (as generate wants them)."""
    import torch
    left_ids, left_mask = ids.clone(), mask.clone()
    for r in range(ids.shape[0]):  # right-aligned real tokens
        real = ids[r][mask[r].bool()]
        left_ids[r] = 0
        left_mask[r] = 0
        left_ids[r, ids.shape[1] - real.numel():] = real
        left_mask[r, ids.shape[1] - real.numel():] = 1
    with torch.no_grad():
        out = model.generate(input_ids=left_ids, attention_mask=left_mask, max_new_tokens=new,
                             min_new_tokens=config.get("min_new_tokens", 0),
                             do_sample=False, output_scores=True, return_dict_in_generate=True,
                             eos_token_id=config.get("eos_token_id"), pad_token_id=0)
    tokens = out.sequences[:, ids.shape[1]:]
    return tokens, torch.stack(out.scores, dim=1)


def compare(tag, ours, our_scores, theirs, their_scores):
    """Failures (strings) of cgc's tokens and scores against HF's."""
    import torch
    failures, ties = [], 0
    for r in range(theirs.shape[0]):
        for c in range(theirs.shape[1]):
            diff = (our_scores[r, c] - their_scores[r, c]).abs()
            finite = torch.isfinite(their_scores[r, c])
            worst = float(diff[finite].max()) if finite.any() else 0.0
            if worst > SCORE_TOL:
                failures.append(f"{tag}: row {r} column {c}: scores differ by {worst:.2e}")
                break
            if int(ours[r, c]) == int(theirs[r, c]):
                continue
            top = their_scores[r, c].topk(2).values
            if float(top[0] - top[1]) <= TIE:
                ties += 1
                break
            failures.append(f"{tag}: row {r} column {c}: cgc {int(ours[r, c])}, transformers "
                            f"{int(theirs[r, c])} (top-two gap {float(top[0] - top[1]):.2e})")
            break
    if ties:
        print(f"  {tag}: {ties} row(s) stopped at a near-tie (top-two gap <= {TIE})")
    return failures


def check_family(name, config, cgc_tool):
    import cgc
    model = model_of(name, config)
    vocab, failures = config.vocab_size, []
    for batch, longest, new, left in ((1, 9, 40, True), (4, 16, 48, True), (4, 16, 48, False)):
        # Buckets 12 and 20: the batch-1 prompts (9 tokens) run main_p12.
        gen = cgc.compile_generate(model, new, 20, batch, output_scores=True, cgc=cgc_tool,
                                   prompt_buckets=[12])
        ids, mask = prompts(batch, longest, vocab, left)
        tokens, lengths, scores = gen(ids, mask)
        theirs, their_scores = hf_generate(model, ids, mask, new)
        tag = f"{name} batch {batch} {'left' if left else 'right'}-padded"
        failures += compare(tag, tokens, scores, theirs, their_scores)
        if (lengths != new).any():
            failures.append(f"{tag}: lengths {lengths.tolist()}, expected all {new}")
    failures += check_stopping(name, model, cgc_tool, vocab)
    failures += check_sampling(name, model, cgc_tool, vocab)
    failures += check_streaming(name, model, cgc_tool, vocab)
    return failures


def check_streaming(name, model, cgc_tool, vocab):
    """streaming=True: gen.stream yields the columns a call of the same
    generator makes (the whole loop in one launch), row 0's end token
    stops row 0 there, and the stream ends when every row has ended; the
    tokens are transformers' (compare)."""
    import torch
    import cgc
    failures, new = [], 24
    ids, mask = prompts(3, 12, vocab, True)
    plain, _ = hf_generate(model, ids, mask, new)
    end = int(plain[0, 2])
    theirs, their_scores = hf_generate(model, ids, mask, new, eos_token_id=end)
    gen = cgc.compile_generate(model, new, 12, 4, generation_config={"eos_token_id": end},
                               output_scores=True, streaming=True, cgc=cgc_tool)
    streamed = torch.stack(list(gen.stream(ids, mask)), dim=1)
    tokens, lengths, scores = gen(ids, mask)
    columns = int(gen.steps)
    if streamed.shape != (3, columns) or \
            not torch.equal(streamed, tokens[:, :columns].cpu()):
        failures.append(f"{name} streaming: streamed {streamed.tolist()}, the call made "
                        f"{tokens[:, :columns].tolist()}")
    failures += compare(f"{name} streaming", tokens[:, :theirs.shape[1]],
                        scores[:, :theirs.shape[1]], theirs, their_scores)
    return failures


def check_sampling(name, model, cgc_tool, vocab):
    import cgc
    import numpy as np
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from generate_fixtures_test import check_logprobs, drawn, uniforms
    gen = cgc.compile_generate(model, 16, 12, 4, output_scores=True, output_logprobs=True,
                               cgc=cgc_tool,
                               generation_config={"do_sample": True, "temperature": 0.8,
                                                  "top_k": 20, "top_p": 0.9})
    ids, mask = prompts(4, 12, vocab, True)
    runs = [gen(ids, mask, seed=seed) for seed in (5, 5, 6)]
    failures = []
    if not (runs[0][0] == runs[1][0]).all():
        failures.append(f"{name} sampling: seed 5 gave two different token sequences")
    if (runs[0][0] == runs[2][0]).all():
        failures.append(f"{name} sampling: seeds 5 and 6 gave the same tokens")
    tokens, lengths, scores, logprobs = (t.cpu().numpy() for t in runs[0])
    kept = np.isfinite(scores).sum(axis=2)
    if (kept > 20).any() or (kept < 1).any():
        failures.append(f"{name} sampling: top_k=20 kept {kept.min()} to {kept.max()} ids")
    if not check_logprobs(f"{name} sampling", logprobs, scores.astype(np.float64), tokens,
                          lengths):
        failures.append(f"{name} sampling: log-probabilities differ (above)")
    u = uniforms(5, gen.settings, tokens.shape[1])
    wrong = [(r, c) for c in range(tokens.shape[1]) for r in range(tokens.shape[0])
             if int(tokens[r, c]) != drawn(scores[r, c].astype(np.float64), u[c, r])]
    if wrong:
        failures.append(f"{name} sampling: {len(wrong)} tokens are not the draw rule's "
                        f"(first at row, column {wrong[0]})")
    return failures


def check_stopping(name, model, cgc_tool, vocab):
    """Row 0's third token as the end: row 0 stops there, padded after;
    then every row's first token as ends: one step."""
    import torch
    import cgc
    failures, new = [], 24
    ids, mask = prompts(4, 12, vocab, True)
    plain, _ = hf_generate(model, ids, mask, new)
    end = int(plain[0, 2])
    theirs, their_scores = hf_generate(model, ids, mask, new, eos_token_id=end)
    gen = cgc.compile_generate(model, new, 12, 4, generation_config={"eos_token_id": end},
                               output_scores=True, cgc=cgc_tool)
    tokens, lengths, scores = gen(ids, mask)
    first_end = (plain[0] == end).nonzero()[0, 0].item()
    if int(lengths[0]) != first_end + 1 or (tokens[0, first_end + 1:] != 0).any():
        failures.append(f"{name} stop: row 0 length {int(lengths[0])}, expected "
                        f"{first_end + 1} and pads after, got {tokens[0].tolist()}")
    columns = theirs.shape[1]
    failures += compare(f"{name} stop", tokens[:, :columns], scores[:, :columns], theirs,
                        their_scores)
    ends = sorted(set(int(t) for t in plain[:, 0]))
    gen = cgc.compile_generate(model, new, 12, 4, generation_config={"eos_token_id": ends},
                               cgc=cgc_tool)
    tokens, lengths = gen(ids, mask)
    if int(gen.steps) != 1 or (lengths != 1).any():
        failures.append(f"{name} all stop: {int(gen.steps)} steps, lengths "
                        f"{lengths.tolist()}; expected 1 and all 1")
    tokens, lengths = gen(ids[:3], mask[:3])  # the batch's fourth row left out: ended
    if int(gen.steps) != 1 or tokens.shape[0] != 3 or (tokens[:, 0] != plain[:3, 0]).any():
        failures.append(f"{name} 3 of 4 prompts: {int(gen.steps)} steps, first tokens "
                        f"{tokens[:, 0].tolist()}; expected 1 and {plain[:3, 0].tolist()}")
    return failures


def check_refusals(cgc_tool):
    import cgc
    from transformers import T5Config, T5ForConditionalGeneration
    model = T5ForConditionalGeneration(T5Config(d_model=64, d_ff=128, num_layers=1,
                                                num_heads=2, vocab_size=128)).cuda().eval()
    try:
        cgc.compile_generate(model, 4, 4, 1, cgc=cgc_tool)
    except cgc.RefusedError as e:
        if "encoder-decoder" in str(e):
            return []
        return [f"T5 refused without saying it is an encoder-decoder: {e}"]
    return ["T5 (an encoder-decoder) was not refused"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cgc", required=True)
    parser.add_argument("--only", help="run only the families whose name contains this")
    args = parser.parse_args()
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    os.environ["CGC_CACHE"] = "0"
    failures = []
    failures += check_refusals(args.cgc)
    for name, config in configs().items():
        if args.only and args.only not in name:
            continue
        try:
            found = check_family(name, config, args.cgc)
        except Exception as e:  # noqa: BLE001 - a family that fails to compile is a failure
            found = [f"{name}: {type(e).__name__}: {str(e)[:1500]}"]
        print(f"{'PASS' if not found else 'FAIL'} {name}")
        failures += found
    for f in failures:
        print("  " + f)
    print(f"generate: {'all passed' if not failures else f'{len(failures)} failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
