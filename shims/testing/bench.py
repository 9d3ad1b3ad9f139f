#!/usr/bin/env python3
"""The virtual-clock shims' benchmark (a measurement, not a test).

    python3 shims/testing/bench.py            # everything
    python3 shims/testing/bench.py --rows 10  # fewer rows per case

Reports, per case, the real time of a row beyond start-up (from its first
request to its exit, and from the shim's hello to its exit), the start-up
itself, the shim's cost per clock step, and the draft suites' real time
against the virtual time they cover. Prints the machine's load average:
the numbers mean little without it.
"""

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHIMS = os.path.dirname(HERE)
REPO = os.path.dirname(SHIMS)
sys.path.insert(0, HERE)

import fake_runner  # noqa: E402
from fake_runner import FakeRunner, RowSpec  # noqa: E402

VENV = os.path.join(REPO, ".venv-shims", "bin", "python")
OK = {"status": 200, "body": {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
                              "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"},
                                           "finish_reason": "stop"}]}}
AOK = {"status": 200, "body": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                               "content": [{"type": "text", "text": "pong"}], "stop_reason": "end_turn",
                               "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}


def q(values):
    values = sorted(values)
    if not values:
        return "-"
    p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
    return f"median {statistics.median(values):6.1f}  p90 {p90:6.1f}  max {values[-1]:6.1f}"


def case(name, runner, n, make_spec, command=None, warm=False, cwd=None):
    rows, hello, start, wall = [], [], [], []
    for i in range(n):
        t0 = time.monotonic()
        res = runner.run_row(make_spec(i), command, cwd=cwd, warm=warm)
        wall.append((time.monotonic() - t0) * 1000)
        if res.failures:
            print(f"  {name}: row {i} failed: {res.failures} {res.stderr[-300:]}")
        rows.append(res.row_ms)
        hello.append(res.real_ms)
        start.append(res.start_ms)
    print(f"{name}")
    print(f"  first request -> exit (ms): {q(rows)}")
    print(f"  hello -> exit (ms):         {q(hello)}")
    print(f"  start-up to hello (ms):     {q(start)}")
    print(f"  whole row, runner side (ms): {q(wall)}")


def step_cost(runner, command, steps):
    res = runner.run_row(RowSpec(name="steps", routes={}, timeout_ns=10**15, budget_ns=10**15), command)
    assert not res.failures, res.failures
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=20)
    a = p.parse_args()
    print(f"load average: {os.getloadavg()}  (2 cores; other builds may be running)")
    tmp = tempfile.mkdtemp(prefix="fm-bench-")

    # The shim's own cost per clock step: 200 sleeps, nothing else.
    py_steps = os.path.join(tmp, "steps.py")
    with open(py_steps, "w") as f:
        f.write("import time\nfrom faultmatrix_clock._clock import REAL\nt=REAL['perf_counter']()\n"
                "for i in range(200): time.sleep(0.5)\n"
                "print('{\"outcome\":\"success\",\"real_ms_per_step\":%f}' % ((REAL['perf_counter']()-t)*1000/200))\n")
    js_steps = os.path.join(tmp, "steps.js")
    with open(js_steps, "w") as f:
        f.write("let n = 0;\n"
                "const go = () => { if (++n === 200) { console.log(JSON.stringify({ outcome: 'success' })); return; }"
                " setTimeout(go, 500); };\n"
                "setTimeout(go, 500);\n")
    runner = FakeRunner()
    try:
        res = step_cost(runner, [sys.executable, py_steps], 200)
        print(f"Python shim, 200 sleeps: {res.result['real_ms_per_step']:.3f} ms real per clock step "
              f"(virtual {fake_runner.format_duration(res.elapsed_ns)})")
        res = step_cost(runner, ["node", js_steps], 200)
        print(f"Node shim, 200 timers: {res.real_ms / 200:.3f} ms real per clock step, hello to exit "
              f"(virtual {fake_runner.format_duration(res.elapsed_ns)})")

        n = a.rows
        retries = lambda i: RowSpec(name=f"r{i}", routes={"api": [503, 503, 503, OK]},  # noqa: E731
                                    jitter=[0.0, 0.5, 1.0], env={"OPENAI_MAX_RETRIES": "3"})
        long_wait = lambda i: RowSpec(name=f"w{i}", routes={"api": [{"status": 429, "headers": {"retry-after": "121"}},  # noqa: E731
                                                                   AOK]}, timeout_ns=600 * 10**9)
        if os.path.exists(VENV):
            client = os.path.join(SHIMS, "..", "runner-tests", "wire", "openai-python", "client.py")
            case("openai Python sync, one process per row (4 calls, 2.875 s virtual)", runner, max(3, n // 4),
                 retries, [VENV, client])
            runner.start_warm([VENV, client])
            case("openai Python sync, warm (4 calls, 2.875 s virtual)", runner, n, retries, warm=True)
            case("openai Python async, warm (4 calls, 2.875 s virtual)", runner, n,
                 lambda i: RowSpec(name=f"a{i}", routes={"api": [503, 503, 503, OK]}, jitter=[0.0, 0.5, 1.0],
                                   env={"OPENAI_MAX_RETRIES": "3", "FM_ASYNC": "1"}), warm=True)
            runner.stop_warm()
            runner.start_warm([VENV, os.path.join(SHIMS, "..", "runner-tests", "wire", "anthropic-python", "client.py")])
            case("anthropic Python sync, warm (Retry-After 121 s then 200)", runner, n, long_wait, warm=True)
            runner.stop_warm()
        node_client = os.path.join(SHIMS, "..", "runner-tests", "wire", "openai-node", "client.js")
        case("openai Node, one process per row (4 calls, 2.875 s virtual)", runner, n,
             lambda i: RowSpec(name=f"n{i}", routes={"api": [503, 503, 503, OK]},
                               jitter=[0.5, 0.0, 0.5, 0.5, 0.5, 0.99, 0.5], env={"OPENAI_MAX_RETRIES": "3"}),
             ["node", node_client])
    finally:
        runner.close()

    # The draft suites: real time against the virtual time they cover.
    env = dict(os.environ, FAULTMATRIX_PYTHON=VENV)
    for name, pattern, warm in (("openai Python", "openai-python/*.yaml", True),
                                ("anthropic Python", "anthropic-python/*.yaml", True),
                                ("openai Node", "openai-node/*.yaml", False)):
        files = sorted(glob.glob(os.path.join(SHIMS, "..", "runner-tests", "wire", pattern)))
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, os.path.join(HERE, "fake_runner.py"), "matrix"]
                             + (["--warm"] if warm else []) + files, env=env, capture_output=True, text=True)
        took = time.monotonic() - t0
        last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-300:]
        virtual = sum_virtual(files)
        print(f"draft suite {name}: {took:.1f} s real for {virtual:.1f} s of virtual time -- {last}")


def sum_virtual(files):
    """The virtual time the suite's rows cover (waits and latencies the
    real clock would have to spend): the sum of their `elapsed` where the
    row states it, else of the waits in its trace."""
    total = 0
    for path in files:
        _, rows = fake_runner.load_matrix(path)
        for row in rows:
            exp = row.get("expect") or {}
            if "elapsed" in exp:
                total += fake_runner.parse_duration(exp["elapsed"])
                continue
            for line in str(exp.get("trace", "")).splitlines():
                for tok in line.split():
                    if tok.startswith("wait="):
                        total += fake_runner.parse_duration(tok[5:])
    return total / 1e9


if __name__ == "__main__":
    main()
