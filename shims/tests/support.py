"""Shared helpers for the shims' tests: a fake runner per test class, the
interpreters to run clients with, and a record of each row's real time."""

import os
import shutil
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SHIMS = os.path.dirname(HERE)
REPO = os.path.dirname(SHIMS)
sys.path.insert(0, os.path.join(SHIMS, "testing"))

import fake_runner  # noqa: E402

from fake_runner import FakeRunner, RowSpec, parse_duration  # noqa: E402,F401

VENV_PYTHON = os.path.join(REPO, ".venv-shims", "bin", "python")
NODE_SDK = os.path.join(SHIMS, "node", "sdk", "node_modules", "openai")

# Rows' real times, printed by run.py at the end.
TIMINGS = []


def plain_python():
    """An interpreter for clients that need only the standard library."""
    return os.environ.get("FM_SHIM_PYTHON") or sys.executable


def sdk_python():
    """The interpreter with openai==3.57.0 and anthropic==2.15.0, or None."""
    p = os.environ.get("FM_SDK_PYTHON") or VENV_PYTHON
    if not os.path.exists(p):
        return None
    ok = subprocess.run([p, "-c", "import openai, anthropic"], capture_output=True, env=_no_clock_env())
    return p if ok.returncode == 0 else None


def node():
    return shutil.which("node")


def _no_clock_env():
    env = dict(os.environ)
    env.pop("FAULTMATRIX_CLOCK", None)
    return env


def require(thing, what):
    """Skips when a dependency is missing, except under CI (where it fails)."""
    if thing:
        return thing
    if os.environ.get("CI"):
        raise AssertionError(f"{what} is required under CI (see shims/README.md)")
    raise unittest.SkipTest(f"{what} is not installed (see shims/README.md)")


def write_script(tmpdir, name, source):
    path = os.path.join(tmpdir, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(source))
    return path


OK_BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}],
}
OK = {"status": 200, "body": OK_BODY}

ANTHROPIC_OK = {
    "status": 200,
    "body": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "pong"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}


class RunnerCase(unittest.TestCase):
    """A fake runner shared by a test class; `row()` runs one row."""

    runner = None

    @classmethod
    def setUpClass(cls):
        cls.runner = FakeRunner()

    @classmethod
    def tearDownClass(cls):
        if cls.runner is not None:
            cls.runner.close()

    def row(self, command, routes=None, *, jitter=None, seed=0, env=None, timeout="30s",
            budget="1h", warm=False, name=None, cwd=None):
        spec = RowSpec(
            name=name or self.id().rsplit(".", 1)[-1],
            routes=routes or {},
            jitter=jitter,
            jitter_seed=seed,
            timeout_ns=parse_duration(timeout),
            budget_ns=parse_duration(budget),
            env=env or {},
        )
        res = self.runner.run_row(spec, command, cwd=cwd, warm=warm)
        TIMINGS.append((self.id(), res.row_ms, res.real_ms, res.start_ms, res.rounds))
        return res

    def assertTrace(self, res, expected):
        want = [line.strip() for line in textwrap.dedent(expected).strip().splitlines()]
        self.assertEqual(want, res.trace, self.explain(res))

    def assertClean(self, res):
        self.assertEqual([], res.failures, self.explain(res))

    @staticmethod
    def explain(res):
        return (
            f"\ntrace: {res.trace}\nfailures: {res.failures}\nresult: {res.result}\nexit: {res.exit_code}"
            f"\nstdout: {res.stdout[-2000:]}\nstderr: {res.stderr[-3000:]}"
        )
