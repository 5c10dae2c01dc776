"""The GPU test suite's attention cases (own_cases.py writes them with its
own): one attention node at real models' shapes on each kernel, and
attention blocks as models write them through the default pipeline."""
import numpy as np


def attention_case(put, name, dt, q, k, v, attrs, mask, schedule):
    """One attention node over inputs of shapes q, k, v (and a mask of
    (shape, dtype)), with `schedule` as its hand-written record when given."""
    ins = [("q", dt, q), ("k", dt, k), ("v", dt, v)]
    if mask:
        ins.append(("m", mask[1], mask[0]))
    node = {"name": "y", "op": "attention", "inputs": [n for n, _, _ in ins]}
    if attrs:
        node["attrs"] = attrs
    if schedule:
        node["schedule"] = schedule
    put(name, ins, [node], ["y"])


def attention_cases(put):
    """attention at real models' shapes, each on the fused kernel through a
    hand-written fused_attention record with R query rows per warp (every
    R from 1 to 16; the rule would write the half-type ones out as products,
    target/AttentionRule.h): head widths 32, 64, 80, 128; sequences 1, 7,
    128, 129, 512; heads 1 to 16 and grouped; bool and additive masks
    broadcast every way the kernel takes (random bool masks leave some
    rows with no key: 0 on both sides); causal, window, soft-capping, an
    explicit scale; f32, f16, bf16; ranks 3 to 5; a value width unlike the
    key width; one case too wide for the kernel (written out)."""
    def case(tag, dt, rows, q, k, v, attrs=None, mask=None):
        tile = 4 * rows
        schedule = rows and {"strategy": "fused_attention", "tile": tile,
                             "grid_x": -(-q[-2] // tile) * int(np.prod(q[:-2])), "block": 128}
        attention_case(put, f"own_attention_{tag}_{dt}", dt, q, k, v, attrs, mask, schedule)

    for dt, rows in (("f32", 2), ("f16", 1), ("bf16", 4)):
        case("bert_b1_s128", dt, rows, [1, 12, 128, 64], [1, 12, 128, 64], [1, 12, 128, 64],
             mask=([1, 1, 1, 128], "bool"))
        case("gpt2_causal_s128", dt, rows, [1, 12, 128, 64], [1, 12, 128, 64], [1, 12, 128, 64],
             {"causal": True})
    case("llama_gqa_causal", "bf16", 8, [2, 8, 129, 64], [2, 4, 129, 64], [2, 4, 129, 64],
         {"causal": True}, ([2, 1, 1, 129], "bool"))
    case("width80_additive", "f16", 4, [2, 4, 129, 80], [2, 4, 129, 80], [2, 4, 129, 80],
         mask=([2, 1, 129, 129], "f16"))
    case("width128_causal_s512", "f32", 4, [1, 4, 512, 128], [1, 4, 512, 128], [1, 4, 512, 128],
         {"causal": True})
    case("width128_s7_h16", "bf16", 2, [2, 16, 7, 128], [2, 16, 7, 128], [2, 16, 7, 128])
    case("decode_one_row", "f32", 1, [3, 2, 1, 32], [3, 2, 129, 32], [3, 2, 129, 32],
         mask=([3, 1, 1, 129], "bool"))
    case("seq1", "f32", 1, [4, 2, 1, 64], [4, 2, 1, 64], [4, 2, 1, 64])
    case("window_causal", "f32", 4, [1, 2, 129, 64], [1, 2, 129, 64], [1, 2, 129, 64],
         {"causal": True, "window": 16})
    case("window_only_s512", "bf16", 16, [1, 2, 512, 64], [1, 2, 512, 64], [1, 2, 512, 64],
         {"window": 100})
    case("softcap_scale", "f32", 16, [1, 2, 128, 64], [1, 2, 128, 64], [1, 2, 128, 64],
         {"causal": True, "softcap": 5.0, "scale": 0.3})
    case("rank5_full_mask", "f32", 2, [2, 3, 2, 7, 32], [2, 3, 2, 9, 32], [2, 3, 2, 9, 32],
         mask=([2, 3, 1, 7, 9], "bool"))
    case("rank3_head_mask", "f32", 1, [4, 33, 64], [4, 33, 64], [4, 33, 64],
         mask=([4, 1, 33], "f32"))
    case("value_width32", "f32", 2, [1, 2, 20, 64], [1, 2, 20, 64], [1, 2, 20, 32])
    case("width256_expanded", "f32", 0, [1, 2, 16, 256], [1, 2, 16, 256], [1, 2, 16, 256],
         {"causal": True})
    # The rule's own choice (no record): fused in f32 at 128 keys. (Its
    # bf16 twin, written out as products and a softmax, misses the bf16
    # tolerance against the interpreter on these inputs: scores of up to
    # about 30 rounded to bf16 before the softmax; docs/passes.md.)
    case("rule", "f32", 0, [2, 6, 128, 64], [2, 6, 128, 64], [2, 6, 128, 64],
         {"causal": True})
    mma_attention_cases(put)
    decode_attention_cases(put)


def decode_record(q, k, v, tile, chunks):
    """The decode_attention record of q, k and v of these shapes with `tile`
    query rows per block and the keys in about `chunks` spans, as
    target/AttentionRule.h's decodeAttentionLaunch derives it (spans of a
    multiple of 16 keys; 4 bytes of partials per block, row and value
    element plus two, with more than one span)."""
    groups = int(np.prod(k[:-2]))
    rows = q[-3] // k[-3] * q[-2]
    span = -(-(-(-k[-2] // chunks)) // 16) * 16
    split = -(-k[-2] // span)
    blocks = groups * -(-rows // tile) * split
    return {"strategy": "decode_attention", "tile": tile, "chunks": split, "grid_x": blocks,
            "block": 128, "scratch": 0 if split == 1 else 4 * blocks * tile * (v[-1] + 2)}


def decode_attention_cases(put):
    """attention of few query rows over many keys on the decode kernel
    (codegen/device/attention_decode.cuh): the rule's own choice (no record)
    and hand-written decode_attention records (query rows per block 1 to 8,
    the keys in 1 to 40 spans, so spans whose every key the limits drop and
    row chunks with rows past the group's); f32, f16 and bf16; head widths 32, 64, 80, 128
    and a value width unlike the key width; grouped heads (4, 7 and 16
    query heads per kv head), 1 to 4 query rows; 129 to 2048 keys; bool and
    additive masks, causal, window, soft-capping, an explicit scale; ranks
    3 to 5; and a KV cache poisoned with 1e30 where the mask drops its keys
    (a decoding step's unwritten tail)."""
    def case(tag, dt, q, k, v, attrs=None, mask=None, tile=0, chunks=0):
        schedule = decode_record(q, k, v, tile, chunks) if tile else None
        attention_case(put, f"own_decode_attention_{tag}_{dt}", dt, q, k, v, attrs, mask,
                       schedule)

    case("llama_gqa_rule", "bf16", [1, 32, 1, 64], [1, 8, 300, 64], [1, 8, 300, 64],
         mask=([1, 1, 1, 300], "bool"))
    case("gpt2_additive_rule", "f32", [2, 12, 1, 64], [2, 12, 257, 64], [2, 12, 257, 64],
         mask=([2, 1, 1, 257], "f32"))
    case("qwen_group7_rule", "f16", [2, 14, 1, 64], [2, 2, 513, 64], [2, 2, 513, 64],
         mask=([2, 1, 1, 513], "bool"))
    case("mqa_width128_rule", "bf16", [1, 16, 1, 128], [1, 1, 2048, 128], [1, 1, 2048, 128],
         mask=([1, 1, 1, 2048], "bool"))
    case("rows4_window_softcap", "bf16", [1, 8, 4, 64], [1, 2, 500, 64], [1, 2, 500, 64],
         {"window": 100, "softcap": 5.0, "scale": 0.3}, tile=8, chunks=3)
    case("rows2_causal_width80_value40", "f16", [1, 4, 2, 80], [1, 4, 200, 80], [1, 4, 200, 40],
         {"causal": True}, tile=2, chunks=5)
    case("one_span", "f32", [3, 2, 1, 32], [3, 2, 129, 32], [3, 2, 129, 32],
         mask=([3, 1, 1, 129], "bool"), tile=1, chunks=1)
    case("empty_spans", "f32", [1, 4, 1, 32], [1, 4, 130, 32], [1, 4, 130, 32],
         {"causal": True}, tile=1, chunks=9)
    case("tile3_chunks40", "bf16", [2, 8, 1, 64], [2, 2, 700, 64], [2, 2, 700, 64],
         mask=([2, 8, 1, 700], "bf16"), tile=3, chunks=40)
    case("rank5_full_mask", "f32", [2, 3, 2, 3, 32], [2, 3, 2, 150, 32], [2, 3, 2, 150, 32],
         mask=([2, 3, 1, 3, 150], "bool"))
    case("rank3", "f32", [4, 1, 64], [4, 300, 64], [4, 300, 64])

    # A decoding step's cache: keys and values the mask drops hold 1e30
    # (garbage a kernel must weigh by 0, or not read). (Not NaN: the
    # interpreter's 0 x NaN is NaN, as PyTorch's math SDPA, where the decode
    # kernel, which skips the dropped keys, gives the kept keys' result;
    # docs/passes.md.)
    for dt in ("f32", "bf16"):
        b, h, hkv, n, d = 2, 8, 2, 260, 64
        big = {"name": "big", "op": "constant", "attrs": {"dtype": dt, "shape": [], "value": [1e30]}}
        nodes = [big,
                 {"name": "m4", "op": "reshape", "inputs": ["m"], "attrs": {"shape": [b, 1, n, 1]}},
                 {"name": "kp", "op": "where", "inputs": ["m4", "k", "big"]},
                 {"name": "vp", "op": "where", "inputs": ["m4", "v", "big"]},
                 {"name": "y", "op": "attention", "inputs": ["q", "kp", "vp", "m"]}]
        put(f"own_decode_attention_poisoned_cache_{dt}",
            [("q", dt, [b, h, 1, d]), ("k", dt, [b, hkv, n, d]), ("v", dt, [b, hkv, n, d]),
             ("m", "bool", [b, 1, 1, n])], nodes, ["y"])
        decode_loop_case(put, dt)


def decode_loop_case(put, dt):
    """A decoding loop as generation writes it: each trip writes a new key
    and value into the cache at its position (index_copy), masks the
    cache to the positions written so far and attends over it with one
    query row per head (the decode kernel inside the `while` body, its
    partials' scratch included); 6 trips from position 150 of 160."""
    b, h, hkv, n, d = 1, 8, 2, 160, 32
    cache = [b, hkv, n, d]
    carried = [("i", "i64", []), ("kc", dt, cache), ("vc", dt, cache), ("acc", dt, [b, h, 1, d]),
               ("q", dt, [b, h, 1, d]), ("newk", dt, [b, hkv, 1, d]), ("newv", dt, [b, hkv, 1, d])]
    region_inputs = [{"name": f"{name}", "dtype": t, "shape": shape} for name, t, shape in carried]

    def const(name, t, value):
        return {"name": name, "op": "constant", "attrs": {"dtype": t, "shape": [], "value": value}}
    body = [const("one", "i64", 1),
            {"name": "pos", "op": "reshape", "inputs": ["i"], "attrs": {"shape": [1]}},
            {"name": "kc2", "op": "index_copy", "inputs": ["kc", "pos", "newk"], "attrs": {"axis": 2}},
            {"name": "vc2", "op": "index_copy", "inputs": ["vc", "pos", "newv"], "attrs": {"axis": 2}},
            {"name": "ids", "op": "iota", "attrs": {"dtype": "i64", "shape": [n], "axis": 0}},
            {"name": "keep", "op": "le", "inputs": ["ids", "i"]},
            {"name": "mask", "op": "reshape", "inputs": ["keep"], "attrs": {"shape": [b, 1, 1, n]}},
            {"name": "a", "op": "attention", "inputs": ["q", "kc2", "vc2", "mask"]},
            {"name": "acc2", "op": "add", "inputs": ["acc", "a"]},
            {"name": "i2", "op": "add", "inputs": ["i", "one"]}]
    cond = [const("end", "i64", 156), {"name": "go", "op": "lt", "inputs": ["i", "end"]}]
    nodes = [const("start", "i64", 150),
             {"name": "zero", "op": "constant", "attrs": {"dtype": dt, "shape": [], "value": 0.0}},
             {"name": "acc0", "op": "broadcast_to", "inputs": ["zero"],
              "attrs": {"shape": [b, h, 1, d]}},
             {"name": "loop", "op": "while",
              "inputs": ["start", "k", "v", "acc0", "q", "newk", "newv"],
              "outputs": ["n_out", "k_out", "v_out", "acc_out", "q_out", "newk_out", "newv_out"],
              "regions": {"cond": {"inputs": region_inputs, "nodes": cond, "outputs": ["go"]},
                          "body": {"inputs": region_inputs, "nodes": body,
                                   "outputs": ["i2", "kc2", "vc2", "acc2", "q", "newk",
                                               "newv"]}}}]
    put(f"own_decode_attention_in_loop_{dt}",
        [("q", dt, [b, h, 1, d]), ("k", dt, cache), ("v", dt, cache),
         ("newk", dt, [b, hkv, 1, d]), ("newv", dt, [b, hkv, 1, d])],
        nodes, ["acc_out", "k_out"])


def attention_block_cases(put):
    """Attention blocks as the models write them, through the default
    pipeline: sibling projections with and without biases (merge-products:
    one product over weights laid side by side), the head split as a
    reshape and a transpose, GPT-2's one projection split in three, grouped
    heads, the heads merged back; a gated MLP (gate and up merged);
    nn.MultiheadAttention's sequence-first chain; f32 and bf16, so that the
    fused and the tensor-core kernels both read them."""
    def param(name, dt, shape, seed):
        bound = 1.0 / np.sqrt(shape[-1])
        return {"name": name, "kind": "parameter", "dtype": dt, "shape": shape,
                "init": {"dist": "uniform", "low": -bound, "high": bound, "seed": seed}}

    def heads(name, value, b, s, h, d):
        return [{"name": name + "4", "op": "reshape", "inputs": [value],
                 "attrs": {"shape": [b, s, h, d]}},
                {"name": name + "t", "op": "transpose", "inputs": [name + "4"],
                 "attrs": {"perm": [0, 2, 1, 3]}}]

    def merged(b, s, h, d):
        return [{"name": "at", "op": "transpose", "inputs": ["a"], "attrs": {"perm": [0, 2, 1, 3]}},
                {"name": "o", "op": "reshape", "inputs": ["at"], "attrs": {"shape": [b, s, h * d]}}]

    for dt in ("f32", "bf16"):
        b, s, h, d = 2, 33, 4, 32
        e = h * d
        ins = [("x", dt, [b, s, e]), ("m", "bool", [b, 1, 1, s])]
        nodes = []
        for i, n in enumerate("qkv"):
            ins += [param("w" + n, dt, [e, e], 10 + 2 * i), param("b" + n, dt, [e], 11 + 2 * i)]
            nodes.append({"name": n, "op": "linear", "inputs": ["x", "w" + n, "b" + n]})
            nodes += heads(n, n, b, s, h, d)
        nodes.append({"name": "a", "op": "attention", "inputs": ["qt", "kt", "vt", "m"]})
        put(f"own_block_bert_{dt}", ins, nodes + merged(b, s, h, d), ["o"])

        # GPT-2: one projection, split in three along its last axis.
        ins = [("x", dt, [b, s, e]), param("wqkv", dt, [3 * e, e], 20), param("bqkv", dt, [3 * e], 21)]
        nodes = [{"name": "y", "op": "linear", "inputs": ["x", "wqkv", "bqkv"]}]
        for i, n in enumerate("qkv"):
            nodes.append({"name": n, "op": "slice", "inputs": ["y"],
                          "attrs": {"axes": [2], "starts": [i * e], "ends": [(i + 1) * e]}})
            nodes += heads(n, n, b, s, h, d)
        nodes.append({"name": "a", "op": "attention", "inputs": ["qt", "kt", "vt"],
                      "attrs": {"causal": True}})
        put(f"own_block_gpt2_{dt}", ins, nodes + merged(b, s, h, d), ["o"])

        # Llama: grouped heads (8 query, 2 key-value) without biases, the
        # rotary embedding of q and k (rotate_half: slices, a negation, a
        # concat; fuse-views reads the merged projection in place), then a
        # gated MLP whose gate and up projections merge (read in place).
        hq, hkv, d = 8, 2, 16
        e = hq * d
        ins = [("x", dt, [b, s, e]), ("cos", dt, [s, d]), ("sin", dt, [s, d]),
               param("wq", dt, [e, e], 30), param("wk", dt, [hkv * d, e], 31),
               param("wv", dt, [hkv * d, e], 32), param("wg", dt, [96, e], 33),
               param("wu", dt, [96, e], 34)]
        nodes = [{"name": n, "op": "linear", "inputs": ["x", "w" + n]} for n in "qkv"]
        nodes += heads("q", "q", b, s, hq, d) + heads("k", "k", b, s, hkv, d) + heads("v", "v", b, s, hkv, d)
        for n in "qk":
            t = n + "t"
            nodes += [{"name": n + "lo", "op": "slice", "inputs": [t],
                       "attrs": {"axes": [3], "starts": [0], "ends": [d // 2]}},
                      {"name": n + "hi", "op": "slice", "inputs": [t],
                       "attrs": {"axes": [3], "starts": [d // 2], "ends": [d]}},
                      {"name": n + "nh", "op": "neg", "inputs": [n + "hi"]},
                      {"name": n + "rot", "op": "concat", "inputs": [n + "nh", n + "lo"],
                       "attrs": {"axis": -1}},
                      {"name": n + "c", "op": "mul", "inputs": [t, "cos"]},
                      {"name": n + "s", "op": "mul", "inputs": [n + "rot", "sin"]},
                      {"name": n + "r", "op": "add", "inputs": [n + "c", n + "s"]}]
        nodes.append({"name": "a", "op": "attention", "inputs": ["qr", "kr", "vt"],
                      "attrs": {"causal": True}})
        nodes += merged(b, s, hq, d)
        nodes += [{"name": "g", "op": "linear", "inputs": ["o", "wg"]},
                  {"name": "u", "op": "linear", "inputs": ["o", "wu"]},
                  {"name": "gs", "op": "sigmoid", "inputs": ["g"]},
                  {"name": "gg", "op": "mul", "inputs": ["g", "gs"]},
                  {"name": "z", "op": "mul", "inputs": ["gg", "u"]}]
        put(f"own_block_llama_{dt}", ins, nodes, ["o", "z"])

        # nn.MultiheadAttention, sequence first ([S, B, E], 4 heads of
        # 32): the packed projection unflattened, permuted, squeezed,
        # selected, viewed as [S, B * H, D], transposed and viewed as
        # [B, H, S, D]; the heads merged back as [S, B, H, D].
        b, s, h, d = 2, 33, 4, 32
        e = h * d
        ins = [("x", dt, [s, b, e]), param("w", dt, [3 * e, e], 40), param("bias", dt, [3 * e], 41)]
        nodes = [{"name": "p", "op": "linear", "inputs": ["x", "w", "bias"]},
                 {"name": "u", "op": "reshape", "inputs": ["p"], "attrs": {"shape": [1, s, b, 3, e]}},
                 {"name": "pu", "op": "transpose", "inputs": ["u"], "attrs": {"perm": [3, 1, 2, 0, 4]}},
                 {"name": "sq", "op": "reshape", "inputs": ["pu"], "attrs": {"shape": [3, s, b, e]}}]
        for i, n in enumerate("qkv"):
            nodes += [{"name": n + "s", "op": "slice", "inputs": ["sq"],
                       "attrs": {"axes": [0], "starts": [i], "ends": [i + 1]}},
                      {"name": n + "w", "op": "reshape", "inputs": [n + "s"],
                       "attrs": {"shape": [s, b * h, d]}},
                      {"name": n + "t", "op": "transpose", "inputs": [n + "w"],
                       "attrs": {"perm": [1, 0, 2]}},
                      {"name": n + "4", "op": "reshape", "inputs": [n + "t"],
                       "attrs": {"shape": [b, h, s, d]}}]
        nodes += [{"name": "a", "op": "attention", "inputs": ["q4", "k4", "v4"]},
                  {"name": "at", "op": "transpose", "inputs": ["a"], "attrs": {"perm": [2, 0, 1, 3]}},
                  {"name": "o", "op": "reshape", "inputs": ["at"], "attrs": {"shape": [s * b, e]}}]
        put(f"own_block_mha_{dt}", ins, nodes, ["o"])
        # Batch first, as nn.TransformerEncoderLayer(batch_first=True)
        # calls it: the input permuted to sequence first before the
        # projection (canonicalize moves the permute after it).
        ins[0] = ("xb", dt, [b, s, e])
        put(f"own_block_mha_batch_first_{dt}", ins,
            [{"name": "x", "op": "transpose", "inputs": ["xb"], "attrs": {"perm": [1, 0, 2]}}] + nodes,
            ["o"])

        # GPT-2's MLP: addmm viewed as [B, S, 4E], gelu_new written out
        # (canonicalize: gelu_tanh in the product's epilogue), addmm.
        e = 64
        ins = [("x", dt, [b * s, e]), param("wfc", dt, [e, 4 * e], 50), param("bfc", dt, [4 * e], 51),
               param("wpr", dt, [4 * e, e], 52), param("bpr", dt, [e], 53)]
        def const(name, value):
            return {"name": name, "op": "constant", "attrs": {"dtype": dt, "shape": [], "value": [value]}}
        nodes = [{"name": "mm", "op": "matmul", "inputs": ["x", "wfc"]},
                 {"name": "addmm", "op": "add", "inputs": ["mm", "bfc"]},
                 {"name": "h", "op": "reshape", "inputs": ["addmm"], "attrs": {"shape": [b, s, 4 * e]}},
                 const("half", 0.5), const("three", 3.0), const("k", 0.044715),
                 const("c", 0.7978845608028654), const("one", 1.0),
                 {"name": "hh", "op": "mul", "inputs": ["h", "half"]},
                 {"name": "p3", "op": "pow", "inputs": ["h", "three"]},
                 {"name": "kp", "op": "mul", "inputs": ["p3", "k"]},
                 {"name": "sm", "op": "add", "inputs": ["h", "kp"]},
                 {"name": "cs", "op": "mul", "inputs": ["sm", "c"]},
                 {"name": "t", "op": "tanh", "inputs": ["cs"]},
                 {"name": "t1", "op": "add", "inputs": ["t", "one"]},
                 {"name": "g", "op": "mul", "inputs": ["hh", "t1"]},
                 {"name": "g2", "op": "reshape", "inputs": ["g"], "attrs": {"shape": [b * s, 4 * e]}},
                 {"name": "mm2", "op": "matmul", "inputs": ["g2", "wpr"]},
                 {"name": "y", "op": "add", "inputs": ["mm2", "bpr"]}]
        put(f"own_block_gpt2_mlp_{dt}", ins, nodes, ["y"])


def mma_attention_cases(put):
    """attention of f16 and bf16 on the tensor-core kernel
    (codegen/device/attention_mma.cuh) through hand-written mma_attention
    records of 1 to 4 warps per block (rows past the sequence in the last
    block, warps with no row at all), and the rule's own choice: head
    widths 16, 64, 80 and 128, a value width unlike the key width (40,
    32); sequences 1, 7, 31, 128, 129, 512 and keys longer or shorter than
    the queries; grouped heads; bool masks (random ones leave rows with no
    key: 0 on both sides) and additive masks of the input type, broadcast
    every way the kernel takes; causal, window, soft-capping, an explicit
    scale; ranks 3 and 5. The `split` cases split each row group's keys
    over 2 to 8 warps (more warps than key tiles included: those keep no
    key)."""
    def case(tag, dt, warps, q, k, v, attrs=None, mask=None, split=1):
        schedule = warps and {"strategy": "mma_attention", "tile": 16 * warps,
                              "grid_x": -(-q[-2] // (16 * warps)) * int(np.prod(q[:-2])),
                              "block": 32 * warps * split}
        attention_case(put, f"own_mma_attention_{tag}_{dt}", dt, q, k, v, attrs, mask, schedule)

    for dt, warps in (("bf16", 1), ("f16", 4)):
        case("bert_b1_s128", dt, warps, [1, 12, 128, 64], [1, 12, 128, 64], [1, 12, 128, 64],
             mask=([1, 1, 1, 128], "bool"))
        case("gpt2_causal_s129", dt, warps, [1, 4, 129, 64], [1, 4, 129, 64], [1, 4, 129, 64],
             {"causal": True})
    case("llama_gqa_causal", "bf16", 2, [2, 8, 129, 64], [2, 2, 129, 64], [2, 2, 129, 64],
         {"causal": True}, ([2, 1, 1, 129], "bool"))
    case("width80_additive", "f16", 3, [2, 4, 31, 80], [2, 4, 31, 80], [2, 4, 31, 80],
         mask=([2, 1, 31, 31], "f16"))
    case("width128_causal_s512", "bf16", 4, [1, 4, 512, 128], [1, 4, 512, 128],
         [1, 4, 512, 128], {"causal": True})
    case("width128_s7_h16", "f16", 1, [2, 16, 7, 128], [2, 16, 7, 128], [2, 16, 7, 128])
    case("width16_value40", "bf16", 2, [2, 3, 33, 16], [2, 3, 70, 16], [2, 3, 70, 40],
         mask=([2, 3, 33, 70], "bf16"))
    case("decode_one_row", "bf16", 1, [3, 2, 1, 64], [3, 2, 129, 64], [3, 2, 129, 64],
         mask=([3, 1, 1, 129], "bool"))
    case("window_causal", "f16", 2, [1, 2, 129, 64], [1, 2, 129, 64], [1, 2, 129, 64],
         {"causal": True, "window": 16})
    case("window_only_s512", "bf16", 4, [1, 2, 512, 64], [1, 2, 512, 64], [1, 2, 512, 64],
         {"window": 100})
    case("softcap_scale", "bf16", 1, [1, 2, 128, 64], [1, 2, 128, 64], [1, 2, 128, 64],
         {"causal": True, "softcap": 5.0, "scale": 0.3})
    case("rank5_full_mask", "f16", 1, [2, 3, 2, 7, 32], [2, 3, 2, 9, 32], [2, 3, 2, 9, 32],
         mask=([2, 3, 1, 7, 9], "bool"))
    case("rank3_head_mask", "bf16", 2, [4, 33, 64], [4, 33, 64], [4, 33, 32],
         mask=([4, 1, 33], "bf16"))
    case("split4_bert_b1_s128", "bf16", 1, [1, 12, 128, 64], [1, 12, 128, 64], [1, 12, 128, 64],
         mask=([1, 1, 1, 128], "bool"), split=4)
    case("split8_causal_s129", "f16", 1, [1, 4, 129, 64], [1, 4, 129, 64], [1, 4, 129, 64],
         {"causal": True}, split=8)
    case("split2_gqa_causal", "bf16", 2, [2, 8, 129, 64], [2, 2, 129, 64], [2, 2, 129, 64],
         {"causal": True}, ([2, 1, 1, 129], "bool"), split=2)
    case("split4_width128_causal_s512", "bf16", 1, [1, 4, 512, 128], [1, 4, 512, 128],
         [1, 4, 512, 128], {"causal": True}, split=4)
    case("split4_decode_one_row", "bf16", 1, [3, 2, 1, 64], [3, 2, 129, 64], [3, 2, 129, 64],
         mask=([3, 1, 1, 129], "bool"), split=4)
    case("split4_window_causal", "f16", 1, [1, 2, 129, 64], [1, 2, 129, 64], [1, 2, 129, 64],
         {"causal": True, "window": 16}, split=4)
    case("split2_softcap_scale", "bf16", 1, [1, 2, 128, 64], [1, 2, 128, 64], [1, 2, 128, 64],
         {"causal": True, "softcap": 5.0, "scale": 0.3}, split=2)
    case("split2_rank5_full_mask", "f16", 1, [2, 3, 2, 7, 32], [2, 3, 2, 9, 32], [2, 3, 2, 9, 32],
         mask=([2, 3, 1, 7, 9], "bool"), split=2)
    case("split4_width16_value40", "bf16", 2, [2, 3, 33, 16], [2, 3, 70, 16], [2, 3, 70, 40],
         mask=([2, 3, 33, 70], "bf16"), split=4)
    case("split4_additive_s512", "f16", 1, [1, 2, 512, 64], [1, 2, 512, 64], [1, 2, 512, 64],
         mask=([1, 1, 512, 512], "f16"), split=4)
    case("rule_causal", "bf16", 0, [2, 6, 128, 64], [2, 6, 128, 64], [2, 6, 128, 64],
         {"causal": True})
    case("rule_s512_mask", "f16", 0, [2, 8, 512, 64], [2, 8, 512, 64], [2, 8, 512, 64],
         mask=([2, 1, 1, 512], "bool"))
