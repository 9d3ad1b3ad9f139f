"""The real Python SDKs, unchanged, on the virtual clock: openai 3.57.0
(sync and async) and anthropic 2.15.0 (sync), through the fake runner.

Every expected wait comes from the SDK's own source (shims/drafts/*/DERIVATION.md):
openai and anthropic both wait min(0.5 * 2**n, 8) * (1 - 0.25 * draw) seconds
after the n-th retry-worthy failure without usable guidance."""

import os
import tempfile
import unittest

from support import ANTHROPIC_OK, OK, SHIMS, RunnerCase, require, sdk_python, write_script

OPENAI_CLIENT = os.path.join(SHIMS, "..", "runner-tests", "wire", "openai-python", "client.py")
ANTHROPIC_CLIENT = os.path.join(SHIMS, "..", "runner-tests", "wire", "anthropic-python", "client.py")

# The virtual wall clock starts at Sun, 06 Nov 1994 08:49:37 GMT; these are
# 10 s later in the three forms RFC 9110 allows (IMF-fixdate, RFC 850, asctime).
DATES_10S = {
    "IMF-fixdate": "Sun, 06 Nov 1994 08:49:47 GMT",
    "RFC 850": "Sunday, 06-Nov-94 08:49:47 GMT",
    "asctime": "Sun Nov  6 08:49:47 1994",
}


def stream(*texts, breaks=False):
    events = [
        {"data": {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini",
                  "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]}}
        for t in texts
    ]
    if not breaks:
        events.append({"data": "[DONE]"})
    return {"status": 200, "stream": {"events": events, "break": breaks}}


class OpenAISync(RunnerCase):
    """openai.OpenAI through a warm parent."""

    ENV = {}

    @classmethod
    def setUpClass(cls):
        cls.python = require(sdk_python(), "openai==3.57.0 and anthropic==2.15.0 in .venv-shims")
        super().setUpClass()
        cls.runner.start_warm([cls.python, OPENAI_CLIENT], env=cls.ENV)

    def sdk(self, routes, **kw):
        env = dict(kw.pop("env", {}))
        return self.row([], {"api": routes}, env=env, warm=True, **kw)

    def test_backoff_for_draws_0_half_and_1(self):
        res = self.sdk([503, 503, 503, OK], jitter=[0.0, 0.5, 1.0], env={"OPENAI_MAX_RETRIES": "3"})
        self.assertClean(res)
        self.assertTrace(res, """
            api1 503 UPSTREAM_UNAVAILABLE retry wait=500ms
            api2 503 UPSTREAM_UNAVAILABLE retry wait=875ms
            api3 503 UPSTREAM_UNAVAILABLE retry wait=1500ms
            api4 200 return
            """)
        self.assertEqual(res.result["output"], "pong")

    def test_the_backoff_is_capped_at_8s(self):
        res = self.sdk([500] * 6 + [OK], jitter=[0.0] * 6, env={"OPENAI_MAX_RETRIES": "6"})
        self.assertClean(res)
        self.assertEqual([l.split("wait=")[-1] for l in res.trace[:-1]], ["500ms", "1s", "2s", "4s", "8s", "8s"])
        self.assertEqual(res.trace[-1], "api7 200 return")

    def test_default_max_retries_is_2(self):
        res = self.sdk([503, 503, 503], jitter=[0.0, 0.0])
        self.assertClean(res)
        self.assertTrace(res, """
            api1 503 UPSTREAM_UNAVAILABLE retry wait=500ms
            api2 503 UPSTREAM_UNAVAILABLE retry wait=1s
            api3 503 UPSTREAM_UNAVAILABLE fail
            """)
        self.assertEqual(res.result["code"], "HTTP_503")

    def test_retry_after_seconds_and_ms_are_the_wait_and_draw_nothing(self):
        res = self.sdk([{"status": 429, "headers": {"retry-after": "2"}},
                        {"status": 503, "headers": {"retry-after-ms": "150"}}, OK], jitter=[])
        self.assertClean(res)
        self.assertTrace(res, """
            api1 429 RATE_LIMITED retry wait=2s
            api2 503 UPSTREAM_UNAVAILABLE retry wait=150ms
            api3 200 return
            """)

    def test_every_http_date_form_against_the_virtual_wall_clock(self):
        for form, date in DATES_10S.items():
            with self.subTest(form):
                res = self.sdk([{"status": 429, "headers": {"retry-after": date}}, OK], jitter=[])
                self.assertClean(res)
                self.assertTrace(res, "api1 429 RATE_LIMITED retry wait=10s\napi2 200 return")

    def test_retry_after_above_120s_is_refused_and_120s_honoured(self):
        res = self.sdk([{"status": 429, "headers": {"retry-after": "121"}}])
        self.assertClean(res)
        self.assertTrace(res, "api1 429 RATE_LIMITED fail")
        res = self.sdk([{"status": 429, "headers": {"retry-after": "120"}}, OK], timeout="5m")
        self.assertClean(res)
        self.assertTrace(res, "api1 429 RATE_LIMITED retry wait=120s\napi2 200 return")

    def test_x_should_retry_overrides_the_status(self):
        res = self.sdk([{"status": 503, "headers": {"x-should-retry": "false"}}])
        self.assertTrace(res, "api1 503 UPSTREAM_UNAVAILABLE fail")
        res = self.sdk([{"status": 400, "headers": {"x-should-retry": "true"}}, OK], jitter=[0.0])
        self.assertClean(res)
        self.assertTrace(res, "api1 400 INVALID_REQUEST retry wait=500ms\napi2 200 return")
        res = self.sdk([400])
        self.assertTrace(res, "api1 400 INVALID_REQUEST fail")

    def test_a_latency_above_the_timeout_times_out_at_exactly_the_timeout(self):
        res = self.sdk([{"status": 200, "latency": "7s", "body": OK["body"]}, dict(OK, latency="4s")],
                       jitter=[0.5], env={"OPENAI_TIMEOUT": "5", "OPENAI_MAX_RETRIES": "1"})
        self.assertClean(res)
        self.assertTrace(res, "api1 timeout TIMEOUT retry wait=437500us\napi2 200 return")
        self.assertEqual([(c.start_ns, c.end_ns) for c in res.calls],
                         [(0, 5_000_000_000), (5_437_500_000, 9_437_500_000)])

    def test_a_hung_upstream_twice_ends_in_a_timeout(self):
        res = self.sdk(["timeout", "timeout"], jitter=[0.0], env={"OPENAI_TIMEOUT": "0.3", "OPENAI_MAX_RETRIES": "1"})
        self.assertClean(res)
        self.assertTrace(res, "api1 timeout TIMEOUT retry wait=500ms\napi2 timeout TIMEOUT fail")
        self.assertEqual(res.result["stop"], "timeout")
        self.assertEqual(res.elapsed_ns, 1_100_000_000)

    def test_streams(self):
        res = self.sdk([stream("po", "ng")], env={"FM_STREAM": "1"})
        self.assertClean(res)
        self.assertEqual(res.result["output"], "pong")
        res = self.sdk([503, stream("pong")], jitter=[0.0], env={"FM_STREAM": "1"})
        self.assertTrace(res, "api1 503 UPSTREAM_UNAVAILABLE retry wait=500ms\napi2 200 return")
        res = self.sdk([stream("po", breaks=True)], env={"FM_STREAM": "1"})
        self.assertTrace(res, "api1 broken STREAM_BROKEN fail")
        self.assertEqual(res.result["stop"], "connection-error")


class OpenAIAsync(OpenAISync):
    """The same rows with openai.AsyncOpenAI under asyncio (anyio backend)."""

    ENV = {"FM_ASYNC": "1"}

    def sdk(self, routes, **kw):
        kw["env"] = dict(kw.get("env", {}), FM_ASYNC="1")
        return super().sdk(routes, **kw)


class OneProcessPerRow(RunnerCase):
    """Without a warm parent: the SDK imported in the row's own process."""

    def test_openai_sync_and_async(self):
        py = require(sdk_python(), "the SDK venv")
        for env in ({}, {"FM_ASYNC": "1"}):
            res = self.row([py, OPENAI_CLIENT], {"api": [503, OK]}, jitter=[0.5], env=env)
            self.assertClean(res)
            self.assertTrace(res, "api1 503 UPSTREAM_UNAVAILABLE retry wait=437500us\napi2 200 return")


class AnthropicSync(RunnerCase):
    @classmethod
    def setUpClass(cls):
        cls.python = require(sdk_python(), "openai==3.57.0 and anthropic==2.15.0 in .venv-shims")
        super().setUpClass()
        cls.runner.start_warm([cls.python, ANTHROPIC_CLIENT])

    def sdk(self, routes, **kw):
        return self.row([], {"api": routes}, warm=True, **kw)

    def test_backoff_for_draws_0_half_and_1(self):
        res = self.sdk([503, 503, 503, ANTHROPIC_OK], jitter=[0.0, 0.5, 1.0], env={"ANTHROPIC_MAX_RETRIES": "3"})
        self.assertClean(res)
        self.assertTrace(res, """
            api1 503 UPSTREAM_UNAVAILABLE retry wait=500ms
            api2 503 UPSTREAM_UNAVAILABLE retry wait=875ms
            api3 503 UPSTREAM_UNAVAILABLE retry wait=1500ms
            api4 200 return
            """)

    def test_529_is_retried_and_the_cap_is_8s(self):
        res = self.sdk([529] * 5 + [ANTHROPIC_OK], jitter=[0.0] * 5, env={"ANTHROPIC_MAX_RETRIES": "5"})
        self.assertClean(res)
        self.assertEqual(res.trace[0], "api1 529 OVERLOADED retry wait=500ms")
        self.assertEqual([l.split("wait=")[-1] for l in res.trace[:-1]], ["500ms", "1s", "2s", "4s", "8s"])

    def test_a_121s_retry_after_is_honoured(self):
        res = self.sdk([{"status": 429, "headers": {"retry-after": "121"}}, ANTHROPIC_OK], timeout="5m")
        self.assertClean(res)
        self.assertTrace(res, "api1 429 RATE_LIMITED retry wait=121s\napi2 200 return")
        self.assertEqual(res.elapsed_ns, 121 * 10**9)

    def test_every_http_date_form_against_the_virtual_wall_clock(self):
        for form, date in DATES_10S.items():
            with self.subTest(form):
                res = self.sdk([{"status": 503, "headers": {"retry-after": date}}, ANTHROPIC_OK], jitter=[])
                self.assertClean(res)
                self.assertTrace(res, "api1 503 UPSTREAM_UNAVAILABLE retry wait=10s\napi2 200 return")

    def test_x_should_retry_false(self):
        res = self.sdk([{"status": 529, "headers": {"x-should-retry": "false"}}])
        self.assertTrace(res, "api1 529 OVERLOADED fail")

    def test_timeouts_in_virtual_time(self):
        res = self.sdk([{"status": 200, "latency": "9s", "body": ANTHROPIC_OK["body"]},
                        dict(ANTHROPIC_OK, latency="2500ms")],
                       jitter=[0.0], env={"ANTHROPIC_TIMEOUT": "3", "ANTHROPIC_MAX_RETRIES": "1"})
        self.assertClean(res)
        self.assertTrace(res, "api1 timeout TIMEOUT retry wait=500ms\napi2 200 return")
        self.assertEqual([(c.start_ns, c.end_ns) for c in res.calls],
                         [(0, 3_000_000_000), (3_500_000_000, 6_000_000_000)])


class AnyioOnAsyncio(RunnerCase):
    """anyio (installed with the SDKs) on the asyncio backend, without an SDK."""

    def test_sleep_move_on_after_fail_after_and_a_socket_read_with_a_deadline(self):
        py = require(sdk_python(), "the SDK venv")
        tmp = tempfile.mkdtemp(prefix="fm-anyio-")
        script = write_script(tmp, "anyio_client.py", """
            import json, os, urllib.parse
            import anyio, anyio.to_thread
            u = urllib.parse.urlparse(os.environ["FAULTMATRIX_URL_API"])

            async def main():
                t = anyio.current_time
                t0 = t(); out = {}
                await anyio.sleep(2.5)
                out["sleep"] = t() - t0
                with anyio.move_on_after(1.25):
                    await anyio.sleep(100)
                out["move_on_after"] = t() - t0
                out["thread"] = await anyio.to_thread.run_sync(lambda: sum(range(10000)))
                out["after_thread"] = t() - t0
                stream = await anyio.connect_tcp(u.hostname, u.port)
                await stream.send(b"GET / HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n")
                try:
                    with anyio.fail_after(3):
                        await stream.receive()
                except TimeoutError:
                    out["fail_after"] = t() - t0
                await stream.aclose()
                return out

            print(json.dumps({"outcome": "success", **anyio.run(main)}))
            """)
        res = self.row([py, script], {"api": [{"status": 200, "latency": "1m"}]})
        self.assertClean(res)
        self.assertEqual(res.result, {"outcome": "success", "sleep": 2.5, "move_on_after": 3.75,
                                      "thread": 49995000, "after_thread": 3.75, "fail_after": 6.75})
        self.assertEqual([(c.start_ns, c.end_ns, c.outcome) for c in res.calls],
                         [(3_750_000_000, 6_750_000_000, "timeout")])


class RealTimeBlockingWithAnSDK(RunnerCase):
    def test_an_unshimmed_wait_between_two_sdk_calls_fails_the_row(self):
        py = require(sdk_python(), "the SDK venv")
        tmp = tempfile.mkdtemp(prefix="fm-sdk-block-")
        script = write_script(tmp, "blocker.py", """
            import os, select, openai
            c = openai.OpenAI(base_url=os.environ["FAULTMATRIX_URL_API"] + "/v1", api_key="x")
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "p"}])
            select.select([], [], [], 30)  # a real wait: the shim does not cover select.select
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "p"}])
            """)
        res = self.row([py, script], {"api": [OK, OK]})
        self.assertEqual(len(res.failures), 2, self.explain(res))
        self.assertIn("blocked in real time", res.failures[0])
        self.assertIn("blocker.py:5", res.failures[0])
        self.assertEqual(res.failures[1], "api: 1 scripted answer(s) never used")


if __name__ == "__main__":
    unittest.main()
