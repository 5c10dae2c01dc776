"""What the front-end fuzzers share: per-case seeding, a time and memory
bound per case, the class of a finding (kind | op | message pattern), the
allow-list of open classes, the interpreter runner and the comparison.

A case is reproducible from (seed, index) alone: its generator is
random.Random(f"{seed}:{index}").
"""
import hashlib
import json
import os
import random
import re
import resource
import signal
import subprocess
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
ALLOWLIST = os.path.join(HERE, "allowlist.txt")
# Tolerances of the differential oracle (as test/onnx/node_tests.py's):
# f32 rtol 1e-3 + atol 1e-5, f16 and bf16 1e-2 + 1e-2, integers and bools
# exactly; NaN equals NaN; shapes and dtypes must match.
TOLERANCE = {"float32": (1e-3, 1e-5), "float16": (1e-2, 1e-2)}
CASE_SECONDS = 20         # a case that runs longer is a finding (kind timeout)
MEMORY_BYTES = 4 << 30    # address space of the fuzzing process (kind memory)


def case_rng(seed, index):
    return random.Random(f"{seed}:{index}")


class CaseTimeout(BaseException):
    """Raised by SIGALRM in a case that ran past CASE_SECONDS; a
    BaseException so that no `except Exception` in the code under test
    swallows it."""


def _alarm(signum, frame):
    raise CaseTimeout(f"ran past {CASE_SECONDS} s")


def bound_process():
    """Bounds this process's memory, so that a runaway allocation is a
    MemoryError (a finding) rather than the machine's problem."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MEMORY_BYTES if hard == resource.RLIM_INFINITY else min(MEMORY_BYTES, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    signal.signal(signal.SIGALRM, _alarm)


def bounded(fn, *args, **kwargs):
    """fn(*args) under the per-case alarm."""
    signal.alarm(CASE_SECONDS)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.alarm(0)


def mutate_list(values, rng, replace, otherwise):
    """`values` (a copy) with one element dropped, one duplicated, one
    replaced by replace(old), or all changed by otherwise(list): the
    targets' one list mutation."""
    values = list(values)
    op = rng.randrange(4)
    if op == 0 and values:
        values.pop(rng.randrange(len(values)))
    elif op == 1 and values:
        values.insert(rng.randrange(len(values)), rng.choice(values))
    elif op == 2 and values:
        k = rng.randrange(len(values))
        values[k] = replace(values[k])
    else:
        values = otherwise(values)
    return values


def pattern(message, limit=100):
    """A message with its names and numbers blanked, for deduplication."""
    text = re.sub(r"'[^']*'", "'…'", str(message).splitlines()[0] if str(message) else "")
    text = re.sub(r"\"[^\"]*\"", "\"…\"", text)
    text = re.sub(r"\[[^\]]*\]", "[…]", text)
    text = re.sub(r"/tmp/\S+", "/tmp/…", text)
    text = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", text)
    return text[:limit]


def innermost_frame(exc):
    """'file:function' of the innermost frame in python/cgc (else the
    innermost of all), where an exception was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if os.sep + "cgc" + os.sep in f.filename] or frames
    if not ours:
        return "?"
    f = ours[-1]
    return f"{os.path.basename(f.filename)}:{f.name}"


def raised_explicitly(exc, type_name):
    """Whether the innermost frame of `exc` is a `raise <type_name>` in
    python/cgc (the package refusing on purpose, not a library failing)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames or os.sep + "cgc" + os.sep not in frames[-1].filename:
        return False
    return (frames[-1].line or "").startswith(f"raise {type_name}")


def node_op_of(exc, attr="op_type"):
    """The operator the code under test was at when `exc` was raised: the
    innermost local `node` or `n` with an `attr` (an ONNX NodeProto's
    op_type, a record node's target)."""
    tb, op = exc.__traceback__, "-"
    while tb is not None:
        for local in ("node", "n"):
            node = tb.tb_frame.f_locals.get(local)
            if node is not None and isinstance(getattr(node, attr, None), str):
                op = getattr(node, attr)
                break
        tb = tb.tb_next
    return op


def exception_class(exc, op):
    kind = {CaseTimeout: "timeout", MemoryError: "memory"}.get(type(exc), "exception")
    return f"{kind} | {op} | {type(exc).__name__} at {innermost_frame(exc)}: {pattern(exc)}"


class Allowlist:
    """allowlist.txt: one `REGEX # reason (issue, owner)` a line, matched
    (re.search) against a finding's class; blank and `#` lines are
    comments. An entry without a reason is an error."""

    def __init__(self, path=ALLOWLIST):
        self.entries = []
        with open(path) as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                regex, sep, reason = line.partition(" # ")
                if not sep or not reason.strip():
                    raise SystemExit(f"{path}:{number}: error: an entry needs ' # reason'")
                self.entries.append((re.compile(regex.strip()), reason.strip(), number))
        self.used = set()

    def reason(self, key):
        for regex, reason, number in self.entries:
            if regex.search(key):
                self.used.add(number)
                return reason
        return None


class Findings:
    """Findings of one run by class: the first input of each class saved
    under `folder`, allow-listed ones counted apart."""

    def __init__(self, folder, allowlist, target, persist=None):
        self.folder, self.allowlist, self.target = folder, allowlist, target
        self.classes = {}  # key -> [count, first case, allowed reason, input path]
        self.refusals = {}
        self.persist = persist  # a JSON file kept equal to `classes` (a worker's)

    def refused(self, key):
        self.refusals[key] = self.refusals.get(key, 0) + 1

    def add(self, key, data, suffix, where, detail=""):
        entry = self.classes.get(key)
        if entry:
            entry[0] += 1
            self.save()
            return
        reason = self.allowlist.reason(key)
        path = None
        if reason is None:
            os.makedirs(self.folder, exist_ok=True)
            digest = hashlib.sha1(key.encode()).hexdigest()[:10]
            path = os.path.join(self.folder, f"{digest}{suffix}")
            with open(path, "wb") as f:
                f.write(data)
            with open(path + ".txt", "w") as f:
                f.write(f"{key}\n{where}\n{detail}\n")
            brief = detail[:300].replace("\n", "\n    ")
            print(f"fuzz-{self.target}: FOUND {key}\n  {where}; input {path}\n    {brief}",
                  flush=True)
        self.classes[key] = [1, where, reason, path]
        self.save()

    def save(self):
        if self.persist:
            with open(self.persist + ".tmp", "w") as f:
                json.dump(self.classes, f)
            os.replace(self.persist + ".tmp", self.persist)

    def merge(self, path):
        """Adds the classes a worker saved to `path`."""
        with open(path) as f:
            for key, (count, where, reason, input_path) in json.load(f).items():
                entry = self.classes.setdefault(key, [0, where, reason, input_path])
                entry[0] += count

    def open_classes(self):
        return {k: v for k, v in self.classes.items() if v[2] is None}

    def summary(self, verbose=False):
        """Each open class with its first case and input; the allowed ones
        one line each (with `verbose`), else counted by allow-list reason."""
        lines, allowed = [], {}
        for key, (count, where, reason, path) in sorted(self.classes.items()):
            if reason is None:
                lines.append(f"  {count:5d}x {key}\n         first {where}; OPEN, input {path}")
            elif verbose:
                lines.append(f"  {count:5d}x {key}\n         first {where}; allowed: {reason}")
            else:
                allowed.setdefault(reason, []).append(count)
        for reason, counts in sorted(allowed.items(), key=lambda item: -len(item[1])):
            lines.append(f"  {len(counts):4d} classes ({sum(counts)} cases) allowed: {reason}")
        return "\n".join(lines)


def run_cgc_opt(cgc_opt, args, timeout=120):
    """(returncode, stdout, stderr) of cgc-opt; a timeout is rc -999."""
    try:
        r = subprocess.run([cgc_opt] + args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -999, "", "timed out"
    return r.returncode, r.stdout, r.stderr


def tool_failure(rc, stderr):
    """None when a tool's exit is ordinary (0, or 1 with an 'error:'
    line), else a short pattern of how it failed."""
    if rc == 0 or (rc == 1 and "error:" in stderr and "Traceback" not in stderr):
        return None
    if rc == -999:
        return "timeout"
    if rc < 0:
        return f"signal {-rc}"
    return f"exit {rc}: {pattern(stderr.strip().splitlines()[-1] if stderr.strip() else '')}"


def error_line(stderr):
    return next((l for l in stderr.splitlines() if "error:" in l), stderr.strip()[:200])


def random_array(rng, dtype, shape):
    """A random input: floats standard normal, integers in [0, 3) (valid
    as indices and nonzero divisors often enough), bools fair."""
    nprng = np.random.default_rng(rng.getrandbits(32))
    if dtype in ("f32", "f16"):
        return nprng.standard_normal(shape).astype(np.float32 if dtype == "f32" else np.float16)
    if dtype in ("i32", "i64"):
        return nprng.integers(0, 3, shape).astype(np.int32 if dtype == "i32" else np.int64)
    if dtype == "bool":
        return nprng.integers(0, 2, shape).astype(np.bool_)
    return None  # bf16: no NumPy dtype here


def compare(got, want):
    """'' if the interpreter's `got` equals the reference's `want` within
    TOLERANCE, else what differs."""
    if got is None:
        return "missing output"
    want = np.asarray(want)
    tolerance = TOLERANCE.get(want.dtype.name, (1e-2, 1e-2))
    if want.dtype.name == "bfloat16":  # the interpreter reads it back widened to f32
        want = want.astype(np.float32)
        got = got.astype(np.float32) if got.dtype.name == "bfloat16" else got
    if got.shape != want.shape:
        return "shape differs"
    if got.dtype != want.dtype:
        return "dtype differs"
    if want.dtype.kind == "f":
        rtol, atol = tolerance
        g, w = got.astype(np.float64), want.astype(np.float64)
        if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            return "values differ"
        return ""
    if np.array_equal(got, want):
        return ""
    if want.dtype.kind in "iu" and np.array_equal(got.astype(np.float64), want.astype(np.float64)):
        return "values differ beyond 2^53"  # equal once rounded to doubles
    return "values differ"


def describe_difference(got, want):
    try:
        g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
        bad = ~np.isclose(g, w, equal_nan=True)
        return f"got {g[bad][:4].tolist()} want {w[bad][:4].tolist()} ({int(bad.sum())} of {w.size})"
    except Exception:  # noqa: BLE001 - only a description
        return f"got {getattr(got, 'shape', None)} want {getattr(want, 'shape', None)}"
