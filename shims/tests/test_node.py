"""The Node shim: its functions one by one with small scripts, then the
official openai npm package (6.49.0), unchanged, through the fake runner.

Draws: the Node SDK draws Math.random once per attempt for a log id
(client.ts makeRequest, before the request is sent) and once per backoff
without guidance (calculateDefaultRetryTimeoutMillis); the shim feeds every
Math.random call, so a row lists the draws in that order:
    [log 1, jitter 1, log 2, jitter 2, ..., log n]."""

import errno
import json
import os
import tempfile
import unittest

from support import NODE_SDK, OK, SHIMS, RunnerCase, node, require, write_script

NODE_CLIENT = os.path.join(SHIMS, "..", "runner-tests", "wire", "openai-node", "client.js")
DATES_10S = {
    "IMF-fixdate": "Sun, 06 Nov 1994 08:49:47 GMT",
    "RFC 850": "Sunday, 06-Nov-94 08:49:47 GMT",
    "asctime": "Sun Nov  6 08:49:47 1994",
}


def log_and_jitter(*jitter):
    """The draws for a row whose backoffs use these jitter draws: a 0.5 log-id
    draw before every attempt (the value does not matter)."""
    out = []
    for j in jitter:
        out += [0.5, j]
    return out + [0.5]


class NodeShim(RunnerCase):
    @classmethod
    def setUpClass(cls):
        cls.node = require(node(), "node")
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="fm-node-test-")

    def run_js(self, source, routes=None, **kw):
        path = write_script(self.tmp, self.id().rsplit(".", 1)[-1] + ".js", source)
        res = self.row([self.node, path], routes, **kw)
        self.assertClean(res)
        self.assertIsNotNone(res.result, self.explain(res))
        return res, res.result

    def test_timers_and_clocks_move_by_exactly_the_wait(self):
        res, r = self.run_js(
            """
            const tp = require('timers/promises');
            const { promisify } = require('util');
            const out = {};
            const t0 = performance.now(), d0 = Date.now(), h0 = process.hrtime.bigint(), n0 = new Date().getTime();
            out.start = [d0, n0, Date() === new Date(d0).toString()];
            setTimeout(async () => {
              out.t1 = performance.now() - t0;
              await tp.setTimeout(250.5);
              out.t2 = performance.now() - t0;
              await promisify(setTimeout)(1000);
              out.t3 = performance.now() - t0;
              let n = 0;
              const iv = setInterval(() => {
                if (++n === 3) {
                  clearInterval(iv);
                  out.interval = performance.now() - t0;
                  out.wall = Date.now() - d0;
                  out.hr = Number(process.hrtime.bigint() - h0);
                  const cancelled = setTimeout(() => { out.cancelled = 'fired'; }, 10);
                  clearTimeout(cancelled);
                  setTimeout(() => console.log(JSON.stringify({ outcome: 'success', ...out })), 0);
                }
              }, 100);
            }, 3600 * 1000);
            """,
            timeout="2h",
            budget="2h",
        )
        self.assertEqual(r["start"], [784111777000, 784111777000, True])
        self.assertEqual(r["t1"], 3600000)
        self.assertEqual(r["t2"], 3600250.5)
        self.assertEqual(r["t3"], 3601250.5)
        self.assertEqual(r["interval"], 3601550.5)
        self.assertEqual(r["hr"], 3601550500000)
        self.assertEqual(r["wall"], 3601550)  # Date.now() is whole milliseconds
        self.assertNotIn("cancelled", r)
        # setTimeout(fn, 0) is 1 ms in Node: the virtual clock keeps that.
        self.assertEqual(res.elapsed_ns, 3601551500000)

    def test_math_random_is_the_rows_draws(self):
        res, r = self.run_js(
            "console.log(JSON.stringify({ outcome: 'success', d: [Math.random(), Math.random(), Math.random()] }))",
            jitter=[0.25, 0.5, 0.75],
        )
        self.assertEqual(r["d"], [0.25, 0.5, 0.75])
        res, r = self.run_js("console.log(JSON.stringify({ outcome: 'success', d: [Math.random(), Math.random()] }))")
        self.assertEqual(r["d"], [(0xE220A8397B1DCDAF >> 11) / 2**53, (0x6E789E6AA1B965F4 >> 11) / 2**53])

    def test_a_spare_pays_for_its_first_request_before_ready(self):
        # PROTOCOL.md 8.1: a spare makes one request to a listener of its own
        # (undici's request path and its WebAssembly parser compile then) and
        # reports it in `ready`; FAULTMATRIX_NODE_WARM_UP=0 leaves it out.
        path = write_script(self.tmp, "spare.js", "console.log('{}')")
        for env, want in (({}, None), ({"FAULTMATRIX_NODE_WARM_UP": "0"}, "off")):
            ready = self.runner.start_warm([self.node, path], env=env, cwd=self.tmp)
            try:
                self.assertEqual(ready.get("op"), "ready", ready)
                self.assertEqual(ready["warm_up"]["error"], want, ready)
                if want is None:
                    self.assertGreater(ready["warm_up"]["ms"], 0, ready)
            finally:
                self.runner.stop_warm()

    def test_a_spare_collects_its_start_up_garbage_before_ready(self):
        # PROTOCOL.md 8.1: one full collection after the warm-up, before
        # `ready`, so V8's next major collection does not fall in the row;
        # FAULTMATRIX_NODE_GC=0 leaves it out. That the program sees no `gc`
        # is runner-tests/wire/openai-node/spare.yaml (a spare's row).
        path = write_script(self.tmp, "spare_gc.js", "console.log('{}')")
        for env, want in (({}, None), ({"FAULTMATRIX_NODE_GC": "0"}, "off")):
            ready = self.runner.start_warm([self.node, path], env=env, cwd=self.tmp)
            try:
                self.assertEqual(ready.get("op"), "ready", ready)
                self.assertEqual(ready["gc"]["error"], want, ready)
                if want is None:
                    self.assertGreater(ready["gc"]["ms"], 0, ready)
                else:
                    self.assertEqual(ready["gc"]["ms"], 0, ready)
            finally:
                self.runner.stop_warm()

    def test_more_draws_than_scripted_fail_the_row(self):
        path = write_script(self.tmp, "draws.js", "console.log(Math.random(), Math.random())")
        res = self.row([self.node, path], jitter=[0.5])
        self.assertIn("the row scripted 1 jitter draw but the system asked for more", res.failures)

    def test_fetch_latency_and_abort_timeout_in_virtual_time(self):
        res, r = self.run_js(
            """
            const url = process.env.FAULTMATRIX_URL_API + '/x';
            const out = [];
            (async () => {
              const t0 = performance.now();
              const r1 = await fetch(url, { method: 'POST', body: '{}' });
              await r1.text();
              out.push(['ok', r1.status, performance.now() - t0]);
              const t1 = performance.now();
              try {
                await fetch(url, { method: 'POST', body: '{}', signal: AbortSignal.timeout(2000) });
              } catch (e) {
                out.push([e.name, performance.now() - t1]);
              }
              console.log(JSON.stringify({ outcome: 'success', out }));
            })();
            """,
            {"api": [{"status": 204, "latency": "1250ms"}, {"status": 200, "latency": "1m"}]},
        )
        self.assertEqual(r["out"], [["ok", 204, 1250], ["TimeoutError", 2000]])
        self.assertEqual([(c.start_ns, c.end_ns, c.outcome) for c in res.calls],
                         [(0, 1_250_000_000, "204"), (1_250_000_000, 3_250_000_000, "timeout")])

    def test_a_refused_entry_refuses_exactly_that_connect_with_nets_error(self):
        # Protocol v2: net.connect and fetch (undici) each meet one `refused`
        # entry with the error net gives for a closed port; the next fetch
        # connects and gets the 204.
        res, r = self.run_js(
            """
            const net = require('net');
            const url = process.env.FAULTMATRIX_URL_API + '/x';
            const port = Number(new URL(url).port);
            const out = {};
            const s = net.connect({ host: '127.0.0.1', port });
            s.on('error', async (e) => {
              out.net = [e.message === `connect ECONNREFUSED 127.0.0.1:${port}`, e.code, e.errno, e.syscall, e.port];
              try {
                await fetch(url, { method: 'POST', body: '{}' });
              } catch (err) {
                out.fetch = [err.message, err.cause && err.cause.code];
              }
              const r = await fetch(url, { method: 'POST', body: '{}' });
              await r.text();
              out.ok = [r.status, performance.now()];
              console.log(JSON.stringify({ outcome: 'success', ...out }));
            });
            s.on('connect', () => { out.connected = true; });
            """,
            {"api": ["refused", "refused", 204]},
        )
        self.assertEqual(r["net"][:4], [True, "ECONNREFUSED", -errno.ECONNREFUSED, "connect"])
        self.assertEqual(r["fetch"], ["fetch failed", "ECONNREFUSED"])
        self.assertNotIn("connected", r)
        self.assertEqual(r["ok"][0], 204)
        self.assertEqual([(c.outcome, c.start_ns, c.end_ns) for c in res.calls],
                         [("refused", 0, 0), ("refused", 0, 0), ("204", 0, 0)])

    def test_a_blocked_event_loop_fails_the_row(self):
        path = write_script(self.tmp, "busy.js", """
            (async () => {
              await (await fetch(process.env.FAULTMATRIX_URL_API + '/x')).text();
              const { execSync } = require('child_process');
              execSync('sleep 30');  // a synchronous real wait: the event loop is blocked
            })();
            """)
        res = self.row([self.node, path], {"api": [200]})
        self.assertEqual(len(res.failures), 1, self.explain(res))
        self.assertIn("sent nothing on the clock channel for 2000 ms of real time after its first request", res.failures[0])

    def test_without_the_preload_the_row_is_refused(self):
        path = write_script(self.tmp, "plain.js", "fetch(process.env.FAULTMATRIX_URL_API + '/x').then(r => r.text())")
        # `env -u` drops NODE_OPTIONS the way a misconfigured runner would.
        res = self.row(["env", "-u", "NODE_OPTIONS", self.node, path], {"api": [200]})
        self.assertTrue(any("before the client's clock shim said hello" in f for f in res.failures), res.failures)

    def test_no_runner_is_a_clear_failure(self):
        import socket
        import subprocess
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        env = dict(os.environ, FAULTMATRIX_CLOCK=f"127.0.0.1:{port}",
                   NODE_OPTIONS=f"--require {os.path.join(SHIMS, 'node', 'preload.cjs')}")
        path = write_script(self.tmp, "ran.js", "console.log('ran')")
        out = subprocess.run([self.node, path], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 97, out.stderr)
        self.assertEqual(out.stdout, "")
        self.assertIn("cannot reach the runner's clock", out.stderr)
        out = subprocess.run([self.node, "-e", "console.log('ran')"], env=env, capture_output=True, text=True)
        self.assertEqual((out.returncode, out.stdout), (97, ""))
        self.assertIn("only `node script.js` can run on the virtual clock", out.stderr)


class OpenAINode(RunnerCase):
    @classmethod
    def setUpClass(cls):
        cls.node = require(node(), "node")
        require(os.path.exists(NODE_SDK), "the openai npm package in shims/node/sdk (npm ci)")
        super().setUpClass()

    def sdk(self, routes, **kw):
        res = self.row([self.node, NODE_CLIENT], {"api": routes}, **kw)
        return res

    def test_backoff_with_the_log_id_draws_between(self):
        res = self.sdk([503, 503, 503, OK], jitter=log_and_jitter(0.0, 0.5, 1.0), env={"OPENAI_MAX_RETRIES": "3"})
        self.assertClean(res)
        self.assertTrace(res, """
            api1 503 UPSTREAM_UNAVAILABLE retry wait=500ms
            api2 503 UPSTREAM_UNAVAILABLE retry wait=875ms
            api3 503 UPSTREAM_UNAVAILABLE retry wait=1500ms
            api4 200 return
            """)
        self.assertEqual(res.draws, 7)

    def test_the_backoff_is_capped_at_8s(self):
        res = self.sdk([500] * 6 + [OK], jitter=log_and_jitter(*[0.0] * 6), env={"OPENAI_MAX_RETRIES": "6"})
        self.assertClean(res)
        self.assertEqual([l.split("wait=")[-1] for l in res.trace[:-1]], ["500ms", "1s", "2s", "4s", "8s", "8s"])

    def test_retry_after_is_honoured_without_a_cap(self):
        res = self.sdk([{"status": 429, "headers": {"retry-after": "121"}}, OK], jitter=[0.5, 0.5], timeout="5m")
        self.assertClean(res)
        self.assertTrace(res, "api1 429 RATE_LIMITED retry wait=121s\napi2 200 return")

    def test_retry_after_ms_0_is_a_1ms_timer(self):
        res = self.sdk([{"status": 503, "headers": {"retry-after-ms": "0"}}, OK], jitter=[0.5, 0.5])
        self.assertClean(res)
        self.assertTrace(res, "api1 503 UPSTREAM_UNAVAILABLE retry wait=1ms\napi2 200 return")

    def test_every_http_date_form_against_the_virtual_wall_clock(self):
        for form, date in DATES_10S.items():
            with self.subTest(form):
                res = self.sdk([{"status": 429, "headers": {"retry-after": date}}, OK], jitter=[0.5, 0.5])
                self.assertClean(res)
                self.assertTrace(res, "api1 429 RATE_LIMITED retry wait=10s\napi2 200 return")

    def test_x_should_retry(self):
        res = self.sdk([{"status": 503, "headers": {"x-should-retry": "false"}}], jitter=[0.5])
        self.assertClean(res)
        self.assertTrace(res, "api1 503 UPSTREAM_UNAVAILABLE fail")
        res = self.sdk([{"status": 400, "headers": {"x-should-retry": "true"}}, OK], jitter=log_and_jitter(0.0))
        self.assertClean(res)
        self.assertTrace(res, "api1 400 INVALID_REQUEST retry wait=500ms\napi2 200 return")

    def test_the_request_timeout_is_virtual(self):
        res = self.sdk([{"status": 200, "latency": "7s", "body": OK["body"]}, dict(OK, latency="4s")],
                       jitter=log_and_jitter(0.5), env={"OPENAI_TIMEOUT_MS": "5000", "OPENAI_MAX_RETRIES": "1"})
        self.assertClean(res)
        self.assertTrace(res, "api1 timeout TIMEOUT retry wait=437500us\napi2 200 return")
        self.assertEqual([(c.start_ns, c.end_ns) for c in res.calls],
                         [(0, 5_000_000_000), (5_437_500_000, 9_437_500_000)])
        self.assertEqual(res.result["output"], "pong")

    def test_streams(self):
        events = [{"data": {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                            "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]}}
                  for t in ("po", "ng")]
        res = self.sdk([{"status": 200, "stream": {"events": events + [{"data": "[DONE]"}]}}],
                       env={"FM_STREAM": "1"}, jitter=[0.5])
        self.assertClean(res)
        self.assertEqual(res.result["output"], "pong")
        res = self.sdk([{"status": 200, "stream": {"events": events[:1], "break": True}}], env={"FM_STREAM": "1"},
                       jitter=[0.5])
        self.assertTrace(res, "api1 broken STREAM_BROKEN fail")


if __name__ == "__main__":
    unittest.main()
