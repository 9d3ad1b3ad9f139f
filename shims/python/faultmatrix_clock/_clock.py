"""The process's view of the row's virtual clock.

"Now" is kept here and read without a round trip; only the runner moves it,
in its answer to a `block` (shims/PROTOCOL.md, "Waiting"). The real clock
functions are kept in `REAL` for the shim's own short real waits.
"""

import os
import sys
import threading
import time as _time

from . import _channel

PROTOCOL_VERSIONS = [1, 2]
SHIM_VERSION = "1.1.0"

# The real functions, captured before any patch.
REAL = {
    "sleep": _time.sleep,
    "monotonic": _time.monotonic,
    "monotonic_ns": _time.monotonic_ns,
    "perf_counter": _time.perf_counter,
    "perf_counter_ns": _time.perf_counter_ns,
    "time": _time.time,
    "time_ns": _time.time_ns,
    "process_time_ns": _time.process_time_ns,
}

NS = 1_000_000_000
DEBUG = os.environ.get("FAULTMATRIX_CLOCK_DEBUG") == "1"
_REAL_MONOTONIC = _time.monotonic  # captured before any patch
_T0 = _REAL_MONOTONIC()


def debug(text):
    """FAULTMATRIX_CLOCK_DEBUG=1: a line per clock step on stderr, with the
    real time since the shim started."""
    os.write(2, f"[fm-clock {os.getpid()} +{(_REAL_MONOTONIC() - _T0) * 1000:.1f}ms] {text}\n".encode())


def seconds_to_ns(seconds):
    """A duration in seconds (int or float) as whole nanoseconds, rounded to
    the nearest: the wait the client asked for, not a clock's rounding."""
    if isinstance(seconds, int):
        return seconds * NS
    return int(round(seconds * 1e9))


class Jitter:
    """The row's random draws: explicit ones in order, or splitmix64 from a
    seed (the same generator as the in-process runner, src/system.rs)."""

    MASK = (1 << 64) - 1

    def __init__(self, spec):
        self.used = 0
        self.overrun = False
        self.on_overrun = None
        self.draws = None
        self.state = 0
        if isinstance(spec, dict) and isinstance(spec.get("draws"), list):
            self.draws = [float(d) for d in spec["draws"]]
        elif isinstance(spec, dict) and isinstance(spec.get("seed"), int):
            self.state = spec["seed"] & self.MASK
        else:
            self.state = 0
        self._lock = threading.Lock()

    def next(self):
        with self._lock:
            self.used += 1
            if self.draws is None:
                self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
                z = self.state
                z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
                z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
                z ^= z >> 31
                return (z >> 11) / float(1 << 53)
            if self.used <= len(self.draws):
                return self.draws[self.used - 1]
            first = not self.overrun
            self.overrun = True
        if first and self.on_overrun is not None:
            self.on_overrun(len(self.draws))
        return 0.0


class Clock:
    """One row's clock, connected to the runner."""

    def __init__(self):
        self.now_ns = 0
        self.origin_ns = 0
        self.wall_start_ns = 0
        self.channel = None
        self.jitter = Jitter(None)
        self.fixtures = set()  # (host, port) the runner serves
        self.fixture_ports = set()
        self.seq = 0
        self.stall_ms = 2000
        self.heartbeat_ms = 250
        self.role = None  # "row" or "warm"
        self.version = 1  # the protocol version the runner chose
        self.sockets = None  # the socket registry (set by the socket patch)
        self.waiting = False  # a thread is inside block()
        self.threads_busy = 0  # event-loop work handed to threads
        self.waiting_for_threads = False
        self._wait_lock = threading.Lock()
        self._waiter = None
        self.dead = False  # a forked child of a row: no clock

    # -- reading the clock (no round trip) --------------------------------

    def monotonic_ns(self):
        return self.origin_ns + self.now_ns

    def wall_ns(self):
        return self.wall_start_ns + self.now_ns

    # -- the handshake ----------------------------------------------------

    def connect(self, address, role, token, extra=None):
        self.channel = _channel.Channel(address)
        hello = {
            "op": "hello",
            "versions": PROTOCOL_VERSIONS,
            "role": role,
            "shim": "python",
            "shim_version": SHIM_VERSION,
            "runtime": f"{sys.implementation.name} {sys.version.split()[0]}",
            "pid": os.getpid(),
            "token": token,
        }
        if extra:
            hello.update(extra)
        self.channel.send(hello)
        reply = self.channel.recv()
        if reply["op"] == "refuse":
            _channel.fail(
                f"the runner refused this process: {reply.get('error', 'no reason given')}"
                f" (it speaks protocol versions {reply.get('versions')}, this shim {PROTOCOL_VERSIONS})"
            )
        if reply["op"] != "welcome":
            _channel.fail(f"expected welcome from the runner, got {reply['op']!r}")
        if reply.get("v") not in PROTOCOL_VERSIONS:
            _channel.fail(f"the runner chose protocol version {reply.get('v')!r}, this shim speaks {PROTOCOL_VERSIONS}")
        self.role = role
        self.version = reply.get("v")
        self.apply_welcome(reply)
        return reply

    def apply_welcome(self, w):
        self.now_ns = int(w.get("now_ns", 0))
        self.origin_ns = int(w.get("monotonic_origin_ns", 0))
        self.wall_start_ns = int(w.get("wall_start_ns", 0))
        self.stall_ms = int(w.get("stall_ms", 2000))
        self.heartbeat_ms = int(w.get("heartbeat_ms", 250))
        self.fixtures = set()
        self.fixture_ports = set()
        for text in w.get("fixtures", []):
            host, _, port = text.rpartition(":")
            self.fixtures.add((host.strip("[]"), int(port)))
            self.fixture_ports.add(int(port))
        self.jitter = Jitter(w.get("jitter"))
        self.jitter.on_overrun = self._draws_exhausted

    def _draws_exhausted(self, scripted):
        if self.channel is not None:
            self.channel.try_send(
                {
                    "op": "error",
                    "code": "draws_exhausted",
                    "message": f"the row scripted {scripted} jitter draw{'s' if scripted != 1 else ''}"
                    " but the system asked for more",
                    "draws": self.jitter.used,
                }
            )

    # -- waiting ------------------------------------------------------------

    def block(self, deadline_ns, on, wake_on):
        """Tells the runner the process waits until `deadline_ns` (None:
        until I/O) or until I/O on one of the `wake_on` ports; returns once the
        runner has moved the clock ("timer" or "io")."""
        if self.dead:
            _channel.fail(
                "a forked child of a row process waited on the virtual clock; "
                "only the row's own process is on the clock"
            )
        if self.channel is None:
            raise RuntimeError(
                f"faultmatrix clock shim: a virtual wait ({on}) in the warm parent; "
                "imports must not sleep or wait on sockets"
            )
        me = threading.get_ident()
        if not self._wait_lock.acquire(blocking=False):
            self.channel.try_send(
                {
                    "op": "error",
                    "code": "unsupported",
                    "message": "two threads waited on the virtual clock at once "
                    f"({self._waiter} and {me}); the v1 Python shim supports one waiting thread",
                }
            )
            self._wait_lock.acquire()
        self._waiter = me
        self.waiting = True
        # What the program printed so far reaches the runner before the clock
        # moves, so the runner can date it (the JSON result's time).
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):
                pass
        try:
            while True:
                self.seq += 1
                message = {
                    "op": "block",
                    "seq": self.seq,
                    "deadline_ns": deadline_ns,
                    "on": on,
                    "wake_on": wake_on,
                    "conns": self.sockets.report() if self.sockets else [],
                    "draws": self.jitter.used,
                }
                if DEBUG:
                    debug(f"block {on} deadline={deadline_ns} conns={message['conns']}")
                self.channel.send(message)
                reply = self.channel.recv()
                if DEBUG:
                    debug(f"{reply['op']} now={reply.get('now_ns')} woke={reply.get('woke')}")
                op = reply["op"]
                if reply.get("seq") != self.seq:
                    _channel.fail(f"the runner answered block {self.seq} with seq {reply.get('seq')!r}")
                if op == "busy":
                    # Bytes are in flight: a short real wait, then report again.
                    REAL["sleep"](0.0002)
                    continue
                if op != "advance":
                    _channel.fail(f"expected advance or busy, got {op!r}")
                now = int(reply["now_ns"])
                if now < self.now_ns:
                    _channel.fail(f"the runner moved the clock backwards ({self.now_ns} -> {now})")
                self.now_ns = now
                if self.sockets is not None and reply.get("conns"):
                    self.sockets.await_delivery(reply["conns"])
                return reply.get("woke", "timer")
        finally:
            self.waiting = False
            self._waiter = None
            self._wait_lock.release()

    def refuses_connect(self, port):
        """Protocol v2: asks the runner whether this connection to the
        fixture listener on `port` is refused (the route's next script entry
        is `refused`; the runner records the call). False on v1."""
        if self.version < 2 or self.channel is None or self.dead:
            return False
        me = threading.get_ident()
        if not self._wait_lock.acquire(blocking=False):
            self.channel.try_send(
                {
                    "op": "error",
                    "code": "unsupported",
                    "message": "a thread connected to the fixture server while another waited on the "
                    f"virtual clock ({self._waiter} and {me}); the Python shim supports one waiting thread",
                }
            )
            self._wait_lock.acquire()
        try:
            self.seq += 1
            self.channel.send({"op": "connect", "seq": self.seq, "port": port})
            reply = self.channel.recv()
            if reply.get("op") != "connect" or reply.get("seq") != self.seq:
                _channel.fail(
                    f"the runner answered connect {self.seq} with {reply.get('op')!r} {reply.get('seq')!r}"
                )
            if DEBUG:
                debug(f"connect port={port} refused={reply.get('refused')}")
            return bool(reply.get("refused"))
        finally:
            self._wait_lock.release()

    def wait_until(self, deadline_ns, on):
        """A pure timer wait (sleep): returns at exactly `deadline_ns`."""
        while self.now_ns < deadline_ns:
            self.block(deadline_ns, on, [])

    # -- exit -----------------------------------------------------------------

    def report_exit(self):
        if self.channel is not None and not self.dead:
            self.channel.try_send({"op": "exit", "draws": self.jitter.used})


CLOCK = Clock()
