"""Certificate authorities load when a TLS handshake needs them.

An HTTP client builds its TLS context when it is constructed (httpx,
httpcore, requests, aiohttp: `ssl.create_default_context()` or
`SSLContext.load_verify_locations(...)`), and OpenSSL parses the whole CA
bundle there: 25-50 ms on an idle machine, 150-200 ms on a loaded one. That
is most of a warm child's real time beyond its fork, and it buys nothing: a
row's fixtures are plain `http://127.0.0.1`, so the context is never used.

So on `ssl.SSLContext` (the Python class every context made through the
`ssl` module is an instance of), `set_default_verify_paths()` (behind
`create_default_context()` and `load_default_certs()`) and
`load_verify_locations` with a readable `cafile` and/or an existing
`capath` (and no `cadata`) only record what they were asked; it is loaded,
in order, just before the context's first use:

- a handshake (`_wrap_socket`, `_wrap_bio`: behind `wrap_socket`,
  `wrap_bio` and asyncio's SSL transport),
- `cert_store_stats()`, `get_ca_certs()`, and another `load_verify_locations`
  with `cadata` (loaded after the deferred ones, as the program ordered).

Everything else is the real call, immediately: `cadata`, a missing or
unreadable file, a wrong argument type, so their errors are raised where
the program expects them. What changes: a `cafile` that exists but is not a
valid PEM bundle raises its `SSLError` at the first handshake instead of at
the load. Nothing else a program can observe (the store is only read by the
calls above).
"""

import os
import ssl

_REAL_LOAD = ssl.SSLContext.load_verify_locations
_REAL_WRAP_SOCKET = ssl.SSLContext._wrap_socket
_REAL_WRAP_BIO = ssl.SSLContext._wrap_bio
_REAL_STATS = ssl.SSLContext.cert_store_stats
_REAL_GET_CA = ssl.SSLContext.get_ca_certs
_REAL_DEFAULT_PATHS = ssl.SSLContext.set_default_verify_paths

_ATTR = "_faultmatrix_deferred_ca"


def _deferrable(cafile, capath, cadata):
    if cadata is not None or (cafile is None and capath is None):
        return False
    try:
        if cafile is not None:
            path = os.fspath(cafile)
            if not os.path.isfile(path) or not os.access(path, os.R_OK):
                return False
        if capath is not None and not os.path.isdir(os.fspath(capath)):
            return False
    except (TypeError, ValueError):
        return False
    return True


def load_now(ctx):
    """Loads what `ctx` deferred (a no-op when nothing is pending)."""
    pending = ctx.__dict__.pop(_ATTR, None)
    for what in pending or ():
        if what is None:
            _REAL_DEFAULT_PATHS(ctx)
        else:
            _REAL_LOAD(ctx, *what)


def load_verify_locations(self, cafile=None, capath=None, cadata=None):
    if _deferrable(cafile, capath, cadata):
        self.__dict__.setdefault(_ATTR, []).append((cafile, capath))
        return None
    load_now(self)
    return _REAL_LOAD(self, cafile, capath, cadata)


def set_default_verify_paths(self):
    self.__dict__.setdefault(_ATTR, []).append(None)


def _wrap_socket(self, *args, **kwargs):
    load_now(self)
    return _REAL_WRAP_SOCKET(self, *args, **kwargs)


def _wrap_bio(self, *args, **kwargs):
    load_now(self)
    return _REAL_WRAP_BIO(self, *args, **kwargs)


def cert_store_stats(self):
    load_now(self)
    return _REAL_STATS(self)


def get_ca_certs(self, binary_form=False):
    load_now(self)
    return _REAL_GET_CA(self, binary_form)


def install():
    ssl.SSLContext.load_verify_locations = load_verify_locations
    ssl.SSLContext._wrap_socket = _wrap_socket
    ssl.SSLContext._wrap_bio = _wrap_bio
    ssl.SSLContext.cert_store_stats = cert_store_stats
    ssl.SSLContext.get_ca_certs = get_ca_certs
    ssl.SSLContext.set_default_verify_paths = set_default_verify_paths
