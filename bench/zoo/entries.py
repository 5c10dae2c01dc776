"""The model zoo's entries: real models as users build them (random
weights from their configs: the GPU machine has no network), with
realistic inputs. An entry is a name, a builder, a batch, a sequence
length, a dtype and its inputs' kind; `ENTRIES` lists them all.

    entry.build(torch) -> (module, args, kwargs)   # on the CPU, in f32
"""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Entry:
    name: str            # "bert-f32-b1-s128"
    family: str          # the builder's key in BUILDERS
    batch: int
    seq: int
    dtype: str           # "f32", "bf16", "f16"
    dynamic: bool = False  # batch and sequence as torch.export.Dim (buckets)
    # A dynamic entry is also called at these (batch, seq): the smallest
    # batch, odd sizes between, and the Dims' largest (2x the export's).
    other_sizes: tuple = field(default=())
    tags: tuple = field(default=())  # "bench": in the benchmark tier

    def build(self, torch):
        """(module, args, kwargs) on the CPU in f32, seeded by the entry's name."""
        torch.manual_seed(sum(map(ord, self.family)))
        module, inputs = BUILDERS[self.family](torch, self.batch, self.seq)
        return module.eval(), inputs

    def inputs_at(self, torch, batch, seq):
        """(args, kwargs) at another batch and sequence (the same builder,
        whose module is dropped)."""
        return BUILDERS[self.family](torch, batch, seq)[1]


# ---- inputs

def token_inputs(torch, vocab, batch, seq, token_types=False, mask=True):
    """Token ids in [1, vocab) and an attention_mask padding the tail of
    every other row (the last row too at batch 1), as a tokenizer's padded
    batch gives; token_type_ids with a second segment where the model
    takes them."""
    g = torch.Generator().manual_seed(batch * 1000 + seq)
    ids = torch.randint(1, vocab, (batch, seq), generator=g)
    kwargs = {"input_ids": ids}
    if mask:
        attention = torch.ones(batch, seq, dtype=torch.long)
        for row in range(batch):
            if row % 2 == 1 or batch == 1:
                attention[row, seq - max(1, seq // (4 + row)):] = 0
        kwargs["attention_mask"] = attention
    if token_types:
        types = torch.zeros(batch, seq, dtype=torch.long)
        types[:, seq // 2:] = 1
        kwargs["token_type_ids"] = types
    return kwargs


def hf(model_class, config_class, vocab_key="vocab_size", token_types=False, mask=True,
       **config):
    """A builder of a Hugging Face model from its config (`config` overrides
    the defaults), without a KV cache in its outputs."""
    def build(torch, batch, seq):
        import transformers
        cfg = getattr(transformers, config_class)(**config)
        if hasattr(cfg, "use_cache"):
            cfg.use_cache = False
        model = getattr(transformers, model_class)(cfg)
        return model, ((), token_inputs(torch, getattr(cfg, vocab_key), batch, seq,
                                        token_types, mask))
    return build


def hf_drawn(model_class, config_class, **config):
    """hf's builder with the parameters initialized to zeros drawn at random
    (drawn_where_degenerate): a router whose gate starts at zero ties every
    expert, and top-k leaves the order of ties unspecified."""
    inner = hf(model_class, config_class, **config)

    def build(torch, batch, seq):
        model, inputs = inner(torch, batch, seq)
        return drawn_where_degenerate(torch, model), inputs
    return build


def bart_encoder(torch, batch, seq):
    import transformers
    model = transformers.BartModel(transformers.BartConfig())
    return model.get_encoder(), ((), token_inputs(torch, 50265, batch, seq))


def encoder_layer(torch, batch, seq):
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True)
    x = torch.randn(batch, seq, 768)
    return layer, ((x,), {})


def encoder(torch, batch, seq):
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, norm_first=True)
    model = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
    x = torch.randn(batch, seq, 512)
    padding = torch.zeros(batch, seq, dtype=torch.bool)
    padding[:, seq - seq // 4:] = True
    return model, ((x,), {"src_key_padding_mask": padding})


def image_inputs(torch, batch, size, keyword=None):
    """A batch of random images [batch, 3, size, size], positional or as
    `keyword` (transformers' pixel_values)."""
    g = torch.Generator().manual_seed(batch * 1000 + size)
    x = torch.randn(batch, 3, size, size, generator=g)
    return ((), {keyword: x}) if keyword else ((x,), {})


def torchvision_model(name):
    """A torchvision classifier with its default config
    (drawn_where_degenerate)."""
    def build(torch, batch, size):
        import torchvision
        if name.startswith("segmentation."):  # no pretrained backbone: no network there
            model = getattr(torchvision.models.segmentation, name.split(".")[1])(
                weights=None, weights_backbone=None)
        else:
            model = getattr(torchvision.models, name)()
        return drawn_where_degenerate(torch, model), image_inputs(torch, batch, size)
    return build


def drawn_where_degenerate(torch, model):
    """`model` with its batch norms' running statistics made unlike the
    defaults (eval mode reads them) and parameters initialized to zeros
    (ViT's and MLP-Mixer's heads) drawn at random, so that the output
    depends on every layer."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
        for p in model.parameters():
            if not p.any():
                p.normal_(0.0, 0.02)
    return model


def vit(torch, batch, size):
    import transformers
    model = transformers.ViTModel(transformers.ViTConfig(image_size=size))
    return model, image_inputs(torch, batch, size, "pixel_values")


def clip_vision(torch, batch, size):
    import transformers
    model = transformers.CLIPVisionModel(transformers.CLIPVisionConfig(image_size=size))
    return model, image_inputs(torch, batch, size, "pixel_values")


def whisper_encoder(torch, batch, seq):
    """Whisper-base's encoder on 30 s of log-mel features (`seq` unused)."""
    import transformers
    cfg = transformers.WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                                     encoder_ffn_dim=2048, decoder_layers=1,
                                     decoder_attention_heads=8)
    model = transformers.WhisperModel(cfg).get_encoder()
    g = torch.Generator().manual_seed(batch)
    return model, ((torch.randn(batch, cfg.num_mel_bins, 3000, generator=g),), {})


def wav2vec2(torch, batch, seq):
    """wav2vec 2.0 base (its group-norm feature encoder, weight-normed
    positional convolution) on `seq` audio samples."""
    import transformers
    model = transformers.Wav2Vec2Model(transformers.Wav2Vec2Config())
    g = torch.Generator().manual_seed(batch * 1000 + seq)
    return model, ((torch.randn(batch, seq, generator=g),), {})


def multihead_attention(torch, batch, seq):
    mha = torch.nn.MultiheadAttention(768, 12, batch_first=True)
    x = torch.randn(batch, seq, 768)
    return mha, ((x, x, x), {"need_weights": False})


def hf_image(model_class, config_class, **config):
    """A builder of a Hugging Face vision model from its config, on
    pixel_values."""
    def build(torch, batch, size):
        import transformers
        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config))
        return drawn_where_degenerate(torch, model), image_inputs(torch, batch, size,
                                                                  "pixel_values")
    return build


def seq2seq(model_class, config_class, **config):
    """An encoder-decoder's forward (no generation) on token ids, the
    decoder reading the first half of them."""
    def build(torch, batch, seq):
        import transformers
        cfg = getattr(transformers, config_class)(use_cache=False, **config)
        kwargs = token_inputs(torch, cfg.vocab_size, batch, seq)
        kwargs["decoder_input_ids"] = kwargs["input_ids"][:, :seq // 2]
        return getattr(transformers, model_class)(cfg), ((), kwargs)
    return build


def hf_audio(model_class, config_class, samples=16000, **config):
    """A builder of a Hugging Face speech encoder on `samples` of audio."""
    def build(torch, batch, seq):
        import transformers
        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config))
        g = torch.Generator().manual_seed(batch)
        return model, ((torch.randn(batch, samples, generator=g),), {})
    return build


def whisper_tiny(torch, batch, seq):
    """Whisper's whole forward (encoder on 30 s of features, decoder on 8
    tokens) at a small config."""
    import transformers
    cfg = transformers.WhisperConfig(
        d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=1000,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        use_cache=False)
    g = torch.Generator().manual_seed(batch)
    return transformers.WhisperModel(cfg), ((), {
        "input_features": torch.randn(batch, cfg.num_mel_bins, 3000, generator=g),
        "decoder_input_ids": torch.randint(0, 1000, (batch, 8), generator=g)})


def audio_spectrogram(torch, batch, seq):
    import transformers
    model = transformers.ASTModel(transformers.ASTConfig(num_hidden_layers=2, max_length=128))
    g = torch.Generator().manual_seed(batch)
    return model, ((torch.randn(batch, 128, 128, generator=g),), {})


def timm_model(name):
    def build(torch, batch, size):
        import timm
        model = timm.create_model(name, pretrained=False)
        return drawn_where_degenerate(torch, model), image_inputs(torch, batch, size)
    return build


SMALL_DECODER = dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                     num_attention_heads=8, num_key_value_heads=4, vocab_size=32000,
                     max_position_embeddings=2048)
BUILDERS = {
    "bert": hf("BertModel", "BertConfig", token_types=True),
    "roberta": hf("RobertaModel", "RobertaConfig"),
    "gpt2": hf("GPT2Model", "GPT2Config"),
    "llama": hf("LlamaModel", "LlamaConfig", **SMALL_DECODER),
    "qwen2": hf("Qwen2Model", "Qwen2Config", **SMALL_DECODER),
    "mistral": hf("MistralModel", "MistralConfig", **SMALL_DECODER),
    "clip-text": hf("CLIPTextModel", "CLIPTextConfig"),
    "bart-encoder": bart_encoder,
    "encoder-layer": encoder_layer,
    "encoder": encoder,
    "mha": multihead_attention,
    "resnet18": torchvision_model("resnet18"),
    "resnet50": torchvision_model("resnet50"),
    "mobilenet-v3-small": torchvision_model("mobilenet_v3_small"),
    "efficientnet-b0": torchvision_model("efficientnet_b0"),
    "vit-b-16": torchvision_model("vit_b_16"),
    "vit": vit,
    "convnext-tiny": torchvision_model("convnext_tiny"),
    "swin-t": torchvision_model("swin_t"),
    "fcn-resnet50": torchvision_model("segmentation.fcn_resnet50"),
    "deeplabv3-mobilenet": torchvision_model("segmentation.deeplabv3_mobilenet_v3_large"),
    "clip-vision": clip_vision,
    "whisper-encoder": whisper_encoder,
    "wav2vec2": wav2vec2,
}
# The coverage tier: more architectures of each family, at configs small
# enough for the CPU interpreter (2 layers, hidden 256, vocab 1000; images
# of 64 px where the model takes them): what cgc must compile beyond the
# models it was first built for. (family, builder, seq or image size)
TINY = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=1000, max_position_embeddings=512)
TINY_MHA = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, vocab_size=1000)
TINY_SEQ2SEQ = dict(d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                    decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256,
                    vocab_size=1000)
MOE = dict(TINY, num_local_experts=4, num_experts_per_tok=2)
COVERAGE = (
    ("distilbert", hf("DistilBertModel", "DistilBertConfig", n_layers=2), 128),
    ("albert", hf("AlbertModel", "AlbertConfig", embedding_size=128,
                  intermediate_size=512, token_types=True, **TINY_MHA), 128),
    ("electra", hf("ElectraModel", "ElectraConfig", num_hidden_layers=2, token_types=True), 128),
    ("deberta-v2", hf("DebertaV2Model", "DebertaV2Config", intermediate_size=512,
                      **TINY_MHA), 64),
    ("xlm-roberta", hf("XLMRobertaModel", "XLMRobertaConfig", num_hidden_layers=2,
                       vocab_size=1000), 128),
    ("mpnet", hf("MPNetModel", "MPNetConfig", num_hidden_layers=2, vocab_size=1000), 64),
    ("t5-encoder", hf("T5EncoderModel", "T5Config", num_layers=2, vocab_size=1000), 64),
    ("mobilebert", hf("MobileBertModel", "MobileBertConfig", num_hidden_layers=2,
                      vocab_size=1000, token_types=True), 64),
    ("gpt-neox", hf("GPTNeoXModel", "GPTNeoXConfig", intermediate_size=512, **TINY_MHA), 64),
    ("opt", hf("OPTModel", "OPTConfig", ffn_dim=512, word_embed_proj_dim=256, **TINY_MHA), 64),
    ("phi", hf("PhiModel", "PhiConfig", intermediate_size=512, **TINY_MHA), 64),
    ("phi3", hf("Phi3Model", "Phi3Config", pad_token_id=0, **TINY), 64),
    ("gemma", hf("GemmaModel", "GemmaConfig", head_dim=64, **TINY), 64),
    ("gemma2", hf("Gemma2Model", "Gemma2Config", head_dim=64, **TINY), 64),
    ("qwen3", hf("Qwen3Model", "Qwen3Config", head_dim=64, **TINY), 64),
    ("falcon", hf("FalconModel", "FalconConfig", **TINY_MHA), 64),
    ("bloom", hf("BloomModel", "BloomConfig", hidden_size=256, n_layer=2, n_head=4,
                 vocab_size=1000), 64),
    ("stablelm", hf("StableLmModel", "StableLmConfig", **TINY), 64),
    ("gptj", hf("GPTJModel", "GPTJConfig", n_embd=256, n_layer=2, n_head=4, vocab_size=1000,
                rotary_dim=32), 64),
    ("olmo", hf("OlmoModel", "OlmoConfig", **TINY), 64),
    ("granite", hf("GraniteModel", "GraniteConfig", **TINY), 64),
    ("starcoder2", hf("Starcoder2Model", "Starcoder2Config", **TINY), 64),
    ("gpt-bigcode", hf("GPTBigCodeModel", "GPTBigCodeConfig", n_embd=256, n_layer=2, n_head=4,
                       vocab_size=1000), 64),
    ("mixtral", hf("MixtralModel", "MixtralConfig", **MOE), 64),
    ("qwen2-moe", hf("Qwen2MoeModel", "Qwen2MoeConfig", num_experts=4, num_experts_per_tok=2,
                     moe_intermediate_size=128, shared_expert_intermediate_size=256, **TINY), 64),
    ("qwen3-moe", hf("Qwen3MoeModel", "Qwen3MoeConfig", num_experts=4, num_experts_per_tok=2,
                     moe_intermediate_size=128, head_dim=64, **TINY), 64),
    ("olmoe", hf("OlmoeModel", "OlmoeConfig", num_experts=8, num_experts_per_tok=2, **TINY), 64),
    ("gpt-oss", hf("GptOssModel", "GptOssConfig", head_dim=64, **MOE), 64),
    ("phimoe", hf("PhimoeModel", "PhimoeConfig", **MOE), 64),
    ("granitemoe", hf("GraniteMoeModel", "GraniteMoeConfig", **MOE), 64),
    ("deepseek-v3", hf("DeepseekV3Model", "DeepseekV3Config", n_routed_experts=8,
                       num_experts_per_tok=2, n_group=1, topk_group=1, moe_intermediate_size=128,
                       first_k_dense_replace=1, q_lora_rank=64, kv_lora_rank=32,
                       qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32,
                       **dict(TINY, num_key_value_heads=4)), 64),
    ("mamba", hf("MambaModel", "MambaConfig", hidden_size=64, num_hidden_layers=2,
                 vocab_size=1000, state_size=8, mask=False), 32),
    ("jamba", hf("JambaModel", "JambaConfig", num_experts=4, num_experts_per_tok=2,
                 mamba_d_state=8, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
                 expert_layer_offset=1, use_mamba_kernels=False, **TINY), 32),
    ("recurrent-gemma", hf("RecurrentGemmaModel", "RecurrentGemmaConfig", hidden_size=128,
                           num_hidden_layers=3, num_attention_heads=4, intermediate_size=256,
                           vocab_size=1000, lru_width=128, attention_window_size=16,
                           mask=False), 32),
    ("cohere", hf("CohereModel", "CohereConfig", **TINY), 32),
    ("mpt", hf("MptModel", "MptConfig", d_model=128, n_heads=4, n_layers=2, vocab_size=1000), 32),
    ("persimmon", hf("PersimmonModel", "PersimmonConfig", **TINY_MHA), 32),
    ("roformer", hf("RoFormerModel", "RoFormerConfig", **TINY_MHA), 32),
    ("convbert", hf("ConvBertModel", "ConvBertConfig", **TINY_MHA), 32),
    ("bigbird", hf("BigBirdModel", "BigBirdConfig", attention_type="original_full", **TINY_MHA),
     64),
    ("funnel", hf("FunnelModel", "FunnelConfig", d_model=128, n_head=4, d_head=32, d_inner=256,
                  block_sizes=[1, 1], vocab_size=1000), 32),
    ("esm", hf("EsmModel", "EsmConfig", pad_token_id=1, **TINY_MHA), 32),
    ("layoutlm", hf("LayoutLMModel", "LayoutLMConfig", **TINY_MHA), 32),
    ("t5", seq2seq("T5Model", "T5Config", d_model=128, d_ff=256, num_layers=2, num_heads=4,
                   d_kv=32, vocab_size=1000), 32),
    ("bart", seq2seq("BartModel", "BartConfig", **TINY_SEQ2SEQ), 32),
    ("marian", seq2seq("MarianModel", "MarianConfig", pad_token_id=0, decoder_start_token_id=0,
                       **TINY_SEQ2SEQ), 32),
    ("whisper", whisper_tiny, 0),
    ("hubert", hf_audio("HubertModel", "HubertConfig", num_hidden_layers=2), 0),
    ("wavlm", hf_audio("WavLMModel", "WavLMConfig", num_hidden_layers=2), 0),
    ("ast", audio_spectrogram, 0),
    ("yolos", hf_image("YolosModel", "YolosConfig", image_size=[64, 64], num_hidden_layers=2,
                       num_detection_tokens=10), 64),
    ("levit", hf_image("LevitModel", "LevitConfig", image_size=64), 64),
    ("pvt", hf_image("PvtModel", "PvtConfig", image_size=64), 64),
    ("poolformer", hf_image("PoolFormerModel", "PoolFormerConfig"), 64),
    ("dpt", hf_image("DPTModel", "DPTConfig", image_size=64, num_hidden_layers=2), 64),
    ("swinv2", hf_image("Swinv2Model", "Swinv2Config", image_size=64, window_size=4,
                        depths=[1, 1, 1, 1]), 64),
    ("lraspp", torchvision_model("segmentation.lraspp_mobilenet_v3_large"), 64),
    ("densenet121", torchvision_model("densenet121"), 64),
    ("regnet-y-400mf", torchvision_model("regnet_y_400mf"), 64),
    ("vgg11-bn", torchvision_model("vgg11_bn"), 64),
    ("squeezenet", torchvision_model("squeezenet1_1"), 64),
    ("shufflenet-v2", torchvision_model("shufflenet_v2_x0_5"), 64),
    ("mnasnet", torchvision_model("mnasnet0_5"), 64),
    ("mobilenet-v2", torchvision_model("mobilenet_v2"), 64),
    ("efficientnet-v2-s", torchvision_model("efficientnet_v2_s"), 64),
    ("resnext50", torchvision_model("resnext50_32x4d"), 64),
    ("googlenet", torchvision_model("googlenet"), 64),
    ("swin-v2-t", torchvision_model("swin_v2_t"), 64),
    ("maxvit-t", torchvision_model("maxvit_t"), 224),
    ("vit-b-32", torchvision_model("vit_b_32"), 224),
    ("deit", hf_image("DeiTModel", "DeiTConfig", image_size=64, patch_size=16,
                      num_hidden_layers=2), 64),
    ("beit", hf_image("BeitModel", "BeitConfig", image_size=64, patch_size=16,
                      num_hidden_layers=2), 64),
    ("dinov2", hf_image("Dinov2Model", "Dinov2Config", image_size=64, patch_size=16,
                        num_hidden_layers=2), 64),
    ("segformer", hf_image("SegformerModel", "SegformerConfig"), 64),
    ("convnextv2", hf_image("ConvNextV2Model", "ConvNextV2Config"), 64),
    ("hf-swin", hf_image("SwinModel", "SwinConfig", image_size=224, depths=[1, 1, 1, 1]), 224),
    ("mobilevit", hf_image("MobileViTModel", "MobileViTConfig", image_size=64), 64),
    ("timm-resnet26d", timm_model("resnet26d"), 64),
    ("timm-efficientnet-b0", timm_model("efficientnet_b0"), 64),
    ("timm-convnext-atto", timm_model("convnext_atto"), 64),
    ("timm-vit-tiny", timm_model("vit_tiny_patch16_224"), 224),
    ("timm-mixer-s16", timm_model("mixer_s16_224"), 224),
    # Added 2026-12-06 (each compiled and matched eager on the CPU, or was
    # fixed until it did: XLM's cat onto an empty tensor, LongT5's logical
    # ops on integers and orderings of bools, EfficientNet's pooling kernel
    # past its input, SEW-D's sign, Llama 4's complex numbers).
    ("modernbert", hf("ModernBertModel", "ModernBertConfig", intermediate_size=512,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                      sep_token_id=2, global_attn_every_n_layers=2, local_attention=16,
                      **TINY_MHA), 64),
    ("deberta", hf("DebertaModel", "DebertaConfig", intermediate_size=512, **TINY_MHA), 64),
    ("xlm", hf("XLMModel", "XLMConfig", emb_dim=256, n_layers=2, n_heads=4, vocab_size=1000), 64),
    ("gpt-neo", hf("GPTNeoModel", "GPTNeoConfig", hidden_size=256, num_layers=2, num_heads=4,
                   attention_types=[[["global", "local"], 1]], window_size=16,
                   vocab_size=1000), 64),
    ("codegen", hf("CodeGenModel", "CodeGenConfig", n_embd=256, n_layer=2, n_head=4,
                   rotary_dim=32, vocab_size=1000), 64),
    ("gemma3", hf("Gemma3TextModel", "Gemma3TextConfig", head_dim=64, sliding_window=16,
                  **TINY), 64),
    ("olmo2", hf("Olmo2Model", "Olmo2Config", **TINY), 64),
    ("cohere2", hf("Cohere2Model", "Cohere2Config", sliding_window=16, **TINY), 64),
    ("glm4", hf("Glm4Model", "Glm4Config", head_dim=64, pad_token_id=0, **TINY), 64),
    ("smollm3", hf("SmolLM3Model", "SmolLM3Config", pad_token_id=0, **TINY), 64),
    ("nemotron", hf("NemotronModel", "NemotronConfig", head_dim=64, **TINY), 64),
    ("llama4", hf("Llama4TextModel", "Llama4TextConfig", head_dim=64, num_local_experts=4,
                  num_experts_per_tok=1, intermediate_size_mlp=512, attention_chunk_size=16,
                  **TINY), 64),  # complex rotary embeddings (aten_complex.py)
    ("mamba2", hf("Mamba2Model", "Mamba2Config", hidden_size=256, num_hidden_layers=2,
                  num_heads=8, head_dim=64, expand=2, n_groups=1, state_size=16,
                  vocab_size=1000, chunk_size=16), 64),
    ("falcon-mamba", hf("FalconMambaModel", "FalconMambaConfig", hidden_size=256,
                        num_hidden_layers=2, state_size=16, vocab_size=1000), 64),
    ("pegasus", seq2seq("PegasusModel", "PegasusConfig", **TINY_SEQ2SEQ), 32),
    ("mbart", seq2seq("MBartModel", "MBartConfig", **TINY_SEQ2SEQ), 32),
    # Eager attention: transformers 5.17's SDPA path runs UMT5's decoder
    # without its causal mask (is_causal unset; fixed by 5.25), which
    # torch.export's trace keeps.
    ("umt5", seq2seq("UMT5Model", "UMT5Config", d_model=128, num_layers=2, num_heads=4,
                     d_ff=256, d_kv=32, vocab_size=1000, attn_implementation="eager"), 32),
    ("longt5", seq2seq("LongT5Model", "LongT5Config", d_model=128, num_layers=2, num_heads=4,
                       d_ff=256, d_kv=32, vocab_size=1000), 32),
    ("hf-efficientnet", hf_image("EfficientNetModel", "EfficientNetConfig", image_size=64), 64),
    ("focalnet", hf_image("FocalNetModel", "FocalNetConfig", image_size=64,
                          depths=[1, 1, 1, 1]), 64),
    ("hiera", hf_image("HieraModel", "HieraConfig", image_size=[64, 64], depths=[1, 1, 1, 1]),
     64),
    ("siglip-vision", hf_image("SiglipVisionModel", "SiglipVisionConfig", image_size=64,
                               patch_size=16, hidden_size=128, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=256), 64),
    ("pvt-v2", hf_image("PvtV2Model", "PvtV2Config", depths=[1, 1, 1, 1]), 64),
    ("sew-d", hf_audio("SEWDModel", "SEWDConfig", samples=4000, hidden_size=128,
                       num_hidden_layers=2, num_attention_heads=4, intermediate_size=256), 0),
    ("w2v2-conformer", hf_audio("Wav2Vec2ConformerModel", "Wav2Vec2ConformerConfig",
                                samples=4000, hidden_size=128, num_hidden_layers=2,
                                num_attention_heads=4, intermediate_size=256), 0),
    ("inception-v3", torchvision_model("inception_v3"), 96),
    ("timm-coatnet", timm_model("coatnet_nano_rw_224"), 224),
    ("apertus", hf("ApertusModel", "ApertusConfig", pad_token_id=0, **TINY), 64),  # expm1
    ("zamba2", hf("Zamba2Model", "Zamba2Config", hidden_size=256, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=4, vocab_size=1000,
                  mamba_d_state=16, mamba_headdim=32, n_mamba_heads=16,
                  layers_block_type=["mamba", "hybrid"], hybrid_layer_ids=[1],
                  pad_token_id=0), 64),
    ("bamba", hf("BambaModel", "BambaConfig", hidden_size=256, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                 attn_layer_indices=[1], mamba_n_heads=8, mamba_d_head=64, mamba_d_state=16,
                 mamba_chunk_size=16, pad_token_id=0), 64),
    ("falcon-h1", hf("FalconH1Model", "FalconH1Config", hidden_size=256, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                     mamba_n_heads=8, mamba_d_head=64, mamba_d_ssm=512, mamba_d_state=16,
                     mamba_chunk_size=16, pad_token_id=0), 64),
    ("lfm2", hf("Lfm2Model", "Lfm2Config", hidden_size=256, intermediate_size=512,
                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                vocab_size=1000, layer_types=["conv", "full_attention"], pad_token_id=0), 64),
    ("glm4-moe", hf("Glm4MoeModel", "Glm4MoeConfig", head_dim=64, n_routed_experts=4,
                    num_experts_per_tok=2, moe_intermediate_size=128, first_k_dense_replace=1,
                    n_group=1, topk_group=1, pad_token_id=0, **TINY), 64),
    ("xlm-roberta-xl", hf("XLMRobertaXLModel", "XLMRobertaXLConfig", intermediate_size=512,
                          **TINY_MHA), 64),
    ("detr", hf_image("DetrModel", "DetrConfig", use_timm_backbone=False,
                      use_pretrained_backbone=False,
                      backbone_config={"model_type": "resnet", "depths": [1, 1, 1, 1]},
                      num_queries=10, d_model=64, encoder_layers=1, decoder_layers=1,
                      encoder_attention_heads=4, decoder_attention_heads=4,
                      encoder_ffn_dim=128, decoder_ffn_dim=128), 64),  # a kernel named cos
    ("mobilevit-v2", hf_image("MobileViTV2Model", "MobileViTV2Config", image_size=64), 64),
    ("timm-cspdarknet", timm_model("cspdarknet53"), 64),  # leaky_relu
    # More of each family, checked on 2026-12-06 (a probe of transformers', timm's and
    # torchvision's model classes): CTRL needed a no-op buffer rewrite dropped.
    ("helium", hf("HeliumModel", "HeliumConfig", head_dim=64, **TINY), 64),
    ("exaone4", hf("Exaone4Model", "Exaone4Config", **TINY), 64),
    ("ernie4_5", hf("Ernie4_5Model", "Ernie4_5Config", head_dim=64, **TINY), 64),
    ("arcee", hf("ArceeModel", "ArceeConfig", **TINY), 64),
    ("diffllama", hf("DiffLlamaModel", "DiffLlamaConfig", **TINY), 64),
    ("xglm", hf("XGLMModel", "XGLMConfig", d_model=256, num_layers=2, attention_heads=4,
                ffn_dim=512, vocab_size=1000), 64),
    ("ctrl", hf("CTRLModel", "CTRLConfig", n_embd=256, n_layer=2, n_head=4, dff=512,
                vocab_size=1000), 64),
    ("biogpt", hf("BioGptModel", "BioGptConfig", intermediate_size=512, **TINY_MHA), 64),
    ("camembert", hf("CamembertModel", "CamembertConfig", intermediate_size=512, **TINY_MHA), 64),
    ("data2vec-text", hf("Data2VecTextModel", "Data2VecTextConfig", intermediate_size=512,
                         **TINY_MHA), 64),
    ("rembert", hf("RemBertModel", "RemBertConfig", input_embedding_size=128,
                   output_embedding_size=128, intermediate_size=512, **TINY_MHA), 64),
    ("squeezebert", hf("SqueezeBertModel", "SqueezeBertConfig", intermediate_size=512,
                       embedding_size=256, **TINY_MHA), 64),
    ("ibert", hf("IBertModel", "IBertConfig", intermediate_size=512, **TINY_MHA), 64),
    ("ernie", hf("ErnieModel", "ErnieConfig", intermediate_size=512, **TINY_MHA), 64),
    ("megatron-bert", hf("MegatronBertModel", "MegatronBertConfig", intermediate_size=512,
                         **TINY_MHA), 64),
    ("canine", hf("CanineModel", "CanineConfig", intermediate_size=512, hidden_size=256,
                  num_hidden_layers=2, num_attention_heads=4, vocab_key="num_hash_buckets"), 64),
    ("rocbert", hf("RoCBertModel", "RoCBertConfig", intermediate_size=512, **TINY_MHA), 64),
    ("blenderbot", seq2seq("BlenderbotModel", "BlenderbotConfig", **TINY_SEQ2SEQ), 32),
    ("m2m100", seq2seq("M2M100Model", "M2M100Config", **TINY_SEQ2SEQ), 32),
    ("vit-msn", hf_image("ViTMSNModel", "ViTMSNConfig", image_size=64, patch_size=16,
                         hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=256), 64),
    ("data2vec-vision", hf_image("Data2VecVisionModel", "Data2VecVisionConfig", image_size=64,
                                 patch_size=16, hidden_size=128, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=256), 64),
    ("bit", hf_image("BitModel", "BitConfig", depths=[1, 1, 1, 1]), 64),
    ("hf-convnext", hf_image("ConvNextModel", "ConvNextConfig", depths=[1, 1, 1, 1]), 64),
    ("hf-regnet", hf_image("RegNetModel", "RegNetConfig", depths=[1, 1, 1, 1]), 64),
    ("hf-resnet", hf_image("ResNetModel", "ResNetConfig", depths=[1, 1, 1, 1]), 64),
    ("mobilenet-v1", hf_image("MobileNetV1Model", "MobileNetV1Config", image_size=64), 64),
    ("hf-mobilenet-v2", hf_image("MobileNetV2Model", "MobileNetV2Config", image_size=64), 64),
    ("swiftformer", hf_image("SwiftFormerModel", "SwiftFormerConfig", depths=[1, 1, 1, 1]), 64),
    ("glpn", hf_image("GLPNModel", "GLPNConfig", depths=[1, 1, 1, 1]), 64),
    ("dinov2-reg", hf_image("Dinov2WithRegistersModel", "Dinov2WithRegistersConfig", image_size=64,
                            patch_size=16, hidden_size=128, num_hidden_layers=2,
                            num_attention_heads=4), 64),
    ("vitdet", hf_image("VitDetModel", "VitDetConfig", image_size=64, pretrain_image_size=64,
                        patch_size=16, hidden_size=128, num_hidden_layers=2,
                        num_attention_heads=4), 64),
    ("textnet", hf_image("TextNetModel", "TextNetConfig"), 64),
    ("sew", hf_audio("SEWModel", "SEWConfig", samples=4000, hidden_size=128, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=256), 0),
    ("unispeech", hf_audio("UniSpeechModel", "UniSpeechConfig", samples=4000, hidden_size=128,
                           num_hidden_layers=2, num_attention_heads=4, intermediate_size=256), 0),
    ("data2vec-audio", hf_audio("Data2VecAudioModel", "Data2VecAudioConfig", samples=4000,
                                hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=256), 0),
    ("tv-mobilenet-v3-large", torchvision_model("mobilenet_v3_large"), 64),
    ("tv-regnet-x", torchvision_model("regnet_x_400mf"), 64),
    ("tv-wide-resnet", torchvision_model("wide_resnet50_2"), 64),
    ("tv-deeplab-r50", torchvision_model("segmentation.deeplabv3_resnet50"), 64),
    ("timm-cait", timm_model("cait_xxs24_224"), 224),
    ("timm-efficientformer", timm_model("efficientformerv2_s0"), 224),
    ("timm-ghostnet", timm_model("ghostnet_100"), 64),
    ("timm-repvit", timm_model("repvit_m0_9"), 64),
    ("timm-fastvit", timm_model("fastvit_t8"), 64),
    ("timm-edgenext", timm_model("edgenext_xx_small"), 64),
    ("timm-eva", timm_model("eva02_tiny_patch14_224"), 224),
    ("granitemoehybrid", hf("GraniteMoeHybridModel", "GraniteMoeHybridConfig", hidden_size=256,
                            intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, vocab_size=1000, num_local_experts=4,
                            num_experts_per_tok=2, layer_types=["mamba", "attention"],
                            mamba_n_heads=8, mamba_d_head=64, mamba_d_state=16,
                            mamba_chunk_size=16, pad_token_id=0), 64),
    ("olmo3", hf("Olmo3Model", "Olmo3Config", sliding_window=16, pad_token_id=0, **TINY), 64),
    ("ernie4_5-moe", hf("Ernie4_5_MoeModel", "Ernie4_5_MoeConfig", head_dim=64, moe_num_experts=4,
                        moe_k=2, moe_intermediate_size=128, moe_layer_start_index=1,
                        pad_token_id=0, **TINY), 64),
    ("luke", hf("LukeModel", "LukeConfig", intermediate_size=512, entity_vocab_size=10,
                entity_emb_size=64, **TINY_MHA), 64),
    ("depth-anything", hf_image("DepthAnythingForDepthEstimation", "DepthAnythingConfig",
                                backbone_config={"model_type": "dinov2", "image_size": 56,
                                "patch_size": 14, "hidden_size": 64, "num_hidden_layers": 4,
                                "num_attention_heads": 4, "out_features": ["stage1", "stage2",
                                "stage3", "stage4"], "reshape_hidden_states": False},
                                neck_hidden_sizes=[16, 32, 64, 64], fusion_hidden_size=32,
                                reassemble_hidden_size=64, patch_size=14), 56),
    ("timm-regnety", timm_model("regnety_002"), 64),
    ("timm-res2net", timm_model("res2net50_14w_8s"), 64),
    ("timm-dla", timm_model("dla34"), 64),
    ("timm-hrnet", timm_model("hrnet_w18_small"), 64),
    ("timm-nfnet", timm_model("nfnet_f0"), 64),
    ("timm-xcit", timm_model("xcit_nano_12_p16_224"), 224),
    ("timm-pit", timm_model("pit_ti_224"), 224),
    ("timm-twins", timm_model("twins_pcpvt_small"), 224),
    ("timm-gcvit", timm_model("gcvit_xxtiny"), 224),
    ("timm-mvitv2", timm_model("mvitv2_tiny"), 224),
    ("timm-efficientvit", timm_model("efficientvit_b0"), 64),
    ("timm-rexnet", timm_model("rexnet_100"), 64),
    ("timm-dpn", timm_model("dpn68"), 64),
    ("timm-xception", timm_model("xception41"), 96),
    ("timm-tnt", timm_model("tnt_s_patch16_224"), 224),
    ("timm-resnest", timm_model("resnest14d"), 64),
    ("timm-vovnet", timm_model("ese_vovnet19b_dw"), 64),
    ("timm-selecsls", timm_model("selecsls42b"), 64),
    ("timm-mobilenetv4", timm_model("mobilenetv4_conv_small"), 64),
    ("tv-convnext-small", torchvision_model("convnext_small"), 64),
    ("xlnet", hf("XLNetModel", "XLNetConfig", d_model=256, n_layer=2, n_head=4, d_inner=512,
                 vocab_size=1000), 64),  # torch.eye kept whole
    ("markuplm", hf("MarkupLMModel", "MarkupLMConfig", intermediate_size=512, **TINY_MHA), 64),
    ("bert-generation", hf("BertGenerationEncoder", "BertGenerationConfig",
                           intermediate_size=512, **TINY_MHA), 64),
    ("seed-oss", hf("SeedOssModel", "SeedOssConfig", **TINY), 64),
    ("yoso", hf("YosoModel", "YosoConfig", intermediate_size=512, **TINY_MHA), 64),  # acos
    ("afmoe", hf_drawn("AfmoeModel", "AfmoeConfig", num_experts=4, num_experts_per_tok=2,
                       moe_intermediate_size=128, num_dense_layers=1, pad_token_id=0, **TINY), 64),
    ("bitnet", hf("BitNetModel", "BitNetConfig", pad_token_id=0, **TINY), 64),
    ("doge", hf("DogeModel", "DogeConfig", pad_token_id=0, **TINY), 64),
    ("eurobert", hf("EuroBertModel", "EuroBertConfig", pad_token_id=0, **TINY), 64),
    ("exaone-moe", hf("ExaoneMoeModel", "ExaoneMoeConfig", num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=128, pad_token_id=0, **TINY), 64),
    ("flex-olmo", hf("FlexOlmoModel", "FlexOlmoConfig", num_experts=4, num_experts_per_tok=2,
                     pad_token_id=0, **TINY), 64),
    ("gpt-neox-japanese", hf("GPTNeoXJapaneseModel", "GPTNeoXJapaneseConfig", hidden_size=256,
                             num_hidden_layers=2, num_attention_heads=4,
                             intermediate_multiple_size=2, vocab_size=1000), 64),
    ("granitemoe-shared", hf("GraniteMoeSharedModel", "GraniteMoeSharedConfig",
                             num_local_experts=4, num_experts_per_tok=2,
                             shared_intermediate_size=256, pad_token_id=0, **TINY), 64),
    ("gte", hf("GteModel", "GteConfig", intermediate_size=512, pad_token_id=0, **TINY_MHA), 64),
    ("jais2", hf("Jais2Model", "Jais2Config", pad_token_id=0, **TINY), 64),
    ("minimax", hf("MiniMaxModel", "MiniMaxConfig", num_local_experts=4, num_experts_per_tok=2,
                   pad_token_id=0, **TINY), 64),
    ("ministral3", hf("Ministral3Model", "Ministral3Config", pad_token_id=0, **TINY), 64),
    ("modernbert-decoder", hf("ModernBertDecoderModel", "ModernBertDecoderConfig",
                              intermediate_size=512, pad_token_id=0, bos_token_id=1,
                              eos_token_id=2, cls_token_id=1, sep_token_id=2,
                              local_attention=16, **TINY_MHA), 64),
    ("nanochat", hf("NanoChatModel", "NanoChatConfig", pad_token_id=0, **TINY), 64),
    ("nemotron-h", hf("NemotronHModel", "NemotronHConfig", pad_token_id=0, **TINY), 64),
    ("nomic-bert", hf("NomicBertModel", "NomicBertConfig", intermediate_size=512, pad_token_id=0,
                      **TINY_MHA), 64),
    ("olmo-hybrid", hf("OlmoHybridModel", "OlmoHybridConfig", pad_token_id=0, **TINY), 64),
    ("openai-gpt", hf("OpenAIGPTModel", "OpenAIGPTConfig", n_embd=256, n_layer=2, n_head=4,
                      vocab_size=1000, n_positions=128), 64),
    ("roberta-prelayernorm", hf("RobertaPreLayerNormModel", "RobertaPreLayerNormConfig",
                                intermediate_size=512, **TINY_MHA), 64),
    ("vaultgemma", hf("VaultGemmaModel", "VaultGemmaConfig", head_dim=64, pad_token_id=0,
                      **TINY), 64),
    ("plbart", seq2seq("PLBartModel", "PLBartConfig", **TINY_SEQ2SEQ), 32),
    ("blenderbot-small", seq2seq("BlenderbotSmallModel", "BlenderbotSmallConfig",
                                 **TINY_SEQ2SEQ), 32),
    ("mvp", seq2seq("MvpModel", "MvpConfig", **TINY_SEQ2SEQ), 32),
    ("pegasus-x", seq2seq("PegasusXModel", "PegasusXConfig", **TINY_SEQ2SEQ), 32),
    ("splinter", hf("SplinterModel", "SplinterConfig", intermediate_size=512, **TINY_MHA), 64),
    ("cvt", hf_image("CvtModel", "CvtConfig"), 64),
    ("ijepa", hf_image("IJepaModel", "IJepaConfig", image_size=64, patch_size=16, hidden_size=128,
                       num_hidden_layers=2, num_attention_heads=4, intermediate_size=256), 64),
    ("swin2sr", hf_image("Swin2SRModel", "Swin2SRConfig", image_size=64, depths=[1, 1],
                         num_heads=[2, 2], embed_dim=32), 64),
    ("unispeech-sat", hf_audio("UniSpeechSatModel", "UniSpeechSatConfig", samples=4000,
                               hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                               intermediate_size=256), 0),
    ("siglip-text", hf("SiglipTextModel", "SiglipTextConfig", hidden_size=128, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=256, vocab_size=1000,
                       mask=False), 64),
)
# The tiers' families: the benchmark and correctness tiers build the ones
# above at full configs; the coverage tier those of COVERAGE, small.
MAIN_FAMILIES = tuple(BUILDERS)
_twice = sorted({f for f, _, _ in COVERAGE if sum(g == f for g, _, _ in COVERAGE) > 1} |
                {f for f, _, _ in COVERAGE if f in BUILDERS})
if _twice:
    raise ValueError(f"zoo families listed twice: {_twice}")
BUILDERS.update({family: build for family, build, _ in COVERAGE})
# Image models: their `seq` is the image size.
IMAGE_FAMILIES = ("resnet18", "resnet50", "mobilenet-v3-small", "efficientnet-b0", "vit-b-16",
                  "vit", "convnext-tiny", "swin-t", "fcn-resnet50", "deeplabv3-mobilenet",
                  "clip-vision")
# Audio models: their `seq` is the samples (whisper's features are fixed).
AUDIO_FAMILIES = ("whisper-encoder", "wav2vec2")


def entries():
    out = []
    for family in MAIN_FAMILIES:
        if family in IMAGE_FAMILIES + AUDIO_FAMILIES:
            continue
        seq = 77 if family == "clip-text" else 128
        for dtype in ("f32", "bf16"):
            out.append(Entry(f"{family}-{dtype}-b1-s{seq}", family, 1, seq, dtype, tags=("bench",)))
    for family, seq in (("bert", 512), ("gpt2", 128), ("llama", 128)):
        out.append(Entry(f"{family}-f32-b8-s{seq}", family, 8, seq, "f32", tags=("bench",)))
        out.append(Entry(f"{family}-f16-b1-s128", family, 1, 128, "f16"))
    for family in ("bert", "gpt2"):
        out.append(Entry(f"{family}-f32-dynamic", family, 4, 128, "f32", dynamic=True,
                         other_sizes=((1, 17), (3, 77), (8, 256))))
    for family in IMAGE_FAMILIES:
        for dtype in ("f32", "bf16"):
            out.append(Entry(f"{family}-{dtype}-b1-224px", family, 1, 224, dtype, tags=("bench",)))
    for family in ("resnet18", "resnet50"):
        out.append(Entry(f"{family}-f16-b1-224px", family, 1, 224, "f16", tags=("bench",)))
    for dtype in ("f32", "bf16"):
        out.append(Entry(f"whisper-encoder-{dtype}-b1-30s", "whisper-encoder", 1, 3000, dtype,
                         tags=("bench",)))
        out.append(Entry(f"wav2vec2-{dtype}-b1-1s", "wav2vec2", 1, 16000, dtype, tags=("bench",)))
    for dtype in ("f32", "bf16"):
        out.append(Entry(f"resnet50-{dtype}-b32-224px", "resnet50", 32, 224, dtype, tags=("bench",)))
    for family, _, seq in COVERAGE:
        for dtype in ("f32", "bf16"):
            out.append(Entry(f"{family}-{dtype}-b1-tiny", family, 1, seq, dtype,
                             tags=("coverage",)))
    return out


ENTRIES = entries()
