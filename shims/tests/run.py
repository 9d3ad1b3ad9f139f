#!/usr/bin/env python3
"""Runs the shims' tests and reports each test's real time and each row's
real time beyond start-up.

    python3 shims/tests/run.py            # everything
    python3 shims/tests/run.py -k openai  # tests whose name contains "openai"

Standard library unittest; no network (everything binds 127.0.0.1). Tests
that need the SDKs use .venv-shims (see shims/README.md) and are skipped
when it is missing, except under CI=1 where they fail.
"""

import argparse
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import support  # noqa: E402


class TimedResult(unittest.TextTestResult):
    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._note(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._note(test, "FAIL")

    def addError(self, test, err):
        super().addError(test, err)
        self._note(test, "ERROR")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._note(test, "skip")

    def _note(self, test, status):
        self.times = getattr(self, "times", [])
        self.times.append((time.monotonic() - self._t0, status, test.id()))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-k", action="append", default=[], help="only tests whose id contains this")
    p.add_argument("-v", action="store_true")
    a = p.parse_args()
    loader = unittest.TestLoader()
    if a.k:
        loader.testNamePatterns = [f"*{k}*" for k in a.k]
    suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    t0 = time.monotonic()
    runner = unittest.TextTestRunner(resultclass=TimedResult, verbosity=2 if a.v else 1)
    result = runner.run(suite)
    total = time.monotonic() - t0
    print("\nreal time per test (s) and per row (ms: from the first request to exit | from hello to exit | start-up):")
    rows = {}
    for tid, row_ms, real_ms, start_ms, rounds in support.TIMINGS:
        rows.setdefault(tid, []).append((row_ms, real_ms, start_ms, rounds))
    for secs, status, tid in getattr(result, "times", []):
        short = tid.replace("test_", "", 1)
        extra = ""
        if tid in rows:
            extra = "  rows: " + ", ".join(f"{r:.0f}|{h:.0f}|{s:.0f}" for r, h, s, _ in rows[tid])
        print(f"  {secs:6.2f}  {status:5} {short}{extra}")
    all_rows = [r for tid in rows for r in rows[tid]]
    if all_rows:
        beyond = sorted(r[0] for r in all_rows if r[0] > 0)
        if beyond:
            med = beyond[len(beyond) // 2]
            print(f"\n{len(all_rows)} rows; from the first request to exit: median {med:.1f} ms, "
                  f"max {beyond[-1]:.1f} ms")
    print(f"whole suite: {total:.1f} s real")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
