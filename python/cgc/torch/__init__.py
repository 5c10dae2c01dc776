"""The torch front end: torch.export programs into cgc's JSON IR
(docs/python.md).

capture.py exports a module and records its program (it imports torch),
record.py describes the record, export.py lowers one with the ATen rules
of aten_rules.py, aten_indexing.py and aten_attention.py (without torch:
`import cgc.torch.export` needs only numpy).
"""
