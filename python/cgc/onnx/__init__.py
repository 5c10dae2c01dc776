"""The ONNX importer: ONNX models into cgc's JSON IR (docs/onnx.md).

importer.py walks a model (onnx_to_ir, write_ir; cgc.from_onnx), cli.py is
`python3 -m cgc.onnx.cli`, which the `cgc` driver runs on a model.onnx;
ops.py gathers the operator rules (ops_elementwise.py, ops_tensor.py,
ops_products.py, ops_composite.py) registered through rules.py. Needs numpy, and onnx to
read a model.
"""
