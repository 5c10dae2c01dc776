#!/usr/bin/env python3
"""cgc.compile's cache of whole calls (python/cgc/module_cache.py), its
parts that need no torch or GPU: an entry stored is found whole, a
missing or unreadable signature is a miss, a removed entry is gone, the
folder is private and CGC_CACHE=0 turns it off; the key's code part
changes when a class's file, or a file its methods name, changes, and
stands for an installed package's file by the package's version; the
key's value part reads configs as JSON and other objects by type.
(What needs torch, the key of a real module and a hit that skips the
export, is checked on the GPU machine: test/python/runtime_gpu.py.)

Usage: PYTHONPATH=python module_cache_test.py
"""
import dataclasses
import importlib
import math
import os
import stat
import sys
import tempfile
import time

from cgc import module_cache as mc

FAILED = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILED.append(what)


def entries(work):
    os.environ["CGC_CACHE_DIR"] = os.path.join(work, "cache")
    os.environ.pop("CGC_CACHE", None)
    where = mc.folder()
    check(stat.S_IMODE(os.stat(where).st_mode) == 0o700, "the folder is private to the user")
    artifact = os.path.join(work, "a.cgc")
    with open(artifact, "wb") as f:
        f.write(b"artifact bytes")
    entry = mc.Entry(where, "module-abc")
    check(entry.lookup() is None, "an empty cache misses")
    check(entry.store(artifact, {"signature": [1, 2]}), "a picklable signature is stored")
    check(entry.lookup() == {"signature": [1, 2]}, "a stored entry is found")
    with open(entry.artifact, "rb") as f:
        check(f.read() == b"artifact bytes", "the stored artifact is the artifact's bytes")
    check(not [n for n in os.listdir(where) if n.startswith(".tmp-")],
          "no temporary file is left")
    entry.remove()
    check(not entry.store(artifact, lambda: 0) and not os.path.exists(entry.artifact),
          "an unpicklable signature stores nothing")
    entry.store(artifact, {"signature": [1, 2]})
    with open(entry.signature, "wb") as f:
        f.write(b"\x80garbage")
    check(entry.lookup() is None, "an unreadable signature is a miss")
    entry.store(artifact, "s")
    os.remove(entry.artifact)
    check(entry.lookup() is None, "a signature without its artifact is a miss")
    entry.store(artifact, "s")
    entry.remove()
    check(not os.path.exists(entry.artifact) and not os.path.exists(entry.signature),
          "a removed entry is gone")
    os.environ["CGC_CACHE"] = "0"
    check(mc.folder() is None, "CGC_CACHE=0 turns the cache off")
    os.environ.pop("CGC_CACHE")


def code_key(work):
    sys.path.insert(0, work)
    with open(os.path.join(work, "helper_mod.py"), "w") as f:
        f.write("def helper(x):\n    return x + 1\n")
    with open(os.path.join(work, "model_mod.py"), "w") as f:
        f.write("import helper_mod\n\nclass Model:\n    def forward(self, x):\n"
                "        return helper_mod.helper(x)\n")
    model_mod = importlib.import_module("model_mod")

    def key():
        h = mc.Hasher()
        h.add(*mc.code_identity({model_mod.Model}))
        return h.hexdigest()

    files = mc.source_files({model_mod.Model})
    check(any(p.endswith("model_mod.py") for p in files), "the class's file is in the key")
    check(any(p.endswith("helper_mod.py") for p in files),
          "a module its method names is in the key")
    first = key()
    check(key() == first, "the key is deterministic")
    time.sleep(0.01)
    with open(os.path.join(work, "helper_mod.py"), "w") as f:
        f.write("def helper(x):\n    return x + 2\n")
    check(key() != first, "a changed helper file changes the key")
    second = key()
    globals()["SCALE"] = 3
    model_mod.Model.forward = lambda self, x: x * SCALE  # noqa: F821 - patched in
    patched = key()
    check(patched != second, "a method patched onto the class changes the key")
    globals()["SCALE"] = 4  # the constant the patched method reads
    check(key() != patched, "a plain global a method reads changes the key")
    site = os.path.join(work, "site-packages", "mc_fake_pkg", "layer.py")
    os.makedirs(os.path.dirname(site))
    with open(site, "w") as f:
        f.write("x = 1\n")
    fake = type(sys)("mc_fake_pkg")
    fake.__version__ = "1.2.3"
    sys.modules["mc_fake_pkg"] = fake
    check(mc.file_identity(site) == ("package", "mc_fake_pkg", "1.2.3"),
          "an installed package's file stands as the package's version")


class Config:
    def __init__(self, hidden):
        self.hidden = hidden

    def to_json_string(self, use_diff=False):
        return '{"hidden": %d}' % self.hidden


def values():
    check(mc.plain(Config(8)) != mc.plain(Config(16)), "a config is read as its JSON")
    check(mc.plain((1, 2.5, "a", None)) == ("tuple", (1, 2.5, "a", None)),
          "plain data is kept as it is")
    try:
        mc.plain(object())
        check(False, "an object the key cannot read refuses the key")
    except mc.Unkeyable:
        check(True, "an object the key cannot read refuses the key")

    @dataclasses.dataclass
    class Settings:
        eps: float
        causal: bool = True

    check(mc.plain(Settings(1e-5)) != mc.plain(Settings(1e-6)),
          "a dataclass is read by its fields")
    check(mc.plain(math.tanh) != mc.plain(math.exp), "a builtin function by its name")
    check(mc.plain(lambda x: x + 1) != mc.plain(lambda x: x + 2),
          "a Python function by its code")
    check(mc.plain([Settings(1.0), (2, "a")]) != mc.plain([Settings(1.0), (2, "b")]),
          "objects inside containers are read")
    check(mc.plain((1,), tensor=lambda t: ("t", t.shape)) == ("tuple", (1,)),
          "a tensor callback leaves plain data alone")
    check(mc.plain({"b": 1, "a": 2}) == mc.plain({"a": 2, "b": 1}),
          "a dict's order does not matter")


def main():
    with tempfile.TemporaryDirectory() as work:
        entries(work)
        code_key(work)
        values()
    print("module_cache_test: " + ("FAIL" if FAILED else "PASS"))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
