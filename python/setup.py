"""The wheel's tags. The source tree alone (`pip install ./python`) is the
pure-Python package (export, ONNX import); the package that the build
stages (build/python/cgc, packed by scripts/build-wheel.sh) also holds the
runtime's extension cgc/_native*.so and the `cgc` driver (cgc/bin/cgc),
which make it a platform wheel (scripts/build-wheel.sh then tags it with
the Python the extension is built for)."""
import glob
import os

from setuptools import setup
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = glob.glob(os.path.join(HERE, "cgc", "_native*.so"))


class PackageDistribution(Distribution):
    def has_ext_modules(self):
        return bool(NATIVE)


setup(distclass=PackageDistribution)
