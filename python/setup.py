"""The wheel's tags and version. The source tree alone (`pip install
./python`) is the pure-Python package (export, ONNX import); the package
that the build stages (build/python/cgc, packed by scripts/build-wheel.sh)
also holds the runtime's extension cgc/_native*.so and the `cgc` driver
(cgc/bin/cgc), which make it a platform wheel (scripts/build-wheel.sh then
tags it with the Python the extension is built for).

The version is project()'s in the top-level CMakeLists.txt, cgc's one
version string: from cgc/_version.py where the build wrote it (the staged
package), else from the source checkout's CMakeLists.txt, as
cgc/__init__.py reads it; either way the built package gets a
cgc/_version.py holding it."""
import glob
import os
import re

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = glob.glob(os.path.join(HERE, "cgc", "_native*.so"))


def version():
    staged = os.path.join(HERE, "cgc", "_version.py")
    if os.path.exists(staged):
        scope = {}
        with open(staged) as f:
            exec(f.read(), scope)
        return scope["__version__"]
    cmake = os.path.join(HERE, os.pardir, "CMakeLists.txt")
    if not os.path.exists(cmake):
        raise SystemExit(f"setup.py: no cgc/_version.py and no {cmake}: build the "
                         "package from the source tree or with scripts/build-wheel.sh")
    with open(cmake) as f:
        match = re.search(r"^project\(cgc VERSION ([0-9][0-9.]*)", f.read(), re.M)
    if not match:
        raise SystemExit(f"setup.py: no 'project(cgc VERSION x.y.z' in {cmake}")
    return match.group(1)


VERSION = version()


class PackageDistribution(Distribution):
    def has_ext_modules(self):
        return bool(NATIVE)


class BuildPy(build_py):
    """Writes cgc/_version.py into the built package when the sources hold
    none (a build from the source tree)."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "cgc", "_version.py")
        if not os.path.exists(target):
            with open(target, "w") as f:
                f.write(f'__version__ = "{VERSION}"\n')


setup(version=VERSION, distclass=PackageDistribution, cmdclass={"build_py": BuildPy})
