"""python3 -m cgc.onnx_cli model.onnx -o model.json [--shape NAME=D,D,...]

Imports an ONNX model into cgc's JSON IR (and model.safetensors beside it
when it has large initializers); `cgc model.onnx` runs this first. A
refusal prints `model.onnx: error: node 'n' (Op): why` and exits 1,
writing nothing.
"""
import argparse
import os
import sys

from .onnx_import import onnx_to_ir, write_ir
from .onnx_types import RefusedError


def main(argv=None):
    ap = argparse.ArgumentParser(prog="cgc.onnx_cli")
    ap.add_argument("model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--shape", action="append", default=[],
                    help="NAME=D,D,...: the static shape of an input with dynamic dims")
    args = ap.parse_args(argv)
    try:
        import onnx
    except ImportError:
        print(f"{args.model}: error: importing ONNX needs the onnx package "
              "(pip install onnx==1.22.0)", file=sys.stderr)
        return 1
    shapes = {}
    for item in args.shape:
        name, _, dims = item.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",") if d]
        except ValueError:
            print(f"cgc.onnx_cli: error: --shape takes NAME=D,D,..., not '{item}'", file=sys.stderr)
            return 2
    try:
        model = onnx.load(args.model)
    except Exception as e:  # noqa: BLE001 - any unreadable file
        print(f"{args.model}: error: not a readable ONNX model: {e}", file=sys.stderr)
        return 1
    try:
        name = os.path.splitext(os.path.basename(args.model))[0]
        ir, weights = onnx_to_ir(model, name=name, input_shapes=shapes)
    except RefusedError as e:
        print(f"{args.model}: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug, said as one, never a traceback
        print(f"{args.model}: error: the importer failed: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 1
    write_ir(ir, weights, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
