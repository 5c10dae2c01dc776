"""The zoo's transformer families over a dynamic batch and sequence, for
make_export_fixtures.py (the static modules are export_models.py's)."""
from export_models import token_kwargs


def dynamic_keyword_models(torch):
    """(name, module, runs, dynamic_shapes) of the zoo's transformer
    families at tiny configs called with keywords over a dynamic batch and
    sequence (torch.export.Dim "batch" and "seq"): `runs` are the example
    call's kwargs and a second call's at another batch and sequence (the
    first is what the export traces). Needs transformers; yields nothing
    without it."""
    try:
        import transformers
    except ImportError:
        return
    gen = torch.Generator().manual_seed(3)
    vocab = 100

    def tokens(batch, seq, token_types=False):
        return token_kwargs(torch, gen, vocab, batch, seq, 2, token_types)

    batch, seq = torch.export.Dim("batch", min=1, max=4), torch.export.Dim("seq", min=2, max=16)
    tiny = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, vocab_size=vocab, max_position_embeddings=64)
    gpt2 = dict(n_embd=32, n_layer=2, n_head=4, vocab_size=vocab, n_positions=64,
                use_cache=False)
    for name, model, config, kwargs, token_types in (
            ("hf_bert_dynamic", "BertModel", "BertConfig", tiny, True),
            ("hf_gpt2_dynamic", "GPT2Model", "GPT2Config", gpt2, False)):
        module = getattr(transformers, model)(getattr(transformers, config)(**kwargs))
        runs = [tokens(2, 12, token_types), tokens(3, 7, token_types)]
        dynamic = {k: {0: batch, 1: seq} for k in runs[0]}
        yield name, module, runs, dynamic
