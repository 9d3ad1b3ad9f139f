"""Clocks, sleeps, dates and random draws on the virtual clock.

Covered (module attributes are replaced, so `time.sleep(...)` and a later
`from time import sleep` both get the virtual function):

- `time.sleep`; `time.monotonic`, `perf_counter`, `time` and their `_ns`
  forms; `time.clock_gettime[_ns]` for the wall and monotonic clocks;
  `time.localtime`, `gmtime`, `ctime`, `asctime`, `strftime` without an
  explicit time.
- `datetime.datetime.now`/`utcnow`/`today` and `datetime.date.today`: these
  are C methods that read the system clock directly, so they are replaced in
  the C types' own dictionaries (CPython only) and `type(x) is datetime`
  still holds.
- `random`: the module's hidden instance is replaced by one whose `random()`
  returns the row's draws, and every module-level function (`random`,
  `uniform`, `choice`, `randint`, `shuffle`, ...) is rebound to it.

Left real, on purpose: `time.process_time`/`thread_time` (CPU time, not
elapsed time), `time.get_clock_info`, `os.urandom`/`uuid`/`secrets` (not the
row's jitter), `random.SystemRandom` and `random.Random()` instances the
program creates itself.
"""

import ctypes
import datetime as _dt
import gc
import random as _random
import time as _time

from ._clock import CLOCK, NS, seconds_to_ns

_REAL_LOCALTIME = _time.localtime
_REAL_GMTIME = _time.gmtime
_REAL_CTIME = _time.ctime
_REAL_ASCTIME = _time.asctime
_REAL_STRFTIME = _time.strftime
_REAL_CLOCK_GETTIME = getattr(_time, "clock_gettime", None)
_REAL_CLOCK_GETTIME_NS = getattr(_time, "clock_gettime_ns", None)
_REAL_SLEEP = _time.sleep

_MONOTONIC_IDS = {
    getattr(_time, name)
    for name in ("CLOCK_MONOTONIC", "CLOCK_MONOTONIC_RAW", "CLOCK_BOOTTIME", "CLOCK_HIGHRES", "CLOCK_UPTIME")
    if hasattr(_time, name)
}
_WALL_IDS = {getattr(_time, name) for name in ("CLOCK_REALTIME", "CLOCK_TAI") if hasattr(_time, name)}


def monotonic():
    return CLOCK.monotonic_ns() / 1e9


def monotonic_ns():
    return CLOCK.monotonic_ns()


def time():
    return CLOCK.wall_ns() / 1e9


def time_ns():
    return CLOCK.wall_ns()


def sleep(secs, /):
    # The real sleep's argument checks and messages.
    if not isinstance(secs, (int, float)):
        try:
            secs = float(secs)
        except (TypeError, ValueError):
            raise TypeError(f"'{type(secs).__name__}' object cannot be interpreted as an integer or float") from None
    if secs != secs:
        raise ValueError("Invalid value NaN (not a number)")
    if secs < 0:
        raise ValueError("sleep length must be non-negative")
    ns = seconds_to_ns(secs)
    if ns == 0:
        _REAL_SLEEP(0)  # lets other threads run, as the real sleep(0) does
        return
    CLOCK.wait_until(CLOCK.now_ns + ns, "sleep")


def clock_gettime(clk_id, /):
    if clk_id in _MONOTONIC_IDS:
        return monotonic()
    if clk_id in _WALL_IDS:
        return time()
    return _REAL_CLOCK_GETTIME(clk_id)


def clock_gettime_ns(clk_id, /):
    if clk_id in _MONOTONIC_IDS:
        return monotonic_ns()
    if clk_id in _WALL_IDS:
        return time_ns()
    return _REAL_CLOCK_GETTIME_NS(clk_id)


def localtime(secs=None, /):
    return _REAL_LOCALTIME(time() if secs is None else secs)


def gmtime(secs=None, /):
    return _REAL_GMTIME(time() if secs is None else secs)


def ctime(secs=None, /):
    return _REAL_CTIME(time() if secs is None else secs)


def asctime(t=None, /):
    return _REAL_ASCTIME(_REAL_LOCALTIME(time()) if t is None else t)


def strftime(format, t=None, /):
    return _REAL_STRFTIME(format, _REAL_LOCALTIME(time()) if t is None else t)


def patch_time():
    _time.sleep = sleep
    _time.monotonic = monotonic
    _time.monotonic_ns = monotonic_ns
    _time.perf_counter = monotonic
    _time.perf_counter_ns = monotonic_ns
    _time.time = time
    _time.time_ns = time_ns
    if _REAL_CLOCK_GETTIME is not None:
        _time.clock_gettime = clock_gettime
    if _REAL_CLOCK_GETTIME_NS is not None:
        _time.clock_gettime_ns = clock_gettime_ns
    _time.localtime = localtime
    _time.gmtime = gmtime
    _time.ctime = ctime
    _time.asctime = asctime
    _time.strftime = strftime


# -- datetime ---------------------------------------------------------------


def _type_dict(tp):
    """The real dict behind a C type's read-only `__dict__` proxy."""
    return gc.get_referents(tp.__dict__)[0]


def _split_wall():
    ns = CLOCK.wall_ns()
    return ns // NS, (ns // 1000) % 1_000_000  # floor, as datetime.now does


def _dt_now(cls, tz=None):
    s, us = _split_wall()
    return cls.fromtimestamp(s, tz).replace(microsecond=us)


def _dt_utcnow(cls):
    s, us = _split_wall()
    return cls.utcfromtimestamp(s).replace(microsecond=us)


def _date_today(cls):
    if issubclass(cls, _dt.datetime):
        return cls.now()
    s, _ = _split_wall()
    return cls.fromtimestamp(s)


def patch_datetime():
    patched = (
        (_dt.datetime, "now", _dt_now),
        (_dt.datetime, "utcnow", _dt_utcnow),
        (_dt.datetime, "today", _date_today),
        (_dt.date, "today", _date_today),
    )
    for tp, name, fn in patched:
        _type_dict(tp)[name] = classmethod(fn)
    # The attribute caches must forget the old C methods.
    for tp in (_dt.date, _dt.datetime):
        ctypes.pythonapi.PyType_Modified(ctypes.py_object(tp))


# -- random -------------------------------------------------------------------


class RowRandom(_random.Random):
    """`random()` is the row's next draw. Methods built on it (`uniform`,
    `choice`, `randint`, `shuffle`, `sample`...) consume draws as CPython
    computes them from `random()` (for example `randrange(n)` is
    `floor(draw * 2**53) % n`); `getrandbits`/`randbytes` stay on a
    generator seeded with 0, so they are deterministic but not draws."""

    def __init__(self):
        super().__init__(0)

    def random(self):
        return CLOCK.jitter.next()

    def seed(self, *args, **kwargs):
        # random.seed(...) by the program does not change the row's draws;
        # only the generator behind getrandbits is reseeded.
        super().seed(*args, **kwargs)


_RANDOM_NAMES = (
    "random", "uniform", "triangular", "randint", "choice", "randrange", "sample", "shuffle",
    "choices", "normalvariate", "lognormvariate", "expovariate", "vonmisesvariate",
    "gammavariate", "gauss", "betavariate", "paretovariate", "weibullvariate", "getstate",
    "setstate", "getrandbits", "randbytes", "seed", "binomialvariate",
)


def patch_random():
    inst = RowRandom()
    _random._inst = inst
    for name in _RANDOM_NAMES:
        if hasattr(_random, name) and hasattr(inst, name):
            setattr(_random, name, getattr(inst, name))
