"""python3 -m cgc.onnx.cli model.onnx -o model.json [--shape NAME=D,D,...]

Imports an ONNX model into cgc's JSON IR (and model.safetensors beside it
when it has large initializers); `cgc model.onnx` runs this first. A
refusal prints `model.onnx: error: node 'n' (Op): why` and exits 1,
writing nothing; SIGINT and SIGTERM end it with exit status 130 and 143,
writing nothing. Messages escape control characters and cut long names.
"""
import argparse
import os
import signal
import sys
import warnings

from .names import printable

class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: the import stops, writing nothing."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def on_signal(signum, frame):
    # Later signals are ignored: cgc passes a Ctrl-C the importer already
    # got, and a second Interrupted would escape the first's handling.
    for other in (signal.SIGINT, signal.SIGTERM):
        signal.signal(other, signal.SIG_IGN)
    deliver(signum, frame)


def deliver(signum, frame):
    """Raises Interrupted where the interrupted code can take it. Inside
    the logging module's fork hooks Python ignores a handler's exception
    (it prints "Exception ignored in ..." and goes on), so there it is
    raised again 5 ms later, from a SIGALRM."""
    if frame is not None and os.path.basename(os.path.dirname(frame.f_code.co_filename)) \
            == "logging":
        signal.signal(signal.SIGALRM, lambda _, later: deliver(signum, later))
        signal.setitimer(signal.ITIMER_REAL, 0.005)
        return
    raise Interrupted(signum)


def main(argv=None):
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    ap = argparse.ArgumentParser(prog="cgc.onnx.cli")
    ap.add_argument("model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--shape", action="append", default=[],
                    help="NAME=D,D,...: the static shape of an input with dynamic dims")
    args = ap.parse_args(argv)
    shown_model = printable(args.model)
    try:
        return run(args, shown_model)
    except Interrupted as e:
        name = "SIGINT" if e.signum == signal.SIGINT else "SIGTERM"
        print(f"{shown_model}: error: the import was interrupted ({name}); nothing was written",
              file=sys.stderr)
        return 128 + e.signum


def fail(shown_model, message):
    print(f"{shown_model}: error: {printable(message)}", file=sys.stderr)
    return 1


def run(args, shown_model):
    # NumPy's and ONNX's warnings (overflow in shape arithmetic, ...) are
    # never printed: what the importer cannot do, it refuses by name.
    warnings.simplefilter("ignore")
    try:
        import numpy as np
        import onnx
        from .importer import onnx_to_ir, write_ir
        from .limits import check_and_load, check_opset, read_regular_file
        from ..errors import RefusedError
    except ImportError as e:
        return fail(shown_model, f"importing ONNX needs the onnx and numpy packages "
                                 f"(pip install onnx==1.22.0): {e}")
    np.seterr(all="ignore")
    shapes = {}
    for item in args.shape:
        name, _, dims = item.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",") if d]
        except ValueError:
            print(f"cgc.onnx.cli: error: --shape takes NAME=D,D,..., not '{printable(item)}'",
                  file=sys.stderr)
            return 2
    if os.path.exists(args.output) and os.path.exists(args.model) and os.path.samefile(args.model, args.output):
        return fail(shown_model, "the output would overwrite the model")
    try:
        data = read_regular_file(args.model, "the model")
    except RefusedError as e:
        return fail(shown_model, str(e))
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:  # noqa: BLE001 - any unreadable file
        return fail(shown_model, f"not a readable ONNX model: {e}")
    del data
    renamed = {}
    try:
        check_opset(model, onnx.defs.onnx_opset_version())
        check_and_load(model, os.path.dirname(args.model))
        name = os.path.splitext(os.path.basename(args.model))[0]
        ir, weights = onnx_to_ir(model, name=name, input_shapes=shapes, renamed=renamed)
    except RefusedError as e:
        return fail(shown_model, str(e))
    except RecursionError:
        return fail(shown_model, "the model nests too deeply for the importer")
    except MemoryError:
        return fail(shown_model, "the importer ran out of memory")
    except Exception as e:  # noqa: BLE001 - a bug, said as one, never a traceback
        return fail(shown_model, f"the importer failed: {type(e).__name__}: {e}")
    for (kind, onnx_name), ir_name in sorted(renamed.items()):
        print(f"{shown_model}: note: {kind} '{printable(onnx_name)}' is named '{ir_name}' "
              "in the IR and the artifact", file=sys.stderr)
    write_ir(ir, weights, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
