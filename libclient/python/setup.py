"""Builds the package's optional C extension jitd._fast
(jitd/_fast.c, the per-call hot path of Execute) when pip installs
the package from a checkout and Python.h (python3-dev) and numpy's headers
are there. Without them the package installs as pure Python and runs its
ctypes path. Metadata is in pyproject.toml.
"""
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join("jitd", "_fast.c")
INCLUDE = os.path.join(HERE, "..", "..", "include")


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing: the extension is optional."""

    def run(self):
        try:
            build_ext.run(self)
        except Exception as e:  # noqa: BLE001 (any compiler failure)
            self.warn("jitd._fast not built (%s); the package will use its ctypes path" % e)

    def build_extension(self, ext):
        try:
            build_ext.build_extension(self, ext)
        except Exception as e:  # noqa: BLE001
            self.warn("jitd._fast not built (%s); the package will use its ctypes path" % e)


def extensions():
    if not os.path.exists(os.path.join(HERE, SOURCE)):
        return []
    try:
        import numpy
    except ImportError:
        return []
    return [Extension("jitd._fast", [SOURCE], include_dirs=[numpy.get_include(), INCLUDE],
                      libraries=["dl"], extra_compile_args=["-std=c11", "-fvisibility=hidden"])]


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
