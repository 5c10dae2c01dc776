#!/usr/bin/env python3
"""`cgc model.onnx` as a process (test/onnx/process.test): SIGINT to the
process group (Ctrl-C) and SIGTERM to cgc alone during an import end it by
that signal with no traceback, no temporary folder and no output left;
importing a model ten times as large takes at most about ten times as
long (time linear in the model's size, docs/onnx.md)."""
import argparse
import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def chain_model(path, nodes):
    """x -> Add/Mul by one of 64 constants, `nodes` times."""
    inits = [numpy_helper.from_array(np.full([4], 1 + j / 1000, np.float32), f"c{j}")
             for j in range(64)]
    graph, prev = [], "x"
    for k in range(nodes):
        graph.append(helper.make_node(("Add", "Mul")[k % 2], [prev, f"c{k % 64}"], [f"v{k}"]))
        prev = f"v{k}"
    g = helper.make_graph(graph, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)]), path)


def check(ok, what):
    if not ok:
        print(f"FAIL: {what}")
        sys.exit(1)
    print(f"ok: {what}")


def interrupt(cgc, model, work, signum, group):
    tmp = os.path.join(work, f"tmp-{signum}")
    os.makedirs(tmp, exist_ok=True)
    out = os.path.join(work, f"out-{signum}.cgc")
    env = dict(os.environ, TMPDIR=tmp)
    p = subprocess.Popen([cgc, model, "-o", out], env=env, stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, start_new_session=True, text=True)
    deadline = time.time() + 30
    while not glob.glob(os.path.join(tmp, "cgc-onnx-*")) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(2.0)  # the importer is running (Python started, onnx imported)
    check(p.poll() is None, f"the import is still running when signal {signum} comes")
    if group:
        os.killpg(p.pid, signum)
    else:
        os.kill(p.pid, signum)
    _, err = p.communicate(timeout=60)
    name = signal.Signals(signum).name
    check(p.returncode == -signum, f"{name}: cgc ends by {name} (returncode {p.returncode})")
    check("Traceback" not in err, f"{name}: no traceback ({err.strip()!r})")
    check(not os.listdir(tmp), f"{name}: no temporary folder left ({os.listdir(tmp)})")
    check(not os.path.exists(out), f"{name}: no output written")


def timed(cgc, model):
    start = time.monotonic()
    r = subprocess.run([cgc, model], capture_output=True, text=True)
    check(r.returncode == 0, f"{os.path.basename(model)} imports ({r.stderr.strip()[:200]})")
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", default="cgc")
    ap.add_argument("--work", required=True)
    ap.add_argument("--nodes", type=int, default=30000)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    small, large = (os.path.join(args.work, f"chain{n}.onnx") for n in ("S", "L"))
    chain_model(small, args.nodes // 10)
    chain_model(large, args.nodes)
    t_small, t_large = timed(args.cgc, small), timed(args.cgc, large)
    # Linear: ten times the nodes in at most 15 times the time (a quadratic
    # step would take about 100 times; the small import's start-up makes
    # the ratio smaller still).
    check(t_large < 15 * t_small,
          f"{args.nodes} nodes in {t_large:.1f} s, {args.nodes // 10} in {t_small:.1f} s")
    interrupt(args.cgc, large, args.work, signal.SIGINT, group=True)
    interrupt(args.cgc, large, args.work, signal.SIGTERM, group=False)
    deferred_in_logging()


def deferred_in_logging():
    """A signal that lands in the logging module's fork hooks, where Python
    ignores a handler's exception, is raised again a moment later (the
    flake this guards against: 'Exception ignored in _releaseLock')."""
    import logging
    import time
    from cgc.onnx import cli

    class Frame:  # what the handler sees of _releaseLock's frame
        class f_code:  # noqa: N801
            co_filename = logging.__file__

    try:
        cli.deliver(signal.SIGTERM, Frame())
        raised_at_once = True
    except cli.Interrupted:
        raised_at_once = True
    else:
        raised_at_once = False
    try:
        time.sleep(1)
        later = None
    except cli.Interrupted as e:
        later = e.signum
    check(not raised_at_once and later == signal.SIGTERM,
          "a signal inside logging's hooks is raised again after them")


if __name__ == "__main__":
    main()
