"""The zoo's builders (entries.py, coverage.py): each makes a module
from its config with random weights (the GPU machine has no network) and
realistic inputs for it.

    builder(torch, batch, seq) -> (module, (args, kwargs))   # on the CPU, in f32
"""


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
