"""A warm child runs its program as `python script.py` would, and ends
without the interpreter's teardown.

A child forked from a warm parent shares the parent's heap (the SDK it
imported: tens of megabytes of objects). When the interpreter tears down at
exit it clears every module and drops a reference to every object, which
writes to every inherited page and makes the kernel copy it: on a loaded
2-core machine that took 120-260 ms per row, after the program had finished
(the runner waits for the exit status). A forked worker normally skips this
(`multiprocessing` ends its forked children with `os._exit`); so does this.

What `python script.py` does, and what is done here, in order:

1. `sys.path[0]` is the script's directory (unless `-P`/`-I`: `safe_path`);
   `__main__.__file__` is the script's absolute path, `__cached__` None,
   `__loader__` a `SourceFileLoader`; the source is compiled and run in
   `__main__`'s namespace (`sys.argv` is the interpreter's, untouched).
2. `SystemExit`: its code is the exit status (None: 0; an int: itself;
   anything else is printed on stderr and the status is 1). Any other
   uncaught exception is given to `sys.excepthook` (the traceback starts
   at the script, as the interpreter prints it) and saved in
   `sys.last_type`/`last_value`/`last_traceback`; the status is 1. An
   uncaught `KeyboardInterrupt` ends the process by SIGINT, as CPython does.
3. As `Py_FinalizeEx` begins: wait for non-daemon threads
   (`threading._shutdown`), run the `atexit` functions (the shim's own
   `exit` message is the last, registered first), flush `sys.stdout` and
   `sys.stderr` (a failed flush makes the status 120).
4. `os._exit(status)`: no module teardown, so no `__del__` of objects still
   alive at exit and no flush of files the program left open (close them,
   or use `with`). This is the one difference from a fresh process.

Only a script given by path runs this way; `-c` and `-m` programs return
from `sitecustomize` and the interpreter runs them (with its teardown).
"""

import os
import signal
import sys


def script_path():
    """The script the interpreter was started with, or None (-c, -m, stdin)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 in ("", "-", "-c", "-m") or not os.path.isfile(argv0):
        return None
    return argv0


def _status_of(exit_exc):
    code = exit_exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF  # what exit(3) makes of it
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:
        pass
    return 1


def run_and_exit(path):
    """Runs `path` as `__main__` and ends the process (never returns)."""
    import __main__
    import importlib.machinery

    status = 0
    interrupted = False
    try:
        full = os.path.abspath(path)
        if not sys.flags.safe_path:
            sys.path.insert(0, os.path.dirname(os.path.realpath(path)))
        ns = __main__.__dict__
        ns["__file__"] = full
        ns["__cached__"] = None
        ns["__loader__"] = importlib.machinery.SourceFileLoader("__main__", full)
        with open(path, "rb") as f:
            source = f.read()
        code = compile(source, full, "exec", dont_inherit=True)
        exec(code, ns)
    except SystemExit as e:
        status = _status_of(e)
    except BaseException as e:  # what the interpreter prints and saves
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
        try:
            sys.excepthook(type(e), e, tb)
        except BaseException:
            pass
        status = 1
        interrupted = isinstance(e, KeyboardInterrupt)
    status = _finish(status)
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)


def _finish(status):
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    import atexit

    try:
        atexit._run_exitfuncs()
    except SystemExit as e:
        status = _status_of(e)
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            if stream is sys.stdout:
                status = 120
    return status
