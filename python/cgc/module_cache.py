"""cgc.compile's cache of whole calls: a second `cgc.compile` of an
unchanged module loads its artifact without exporting the module again
(docs/python.md, "The compile cache from Python").

The driver's cache (docs/artifact.md) is keyed by the exported IR, so a
hit there still pays for torch.export. This one is keyed by what the
export reads, taken from the module as it is:
- the code: the source file of every class of the module's tree (their
  bases up to torch's own included) and of each module, function or class
  their methods name from other files, one level deep; torch's, cgc's and
  the packages' versions (a file under an installed package is
  represented by the package's version);
- the state: each parameter's and buffer's name, dtype, shape, strides,
  device, gradient flag, the names tied to one tensor, and a hash of its
  bytes (BLAKE2b, on several threads);
- the structure: each submodule's class, training flag, hooks and plain
  attributes (numbers, strings, dtypes, a transformers config as JSON);
- the call: the example arguments' structure, each tensor's dtype, shape,
  strides and device and each other leaf's value; dynamic_shapes,
  buckets and the driver's flags; the `cgc` binary (its size and
  modification time, as the driver's own key).
A Python function the methods reach through another function (two levels
down) is not in the key: a model whose code changes there, outside an
installed package, is compiled with CGC_CACHE=0 or `flags=("--no-cache",)`.

An entry is the artifact, `<dir>/<key>.cgc` (the driver's folder, its
size limit and `cgc cache` commands), and the call's signature beside it,
`<key>.sig` (pickled; the folder is private to the user). Both are written
to temporary files and renamed into place; a hit loads the artifact, whose
checksum the runtime checks (a corrupt entry is removed and the module
compiled again). Needs no torch to import; `key` imports it."""
import hashlib
import inspect
import os
import pickle
import sys
import tempfile
import time
import warnings

VERSION = "cgc-module-cache-1"  # changes what every key means


def folder():
    """The cache folder the driver uses (created private to the user), or
    None when the cache is off (CGC_CACHE=0)."""
    if os.environ.get("CGC_CACHE") == "0":
        return None
    path = os.environ.get("CGC_CACHE_DIR")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        path = os.path.join(base, "cgc")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


class Entry:
    """The files of one key in the cache folder `where`."""

    def __init__(self, where, key):
        self.artifact = os.path.join(where, key + ".cgc")
        self.signature = os.path.join(where, key + ".sig")

    def lookup(self):
        """The stored signature, or None (no whole entry). A hit marks the
        entry used (its modification time, which the driver's eviction
        reads)."""
        try:
            with open(self.signature, "rb") as f, warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # torch's pytree specs
                signature = pickle.load(f)
            os.utime(self.artifact)
        except Exception:  # noqa: BLE001 - any unreadable entry is a miss
            return None
        return signature

    def store(self, artifact_path, signature):
        """Copies the artifact and pickles the signature in; False (and
        nothing stored) when the signature does not pickle."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # torch's pytree specs
                data = pickle.dumps(signature)
        except Exception:  # noqa: BLE001 - what pickle raises varies by object
            return False
        _write_atomically(self.signature, data)
        with open(artifact_path, "rb") as f:
            _write_atomically(self.artifact, f.read())
        return True

    def trim(self, cgc):
        """The driver's eviction past the cache's size limit, which an
        entry stored here did not run (`cgc cache trim`)."""
        import subprocess
        subprocess.run([cgc, "cache", "trim"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)

    def remove(self):
        for path in (self.artifact, self.signature):
            try:
                os.remove(path)
            except OSError:
                pass


def _write_atomically(path, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


class Hasher:
    """The key's text, fed in parts."""

    def __init__(self):
        self.h = hashlib.sha256(VERSION.encode())

    def add(self, *parts):
        for part in parts:
            self.h.update(repr(part).encode())
            self.h.update(b"\0")

    def hexdigest(self):
        return self.h.hexdigest()


_FILE_HASHES = {}  # (path, size, mtime) -> hash, for this process


def file_identity(path):
    """What stands for a source file in the key: the version of the
    installed package it belongs to, else a hash of its bytes."""
    package = _installed_package(path)
    if package:
        return package
    try:
        st = os.stat(path)
    except OSError:
        return ("missing", path)
    stamp = (path, st.st_size, st.st_mtime_ns)
    if stamp not in _FILE_HASHES:
        with open(path, "rb") as f:
            _FILE_HASHES[stamp] = hashlib.blake2b(f.read(), digest_size=16).hexdigest()
    return (path, _FILE_HASHES[stamp])


def _installed_package(path):
    """("package", version) for a file under site-packages or dist-packages
    whose top-level package has a __version__; else None."""
    parts = os.path.normpath(path).split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            i = parts.index(marker)
            if i + 1 < len(parts):
                name = parts[i + 1].split(".")[0]
                version = getattr(sys.modules.get(name), "__version__", None)
                if version:
                    return ("package", name, str(version))
    return None


def source_files(classes):
    """The source files of `classes` (their bases included) and of what
    their methods name from other modules, one level deep."""
    files = set()
    for cls in classes:
        for base in inspect.getmro(cls):
            files.update(_file_of(base))
            for member in vars(base).values():
                function = getattr(member, "__func__", member)
                code = getattr(function, "__code__", None)
                if code is None:
                    continue
                names = getattr(function, "__globals__", {})
                for name in _names(code):
                    files.update(_file_of(names.get(name)))
    return sorted(files)


def _names(code):
    """The global names a code object and the code nested in it read."""
    out = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            out |= _names(const)
    return out


def _file_of(obj):
    if obj is None or isinstance(obj, (int, float, str, bool, bytes)):
        return []
    if inspect.ismodule(obj):
        path = getattr(obj, "__file__", None)
        return [path] if path else []
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return []
    try:
        path = inspect.getsourcefile(obj)
    except TypeError:  # a builtin
        return []
    return [path] if path else []


PLAIN = (int, float, bool, str, bytes, type(None))


def plain(value, depth=0):
    """A value's part of the key: plain data as it is, a config as its
    JSON, anything else by its type's name."""
    if isinstance(value, PLAIN):
        return value
    if isinstance(value, (tuple, list)) and depth < 3:
        return (type(value).__name__, tuple(plain(v, depth + 1) for v in value))
    if isinstance(value, dict) and depth < 3:
        return tuple(sorted((str(k), plain(v, depth + 1)) for k, v in value.items()))
    to_json = getattr(value, "to_json_string", None)  # transformers' configs
    if callable(to_json):
        try:
            return ("config", to_json(use_diff=False))
        except Exception:  # noqa: BLE001 - a config that does not serialize
            pass
    module = type(value).__module__
    if module.startswith("torch") and not hasattr(value, "shape"):
        return ("torch", str(value))  # dtype, device, Size, Dim
    return ("object", module, type(value).__qualname__)


def elapsed(start):
    return time.perf_counter() - start
