"""Real-time blocking detection (shims/PROTOCOL.md, "Detecting real-time
blocking").

A daemon thread wakes every `heartbeat_ms` of real time. While the program
is not inside a virtual wait it sends `heartbeat` (so the runner knows the
process is alive and computing), and it measures the process's CPU time: a
program that neither waits on the virtual clock nor uses CPU for
`stall_ms` is blocked in real time (an unshimmed wait, a C extension, a
subprocess), and the shim says where with `stalled`. The runner fails the
row with that message; the shim never lets real time pass silently.

Waiting for the machine is not blocking: a thread that is runnable but not
scheduled, or in uninterruptible (disk) sleep, uses no CPU either. On a
loaded machine an import reading its files spent over 2 s that way and was
reported as stalled. So on Linux the watchdog reads its threads' states
(`/proc/self/task/*/stat`) and counts only time in which every other thread
sleeps in the kernel (`S`: a sleep, a socket wait, a lock, a select).
"""

import os
import sys
import threading
import traceback

from ._clock import CLOCK, REAL

_THREAD_NAME = "faultmatrix-clock-watchdog"


def _where():
    frames = sys._current_frames()
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in frames.items():
        if ident == me or names.get(ident) == _THREAD_NAME:
            continue
        stack = traceback.extract_stack(frame)
        # Innermost first, shim frames left out.
        shown = [f for f in reversed(stack) if "faultmatrix_clock" not in f.filename][:3]
        where = " <- ".join(f"{f.filename}:{f.lineno} in {f.name}" for f in shown) or "?"
        parts.append(f"{names.get(ident, ident)}: {where}")
    return "; ".join(parts)


def _waiting_for_the_machine():
    """True when a thread other than this one is running, runnable or in
    disk sleep (Linux); False when all sleep, or when it cannot tell."""
    me = threading.get_native_id()
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return False
    for tid in tids:
        if tid == str(me):
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ...: comm may hold spaces and parentheses.
        state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
        if state in (b"R", b"D"):
            return True
    return False


def _run():
    interval = max(CLOCK.heartbeat_ms, 10) / 1000
    stall_ns = CLOCK.stall_ms * 1_000_000
    progress_ns = int(interval * 1e9 * 0.02)  # 2 % of one core
    last_cpu = REAL["process_time_ns"]()
    idle_since = None
    reported = False
    last_wake = REAL["monotonic_ns"]()
    while True:
        REAL["sleep"](interval)
        channel = CLOCK.channel
        if channel is None or channel.closed or CLOCK.dead:
            return
        now = REAL["monotonic_ns"]()
        # Woken far later than asked: this thread was kept from running (a
        # loaded machine), so it saw nothing meanwhile; count again.
        starved = now - last_wake > 4 * interval * 1e9
        last_wake = now
        if starved:
            idle_since = None
        cpu = REAL["process_time_ns"]()
        progressed = cpu - last_cpu >= progress_ns
        last_cpu = cpu
        if CLOCK.waiting:
            # Inside a virtual wait: the runner owes the answer.
            idle_since = None
            continue
        if not channel.try_send({"op": "heartbeat", "draws": CLOCK.jitter.used, "cpu_ns": cpu}):
            return
        if progressed or _waiting_for_the_machine():
            idle_since = None
            continue
        if idle_since is None:
            idle_since = now - int(interval * 1e9)
        if not reported and now - idle_since >= stall_ns:
            reported = True
            detail = (
                "waiting in real time for work handed to a thread (run_in_executor, to_thread)"
                if CLOCK.waiting_for_threads
                else "blocked outside the shim: neither waiting on the virtual clock nor using CPU"
            )
            channel.try_send(
                {
                    "op": "stalled",
                    "real_ms": (now - idle_since) // 1_000_000,
                    "where": _where(),
                    "detail": detail,
                }
            )


def start():
    t = threading.Thread(target=_run, name=_THREAD_NAME, daemon=True)
    t.start()
    return t
