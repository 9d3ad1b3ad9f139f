"""A row's program that kills the warm parent it was forked from, then waits
on the virtual clock: the row must fail, saying the parent went away and
showing what the parent wrote. It kills its parent process only when that
is a warm parent of this same command (its command line names this file),
never a runner that started it directly."""

import os
import signal
import sys
import time

ppid = os.getppid()
try:
    with open(f"/proc/{ppid}/cmdline", "rb") as f:
        parent_argv = f.read().split(b"\0")
except OSError:
    parent_argv = []
if any(a.endswith(b"kill_parent.py") for a in parent_argv):
    os.kill(ppid, signal.SIGKILL)
    time.sleep(1)
else:
    print("not a warm child: nothing to kill", file=sys.stderr)
    sys.exit(4)
print('{"outcome": "success"}')
