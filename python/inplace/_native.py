"""Finds the extension module ``inplace._C``: beside this package (an installed package), or in
a build tree (``$INPLACE_BUILD_DIR/python/inplace``, default ``build/`` of the repository)."""
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    yield _HERE
    build = os.environ.get("INPLACE_BUILD_DIR")
    if build:
        yield os.path.join(os.path.abspath(build), "python", "inplace")
    yield os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build", "python", "inplace")


def load():
    """Returns the ``_C`` module; raises ImportError saying where it looked and how to build it."""
    if "inplace._C" in sys.modules:
        return sys.modules["inplace._C"]
    looked = []
    for folder in _candidates():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_C" + suffix)
            looked.append(path)
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location("inplace._C", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules["inplace._C"] = module
                return module
    raise ImportError(
        "inplace: the extension module _C is not built for this Python (%s); build it with "
        "./scripts/build.sh (or cmake -DPython3_EXECUTABLE=%s) and set INPLACE_BUILD_DIR to the "
        "build folder. Looked for: %s" % (sys.executable, sys.executable, ", ".join(looked)))
