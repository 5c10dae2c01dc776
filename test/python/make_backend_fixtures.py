#!/usr/bin/env python3
"""Writes test/python/backend-fixtures/, what backend_fixtures_test.py
checks the torch.compile backend's split (cgc.torch.partition) on without
PyTorch: each model below is compiled with torch.compile(backend=...) on
the CPU, and every ATen graph AOTAutograd hands the backend (an inference
graph, or a training step's forward and backward) is written as the
backend sees it (cgc.torch.backend.graph_record, after
separate_returned_views), with the values PyTorch computes for its nodes
on the call (a dynamic graph's record holds its dims' ranges, as
cgc.torch.backend.dynamic_dims gives them). For each graph, under backend-fixtures/<model>.<k>/:

  record.json          the graph's program record
  values.safetensors   PyTorch's value of every node a cgc part reads or
                       gives (the split's boundaries), by node name
  expect.json          {"parts": cgc parts, "torch": sorted ATen ops PyTorch
                        keeps}, written by hand below for each model (the
                        views a graph returns among them)

Needs PyTorch (CPU). Rerun it after changing the models, the backend's
record or the split, and commit the folder.

Usage: PYTHONPATH=python make_backend_fixtures.py [--out DIR]
"""
import argparse
import json
import os
import shutil

import torch
from torch._dynamo.backends.common import aot_autograd

from cgc.safetensors import write_safetensors
from cgc.torch.backend import (DEFAULTS, dynamic_dims, graph_record, keep_attention_whole,
                               separate_returned_views)
from cgc.torch.capture import decomposition_table, weight_value
from cgc.torch.partition import lowered_parts

HERE = os.path.dirname(os.path.abspath(__file__))


class Erfcx(torch.nn.Module):
    """Two linears around an op cgc has no mapping for."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.b(torch.special.erfcx(torch.relu(self.a(x)))).softmax(-1)


class ViewOfInput(torch.nn.Module):
    """Returns a view of its input (which must alias it) and a product."""

    def forward(self, x, w):
        return x.t(), torch.tanh(x @ w)


class Norm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.fc = torch.nn.LayerNorm(16), torch.nn.Linear(16, 16)

    def forward(self, x):
        return self.fc(self.norm(x)).square().mean()


class BertLoss(torch.nn.Module):
    """A tiny BERT's output against a fixed probe: a loss whose gradient
    reaches every weight through the attention (kept whole, its backward
    traced)."""

    def __init__(self):
        super().__init__()
        self.bert = tiny_bert()
        self.register_buffer("probe", torch.randn(2, 8, 32, generator=torch.Generator()
                                                  .manual_seed(5)))

    def forward(self, input_ids, attention_mask):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return (out * self.probe).sum()


def tiny_bert():
    import transformers
    config = transformers.BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                     intermediate_size=64, vocab_size=100,
                                     max_position_embeddings=32, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    return transformers.BertModel(config)


def token_inputs(batch=2, seq=8):
    ids = torch.randint(1, 100, (batch, seq), generator=torch.Generator().manual_seed(seq))
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1, seq - 2:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def models():
    """(name, module, args, kwargs, training, expectations per graph);
    kwargs a list of calls' kwargs for a module called at several sizes
    (Dynamo's second graph is then dynamic)."""
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(2))
    seq = torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(3))
    padding = torch.zeros(2, 8, dtype=torch.bool)
    padding[:, 6:] = True
    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, batch_first=True, norm_first=True)
    return [
        ("erfcx", Erfcx().eval(), (x,), {}, False,
         [{"parts": 2, "torch": ["aten.special_erfcx.default"]}]),
        ("view_of_input", ViewOfInput(), (x, torch.randn(16, 4)), {}, False,
         [{"parts": 1, "torch": ["aten.permute.default"]}]),  # x.t(), decomposed
        ("bert_inference", tiny_bert().eval(), (), token_inputs(), False,
         [{"parts": 1, "torch": []}]),
        ("encoder_fast_path",
         torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval(), (seq,),
         {"src_key_padding_mask": padding}, False, [{"parts": 1, "torch": []}]),
        ("bert_dynamic", tiny_bert().eval(), (), [token_inputs(), token_inputs(3, 12)], False,
         [{"parts": 1, "torch": []},
          # (BERT's token_type_ids buffer, gathered to the dynamic length,
          # and that length's product with the batch: PyTorch's)
          {"parts": 2, "torch": ["aten.gather.default", "mul"]}]),
        ("bert_training", BertLoss(), (), token_inputs(), True,
         # (the views saved for the backward, which alias their bases)
         [{"parts": 1, "torch": ["aten.expand.default", "aten.permute.default",
                                 "aten.slice.Tensor", "aten.view.default"]},
          {"parts": 1, "torch": ["aten.permute.default", "aten.view.default"]}]),
        ("norm_training", Norm(), (x,), {}, True,
         [{"parts": 1, "torch": ["aten.permute.default"]},  # the saved weight^T
          {"parts": 1, "torch": ["aten.permute.default", "aten.view.default"]}]),
    ]


class Recorder(torch.fx.Interpreter):
    """Runs a graph, keeping every node's value."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, n):
        out = super().run_node(n)
        self.values[n.name] = out
        return out


def capture_graphs(module, args, kwargs, training):
    """[(record, values)] of each graph the backend would get, in order."""
    graphs = []

    def compiler(gm, example_inputs):
        separate_returned_views(gm)
        entry = [graph_record(gm, f"graph{len(graphs)}"), None]
        dynamic_dims(entry[0], example_inputs, dict(DEFAULTS))
        graphs.append(entry)

        def run(*call_args):
            recorder = Recorder(gm)
            out = recorder.run(*call_args)
            entry[1] = recorder.values
            return out
        from functorch.compile import make_boxed_func
        return make_boxed_func(run)

    def backend(gm, example_inputs):
        keep_attention_whole(gm)
        return aot_autograd(fw_compiler=compiler, bw_compiler=compiler,
                            decompositions=decomposition_table())(gm, example_inputs)

    torch._dynamo.reset()
    calls = kwargs if isinstance(kwargs, list) else [kwargs]
    compiled = torch.compile(module, backend=backend, dynamic=False if len(calls) == 1 else None)
    if training:
        out = compiled(*args, **kwargs)
        out.backward()
    else:
        with torch.no_grad():
            for call in calls:
                compiled(*args, **call)
    return graphs


def write_graph(folder, record, values, expect):
    os.makedirs(folder)
    _, _, parts = lowered_parts(record, "fixture", {})
    boundary = {name for step, _, _ in parts.values() for name in step.inputs + step.outputs}
    tensors = {name: weight_value(values[name]) for name in sorted(boundary)
               if isinstance(values.get(name), torch.Tensor)}
    with open(os.path.join(folder, "record.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    write_safetensors(os.path.join(folder, "values.safetensors"), tensors)
    with open(os.path.join(folder, "expect.json"), "w") as f:
        json.dump(expect or {}, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "backend-fixtures"))
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    torch.manual_seed(0)
    for name, module, call_args, kwargs, training, expects in models():
        graphs = capture_graphs(module, call_args, kwargs, training)
        if len(graphs) != len(expects):
            raise SystemExit(f"{name}: {len(graphs)} graphs, expected {len(expects)}")
        for k, ((record, values), expect) in enumerate(zip(graphs, expects)):
            write_graph(os.path.join(args.out, f"{name}.{k}"), record, values, expect)
        print(f"{name}: {len(graphs)} graph(s)")


if __name__ == "__main__":
    main()
