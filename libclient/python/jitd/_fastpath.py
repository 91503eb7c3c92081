"""Finding jitd._fast, the per-call hot path in C (libclient/python/jitd/_fast.c).

The extension is optional: without it every Execute takes the ctypes path,
with the same results and errors, only slower. It is looked for, in order:
  $JITD_PYTHON_FAST — a file path; "0" (or "off") turns the extension off;
  jitd._fast beside this package (cmake --install puts _fast.so there, pip
  install builds _fast.cpython-*.so there);
  build/lib/python/jitd/_fast.so of the checkout the package runs from.
A path given in $JITD_PYTHON_FAST that does not load is a warning, and the
ctypes path is used.

`module()` is the bound module or None; `reason()` says why it is None.
Thread safety: the search runs once, under a lock.
"""

import importlib.machinery
import importlib.util
import os
import threading
import warnings

from . import _lib
from ._status import JitdError

# The ABI of _fast.c this package speaks (JITD_FAST_ABI there).
_ABI = 1

_lock = threading.Lock()
_searched = False
_module = None
_reason = "not searched yet"
_path = None


def _load_beside():
    """jitd._fast from this package's directory, any extension suffix, or
    None when there is none."""
    here = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(here, "_fast" + suffix)
        if os.path.exists(path):
            return path
    return None


def _load_file(path):
    loader = importlib.machinery.ExtensionFileLoader("jitd._fast", path)
    spec = importlib.util.spec_from_file_location("jitd._fast", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _candidates():
    env = os.environ.get("JITD_PYTHON_FAST")
    if env is not None and env != "":
        if env.lower() in ("0", "off", "no", "false"):
            return None, "turned off by JITD_PYTHON_FAST=%s" % env
        return [(env, True)], None
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    beside = _load_beside() or os.path.join(here, "_fast.so")
    return [(beside, False),
            (os.path.join(root, "build", "lib", "python", "jitd", "_fast.so"), False)], None


def _search():
    global _module, _reason, _path
    candidates, why = _candidates()
    if candidates is None:
        _reason = why
        return
    tried = []
    for path, explicit in candidates:
        if not os.path.exists(path):
            tried.append(path + ": no such file")
            if explicit:
                warnings.warn("jitd: JITD_PYTHON_FAST=%s: no such file; using the ctypes path"
                              % path, RuntimeWarning, stacklevel=4)
            continue
        try:
            module = _load_file(path)
            if getattr(module, "ABI", None) != _ABI:
                raise ImportError("its ABI is %r, this package needs %d"
                                  % (getattr(module, "ABI", None), _ABI))
            module.bind(_lib.lib()._handle, JitdError)
        except ImportError as e:
            tried.append("%s: %s" % (path, e))
            if explicit:
                warnings.warn("jitd: JITD_PYTHON_FAST=%s does not load (%s); using the ctypes "
                              "path" % (path, e), RuntimeWarning, stacklevel=4)
            continue
        _module, _path = module, path
        _reason = None
        return
    _reason = "not found (" + "; ".join(tried) + ")"


def module():
    """jitd._fast, bound to the package's libjitd.so, or None."""
    global _searched
    if _searched:
        return _module
    with _lock:
        if not _searched:
            _search()
            _searched = True
    return _module


def reason():
    """Why module() is None (None when it is not)."""
    module()
    return _reason


def path():
    """Where the extension was loaded from (None when it was not)."""
    module()
    return _path
