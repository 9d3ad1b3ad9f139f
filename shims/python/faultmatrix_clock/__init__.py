"""faultmatrix's Python virtual-clock shim (protocol v1 and v2, shims/PROTOCOL.md).

Activated by `sitecustomize` when `FAULTMATRIX_CLOCK` is set:

- `FAULTMATRIX_CLOCK=127.0.0.1:PORT`: the runner's control channel;
- `FAULTMATRIX_CLOCK_TOKEN`: which row (or warm parent) this process is;
- `FAULTMATRIX_WARM=1`: become a warm parent that imports the program's
  modules once and forks a fresh child per row (see `_warm`);
- `FAULTMATRIX_WARM_IMPORTS=a,b.c`: modules a warm parent imports besides
  the program's top-level imports.

What is covered is listed in each patch module's docstring and in
shims/README.md.
"""

import atexit
import os
import sys

from . import _channel, _clock, _lazy_ca, _patch_asyncio, _patch_socket, _patch_time, _warm_models, _watchdog
from ._clock import CLOCK, PROTOCOL_VERSIONS, SHIM_VERSION

__all__ = ["CLOCK", "PROTOCOL_VERSIONS", "SHIM_VERSION", "activate_from_environment"]

_baseline_modules = None


def install_patches():
    _patch_time.patch_time()
    _patch_time.patch_datetime()
    _patch_time.patch_random()
    _patch_socket.patch_socket()
    _patch_asyncio.install()
    _lazy_ca.install()


def _outside_program(name, cwd=None):
    """The module `name` is loaded from the standard library or
    site-packages (never the program's own: a warm parent does not load it)."""
    module = sys.modules.get(name)
    if module is None or name.startswith("_faultmatrix"):
        return False
    origin = getattr(module, "__file__", None) or ""
    stdlib = origin.startswith(sys.base_prefix) and not origin.startswith(cwd or os.getcwd())
    return bool(origin) and ("site-packages" in origin or stdlib)


def _imported_since_start():
    """What a warm parent could load for the next rows: the modules this row
    imported, from the standard library and site-packages only, then the
    pydantic models it built (`module:qualname`, see `_warm_models`)."""
    if _baseline_modules is None:
        return []
    cwd = os.getcwd()
    out = sorted(
        name for name in list(sys.modules) if name not in _baseline_modules and _outside_program(name, cwd)
    )
    return out + _warm_models.built(lambda name: _outside_program(name, cwd))


def _at_exit():
    if _clock.DEBUG:
        _clock.debug("exit")
    if CLOCK.channel is not None and not CLOCK.dead:
        CLOCK.channel.try_send({"op": "exit", "draws": CLOCK.jitter.used, "imported": _imported_since_start()})


def _forked_child_of_row():
    # A child the program forked is not the row's process: it has no clock.
    CLOCK.dead = True
    if CLOCK.channel is not None:
        CLOCK.channel.closed = True


def activate_row(address, token):
    """Connects this process as a row's client and starts its watchdog."""
    global _baseline_modules
    _clock.DEBUG = os.environ.get("FAULTMATRIX_CLOCK_DEBUG") == "1"  # a warm child's own environment
    CLOCK.connect(address, "row", token)
    _patch_socket.REGISTRY.forget_all()
    _baseline_modules = set(sys.modules)
    atexit.register(_at_exit)
    os.register_at_fork(after_in_child=_forked_child_of_row)
    _watchdog.start()


def activate_from_environment(after_patches=None):
    address = os.environ["FAULTMATRIX_CLOCK"]
    token = os.environ.get("FAULTMATRIX_CLOCK_TOKEN") or None
    install_patches()
    if os.environ.get("FAULTMATRIX_WARM") == "1":
        from . import _warm

        _warm.serve(address, token, after_patches)  # returns only in a forked child
        return
    activate_row(address, token)
    if after_patches is not None:
        after_patches()


def fail(message):
    _channel.fail(message)
