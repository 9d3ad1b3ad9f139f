"""The Python shim, function by function, with no SDK: each client is a few
lines of standard library run through the fake runner."""

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

from support import OK, SHIMS, RunnerCase, plain_python, require, sdk_python, write_script

PY = plain_python()
WALL0 = 784_111_777  # the default virtual wall start (Sun, 06 Nov 1994 08:49:37 GMT)


class PythonShim(RunnerCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="fm-shim-test-")

    def script(self, source):
        return write_script(self.tmp, self.id().rsplit(".", 1)[-1] + ".py", source)

    def run_json(self, source, routes=None, **kw):
        res = self.row([PY, self.script(source)], routes, **kw)
        self.assertClean(res)
        self.assertIsNotNone(res.result, self.explain(res))
        return res, res.result

    # -- time ----------------------------------------------------------------

    def test_sleep_moves_every_clock_by_exactly_the_sleep_and_waits_no_real_time(self):
        t0 = time.monotonic()
        res, r = self.run_json(
            """
            import json, time
            a = (time.monotonic(), time.perf_counter(), time.time(), time.monotonic_ns(),
                 time.perf_counter_ns(), time.time_ns(),
                 time.clock_gettime_ns(time.CLOCK_MONOTONIC), time.clock_gettime_ns(time.CLOCK_REALTIME))
            time.sleep(3600)
            time.sleep(0.875)
            b = (time.monotonic(), time.perf_counter(), time.time(), time.monotonic_ns(),
                 time.perf_counter_ns(), time.time_ns(),
                 time.clock_gettime_ns(time.CLOCK_MONOTONIC), time.clock_gettime_ns(time.CLOCK_REALTIME))
            print(json.dumps({"outcome": "success", "a": a, "b": b}))
            """,
            timeout="2h",
            budget="2h",
        )
        self.assertLess(time.monotonic() - t0, 20)  # an hour of virtual sleep, not of real time
        a, b = r["a"], r["b"]
        self.assertEqual(a[3], 1000 * 10**9)  # monotonic starts at the runner's origin
        self.assertEqual(a[5], WALL0 * 10**9)  # the wall clock at the row's wall start
        for i in (3, 4, 5, 6, 7):
            self.assertEqual(b[i] - a[i], 3600_875_000_000, i)
        for i in (0, 1, 2):
            self.assertAlmostEqual(b[i] - a[i], 3600.875, places=5)
        self.assertEqual(res.elapsed_ns, 3600_875_000_000)

    def test_sleep_keeps_the_real_argument_checks(self):
        _, r = self.run_json(
            """
            import json, time
            errs = []
            for bad in (-1, float("nan"), "x"):
                try:
                    time.sleep(bad)
                except (ValueError, TypeError) as e:
                    errs.append(type(e).__name__)
            time.sleep(0)
            print(json.dumps({"outcome": "success", "errs": errs, "t": time.monotonic_ns()}))
            """
        )
        self.assertEqual(r["errs"], ["ValueError", "ValueError", "TypeError"])
        self.assertEqual(r["t"], 1000 * 10**9)

    def test_dates_read_the_virtual_wall_clock(self):
        _, r = self.run_json(
            """
            import datetime, email.utils, json, time
            time.sleep(1.5)
            now = datetime.datetime.now()
            print(json.dumps({"outcome": "success",
                "now": now.isoformat(), "same_type": type(now) is datetime.datetime,
                "utcnow": datetime.datetime.utcnow().isoformat(),
                "aware": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                "today": datetime.date.today().isoformat(),
                "dt_today": datetime.datetime.today().isoformat(),
                "localtime": list(time.localtime())[:6], "gmtime": list(time.gmtime())[:6],
                "ctime": time.ctime(), "strftime": time.strftime("%Y-%m-%d %H:%M:%S"),
                "formatdate": email.utils.formatdate(usegmt=True),
                "explicit": time.strftime("%Y", time.gmtime(0))}))
            """,
            env={"TZ": "UTC"},
        )
        self.assertEqual(r["now"], "1994-11-06T08:49:38.500000")
        self.assertTrue(r["same_type"])
        self.assertEqual(r["utcnow"], "1994-11-06T08:49:38.500000")
        self.assertEqual(r["aware"], "1994-11-06T08:49:38.500000+00:00")
        self.assertEqual(r["today"], "1994-11-06")
        self.assertEqual(r["dt_today"], "1994-11-06T08:49:38.500000")
        self.assertEqual(r["localtime"], [1994, 11, 6, 8, 49, 38])
        self.assertEqual(r["gmtime"], [1994, 11, 6, 8, 49, 38])
        self.assertEqual(r["ctime"], "Sun Nov  6 08:49:38 1994")
        self.assertEqual(r["strftime"], "1994-11-06 08:49:38")
        self.assertEqual(r["formatdate"], "Sun, 06 Nov 1994 08:49:38 GMT")
        self.assertEqual(r["explicit"], "1970")  # an explicit time is the program's own

    def test_process_time_stays_real(self):
        _, r = self.run_json(
            """
            import json, time
            a = time.process_time(); time.sleep(100); b = time.process_time()
            print(json.dumps({"outcome": "success", "d": b - a}))
            """,
            timeout="5m",
        )
        self.assertLess(r["d"], 1.0)  # CPU time, not the virtual sleep

    # -- random ----------------------------------------------------------------

    def test_random_draws_feed_random_and_the_functions_built_on_it(self):
        res, r = self.run_json(
            """
            import json, random
            from random import random as bound_early
            out = [random.random(), bound_early(), random.uniform(10, 20), random.choice("abcd")]
            print(json.dumps({"outcome": "success", "out": out}))
            """,
            jitter=[0.25, 0.5, 0.75, 0.5],
        )
        # choice("abcd") is floor(0.5 * 2**53) % 4 == 0, as CPython's _randbelow computes it.
        self.assertEqual(r["out"], [0.25, 0.5, 17.5, "a"])
        self.assertEqual(res.draws, 4)

    def test_asking_for_more_draws_than_scripted_fails_the_row(self):
        res = self.row(
            [PY, self.script("import random; print(random.random(), random.random(), random.random())")],
            jitter=[0.1, 0.2],
        )
        self.assertIn("the row scripted 2 jitter draws but the system asked for more", res.failures)
        self.assertEqual(res.stdout.split(), ["0.1", "0.2", "0.0"])  # 0.0 after the last, as in process

    def test_a_seed_gives_splitmix64_the_same_as_in_process(self):
        _, r = self.run_json(
            'import json, random; print(json.dumps({"outcome": "success", "d": [random.random(), random.random()]}))',
            seed=0,
        )
        # splitmix64 from state 0: 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4 (the published test vector)
        self.assertEqual(r["d"], [(0xE220A8397B1DCDAF >> 11) / 2**53, (0x6E789E6AA1B965F4 >> 11) / 2**53])

    # -- sockets -----------------------------------------------------------------

    SOCKET_CLIENT = """
        import json, os, socket, time, urllib.parse
        u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
        s = socket.create_connection((u.hostname, u.port), timeout=5)
        s.settimeout({timeout})
        s.sendall(b"GET /x HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n")
        t0 = time.monotonic()
        try:
            data = s.recv(65536)
            out = {{"outcome": "success", "got": data.split(b"\\r\\n")[0].decode()}}
        except socket.timeout as e:
            out = {{"outcome": "error", "stop": "timeout", "msg": str(e)}}
        out["after"] = time.monotonic() - t0
        s.close()
        print(json.dumps(out))
        """

    def test_recv_returns_at_exactly_the_scripted_latency(self):
        res, r = self.run_json(self.SOCKET_CLIENT.format(timeout=5), {"api": [{"status": 204, "latency": "1250ms"}]})
        self.assertEqual(r["got"], "HTTP/1.1 204 No Content")
        self.assertEqual(r["after"], 1.25)
        self.assertEqual(res.calls[0].end_ns, 1_250_000_000)

    def test_recv_times_out_at_exactly_the_socket_timeout(self):
        res, r = self.run_json(self.SOCKET_CLIENT.format(timeout=2.5), {"api": [{"status": 204, "latency": "10s"}]})
        self.assertEqual(r["stop"], "timeout")
        self.assertEqual(r["msg"], "timed out")
        self.assertEqual(r["after"], 2.5)
        self.assertTrace(res, "api1 timeout TIMEOUT fail")
        self.assertEqual(res.calls[0].end_ns, 2_500_000_000)  # the server saw the close at 2.5 s

    def test_recv_into_with_a_small_buffer_waits_virtually_too(self):
        res, r = self.run_json(
            """
            import json, os, socket, time, urllib.parse
            u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
            s = socket.create_connection((u.hostname, u.port), timeout=5)
            s.sendall(b"GET /x HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n")
            buf = bytearray(64)  # 64 has the bit of MSG_DONTWAIT: nbytes must not be read as flags
            n = s.recv_into(buf, 64)
            print(json.dumps({"outcome": "success", "got": bytes(buf[:n]).split(b"\\r\\n")[0].decode(),
                              "t": time.monotonic() - 1000}))
            """,
            {"api": [{"status": 204, "latency": "750ms"}]},
        )
        self.assertEqual(r["got"], "HTTP/1.1 204 No Content")
        self.assertEqual(r["t"], 0.75)

    def test_a_server_that_never_answers_hits_the_timeout(self):
        res, r = self.run_json(self.SOCKET_CLIENT.format(timeout=30), {"api": ["timeout"]})
        self.assertEqual(r["after"], 30)

    def test_a_reset_is_seen_at_its_latency(self):
        _, r = self.run_json(
            """
            import json, os, socket, time, urllib.parse
            u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
            s = socket.create_connection((u.hostname, u.port), timeout=5)
            s.sendall(b"GET /x HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n")
            try:
                s.recv(100); what = "data"
            except ConnectionResetError:
                what = "reset"
            print(json.dumps({"outcome": "success", "what": what, "t": time.monotonic() - 1000}))
            """,
            {"api": [{"fault": "reset", "latency": "300ms"}]},
        )
        self.assertEqual(r["what"], "reset")
        self.assertAlmostEqual(r["t"], 0.3, places=9)

    def test_a_refused_entry_refuses_exactly_that_connect_with_the_real_error(self):
        # Protocol v2: connect, connect_ex and asyncio's sock_connect each
        # meet one `refused` entry; the next connect gets the 204.
        res, r = self.run_json(
            """
            import asyncio, errno, json, os, socket, time, urllib.parse
            u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
            out = {}
            try:
                socket.create_connection((u.hostname, u.port), timeout=5)
            except ConnectionRefusedError as e:
                out["connect"] = [type(e).__name__, e.errno == errno.ECONNREFUSED, e.strerror]
            s = socket.socket()
            out["connect_ex"] = s.connect_ex((u.hostname, u.port)) == errno.ECONNREFUSED
            s.close()
            async def main():
                try:
                    await asyncio.open_connection(u.hostname, u.port)
                except ConnectionRefusedError as e:
                    return e.errno == errno.ECONNREFUSED
            out["asyncio"] = asyncio.run(main())
            out["t"] = time.monotonic() - 1000
            s = socket.create_connection((u.hostname, u.port), timeout=5)
            s.sendall(b"GET /x HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n")
            out["got"] = s.recv(100).split(b"\\r\\n")[0].decode()
            s.close()
            print(json.dumps({"outcome": "success", **out}))
            """,
            {"api": ["refused", "refused", "refused", 204]},
        )
        self.assertEqual(r["connect"], ["ConnectionRefusedError", True, os.strerror(errno.ECONNREFUSED)])
        self.assertTrue(r["connect_ex"])
        self.assertTrue(r["asyncio"])
        self.assertEqual(r["t"], 0)  # a refusal takes no virtual time
        self.assertEqual(r["got"], "HTTP/1.1 204 No Content")
        self.assertEqual([(c.outcome, c.start_ns, c.end_ns) for c in res.calls],
                         [("refused", 0, 0)] * 3 + [("204", 0, 0)])

    def test_http_client_keep_alive_and_waits(self):
        res, r = self.run_json(
            """
            import http.client, json, os, time, urllib.parse
            u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
            got = []
            for i in range(3):
                c.request("POST", "/v1/x", body=b"{}", headers={"content-type": "application/json"})
                got.append(c.getresponse().read().decode())
                time.sleep(0.25 * (i + 1))
            print(json.dumps({"outcome": "success", "got": got}))
            """,
            {"api": [503, {"status": 200, "latency": "100ms", "body": "b"}, {"status": 200, "body": "c"}]},
        )
        self.assertTrace(
            res,
            """
            api1 503 UPSTREAM_UNAVAILABLE retry wait=250ms
            api2 200 retry wait=500ms
            api3 200 return
            """,
        )
        self.assertEqual([c.start_ns for c in res.calls], [0, 250_000_000, 850_000_000])

    # -- asyncio --------------------------------------------------------------------

    def test_asyncio_sleep_wait_for_and_call_later_in_virtual_time(self):
        _, r = self.run_json(
            """
            import asyncio, json
            async def main():
                loop = asyncio.get_running_loop()
                t0 = loop.time(); seen = []
                loop.call_later(2, lambda: seen.append(("later", loop.time() - t0)))
                await asyncio.sleep(1.5)
                seen.append(("slept", loop.time() - t0))
                try:
                    await asyncio.wait_for(asyncio.sleep(100), 0.75)
                except asyncio.TimeoutError:
                    seen.append(("wait_for", loop.time() - t0))
                await asyncio.gather(asyncio.sleep(3), asyncio.sleep(1))
                seen.append(("gather", loop.time() - t0))
                return seen
            print(json.dumps({"outcome": "success", "seen": asyncio.run(main())}))
            """
        )
        self.assertEqual(r["seen"], [["slept", 1.5], ["later", 2.0], ["wait_for", 2.25], ["gather", 5.25]])

    def test_asyncio_streams_latency_and_timeout(self):
        res, r = self.run_json(
            """
            import asyncio, json, os, urllib.parse
            u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
            async def one(timeout):
                loop = asyncio.get_running_loop(); t0 = loop.time()
                reader, writer = await asyncio.open_connection(u.hostname, u.port)
                writer.write(b"GET /x HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n"); await writer.drain()
                try:
                    line = await asyncio.wait_for(reader.readline(), timeout)
                    out = ("line", line.decode().strip(), loop.time() - t0)
                except asyncio.TimeoutError:
                    out = ("timeout", None, loop.time() - t0)
                writer.close(); await writer.wait_closed()
                return out
            async def main():
                return [await one(5), await one(2)]
            print(json.dumps({"outcome": "success", "got": asyncio.run(main())}))
            """,
            {"api": [{"status": 204, "latency": "3s"}, {"status": 204, "latency": "3s"}]},
        )
        self.assertEqual(r["got"], [["line", "HTTP/1.1 204 No Content", 3.0], ["timeout", None, 2.0]])
        self.assertEqual([(c.start_ns, c.end_ns, c.outcome) for c in res.calls],
                         [(0, 3 * 10**9, "204"), (3 * 10**9, 5 * 10**9, "timeout")])

    def test_work_in_threads_is_real_and_does_not_move_the_clock(self):
        _, r = self.run_json(
            """
            import asyncio, json, time
            def work():
                s = 0
                for i in range(200000): s += i
                return s
            async def main():
                loop = asyncio.get_running_loop(); t0 = loop.time()
                timer = asyncio.ensure_future(asyncio.sleep(1))
                await asyncio.to_thread(work)
                mid = loop.time() - t0
                await timer
                return [mid, loop.time() - t0]
            print(json.dumps({"outcome": "success", "t": asyncio.run(main())}))
            """
        )
        self.assertEqual(r["t"], [0.0, 1.0])

    # -- what the runner must see ---------------------------------------------------

    def test_blocking_in_real_time_fails_the_row_with_where(self):
        t0 = time.monotonic()
        res = self.row(
            [PY, self.script(
                """
                import http.client, os, threading, urllib.parse
                u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
                c.request("GET", "/"); c.getresponse().read()
                threading.Event().wait(30)  # a real wait the shim does not cover
                """)],
            {"api": [200]},
        )
        took = time.monotonic() - t0
        self.assertEqual(len(res.failures), 1, self.explain(res))
        self.assertIn("blocked in real time for 2", res.failures[0])
        self.assertIn("test_blocking_in_real_time_fails_the_row_with_where.py:6", res.failures[0])
        self.assertLess(took, 10)

    def test_a_client_without_the_shim_is_refused_not_run_on_the_real_clock(self):
        res = self.row(
            [PY, "-S", self.script(
                """
                import http.client, os, urllib.parse
                u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
                c.request("GET", "/"); print(c.getresponse().status)
                """)],
            {"api": [200]},
        )
        self.assertTrue(any("before the client's clock shim said hello" in f for f in res.failures), res.failures)

    def test_an_unscripted_call_fails_the_row(self):
        res = self.row(
            [PY, self.script(
                """
                import http.client, os, urllib.parse
                u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
                for i in range(2):
                    c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
                    c.request("GET", "/"); c.getresponse().read()
                """)],
            {"api": [200]},
        )
        self.assertIn("api2: a call beyond the script (unscripted)", res.failures)

    def test_a_hang_names_the_limit_it_hit(self):
        res = self.row([PY, self.script("import time\nwhile True: time.sleep(60)")], timeout="10m", budget="1h")
        self.assertEqual(res.failures, ["the command was still running after 600s of virtual time "
                                        "(the row's `system.timeout`)"])


class WarmMode(RunnerCase):
    """A warm parent imports the program once and forks a child per row."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="fm-warm-test-")
        write_script(cls.tmp, "localmod.py", """
            import os
            ROW_AT_IMPORT = os.environ.get("FAULTMATRIX_ROW")
            """)
        cls.script = write_script(cls.tmp, "client.py", """
            import http.client, json, os, random, sys, time, urllib.parse
            import localmod
            mode = os.environ.get("FM_MODE", "ok")
            if mode == "raise":
                raise RuntimeError("boom")
            u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
            c.request("GET", "/"); status = c.getresponse().status
            time.sleep(float(os.environ.get("FM_SLEEP", "0")))
            print("to stderr", file=sys.stderr)
            print(json.dumps({"outcome": "success", "row": os.environ["FAULTMATRIX_ROW"],
                              "local": localmod.ROW_AT_IMPORT, "t": time.monotonic() - 1000,
                              "r": random.random(), "status": status, "pid": os.getpid()}))
            sys.exit(int(os.environ.get("FM_EXIT", "0")))
            """)
        cls.ready = cls.runner.start_warm([PY, cls.script], cwd=cls.tmp)

    def test_the_parent_preloads_imports_from_outside_the_programs_directory(self):
        self.assertIn("http.client", self.ready["preloaded"])
        self.assertIn("urllib.parse", self.ready["preloaded"])
        self.assertNotIn("localmod", self.ready["preloaded"])  # it could read the row's environment

    def test_each_child_has_its_own_clock_environment_draws_and_output(self):
        seen = []
        for i, (sleep, draw) in enumerate([("5", 0.25), ("0", 0.75), ("1.5", 0.5)]):
            res = self.row([], {"api": [200]}, jitter=[draw], env={"FM_SLEEP": sleep}, warm=True, name=f"warm row {i}")
            self.assertClean(res)
            r = res.result
            self.assertEqual(r["row"], f"warm row {i}")
            self.assertEqual(r["local"], f"warm row {i}")
            self.assertEqual(r["t"], float(sleep))  # every row's clock starts at 0
            self.assertEqual(r["r"], draw)
            self.assertEqual(res.stderr, "to stderr\n")
            self.assertEqual(res.exit_code, 0)
            seen.append(r["pid"])
        self.assertEqual(len(set(seen)), 3)

    def test_exit_status_and_uncaught_exceptions_are_the_programs(self):
        res = self.row([], {"api": [200]}, env={"FM_EXIT": "3"}, warm=True)
        self.assertEqual(res.exit_code, 3)
        self.assertEqual(res.result["outcome"], "success")
        res = self.row([], {}, env={"FM_MODE": "raise"}, warm=True)
        self.assertEqual(res.exit_code, 1)
        self.assertIn("RuntimeError: boom", res.stderr)
        self.assertIn("client.py", res.stderr)


class WarmPydanticModels(RunnerCase):
    """A warm child reports the pydantic models it built (`exit.imported`,
    as `module:qualname`), and its parent builds them for the next rows
    (faultmatrix_clock/_warm_models.py)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.python = require(sdk_python(), "pydantic (the SDK venv, .venv-shims)")
        cls.tmp = tempfile.mkdtemp(prefix="fm-warm-models-")
        site = os.path.join(cls.tmp, "lib", "site-packages")  # a module from outside the program
        os.makedirs(site)
        models = """
            from typing import Generic, TypeVar
            from pydantic import BaseModel, ConfigDict
            T = TypeVar("T")
            class Deferred(BaseModel):
                model_config = ConfigDict(defer_build=True)
            class Inner(Deferred):
                x: int
            class Outer(Deferred):
                inner: Inner
            class Box(Deferred, Generic[T]):
                item: T
            class Unused(Deferred):
                y: str
            """
        write_script(site, "fm_models_test.py", models)
        write_script(cls.tmp, "localmodels.py", models)  # the program's own: never reported
        write_script(cls.tmp, "client.py", """
            import json
            import fm_models_test as m
            import localmodels
            def built(mod, name):
                return bool(getattr(mod, name).__dict__.get("__pydantic_complete__"))
            names = ("Inner", "Outer", "Unused")
            before = {n: built(m, n) for n in names}
            before["local Outer"] = built(localmodels, "Outer")
            before["Box[Inner]"] = bool(m.Box[m.Inner].__pydantic_complete__)
            m.Outer.model_validate({"inner": {"x": 1}})
            m.Box[m.Inner].model_validate({"item": {"x": 2}})
            localmodels.Outer.model_validate({"inner": {"x": 3}})
            print(json.dumps({"outcome": "success", "before": before}))
            """)
        env = {"PYTHONPATH": site}
        cls.ready = cls.runner.start_warm([cls.python, "client.py"], env=env, cwd=cls.tmp)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_models_one_row_built_are_built_by_the_parent_for_the_next(self):
        first = self.row([], {}, warm=True, name="first")
        self.assertClean(first)
        self.assertEqual(first.result["before"], {"Inner": False, "Outer": False, "Unused": False,
                                                  "local Outer": False, "Box[Inner]": False})
        learned = {n for n in self.runner.learned if ":" in n}
        self.assertEqual(learned, {"fm_models_test:Inner", "fm_models_test:Outer", "fm_models_test:Box",
                                   "fm_models_test:Box[fm_models_test:Inner]"})
        second = self.row([], {}, warm=True, name="second")
        self.assertClean(second)
        # Built in the parent before this fork; the unused one and the
        # program's own stay deferred, as they would in a fresh process.
        self.assertEqual(second.result["before"], {"Inner": True, "Outer": True, "Unused": False,
                                                   "local Outer": False, "Box[Inner]": True})


class WaitingForTheMachine(unittest.TestCase):
    """The watchdog tells a thread that waits for the machine (runnable, or
    in disk sleep: no CPU used, not blocked) from one asleep in the kernel."""

    @unittest.skipUnless(os.path.isdir("/proc/self/task"), "Linux only")
    def test_a_running_thread_is_waiting_for_the_machine_and_sleeping_ones_are_not(self):
        sys.path.insert(0, os.path.join(SHIMS, "python"))
        try:
            from faultmatrix_clock import _watchdog
        finally:
            sys.path.pop(0)
        stop = threading.Event()
        asleep = threading.Thread(target=stop.wait, daemon=True)
        asleep.start()
        time.sleep(0.05)
        # This test's own thread sleeps too, in the checker's thread.
        out = []
        checker = threading.Thread(target=lambda: out.append(_watchdog._waiting_for_the_machine()))
        main_sleeps = threading.Event()

        def check_while_all_sleep():
            # The other threads get to their waits (a loaded machine may
            # take a while): all asleep is seen within 2 s.
            for _ in range(100):
                time.sleep(0.02)
                if not _watchdog._waiting_for_the_machine():
                    out.append(False)
                    break
            else:
                out.append(True)
            main_sleeps.set()

        t = threading.Thread(target=check_while_all_sleep)
        t.start()
        main_sleeps.wait()
        t.join()
        self.assertEqual(out, [False])

        def spin():
            while not stop.is_set():
                pass

        spinner = threading.Thread(target=spin, daemon=True)
        spinner.start()
        checker.start()
        checker.join()
        stop.set()
        spinner.join()
        self.assertEqual(out, [False, True])


class Installation(unittest.TestCase):
    """The shim is installed by the environment only, and only acts when asked."""

    def env(self, **extra):
        env = dict(os.environ)
        env.pop("FAULTMATRIX_CLOCK", None)
        env["PYTHONPATH"] = os.path.join(SHIMS, "python")
        env.update(extra)
        return env

    def test_without_faultmatrix_clock_nothing_is_patched(self):
        out = subprocess.run(
            [plain_python(), "-c", "import time, sys; print(time.sleep.__module__, 'faultmatrix_clock' in sys.modules)"],
            env=self.env(), capture_output=True, text=True, check=True,
        ).stdout.split()
        self.assertEqual(out, ["time", "False"])

    def test_a_later_sitecustomize_on_the_path_still_runs(self):
        other = tempfile.mkdtemp(prefix="fm-other-site-")
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write("import builtins\nbuiltins.FM_OTHER_SITE = True\n")
        env = self.env(PYTHONPATH=os.path.join(SHIMS, "python") + os.pathsep + other)
        out = subprocess.run([plain_python(), "-c", "print(FM_OTHER_SITE)"], env=env,
                             capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), "True", out.stderr)

    def test_no_runner_is_a_clear_failure_never_a_real_clock_run(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there
        out = subprocess.run([plain_python(), "-c", "print('ran')"], env=self.env(FAULTMATRIX_CLOCK=f"127.0.0.1:{port}"),
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 97)
        self.assertEqual(out.stdout, "")
        self.assertIn("cannot reach the runner's clock", out.stderr)

    def test_a_runner_that_speaks_another_version_is_refused_clearly(self):
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)

        def serve():
            c, _ = ls.accept()
            hello = json.loads(c.makefile().readline())
            self.hello = hello
            c.sendall(b'{"op":"refuse","error":"this runner speaks v3 only","versions":[3]}\n')
            c.close()

        t = threading.Thread(target=serve)
        t.start()
        out = subprocess.run([plain_python(), "-c", "print('ran')"],
                             env=self.env(FAULTMATRIX_CLOCK=f"127.0.0.1:{ls.getsockname()[1]}"),
                             capture_output=True, text=True)
        t.join()
        ls.close()
        self.assertEqual(self.hello["versions"], [1, 2])
        self.assertEqual(self.hello["role"], "row")
        self.assertEqual(out.returncode, 97)
        self.assertIn("this runner speaks v3 only", out.stderr)
        self.assertIn("speaks protocol versions [3], this shim [1, 2]", out.stderr)


if __name__ == "__main__":
    unittest.main()
