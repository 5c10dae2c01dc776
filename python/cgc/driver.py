"""The `cgc` driver from Python: which binary, and a compile that logs the
driver's phases (`cgc --progress`) through Python's logging as they start,
under the logger "cgc" at INFO (`logging.basicConfig(level=logging.INFO)`
shows them). Needs no torch; the runtime's extension only to raise
CgcError (which it defines)."""
import logging
import os

LOG = logging.getLogger("cgc")
PHASE = "cgc: phase: "  # the driver's progress lines (driver/Compiler.h announcePhase)


def compiler():
    """The `cgc` driver: $CGC, else the one a wheel bundles (cgc/bin/cgc),
    else `cgc` on the PATH."""
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "cgc")
    return os.environ.get("CGC") or (bundled if os.path.exists(bundled) else "cgc")


def compile_file(source, output, flags=(), cgc=None):
    """Compiles an IR (.json) or ONNX (.onnx) file into the artifact at
    `output` with the `cgc` driver; raises CgcError with its diagnostics.
    Each phase is logged at INFO as it starts, the driver's summary at
    INFO when it ends, its notes and warnings at WARNING."""
    import subprocess
    import sys
    env = dict(os.environ, CGC_PYTHON=sys.executable)  # an ONNX import runs in this Python
    command = [cgc or compiler(), os.fspath(source), "-o", os.fspath(output), "--progress",
               *flags]
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=env) as driver:
        said = []
        for line in driver.stderr:
            line = line.rstrip("\n")
            if line.startswith(PHASE):
                LOG.info("cgc: %s", line[len(PHASE):])
            else:
                said.append(line)
        status = driver.wait()
    if status:
        from .errors import CgcError
        raise CgcError("\n".join(said).strip())
    for line in said:
        quiet = line.startswith("cgc: wrote ")
        LOG.log(logging.INFO if quiet else logging.WARNING, "%s", line)
    return output
