"""A Hugging Face decoder's forward pass over a static KV cache, exported
for cgc.compile_generate (docs/generation.md): DecoderStep runs S tokens
at cache positions `cache_position` and returns the logits and the caches
with the new keys and values written in (a functional index_copy, which
cgc plans in place). It is exported twice, for the prompt (S = the padded
prompt length) and for one decoding step (S = 1); generation_ir.py
composes the two into the generation loop. Needs torch and transformers."""
import inspect

import torch

from ..errors import RefusedError
from .capture import decompose, export_program, program_record


def cache_shape(config, batch, length):
    """[batch, kv heads, length, head dim] of one layer's keys (and values):
    transformers' get_head_shapes, whose older releases give a head_dim of
    None where the config leaves it to hidden_size / heads (Mixtral)."""
    from transformers.integrations.executorch import get_head_shapes
    heads, head_dim = get_head_shapes(config)
    heads = heads or config.num_attention_heads
    head_dim = head_dim or config.hidden_size // config.num_attention_heads
    if not isinstance(heads, int) or not isinstance(head_dim, int):
        raise RefusedError(f"a decoder whose layers have different head shapes ({heads} kv "
                           f"heads, head dims {head_dim}): compile_generate keeps one cache "
                           "shape for every layer")
    return [batch, heads, length, head_dim]


def check_decoder(model):
    """Refuses what compile_generate does not run: encoder-decoders, models
    without a language-model head or a cache."""
    config = getattr(model, "config", None)
    if config is None or not hasattr(model, "generation_config"):
        raise RefusedError(f"{type(model).__name__} is not a transformers model with a "
                           "generation config (compile_generate takes a decoder LM)")
    if getattr(config, "is_encoder_decoder", False):
        raise RefusedError(f"{type(model).__name__} is an encoder-decoder; compile_generate "
                           "runs decoder-only language models")
    if not hasattr(model, "get_output_embeddings") or model.get_output_embeddings() is None:
        raise RefusedError(f"{type(model).__name__} has no language-model head (use its "
                           "*ForCausalLM class)")
    if not getattr(model, "_supports_static_cache", True) or \
            not getattr(model, "_can_compile_fullgraph", True):
        raise RefusedError(f"{type(model).__name__} does not support a static KV cache in "
                           "transformers, which compile_generate exports")


def functional_layers(max_len, count):
    """Cache layers whose update returns the caches with the states copied
    in (index_copy), not written in place: the export stays functional."""
    from transformers.cache_utils import StaticLayer

    class FunctionalLayer(StaticLayer):
        def bind(self, keys, values, position):
            self.keys, self.values, self.position = keys, values, position
            # The cache's length before this step, which transformers' mask
            # functions read as the first query's position.
            self.cumulative_length = position[0]
            self.is_initialized = True

        def update(self, key_states, value_states, *args, **kwargs):
            self.keys = self.keys.index_copy(2, self.position, key_states)
            self.values = self.values.index_copy(2, self.position, value_states)
            return self.keys, self.values

    return [FunctionalLayer(max_len) for _ in range(count)]


class DecoderStep(torch.nn.Module):
    """forward(input_ids [B, S], attention_mask [B, T], position_ids [B, S],
    cache_position [S], k0, v0, k1, v1, ...) -> (logits of the last
    position [B, 1, V], k0', v0', ...)."""

    def __init__(self, model, max_len):
        super().__init__()
        self.model, self.max_len = model, max_len
        params = inspect.signature(model.forward).parameters
        self.keep_last = {"logits_to_keep": 1} if "logits_to_keep" in params else {}

    def forward(self, input_ids, attention_mask, position_ids, cache_position, *kv):
        from transformers import StaticCache
        cache = StaticCache(max_cache_len=self.max_len, config=self.model.config)
        cache.layers = functional_layers(self.max_len, len(kv) // 2)
        for i, layer in enumerate(cache.layers):
            layer.bind(kv[2 * i], kv[2 * i + 1], cache_position)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=position_ids, cache_position=cache_position,
                         past_key_values=cache, use_cache=True, **self.keep_last)
        logits = out.logits[:, -1:, :]
        return (logits,) + tuple(t for layer in cache.layers for t in (layer.keys, layer.values))


def layer_count(config):
    text = config.get_text_config()
    return text.num_hidden_layers


def capture_step(model, batch, tokens, max_len):
    """The program record and weights of DecoderStep over `tokens` tokens."""
    config = model.config.get_text_config()
    layers = layer_count(model.config)
    step = DecoderStep(model, max_len)
    dtype = model.dtype
    device = next(model.parameters()).device
    kv = [torch.zeros(cache_shape(config, batch, max_len), dtype=dtype, device=device)
          for _ in range(2 * layers)]
    args = (torch.zeros(batch, tokens, dtype=torch.long, device=device),
            torch.ones(batch, max_len, dtype=torch.long, device=device),
            torch.zeros(batch, tokens, dtype=torch.long, device=device),
            torch.arange(tokens, device=device), *kv)
    with torch.no_grad():
        ep = decompose(export_program(step, args, None, None))
    from .capture import weights
    return program_record(ep, type(model).__name__, {}), weights(ep)
