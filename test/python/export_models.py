"""The nn.Modules cgc.export is checked on: torch_export_gpu.py and
runtime_gpu.py compile them on the GPU machine, make_export_fixtures.py
records them for export_fixtures_test.py (CI, no PyTorch). Importing this
file needs no PyTorch; calling its functions does (they take `torch`)."""
import inspect
import os


def models(torch, small=False):
    """(name, module, example_args, dynamic_shapes) of every module cgc
    exports, inputs drawn from a generator seeded 0. `small`: the sizes of
    the committed fixtures, not those the GPU runs and benchmarks use."""
    nn = torch.nn
    d, hidden, seq, vocab, emb = (16, 32, 8, 20, 8) if small else (64, 256, 16, 100, 32)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)
            self.ln = nn.LayerNorm(d)

        def forward(self, x):
            return self.ln(x + self.fc2(nn.functional.gelu(self.fc1(x))))

    class EncoderLayer(nn.Module):
        def __init__(self, heads=4):
            super().__init__()
            self.heads = heads
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            b, s, d = x.shape
            h = self.ln1(x)
            q, k, v = self.qkv(h).split(d, dim=-1)
            split = lambda t: t.view(b, s, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
            q, k, v = split(q), split(k), split(v)
            att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
            ctx = (self.drop(att) @ v).transpose(1, 2).reshape(b, s, d)
            x = x + self.out(ctx)
            return x + self.ff(self.ln2(x))

    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, emb)
            self.head = nn.Linear(emb, 10)

        def forward(self, tokens):
            return torch.log_softmax(self.head(self.emb(tokens).mean(dim=1)), dim=-1)

    class IntDivision(nn.Module):  # PyTorch's promotion: int / int is float
        def forward(self, x):
            return x / 3 + x * 0.5 + (x > 2.5).float()

    class RoundingProd(nn.Module):  # round takes ties to even, as cgc's round
        def forward(self, x):
            y = torch.floor(x * 2) + torch.ceil(x) * torch.round(x)
            return y.view(4, 4) + x.view(4, 4).prod(dim=1, keepdim=True)

    class ConvNet(nn.Module):  # stride, padding ("same" too), dilation, groups, 1-D
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.c2 = nn.Conv2d(8, 8, (3, 2), padding="same", dilation=(1, 2), groups=4,
                                bias=False)
            self.patch = nn.Conv2d(8, 16, 2, stride=2)  # a ViT's patch embedding
            self.c1d = nn.Conv1d(16, 4, 3, padding=2)

        def forward(self, x):
            y = torch.relu(self.c1(x))
            y = y + self.c2(y)
            return self.c1d(self.patch(y).flatten(2))

    class PoolNet(nn.Module):  # a ResNet's stem and head: batch norm, pools
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, stride=2, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(6)
            with torch.no_grad():  # running statistics unlike the defaults
                self.bn.running_mean.uniform_(-0.5, 0.5, generator=gen)
                self.bn.running_var.uniform_(0.5, 2.0, generator=gen)
                self.bn.weight.uniform_(0.5, 1.5, generator=gen)
                self.bn.bias.uniform_(-0.5, 0.5, generator=gen)
            self.fc = nn.Linear(6, 5)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            a = nn.functional.max_pool2d(y, 3, 2, 1)
            b = nn.functional.max_pool2d(y, (2, 3), 2, ceil_mode=True, dilation=(1, 2))
            c = nn.functional.avg_pool2d(y, 3, 2, 1, ceil_mode=True)
            d = nn.functional.avg_pool2d(y, (3, 2), (2, 3), (1, 1), ceil_mode=True,
                                         count_include_pad=False)
            head = self.fc(nn.functional.adaptive_avg_pool2d(a, 1).flatten(1))
            return head, b.sum(dim=(2, 3)) + c.mean(dim=(2, 3)) + d.amax(dim=(2, 3))

    class ResizeNet(nn.Module):  # a segmentation head's resizes: F.interpolate's modes
        def forward(self, x):
            f = nn.functional
            up = f.interpolate(x, size=(11, 9), mode="bilinear", align_corners=False)
            corners = f.interpolate(x, size=(11, 9), mode="bilinear", align_corners=True)
            near = f.interpolate(x, scale_factor=2, mode="nearest")
            exact = f.interpolate(x, size=(3, 7), mode="nearest-exact")
            line = f.interpolate(x.flatten(2), size=13, mode="linear")
            uneven = f.adaptive_avg_pool2d(x, (3, 7))  # windows of two sizes, one upsampled dim
            return up + corners, (near.sum(dim=(2, 3)) + exact.mean(dim=(2, 3)) + line.amax(2) +
                                  uneven.amax(dim=(2, 3)))

    class DecoderNet(nn.Module):  # a U-Net decoder's and a GAN generator's upsampling
        def __init__(self):
            super().__init__()
            self.up = nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
            self.grouped = nn.ConvTranspose2d(4, 6, (2, 3), stride=(1, 2), groups=2,
                                              dilation=(2, 1), bias=False)
            self.line = nn.ConvTranspose1d(3, 2, 4, stride=3, padding=2)

        def forward(self, x):
            y = self.grouped(torch.relu(self.up(x)))
            return y, self.line(x.flatten(2))

    class HardActivations(nn.Module):  # MobileNetV3's, and clamps by numbers and tensors
        def forward(self, x, lo):
            f = nn.functional
            return f.hardswish(x) + 2 * f.hardsigmoid(x) + torch.clamp(x, -1.5, 0.7) + \
                f.relu6(x) + f.hardtanh(x) + torch.clamp(x, min=lo) + x.clamp(max=0.25)

    class RmsNorms(nn.Module):  # torch's RMSNorm (eps None: finfo's), its functional, Llama's
        def __init__(self):
            super().__init__()
            self.norm = nn.RMSNorm(16)
            with torch.no_grad():
                self.norm.weight.uniform_(0.5, 1.5, generator=gen)
            self.gain = nn.Parameter(torch.rand(4, 16, generator=gen) + 0.5)

        def forward(self, x):
            f = nn.functional
            llama = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.gain[0]
            return self.norm(x) + f.rms_norm(x, (4, 16), self.gain, eps=1e-5) + llama

    gen = torch.Generator().manual_seed(0)
    ties = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 3.5])
    yield "mlp", MLP(), (torch.randn(8, d, generator=gen),), None
    yield "encoder_layer", EncoderLayer(), (torch.randn(2, seq, d, generator=gen),), None
    yield "embedding_pool", Pool(), (torch.randint(0, vocab, (4, 12), generator=gen),), None
    yield "int_division", IntDivision(), (torch.randint(-50, 50, (16,), generator=gen),), None
    batch = torch.export.Dim("batch", min=1, max=32)
    yield "mlp_dynamic_batch", MLP(), (torch.randn(5, d, generator=gen),), ({0: batch},)
    batch = torch.export.Dim("batch", min=1, max=16)  # reshaped with: view(b, s, heads, ...)
    yield "encoder_dynamic_batch", EncoderLayer(), (torch.randn(5, seq, d, generator=gen),), \
        ({0: batch},)
    yield "rounding_prod", RoundingProd(), (torch.cat([3 * torch.randn(10, generator=gen), ties]),), None
    yield "conv_net", ConvNet(), (torch.randn(2, 3, 12, 10, generator=gen),), None
    yield "pool_net", PoolNet().eval(), (torch.randn(2, 3, 13, 11, generator=gen),), None
    yield "decoder_net", DecoderNet(), (torch.randn(2, 3, 5, 4, generator=gen),), None
    yield "resize_net", ResizeNet(), (torch.randn(2, 3, 5, 4, generator=gen),), None
    yield "hard_activations", HardActivations(), (4 * torch.randn(4, 33, generator=gen),
                                                  torch.randn(33, generator=gen)), None
    yield "rms_norms", RmsNorms(), (torch.randn(3, 4, 16, generator=gen),), None


def refusals(torch):
    """(name, module, example_args, dynamic_shapes, refusal) of every module
    cgc.export must refuse, in the mode it is exported in: the error must
    hold `refusal`, which for an op ends with the op's source line (the
    last line of the module's forward)."""
    nn = torch.nn

    class RunningMax(nn.Module):  # an ATen op with no mapping
        def forward(self, x):
            return torch.cummax(x, 0).values

    class LongSort(nn.Module):  # past pairwise ranking, and more than argtopk keeps
        def forward(self, x):
            return torch.sort(x.repeat(1, 5000)).values

    class ComplexAbs(nn.Module):  # complex values: only what rotary embeddings use
        def forward(self, x):
            return torch.view_as_complex(x.reshape(3, 2, 2)).abs()

    class ComplexCat(nn.Module):  # a list of complex operands is checked too
        def forward(self, x):
            z = torch.view_as_complex(x.reshape(3, 2, 2))
            return torch.view_as_real(torch.cat([z, z], dim=-1))

    class WideScatterMax(nn.Module):  # reduced by comparisons: bounded
        def forward(self, x):
            wide = x.repeat(2048, 1000)
            index = (torch.arange(4096) % 3)[:, None].expand(4096, 4000)
            return wide.scatter_reduce(0, index, wide[:4096], "amax")

    class ScaledAddmm(nn.Module):  # a rule refuses what its op cannot express
        def __init__(self):
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.ones(4, 4)), nn.Parameter(torch.ones(4))

        def forward(self, x):
            return torch.addmm(self.bias, x, self.weight, beta=0.5)

    class BiasOnlyNorm(nn.Module):  # cgc's layernorm takes a weight before a bias
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.zeros(4))

        def forward(self, x):
            return nn.functional.layer_norm(x, (4,), None, self.bias)

    class Dropping(nn.Module):  # exported in training mode
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(x)

    class Counting(nn.Module):  # mutates a buffer
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x):
            self.calls.add_(1)
            return x + self.calls

    class Doubling(nn.Module):
        def forward(self, x):
            return x * 2

    class SizeScaled(nn.Module):  # a dynamic dim's size as a number in the math
        def forward(self, x):
            return x * x.shape[0]

    class LastToken(nn.Module):  # an index from the end of a dynamic dim
        def forward(self, x):
            return x[:, -1]

    class CrossIndex(nn.Module):  # index tensors varying along the same axes
        def forward(self, x, rows, cols):
            return x[rows, cols]

    class StochasticMask(nn.Module):  # a random draw outside training (stochastic depth's)
        def forward(self, x):
            return x * torch.empty_like(x).bernoulli_(0.8) / 0.8

    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, generator=gen)
    yield "stochastic_mask", StochasticMask().eval(), (torch.ones(64, 64),), None, refusal(
        StochasticMask, "node 'bernoulli' (bernoulli.p): bernoulli (a random draw) outside "
        "training: cgc.compile_train draws it from cgc's own stream")
    yield "running_max", RunningMax().eval(), (x,), None, refusal(
        RunningMax, "node 'cummax': the ATen op cummax.default has no cgc mapping")
    yield "long_sort", LongSort().eval(), (x,), None, refusal(
        LongSort, "node 'sort' (sort.default): sort of 20000 elements in 3 rows, keeping 20000: "
        "cgc ranks them by pairwise comparisons (1200000000), refused over 16384 elements or "
        "268435456 comparisons, or selects at most 2048 a row")
    yield "complex_abs", ComplexAbs().eval(), (x,), None, refusal(
        ComplexAbs, "node 'abs_1' (abs.default): abs of complex values (cgc computes complex "
        "numbers in view_as_complex, view_as_real, polar, mul, add, sub, slices and the "
        "reshaping views only)")
    yield "complex_cat", ComplexCat().eval(), (x,), None, refusal(
        ComplexCat, "node 'cat' (cat.default): cat of complex values (cgc computes complex "
        "numbers in view_as_complex, view_as_real, polar, mul, add, sub, slices and the "
        "reshaping views only)")
    yield "wide_scatter_max", WideScatterMax().eval(), (x,), None, refusal(
        WideScatterMax, "node 'scatter_reduce' (scatter_reduce.two): scatter_reduce.two: cgc "
        "reduces a scattered update by comparing it with every position of its axis "
        "(100663296000 comparisons), refused over 268435456")
    yield "addmm_beta", ScaledAddmm().eval(), (x,), None, refusal(
        ScaledAddmm, "node 'addmm' (addmm.default): addmm with alpha or beta")
    yield "layer_norm_bias_only", BiasOnlyNorm().eval(), (x,), None, refusal(
        BiasOnlyNorm, "node 'layer_norm' (layer_norm.default): a layer_norm with a bias and "
        "no weight")
    yield "train_dropout", Dropping().train(), (x,), None, refusal(
        Dropping, "node 'native_dropout' (native_dropout.default): dropout in training mode; "
        "export the module in eval mode (or train it with cgc.compile_train)")
    yield "buffer_mutation", Counting().eval(), (x,), None, (
        "output 'add' mutates state (buffer_mutation); export in eval mode")
    yield "float64_input", Doubling().eval(), (x.double(),), None, (
        "'x' has dtype torch.float64, which cgc has not")
    yield "unbounded_dim", Doubling().eval(), (x,), ({0: torch.export.Dim("batch", min=2)},), (
        "dim batch has no upper bound: give torch.export.Dim a max")
    yield "size_as_tensor", SizeScaled().eval(), (x,), \
        ({0: torch.export.Dim("batch", min=2, max=8)},), refusal(
            SizeScaled, "(batch) is used as a tensor (cgc has no value for a dim)")
    yield "index_from_end", LastToken().eval(), (x,), \
        ({1: torch.export.Dim("seq", min=2, max=8)},), refusal(
            LastToken, "node 'select' (select.int): an index from the end of dynamic dim seq "
            "(cgc indexes a dynamic dim from its start)")
    batch = torch.export.Dim("batch", min=2, max=8)
    index = torch.randint(0, 3, (3, 2), generator=gen)
    yield "index_not_orthogonal", CrossIndex().eval(), (x, index, index), \
        ({0: batch}, {0: batch}, {0: batch}), refusal(
            CrossIndex, "node 'index' (index.Tensor): advanced indexing of a dynamic dim by "
            "index tensors of shapes [['batch', 2], ['batch', 2]] (cgc indexes a dynamic dim "
            "only by orthogonal indices, each varying along its own axis)")


def refusal(cls, text):
    """`text` followed by ` (file:line)` of the last line of cls.forward."""
    lines, first = inspect.getsourcelines(cls.forward)
    where = os.path.basename(inspect.getsourcefile(cls.forward))
    return f"{text} ({where}:{first + len(lines) - 1})"


def token_kwargs(torch, gen, vocab, batch, seq, padded, token_types):
    """A tokenizer's padded batch: ids in [1, vocab) drawn from `gen`, an
    attention_mask whose last row ends in `padded` zeros, and
    token_type_ids with a second segment where the model takes them."""
    ids = torch.randint(1, vocab, (batch, seq), generator=gen)
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[-1, seq - padded:] = 0
    kwargs = {"input_ids": ids, "attention_mask": mask}
    if token_types:
        kwargs["token_type_ids"] = (torch.arange(seq) >= seq // 2).long().expand(batch, seq)
    return kwargs


def keyword_models(torch):
    """(name, module, example_args, example_kwargs) of the modules called
    with keywords as users call them: the zoo's families at tiny configs
    (transformers, on the machines that have it) and modules exercising
    one ATen lowering each (indexing, gather, padding, masks, attention).
    Inputs from a generator seeded 2."""
    nn, F = torch.nn, torch.nn.functional
    gen = torch.Generator().manual_seed(2)
    vocab, seq = 100, 12

    def tokens(batch, token_types=False):
        return token_kwargs(torch, gen, vocab, batch, seq, 3, token_types)

    class Indexing(nn.Module):
        def forward(self, x, rows, cols):
            return x[rows, :, cols].sum(-1) + x[:, rows[0]].sum() + x[..., -1][rows[:, :1], cols[:1] % 5]

    class TakeAlong(nn.Module):
        def forward(self, x, index):
            rows = x.index_select(0, index[0, :2] % 3).repeat(2, 1, 3)
            return torch.gather(x, 1, index) + torch.gather(x, 0, index[:2, :3] % 3).sum() + \
                rows.sum(0)[:, :4].sum()

    class Padding(nn.Module):
        def forward(self, x):
            return F.pad(x, (1, 2, -1, 1), value=-0.5) * 2 + F.pad(x, (0, 0, 2, 0)).sum()

    class Ranges(nn.Module):
        def forward(self, ids):
            positions = torch.arange(3, 3 + 2 * ids.shape[1], 2)
            counts = torch.cumsum(ids.ne(1).int(), dim=1)
            return positions * counts, torch.argmax(ids.float(), dim=-1), torch.argmax(ids)

    class Masks(nn.Module):
        def forward(self, mask, x):
            keep = (mask > 0) & ~(x < -1.0)
            either = (mask > 0) | (x > 1.0)
            return torch.where(keep ^ either, x, torch.finfo(x.dtype).min).tril(-1).triu(-2)

    class Attention(nn.Module):
        def forward(self, q, k, v, bias, keep):
            grouped = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=True)
            k2, v2 = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
            masked = F.scaled_dot_product_attention(q, k2, v2, attn_mask=keep, scale=0.3)
            biased = F.scaled_dot_product_attention(q, k2, v2, attn_mask=bias)
            shared = F.scaled_dot_product_attention(q, k[:, :1], v[:, :1])  # broadcast head
            return grouped + masked + biased + shared

    class Routing(nn.Module):  # what mixture-of-experts layers route with
        def forward(self, x, ties, ids):
            top, where_ = torch.topk(x, 3)
            low, low_at = torch.topk(x, 2, dim=0, largest=False)
            order, perm = torch.sort(ties, dim=-1, descending=True, stable=True)
            up, up_at = torch.sort(ties, stable=True)
            inverse = torch.empty_like(up_at[0])
            inverse[up_at[0]] = torch.arange(up_at.shape[1])
            counts = torch.histc(ids.float(), bins=5, min=0, max=4) + \
                torch.histc(x, bins=7).sum() + torch.histc(x[0], bins=5, min=-0.5, max=0.5)
            biggest, at = x.max(dim=1)
            least, least_at = torch.min(x, 0, keepdim=True)
            chosen = torch.zeros_like(x).scatter(1, where_, 1.0)
            division = torch.div(ids - 3, 2, rounding_mode="floor") + \
                torch.div(ids - 3, -2, rounding_mode="trunc")
            real = torch.div(x, 0.3, rounding_mode="floor") + torch.div(x, 0.3, rounding_mode="trunc")
            tenths = torch.tensor([1.0, -1.0, 0.7, -0.0, 3.0])  # 1 / 0.1 floors to 9
            floors = torch.div(tenths, 0.1, rounding_mode="floor"), torch.remainder(tenths, 0.1)
            untouched = x.scatter(1, where_[:, :0], -1.0)  # an empty index writes nothing
            fewest, fewest_at = (ids.view(3, 3) - 2).min(dim=1)
            return (top, where_, low, low_at, order, perm, up, torch.argsort(ties[1]), inverse,
                    counts, biggest + x.max(), at, least * torch.reciprocal(x.min()), least_at,
                    chosen, division, real, fewest, fewest_at) + floors + (untouched,)

    class Grouped(nn.Module):  # torch's grouped product (bf16), rows sorted by group
        def forward(self, x, w, offsets):
            return torch._grouped_mm(x.bfloat16(), w.bfloat16(), offs=offsets).float()

    class Softplus(nn.Module):  # state-space models' step sizes: log1p, also near 0
        def forward(self, x):
            return F.softplus(x), torch.log1p(x.abs() * 1e-9) * 1e9, torch.log1p(x.exp() - 1.0), \
                torch.log1p(x.abs() * 1e37)

    class LongTopK(nn.Module):  # past pairwise ranking: one argtopk
        def forward(self, x):
            top = torch.topk(x, 5)
            return top.values, top.indices, torch.topk(x[:, :3000], 3, largest=False).indices

    class WideIndexAdd(nn.Module):  # one index_add, whatever the count of positions
        def forward(self, x, index):
            return x.index_add(0, index, x * 2.0)

    class Scatters(nn.Module):  # writes at indices (python/cgc/indexed.py)
        def forward(self, x, perm, src, dup, vals, cube, ids):
            rows, cols = perm[:3, 0] % 4, perm[:3, 1] - 6  # a negative one counts from the end
            put, adjacent, apart = x.clone(), cube.clone(), cube.clone()
            put[rows, cols] = 7.0                                  # two index tensors
            adjacent[:, rows[:2] % 2, cols[:2] % 4] = vals[:2, :2]  # placed where they are
            apart[rows[:2] % 2, :, cols[:2] % 4] = vals[0, :3]     # their dims first
            masked = x.clone()
            masked[x > 0.5] = -1.0
            return (x.scatter(1, perm, src), x.scatter(1, perm, 2.5),
                    x.scatter_add(1, dup, vals), x.scatter_reduce(1, dup, vals, "amax"),
                    x.scatter_reduce(1, dup, vals, "mean", include_self=False),
                    x.scatter_reduce(1, dup, vals, "prod"),
                    x.scatter_reduce(0, dup[:3, :6] % 4, vals[:3, :6], "amin"),
                    x.index_add(1, dup[0, :4] % 6, vals[:, :4], alpha=0.5),
                    x.index_fill(1, perm[0, :2], -2.0), put, adjacent, apart, masked,
                    x.index_put((dup[0] % 4, dup[1]), vals[2], accumulate=True),
                    ids.scatter_add(0, dup[:2, :3] % 3, ids[:2, :3] * 10))

    class RewrittenBuffer(nn.Module):  # CTRL: a table moved to its own device every call
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.randn(9, 4, generator=torch.Generator().manual_seed(3)))

        def forward(self, x, ids):
            self.table = self.table.to(device=x.device, dtype=x.dtype)
            return x + self.table[ids]

    class StandardizedConv(nn.Module):  # timm's StdConv2d (BiT, NFNet), in f16
        record_as_cuda = True  # its batch norm's saved statistics f32, as on CUDA

        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(6, 3, 3, 3))

        def forward(self, x):
            w = F.batch_norm(self.weight.reshape(1, 6, -1), None, None, training=True,
                             momentum=0.0, eps=1e-6).reshape_as(self.weight)
            return F.conv2d(x, w, padding=1)

    class Eyes(nn.Module):  # torch.eye (XLNet's mask): kept whole, not uint8 aranges
        def forward(self, x):
            return x - torch.eye(x.shape[0], dtype=x.dtype) + torch.eye(5, 7)[:, 2:] + \
                torch.eye(5, dtype=torch.bool).float() * 3

    class InverseTrig(nn.Module):  # YOSO's acos; the others composed alike
        def forward(self, unit, wide):
            return torch.asin(unit), torch.acos(unit), torch.atan(wide), \
                torch.acos(unit.to(torch.float16)), torch.asinh(wide), torch.atanh(unit), \
                torch.acosh(wide.abs() + 1), torch.acosh(wide)

    class MetaRope(nn.Module):  # Meta's reference Llama: complex frequencies as a buffer
        def __init__(self, dim=16, end=32):
            super().__init__()
            freqs = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
            angles = torch.outer(torch.arange(end).float(), freqs)
            self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles))
            self.wq = nn.Linear(2 * dim, 2 * dim)

        def forward(self, x):
            b, s, _ = x.shape
            xq = torch.view_as_complex(self.wq(x).float().reshape(b, s, 2, -1, 2))
            freqs = self.freqs_cis[:s].view(1, s, 1, -1)
            inline = torch.polar(x[..., :8].abs() + 1, x[..., 8:16]).unsqueeze(2)
            rotated = xq * freqs * 0.5 + xq * inline - xq
            return torch.view_as_real(rotated).flatten(3).type_as(x)

    class Activations(nn.Module):  # Core ATen ops cgc composes (aten_activations.py)
        def forward(self, x, w):
            small = x * 1e-6
            return (F.leaky_relu(x, 0.2), F.elu(x), F.selu(x), F.celu(x, 0.5),
                    F.hardshrink(x, 0.3), F.softshrink(x, 0.3), F.logsigmoid(x * 30),
                    torch.logit(torch.sigmoid(x), eps=1e-3), torch.expm1(x), torch.expm1(small),
                    torch.sinh(small), torch.sinh(x), torch.cosh(x), torch.exp2(x),
                    torch.log2(x.abs() + 1e-3), torch.log10(x.abs() + 1e-3),
                    torch.isinf(x / (x - x[0, 0])), torch.nan_to_num(torch.log(x)),
                    torch.lerp(x, w, 0.3), torch.lerp(x, w, torch.sigmoid(w) * 2 - 0.5))

    class Quirks(nn.Module):  # PyTorch's rules that architectures lean on
        def forward(self, x, ids, flags):
            empty = torch.zeros(0)
            truths = (torch.logical_and(ids, flags), torch.logical_or(ids, flags[0]),
                      torch.logical_xor(ids, x), torch.logical_not(ids))
            ordered = (flags > (ids > 0), flags <= True)           # bools as 0 and 1
            pooled = F.avg_pool2d(x, 9, ceil_mode=True), F.max_pool2d(x, 7, ceil_mode=True,
                                                                         padding=1)
            return truths + ordered + pooled + (torch.cat([empty, x.flatten()], dim=-1),
                                                torch.cat([x, empty], dim=0)[0],
                                                torch.sign(x), torch.sign(ids))

    sgen = torch.Generator().manual_seed(4)
    perm = torch.stack([torch.randperm(6, generator=sgen)[:4] for _ in range(4)])
    scatters = (torch.randn(4, 6, generator=sgen), perm, torch.randn(4, 5, generator=sgen),
                torch.randint(0, 6, (4, 7), generator=sgen), torch.randn(4, 7, generator=sgen),
                torch.randn(2, 3, 4, generator=sgen), torch.randint(-9, 9, (3, 4), generator=sgen))
    x = torch.randn(4, 5, 6, generator=gen)
    rows, cols = torch.tensor([[0, 3], [-1, 2]]), torch.tensor([[5, 0], [-2, 1]])
    yield "aten_indexing", Indexing(), (x, rows, cols), {}
    yield "aten_take_along", TakeAlong(), (torch.randn(3, 5, generator=gen),
                                           torch.randint(0, 5, (3, 4), generator=gen)), {}
    yield "aten_padding", Padding(), (torch.randn(2, 3, 4, generator=gen),), {}
    yield "aten_ranges", Ranges(), (torch.randint(0, 4, (3, 7), generator=gen),), {}
    yield "aten_masks", Masks(), (torch.randint(0, 2, (5, 5), generator=gen),
                                  torch.randn(5, 5, generator=gen)), {}
    b, h, s, e = 2, 4, 6, 8
    keep = torch.rand(b, 1, s, s, generator=gen) > 0.3
    keep[..., 0] = True  # no row fully masked
    yield "aten_attention", Attention(), (
        torch.randn(b, h, s, e, generator=gen), torch.randn(b, h // 2, s, e, generator=gen),
        torch.randn(b, h // 2, s, e, generator=gen), torch.randn(b, 1, s, s, generator=gen),
        keep), {}
    yield "torch_encoder_layer", nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), \
        (torch.randn(2, seq, 32, generator=gen),), {}
    mha = nn.MultiheadAttention(32, 4, batch_first=True)
    q = torch.randn(2, seq, 32, generator=gen)
    yield "torch_mha", mha, (q, q, q), {"need_weights": False}
    routing_gen = torch.Generator().manual_seed(3)
    ties = torch.tensor([[2.0, float("nan"), -1.0, 2.0, 0.5, -1.0, 2.0],
                         [0.0, 3.0, 3.0, float("-inf"), float("nan"), 1.0, float("nan")]])
    yield "aten_routing", Routing(), (torch.randn(4, 6, generator=routing_gen), ties,
                                      torch.randint(0, 5, (9,), generator=routing_gen)), {}
    integers = dict(generator=routing_gen, dtype=torch.float32)  # exact in bf16 products
    yield "aten_grouped_mm", Grouped(), (
        torch.randint(-3, 4, (7, 16), **integers), torch.randint(-3, 4, (3, 16, 8), **integers),
        torch.tensor([2, 2, 7], dtype=torch.int32)), {}
    yield "aten_scatters", Scatters(), scatters, {}
    yield "long_topk", LongTopK(), (torch.randn(3, 20000, generator=sgen),), {}
    # 20000 x 20000 comparisons once (refused then): an index_add now.
    yield "wide_index_add", WideIndexAdd(), (
        torch.randn(20000, 2, generator=sgen),
        torch.randint(0, 5000, (20000,), generator=sgen)), {}
    yield "aten_activations", Activations(), (torch.randn(6, 7, generator=sgen) * 3,
                                              torch.randn(6, 7, generator=sgen)), {}
    yield "meta_rope", MetaRope(), (torch.randn(2, 5, 32, generator=sgen),), {}
    yield "aten_eye", Eyes(), (torch.randn(5, 5, generator=sgen),), {}
    unit = torch.cat([torch.linspace(-1, 1, 201), torch.tensor([-1.5, 1.5, 0.9999, -0.9999,
                                                                0.5, -0.5, 1e-8, -0.0])])
    wide = torch.cat([torch.linspace(-8, 8, 161), torch.tensor([1e30, -1e30, float("inf"),
                                                               float("-inf"), 0.41421, 2.41422,
                                                               1e-6, 4095.0, 4097.0, 1.0001])])
    yield "aten_inverse_trig", InverseTrig(), (unit, wide), {}
    yield "std_conv_f16", StandardizedConv().to(torch.float16).eval(), (
        torch.randn(1, 3, 8, 8, generator=sgen).to(torch.float16),), {}
    yield "buffer_rewritten", RewrittenBuffer().eval(), (
        torch.randn(3, 4, generator=sgen), torch.randint(0, 9, (3,), generator=sgen)), {}
    quirky = torch.randn(2, 3, 5, 4, generator=sgen)
    quirky[0, 0, 0, :2] = torch.tensor([0.0, float("nan")])
    yield "aten_quirks", Quirks(), (quirky, torch.randint(-2, 3, (2, 3, 5, 4), generator=sgen),
                                    torch.rand(2, 3, 5, 4, generator=sgen) > 0.5), {}
    yield "aten_softplus", Softplus(), (torch.cat([
        4 * torch.randn(12, generator=routing_gen),
        torch.tensor([1e-8, -1e-7, 30.0, -30.0, float("inf"), float("-inf")])]),), {}
    try:
        import transformers
    except ImportError:
        return
    tiny = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, vocab_size=vocab, max_position_embeddings=64)
    decoder = dict(tiny, num_key_value_heads=2, use_cache=False)
    for name, model, config, kwargs in (
            ("hf_bert", "BertModel", "BertConfig", tokens(2, token_types=True)),
            ("hf_roberta", "RobertaModel", "RobertaConfig", tokens(2)),
            ("hf_llama", "LlamaModel", "LlamaConfig", tokens(2)),
            ("hf_qwen2", "Qwen2Model", "Qwen2Config", tokens(2)),
            ("hf_clip_text", "CLIPTextModel", "CLIPTextConfig", tokens(2))):
        cfg = getattr(transformers, config)(**(decoder if "llama" in name or "qwen" in name
                                               else tiny))
        yield name, getattr(transformers, model)(cfg), (), kwargs
    gpt2 = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=vocab,
                                   n_positions=64, use_cache=False)
    yield "hf_gpt2", transformers.GPT2Model(gpt2), (), tokens(2)
    mixtral = transformers.MixtralConfig(**decoder, num_local_experts=4, num_experts_per_tok=2)
    yield "hf_mixtral", transformers.MixtralModel(mixtral), (), tokens(2)
