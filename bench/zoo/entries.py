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
    """A torchvision classifier with its default config; its batch norms'
    running statistics made unlike the defaults (eval mode reads them), and
    parameters initialized to zeros (ViT's head) drawn at random, so that
    the output depends on every layer."""
    def build(torch, batch, size):
        import torchvision
        if name.startswith("segmentation."):  # no pretrained backbone: no network there
            model = getattr(torchvision.models.segmentation, name.split(".")[1])(
                weights=None, weights_backbone=None)
        else:
            model = getattr(torchvision.models, name)()
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.2, 0.2)
                    m.running_var.uniform_(0.5, 1.5)
            for p in model.parameters():
                if not p.any():
                    p.normal_(0.0, 0.02)
        return model, image_inputs(torch, batch, size)
    return build


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
# Image models: their `seq` is the image size.
IMAGE_FAMILIES = ("resnet18", "resnet50", "mobilenet-v3-small", "efficientnet-b0", "vit-b-16",
                  "vit", "convnext-tiny", "swin-t", "fcn-resnet50", "deeplabv3-mobilenet",
                  "clip-vision")
# Audio models: their `seq` is the samples (whisper's features are fixed).
AUDIO_FAMILIES = ("whisper-encoder", "wav2vec2")


def entries():
    out = []
    for family in BUILDERS:
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
    return out


ENTRIES = entries()
