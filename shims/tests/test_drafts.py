"""The draft matrices (shims/drafts/*/*.yaml) through the reference runner:
every row of the right clients passes, every row of the wrong clients fails
with a diff naming the call. Needs PyYAML (shims/requirements.txt)."""

import glob
import os
import unittest

from support import NODE_SDK, SHIMS, RunnerCase, node, require, sdk_python

import fake_runner

DRAFTS = os.path.join(SHIMS, "..", "runner-tests", "wire")


def yaml_available():
    try:
        import yaml  # noqa: F401
    except ImportError:
        return False
    return True


class Drafts(RunnerCase):
    """One warm parent per Python client (shared by its files), a process per Node row."""

    def run_files(self, paths, warm):
        require(yaml_available(), "PyYAML")
        results = []
        for path in paths:
            doc, rows = fake_runner.load_matrix(path)
            system = doc["system"]
            self.assertEqual(system.get("clock"), "virtual", path)
            command = [fake_runner.expand_vars(a) for a in system["command"]]
            cwd = os.path.dirname(path)
            if warm and getattr(self.runner, "warm_key", None) != (tuple(command), cwd):
                if self.runner.warm is not None:
                    self.runner.stop_warm()
                self.runner.start_warm(command, cwd=cwd)
                self.runner.warm_key = (tuple(command), cwd)
            for row in rows:
                spec = fake_runner.row_spec(doc, row, path)
                res = self.runner.run_row(spec, command, cwd=cwd, warm=warm)
                from support import TIMINGS
                TIMINGS.append((self.id(), res.row_ms, res.real_ms, res.start_ms, res.rounds))
                results.append((os.path.relpath(path, DRAFTS), row, res, fake_runner.check_row(row, res)))
        return results

    def assertAllPass(self, results):
        bad = [f"{p} :: {row['name']}\n  " + "\n  ".join(problems) for p, row, _, problems in results if problems]
        self.assertEqual([], bad, "\n".join(bad))

    def python_env(self):
        os.environ["FAULTMATRIX_PYTHON"] = require(sdk_python(), "the SDK venv")

    def test_openai_python(self):
        self.python_env()
        files = sorted(glob.glob(os.path.join(DRAFTS, "openai-python", "*.yaml")))
        self.assertGreaterEqual(len(files), 6)
        self.assertAllPass(self.run_files(files, warm=True))

    def test_anthropic_python(self):
        self.python_env()
        files = sorted(glob.glob(os.path.join(DRAFTS, "anthropic-python", "*.yaml")))
        self.assertGreaterEqual(len(files), 5)
        self.assertAllPass(self.run_files(files, warm=True))

    def test_openai_node(self):
        os.environ["FAULTMATRIX_NODE"] = require(node(), "node")
        require(os.path.exists(NODE_SDK), "the openai npm package")
        files = sorted(glob.glob(os.path.join(DRAFTS, "openai-node", "*.yaml")))
        self.assertGreaterEqual(len(files), 5)
        self.assertAllPass(self.run_files(files, warm=False))

    def test_the_wrong_python_client_is_caught_with_a_diff_naming_the_call(self):
        self.python_env()
        [(_, _, res, problems)] = self.run_files([os.path.join(DRAFTS, "..", "wire-wrong", "openai-python", "wrong.yaml")],
                                                 warm=False)
        diff = next(p for p in problems if p.startswith("trace differs"))
        self.assertIn("- api1 400 INVALID_REQUEST fail", diff)
        self.assertIn("+ api1 400 INVALID_REQUEST retry wait=1s", diff)
        self.assertIn("+ api2 unscripted aborted", diff)

    def test_the_wrong_node_client_is_caught_with_a_diff_naming_the_call(self):
        os.environ["FAULTMATRIX_NODE"] = require(node(), "node")
        require(os.path.exists(NODE_SDK), "the openai npm package")
        [(_, _, res, problems)] = self.run_files([os.path.join(DRAFTS, "..", "wire-wrong", "openai-node", "wrong.yaml")],
                                                 warm=False)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("- api1 429 RATE_LIMITED retry wait=2s", problems[0])
        self.assertIn("+ api1 429 RATE_LIMITED retry wait=500ms", problems[0])


if __name__ == "__main__":
    unittest.main()
