"""The model zoo's entries: real models as users build them (random
weights from their configs: the GPU machine has no network), with
realistic inputs. An entry is a name, a builder, a batch, a sequence
length, a dtype and its inputs' kind; `ENTRIES` lists them all.

    entry.build(torch) -> (module, args, kwargs)   # on the CPU, in f32
"""
from dataclasses import dataclass, field

from builders import (bart_encoder, clip_vision, encoder, encoder_layer, hf,
                      multihead_attention, torchvision_model, vit, wav2vec2, whisper_encoder)
from coverage import COVERAGE


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
# The tiers' families: the benchmark and correctness tiers build the ones
# above at full configs; the coverage tier those of COVERAGE, small.
MAIN_FAMILIES = tuple(BUILDERS)
_families = list(BUILDERS) + [family for family, _, _ in COVERAGE]
if len(set(_families)) != len(_families):
    raise ValueError("zoo families listed twice: "
                     f"{sorted({f for f in _families if _families.count(f) > 1})}")
BUILDERS.update({family: build for family, build, _ in COVERAGE})
# Image models: their `seq` is the image size.
IMAGE_FAMILIES = ("resnet18", "resnet50", "mobilenet-v3-small", "efficientnet-b0", "vit-b-16",
                  "vit", "convnext-tiny", "swin-t", "fcn-resnet50", "deeplabv3-mobilenet",
                  "clip-vision")
# Audio models: their `seq` is the samples (whisper's features are fixed).
AUDIO_FAMILIES = ("whisper-encoder", "wav2vec2")
# The convolution issue's zoo: also f16, and batch 32 in each dtype.
CONVOLUTION_ISSUE_FAMILIES = ("resnet18", "resnet50", "mobilenet-v3-small", "efficientnet-b0",
                              "convnext-tiny", "vit-b-16", "vit", "clip-vision", "whisper-encoder")


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
    for dtype in ("f32", "bf16"):
        out.append(Entry(f"whisper-encoder-{dtype}-b1-30s", "whisper-encoder", 1, 3000, dtype,
                         tags=("bench",)))
        out.append(Entry(f"wav2vec2-{dtype}-b1-1s", "wav2vec2", 1, 16000, dtype, tags=("bench",)))
    # The convolution issue's models in every dtype at batch 1 and 32.
    for family in CONVOLUTION_ISSUE_FAMILIES:
        size, tag = (3000, "30s") if family == "whisper-encoder" else (224, "224px")
        out.append(Entry(f"{family}-f16-b1-{tag}", family, 1, size, "f16", tags=("bench",)))
        for dtype in ("f32", "bf16", "f16"):
            out.append(Entry(f"{family}-{dtype}-b32-{tag}", family, 32, size, dtype,
                             tags=("bench",)))
    for family, _, seq in COVERAGE:
        for dtype in ("f32", "bf16"):
            out.append(Entry(f"{family}-{dtype}-b1-tiny", family, 1, seq, dtype,
                             tags=("coverage",)))
    return out


ENTRIES = entries()
