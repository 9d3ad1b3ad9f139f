"""Warm mode: import the program once, fork a fresh child per row
(shims/PROTOCOL.md, "Warm mode").

The runner starts the row's command as usual, plus `FAULTMATRIX_WARM=1`.
This process then never runs the program itself. It connects as the warm
parent, imports the program's top-level imports (those found outside the
program's own directory: a local module could read the row's environment at
import) plus `FAULTMATRIX_WARM_IMPORTS`, says `ready`, and serves `spawn`:

- it forks; the child takes the row's environment (`spawn.env`, complete),
  moves to its own process group, connects its stdout and stderr to the
  runner (`attach`), connects its own clock channel as a row, and returns
  from `sitecustomize`: the interpreter's start-up goes on and runs the
  program as `__main__` exactly as `python client.py` would;
- the parent reports `spawned` (with the child's pid) and, when it has
  reaped it, `exited` with its status.

Things fixed at the parent's start are the parent's: the command line, the
working directory, interpreter options and `PYTHON*` variables read before
`sitecustomize` (hash seed, buffering, warnings).
"""

import ast
import errno
import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import sys
import traceback

from . import _channel, _run_main, _warm_models
from ._clock import CLOCK, REAL


def _script_imports(path):
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return []
    names = []

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                names.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for h in node.handlers:
                    visit(h.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, (ast.If, ast.With)):
                visit(node.body)
                visit(getattr(node, "orelse", []))

    visit(tree.body)
    return names


def _is_outside(name, local_dirs):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return False
    if spec is None:
        return False
    origin = spec.origin or ""
    if origin in ("built-in", "frozen") or not origin or f"{os.sep}site-packages{os.sep}" in origin:
        return True
    return not any(origin.startswith(d + os.sep) for d in local_dirs)


def preload(names):
    script = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c", "-m") else None
    local_dirs = [os.getcwd()]
    wanted = []
    if script:
        local_dirs.append(os.path.dirname(os.path.abspath(script)))
        wanted.extend(_script_imports(script))
    models = [n for n in names if _warm_models.is_model_ref(n)]
    wanted.extend(n for n in names if not _warm_models.is_model_ref(n))
    done, failed = [], []
    for name in dict.fromkeys(wanted):
        if name in sys.modules:
            done.append(name)
            continue
        explicit = name in names
        if not explicit and not _is_outside(name, local_dirs):
            continue
        try:
            importlib.import_module(name)
            done.append(name)
        except BaseException as err:  # the child will import it and fail as the program would
            failed.append(f"{name}: {type(err).__name__}: {err}")
    done.extend(ref for ref in models if _warm_models.prepare(ref))
    return done, failed


class _Lines:
    def __init__(self, sock, buf):
        self.sock = sock
        self.buf = buf

    def fill(self):
        """One read (the socket is readable); False at EOF."""
        try:
            chunk = self.sock.recv(65536)
        except OSError:
            return False
        if not chunk:
            return False
        self.buf += chunk
        return True

    def parse(self):
        out = []
        while True:
            i = self.buf.find(b"\n")
            if i < 0:
                return out
            line = bytes(self.buf[:i])
            del self.buf[: i + 1]
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict):
                out.append(msg)


def _attach(address, token, stream, fd):
    host, port = _channel.parse_address(address)
    s = socket.create_connection((host, port), timeout=10)
    s.settimeout(None)
    hello = {"op": "attach", "versions": [1], "token": token, "stream": stream}
    s.sendall(json.dumps(hello).encode() + b"\n")
    os.dup2(s.fileno(), fd)
    s.close()


def _become_row(msg, address, wake_r, wake_w):
    """In the forked child: take the row's environment and stdio, connect
    the row's clock, and return (the interpreter then runs the program)."""
    from . import activate_row

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.close(wake_r)
    os.close(wake_w)
    CLOCK.channel.sock.close()
    CLOCK.channel = None
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    env = msg.get("env") or {}
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    if msg.get("cwd"):
        os.chdir(msg["cwd"])
    address = os.environ.get("FAULTMATRIX_CLOCK", address)
    token = os.environ.get("FAULTMATRIX_CLOCK_TOKEN") or None
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _attach(address, token, "stdout", 1)
    _attach(address, token, "stderr", 2)
    activate_row(address, token)
    _warm_models.record()


def serve(address, token, after_patches=None):
    CLOCK.connect(address, "warm", token)
    if after_patches is not None:
        after_patches()
    t0 = REAL["perf_counter_ns"]()
    extra = [n.strip() for n in os.environ.get("FAULTMATRIX_WARM_IMPORTS", "").split(",") if n.strip()]
    done, failed = preload(extra)
    channel = CLOCK.channel
    channel.send(
        {
            "op": "ready",
            "preloaded": done,
            "failed": failed,
            "import_ns": REAL["perf_counter_ns"]() - t0,
        }
    )
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    lines = _Lines(channel.sock, channel._buf)  # with anything the handshake read ahead
    children = {}  # pid -> spawn id

    def reap():
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            ident = children.pop(pid, None)
            code = os.waitstatus_to_exitcode(status)
            channel.send(
                {
                    "op": "exited",
                    "id": ident,
                    "pid": pid,
                    "code": code if code >= 0 else None,
                    "signal": -code if code < 0 else None,
                }
            )

    def shutdown():
        for pid in list(children):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)

    pending = lines.parse()
    while True:
        for msg in pending or []:
            op = msg.get("op")
            if op == "spawn":
                sys.stdout.flush()
                sys.stderr.flush()
                # What the parent loaded stays out of the children's garbage
                # collections, so they do not touch (and copy) its pages.
                gc.freeze()
                pid = os.fork()
                if pid == 0:
                    try:
                        _become_row(msg, address, wake_r, wake_w)
                        script = _run_main.script_path()
                    except BaseException:
                        traceback.print_exc()
                        os._exit(_channel.EXIT_SHIM_FAILED)
                    if script is not None:
                        _run_main.run_and_exit(script)  # never returns
                    return  # -c, -m: start-up goes on and runs the program
                children[pid] = msg.get("id")
                channel.send({"op": "spawned", "id": msg.get("id"), "pid": pid})
            elif op == "kill":
                for pid, ident in list(children.items()):
                    if ident == msg.get("id"):
                        sig = int(msg.get("signal", signal.SIGKILL))
                        try:
                            os.killpg(pid, sig)
                        except OSError:
                            try:
                                os.kill(pid, sig)
                            except OSError:
                                pass
            elif op == "preload":
                # Modules earlier rows imported (their `exit.imported`): the
                # next children start with them loaded.
                # Then the pydantic models they built (`_warm_models`).
                before = len(sys.modules)
                names = msg.get("modules") or []
                for name in names:
                    if name not in sys.modules and not _warm_models.is_model_ref(name):
                        try:
                            importlib.import_module(name)
                        except BaseException:
                            pass
                for name in names:
                    if _warm_models.is_model_ref(name):
                        _warm_models.prepare(name)
                channel.send({"op": "preloaded", "modules": len(sys.modules) - before})
            elif op == "shutdown":
                shutdown()
        pending = []
        try:
            readable, _, _ = select.select([channel.sock, wake_r], [], [])
        except OSError as err:
            if err.errno == errno.EINTR:
                continue
            raise
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            reap()
        if channel.sock in readable:
            if not lines.fill():
                shutdown()
            pending = lines.parse()
        reap()
