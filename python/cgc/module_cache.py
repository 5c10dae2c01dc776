"""cgc.compile's cache of whole calls: a second `cgc.compile` of an
unchanged module loads its artifact without exporting the module again
(docs/artifact.md, "The compile cache").

The driver's cache is keyed by the exported IR, so a hit there still pays
for torch.export. This one is keyed by what the export reads, taken from
the module as it is:
- the code (code_identity): the source file of every class of the
  module's tree (their bases up to torch's own included) and of each
  method (one patched in from elsewhere too), each method's bytecode, and
  what the methods name from their globals: the files of modules,
  functions and classes, one level deep, and plain values (a file under
  an installed package stands as the package's version); torch's and
  cgc's versions and cgc's own Python files; autocast and global hooks;
- the state: each parameter's and buffer's name, dtype, shape, strides,
  device, gradient flag, the names tied to one tensor, and a hash of its
  bytes (BLAKE2b, on several threads);
- the structure: each submodule's class, training flag, hooks and
  attributes (plain data, containers, dataclasses and plain objects by
  their contents, a transformers config as JSON, a function by its code,
  a tensor by its bytes);
- the call: the example arguments' structure, each tensor's dtype, shape,
  strides and device and each other leaf's value; dynamic_shapes with
  each Dim's range, buckets and the driver's flags; the `cgc` binary (its
  size and modification time, as the driver's own key).
What the key cannot stand for (code without a source file, an attribute
it cannot read) makes the call uncached (Unkeyable). A Python function the
methods reach only through another function in a file outside an
installed package (two levels down) is not in the key: compile with
CGC_CACHE=0 or `flags=("--no-cache",)` while editing such code.

An entry is the artifact, `<dir>/<key>.cgc` (the driver's folder, its
size limit and `cgc cache` commands), and the call's signature beside it,
`<key>.sig` (pickled, written last: it completes the entry). Both are
written to temporary files and renamed into place; a folder another user
owns or can write to is not used. A hit loads the artifact, whose checksum
the runtime checks (an entry that does not load is removed and the module
compiled again). Needs no torch to import; torch/module_key.py, which
takes the key, does."""
import hashlib
import inspect
import os
import pickle
import sys
import tempfile
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
    st = os.stat(path)
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None  # Another user could plant an entry: not used.
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
        with open(artifact_path, "rb") as f:  # The signature last: it makes the entry.
            _write_atomically(self.artifact, f.read())
        _write_atomically(self.signature, data)
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
        raise Unkeyable(f"no source file {path}") from None
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


class Unkeyable(Exception):
    """What the key cannot stand for (code without a file, an object it
    cannot read): such a call is not cached."""


def code_identity(classes):
    """The key's code part for `classes` (their bases included): the files
    that define them and their methods (a method patched in from elsewhere
    included), each method's code, and what the methods name from their
    globals: the files of modules, functions and classes (one level deep)
    and plain values (numbers, strings, tuples of them)."""
    files, parts = _code_sources(classes)
    return sorted(parts) + [file_identity(f) for f in sorted(files)]


def source_files(classes):
    """The source files code_identity reads for `classes`."""
    return sorted(_code_sources(classes)[0])


def _code_sources(classes):
    files, parts = set(), set()
    for cls in classes:
        for base in inspect.getmro(cls):
            files.update(_file_of(base))
            for member in vars(base).values():
                function = getattr(member, "__func__", member)
                code = getattr(function, "__code__", None)
                if code is None:
                    continue
                files.update(_file_of(function))
                parts.add(("code", base.__module__, base.__qualname__, code.co_name,
                           _code_digest(code)))
                names = getattr(function, "__globals__", {})
                for name in _names(code):
                    value = names.get(name)
                    if _is_plain_global(value):
                        parts.add(("global", function.__module__, name, value))
                    else:
                        files.update(_file_of(value))
    return files, parts


def _is_plain_global(value):
    return isinstance(value, PLAIN) or (isinstance(value, tuple) and
                                        all(isinstance(v, PLAIN) for v in value))


def _names(code):
    """The global names a code object and the code nested in it read."""
    out = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            out |= _names(const)
    return out


def _file_of(obj):
    """The source file of a module, class or function (none for other
    values and for builtins)."""
    if inspect.ismodule(obj):
        path = getattr(obj, "__file__", None)
        return [path] if path else []
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return []
    try:
        path = inspect.getsourcefile(obj)
    except TypeError:  # a builtin
        return []
    if not path:  # <stdin>, exec: code the key cannot follow
        raise Unkeyable(f"{obj.__qualname__} has no source file")
    return [path]


def _code_digest(code):
    """A hash of a code object's bytecode, constants and names, nested code
    included."""
    h = hashlib.blake2b(code.co_code, digest_size=16)
    for const in code.co_consts:
        h.update((_code_digest(const) if inspect.iscode(const) else repr(const)).encode())
    h.update(repr(code.co_names).encode())
    return h.hexdigest()


PLAIN = (int, float, bool, str, bytes, type(None))


MAX_DEPTH, MAX_ITEMS = 6, 4096


def plain(value, tensor=None, depth=0):
    """A value's part of the key: plain data as it is, containers and
    objects (dataclasses, plain objects) by their contents, a config by its
    JSON, a function by its code, a tensor by `tensor(value)` (its
    metadata and bytes). Unkeyable for what it cannot read."""
    if isinstance(value, PLAIN):
        return value
    if depth > MAX_DEPTH:
        raise Unkeyable("an attribute nested too deep")
    if hasattr(value, "shape") and hasattr(value, "dtype") and tensor:
        return tensor(value)
    if isinstance(value, (tuple, list, set, frozenset)):
        if len(value) > MAX_ITEMS:
            raise Unkeyable("an attribute with too many items")
        items = [plain(v, tensor, depth + 1) for v in value]
        return (type(value).__name__, tuple(sorted(items, key=repr) if isinstance(
            value, (set, frozenset)) else items))
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise Unkeyable("an attribute with too many items")
        return ("dict", tuple(sorted(((repr(k), plain(v, tensor, depth + 1))
                                      for k, v in value.items()), key=repr)))
    to_json = getattr(value, "to_json_string", None)  # transformers' configs
    if callable(to_json):
        try:
            return ("config", type(value).__qualname__, to_json(use_diff=False))
        except Exception:  # noqa: BLE001 - a config that does not serialize
            pass
    code = getattr(getattr(value, "__func__", value), "__code__", None)
    if code is not None:  # a function or method
        return ("function", getattr(value, "__module__", None),
                getattr(value, "__qualname__", None), _code_digest(code))
    if inspect.isclass(value) or inspect.ismodule(value) or inspect.isbuiltin(value):
        return (type(value).__name__, getattr(value, "__module__", None),
                getattr(value, "__qualname__", getattr(value, "__name__", None)))
    module = type(value).__module__
    if module.startswith("torch") and not hasattr(value, "__dict__"):
        return ("torch", type(value).__qualname__, str(value))  # dtype, device, Size
    if hasattr(value, "__dict__"):
        return ("object", module, type(value).__qualname__,
                plain(vars(value), tensor, depth + 1))
    raise Unkeyable(f"an attribute of type {module}.{type(value).__qualname__}")
