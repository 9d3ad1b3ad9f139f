#!/usr/bin/env python3
"""The reference runner for the virtual-clock protocol v1 (shims/PROTOCOL.md).

A small, readable implementation of the runner's side: the row's clock
authority and a scripted HTTP/1.1 fixture server that releases bytes only
when the virtual clock reaches them. It runs a client command with a shim
(Python or Node), one process per row or through a warm parent, and reports
the calls it observed with their virtual start times and the waits between
them, as trace lines in the project's format:

    api1 503 UPSTREAM_UNAVAILABLE retry wait=500ms
    api2 200 return

It is the executable spec the Rust runner will be checked against, and the
driver of the shims' tests. Standard library only (the `matrix` command
also needs PyYAML to read a matrix file).

    python3 shims/testing/fake_runner.py run --route api='[503, 200]' -- python3 client.py
    python3 shims/testing/fake_runner.py matrix shims/drafts/openai-python/retries.yaml

Everything runs in one thread around one selector: the control channel,
the fixture listeners and connections, the client's output. Nothing here
waits in real time for the virtual clock; real time is only used for the
bounds that catch a client that escaped the shim.
"""

from __future__ import annotations

import argparse
import datetime as dt
import dataclasses
import heapq
import itertools
import json
import os
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

PROTOCOL_VERSIONS = [1, 2]
HERE = os.path.dirname(os.path.abspath(__file__))
SHIMS = os.path.dirname(HERE)
PYTHON_SHIM = os.path.join(SHIMS, "python")
NODE_PRELOAD = os.path.join(SHIMS, "node", "preload.cjs")

NS = 1_000_000_000
MS = 1_000_000
# The virtual wall clock's default start, as in process
# (src/policy/retry_after.rs, default_wall_start): the RFC 9110 example date,
# Sun, 06 Nov 1994 08:49:37 GMT.
DEFAULT_WALL_START_NS = 784_111_777 * NS
# What the client's monotonic clocks read at virtual time 0.
MONOTONIC_ORIGIN_NS = 1000 * NS
RUNNER_ABSENT_S = 0.25  # a housekeeping pass this late: the runner itself did not run
DEFAULT_TIMEOUT_NS = 30 * NS  # system.timeout
DEFAULT_BUDGET_NS = 3600 * NS  # the row's budget
STALL_MS = 2000  # real time a client may block outside the shim
HEARTBEAT_MS = 250
CONNECT_REAL_S = 20.0  # real time for start-up until hello (imports are slow)
REAL_LIMIT_S = 30.0  # real time for a whole row after hello: a harness guard


# -- durations --------------------------------------------------------------


_UNITS = {"ns": 1, "us": 1000, "ms": MS, "s": NS, "m": 60 * NS, "h": 3600 * NS}


def parse_duration(value: Any) -> int:
    """`250ms`, `1s`, `1.5s`, `2m`, `1h`, `7ns`, `3us` or 0, as nanoseconds."""
    text = str(value).strip()
    if text == "0":
        return 0
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?(ns|us|ms|s|m|h)", text)
    if not m:
        raise ValueError(f"`{text}` is not a duration (250ms, 1s, 1.5s, 2m)")
    whole, frac, unit = m.groups()
    per = _UNITS[unit]
    ns = int(whole) * per
    if frac:
        ns += int(frac) * per // 10 ** len(frac)
    return ns


def format_duration(ns: int) -> str:
    """As src/duration.rs `format`: 0s, 1s, 1500ms, 250us, 7ns."""
    if ns == 0:
        return "0s"
    for per, unit in ((NS, "s"), (MS, "ms"), (1000, "us")):
        if ns % per == 0:
            return f"{ns // per}{unit}"
    return f"{ns}ns"


# -- scripts ------------------------------------------------------------------

REASONS = {
    200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
    403: "Forbidden", 404: "Not Found", 408: "Request Timeout", 409: "Conflict",
    413: "Content Too Large", 422: "Unprocessable Content", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    505: "HTTP Version Not Supported",
}


@dataclass
class Entry:
    kind: str  # response | timeout | reset | malformed | truncated
    status: int = 200
    headers: list = field(default_factory=list)
    body: bytes | None = None
    latency_ns: int = 0
    stream: list | None = None  # SSE items: ("event", text) | ("comment", text)
    breaks: bool = False
    label: str = ""
    head_sent: bool = False  # a stream resumed after a pause


def _body_bytes(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, (dict, list)):
        return json.dumps(body, separators=(",", ":")).encode()
    return str(body).encode()


def _sse_items(events: list) -> list:
    """Stream items; a `delay` becomes a ("pause", ns) item before its item
    (alone: a pause with nothing sent)."""
    items = []
    for e in events:
        if e.get("delay") is not None:
            items.append(("pause", parse_duration(e["delay"])))
        if "comment" not in e and "data" not in e:
            continue
        if "comment" in e:
            items.append(("comment", str(e["comment"])))
        else:
            data = e.get("data")
            text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
            items.append(("event", text, e.get("event"), e.get("id")))
    return items


class RelativeDate:
    """A header value `{ http-date: now+20s, form: rfc850 }` (docs/format.md):
    rendered when the answer is sent, against the row's wall clock plus the
    virtual time elapsed, as the runner does."""

    def __init__(self, spec: dict):
        text = str(spec.get("http-date", "")).strip()
        if not text.startswith("now"):
            raise ValueError(f"http-date {text!r} does not start with `now`")
        rest = text[3:].strip()
        sign = -1 if rest.startswith("-") else 1
        self.offset_ns = sign * parse_duration(rest.lstrip("+-").strip() or "0")
        self.form = str(spec.get("form", "imf-fixdate"))
        if self.form not in ("imf-fixdate", "rfc850", "asctime"):
            raise ValueError(f"http-date form {self.form!r} is not imf-fixdate, rfc850 or asctime")

    def render(self, wall_ns: int) -> str:
        t = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
            seconds=(wall_ns + self.offset_ns) // NS)
        if self.form == "rfc850":
            return t.strftime("%A, %d-%b-%y %H:%M:%S GMT")
        if self.form == "asctime":
            return t.strftime("%a %b ") + f"{t.day:>2}" + t.strftime(" %H:%M:%S %Y")
        return t.strftime("%a, %d %b %Y %H:%M:%S GMT")


def _header_value(v: Any):
    return RelativeDate(v) if isinstance(v, dict) and "http-date" in v else str(v)


def _rendered(headers: list, wall_ns: int) -> list:
    return [(k, v.render(wall_ns) if isinstance(v, RelativeDate) else v) for k, v in headers]


def parse_entry(raw: Any) -> tuple[Entry, Any]:
    """One script entry as the matrix format writes it (docs/format.md);
    returns the entry and its `repeat` (1, N or "forever")."""
    if isinstance(raw, int) or (isinstance(raw, str) and raw.isdigit()):
        return Entry("response", status=int(raw), label=str(raw)), 1
    if raw == "ok":
        return Entry("response", status=200, body=b'{"ok":true}', label="ok"), 1
    if raw in ("timeout", "reset", "refused", "malformed", "truncated"):
        return Entry(raw, label=raw), 1
    if not isinstance(raw, dict):
        raise ValueError(f"script entry {raw!r} is not a status, a fault or a map")
    latency = parse_duration(raw.get("latency", 0))
    repeat = raw.get("repeat", 1)
    fault = raw.get("fault")
    if fault:
        return Entry(fault, latency_ns=latency, label=fault), repeat
    headers = [(str(k), _header_value(v)) for k, v in (raw.get("headers") or {}).items()]
    e = Entry("response", status=int(raw.get("status", 200)), headers=headers,
              body=_body_bytes(raw.get("body")), latency_ns=latency, label=str(raw.get("status", 200)))
    if raw.get("stream") is not None:
        e.stream = _sse_items(raw["stream"].get("events", []))
        e.breaks = bool(raw["stream"].get("break", False))
    return e, repeat


class RouteCursor:
    """Serves a route's entries once each, in order (`repeat: forever` last)."""

    def __init__(self, raw_entries: list):
        self.entries = []
        self.forever = None
        for raw in raw_entries:
            e, repeat = parse_entry(raw)
            if repeat == "forever":
                self.forever = e
                break
            self.entries.extend([e] * int(repeat))
        self.served = 0

    def next(self) -> Entry | None:
        if self.served < len(self.entries):
            self.served += 1
            return self.entries[self.served - 1]
        if self.forever is not None:
            self.served += 1
            return self.forever
        return None

    def peek(self) -> Entry | None:
        if self.served < len(self.entries):
            return self.entries[self.served]
        return self.forever

    def unused(self) -> int:
        return max(0, len(self.entries) - self.served)


def response_bytes(status: int, headers: list, body: bytes | None, close: bool) -> bytes:
    """As src/wire/http.rs `response_bytes`."""
    body = body or b""
    head = f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}\r\n"
    has_type = False
    for k, v in headers:
        if k.lower() in ("content-length", "transfer-encoding", "connection"):
            continue
        has_type |= k.lower() == "content-type"
        head += f"{k}: {v}\r\n"
    if not has_type and body:
        head += "content-type: " + ("application/json" if body[:1] in (b"{", b"[") else "text/plain; charset=utf-8") + "\r\n"
    head += f"content-length: {len(body)}\r\n"
    if close:
        head += "connection: close\r\n"
    return (head + "\r\n").encode() + body


def stream_head(status: int, headers: list) -> bytes:
    head = f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}\r\n"
    has_type = False
    for k, v in headers:
        if k.lower() in ("content-length", "transfer-encoding", "connection"):
            continue
        has_type |= k.lower() == "content-type"
        head += f"{k}: {v}\r\n"
    if not has_type:
        head += "content-type: text/event-stream\r\n"
    return (head + "cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n").encode()


def sse_chunk(item: tuple) -> bytes:
    if item[0] == "comment":
        text = f": {item[1]}\n\n"
    else:
        _, data, event, ident = item
        text = ""
        if event:
            text += f"event: {event}\n"
        if ident:
            text += f"id: {ident}\n"
        for line in data.split("\n"):
            text += f"data: {line}\n"
        text += "\n"
    raw = text.encode()
    return f"{len(raw):x}\r\n".encode() + raw + b"\r\n"


# -- classification (mirrors src/registry/builtin.yaml at the time of writing) --

BY_STATUS = {
    429: "RATE_LIMITED", 529: "OVERLOADED", 503: "UPSTREAM_UNAVAILABLE", 504: "GATEWAY_TIMEOUT",
    502: "BAD_GATEWAY", 500: "SERVER_ERROR", 408: "REQUEST_TIMEOUT", 400: "INVALID_REQUEST",
    422: "INVALID_INPUT", 401: "AUTH_FAILED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    409: "CONFLICT",
}
BY_BODY = {
    "rate_limit_exceeded": "RATE_LIMITED", "rate_limit_error": "RATE_LIMITED", "rate_limited": "RATE_LIMITED",
    "overloaded_error": "OVERLOADED", "overloaded": "OVERLOADED", "service_unavailable": "UPSTREAM_UNAVAILABLE",
    "api_error": "SERVER_ERROR", "server_error": "SERVER_ERROR", "internal_error": "SERVER_ERROR",
    "model_not_found": "MODEL_UNAVAILABLE", "model_unavailable": "MODEL_UNAVAILABLE",
    "invalid_request": "INVALID_REQUEST", "invalid_request_error": "INVALID_REQUEST",
    "invalid_input": "INVALID_INPUT", "unprocessable_entity": "INVALID_INPUT",
    "context_length_exceeded": "CONTEXT_LENGTH_EXCEEDED", "content_filter": "CONTENT_FILTERED",
    "content_policy_violation": "CONTENT_FILTERED", "invalid_api_key": "AUTH_FAILED",
    "authentication_error": "AUTH_FAILED", "permission_denied": "PERMISSION_DENIED",
    "permission_error": "PERMISSION_DENIED", "insufficient_quota": "QUOTA_EXHAUSTED",
    "quota_exceeded": "QUOTA_EXHAUSTED", "not_found": "NOT_FOUND", "not_found_error": "NOT_FOUND",
}
BY_OUTCOME = {"timeout": "TIMEOUT", "reset": "CONNECTION_RESET", "refused": "CONNECTION_REFUSED",
              "malformed": "MALFORMED_RESPONSE",
              "broken": "STREAM_BROKEN"}


def classify(outcome: str, body: bytes | None) -> str | None:
    if outcome in BY_OUTCOME:
        return BY_OUTCOME[outcome]
    if not outcome.isdigit():
        return None
    status = int(outcome)
    if 200 <= status < 300:
        return None
    if body:
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        for path in (("error", "code"), ("error", "type"), ("code",)):
            v = doc
            for p in path:
                v = v.get(p) if isinstance(v, dict) else None
            if isinstance(v, str) and v in BY_BODY:
                return BY_BODY[v]
    if status in BY_STATUS:
        return BY_STATUS[status]
    if 500 <= status < 600:
        return "SERVER_ERROR"
    if 400 <= status < 500:
        return "CLIENT_ERROR"
    return f"HTTP_{status}"


# -- the row --------------------------------------------------------------------


@dataclass
class Call:
    route: str
    attempt: int
    start_ns: int
    end_ns: int | None = None
    outcome: str = "unanswered"
    method: str = ""
    path: str = ""
    headers: dict = field(default_factory=dict)
    body_size: int = 0
    answer_body: bytes | None = None
    model: str | None = None
    stream: bool = False
    body: str = "empty"  # json | not json | empty
    doc: Any = None  # the parsed body, for `requests.body` checks (this runner is a test tool)


@dataclass
class RowSpec:
    """What a row gives the runner (the subset of a matrix row it needs)."""

    name: str
    routes: dict  # route -> list of raw entries, in fallback order
    jitter: list | None = None  # explicit draws
    jitter_seed: int = 0
    wall_start_ns: int = DEFAULT_WALL_START_NS
    timeout_ns: int = DEFAULT_TIMEOUT_NS  # system.timeout, in virtual time
    budget_ns: int = DEFAULT_BUDGET_NS  # the row's budget
    env: dict = field(default_factory=dict)
    request_id: str = "req-1"
    file: str = ""


@dataclass
class RowResult:
    name: str
    calls: list
    trace: list
    result: dict | None
    exit_code: int | None
    stdout: str
    stderr: str
    failures: list
    elapsed_ns: int | None  # virtual time the client returned: printed its JSON result, else exited
    real_ms: float  # from the client's hello to its exit
    row_ms: float  # from the client's first request to its exit: the row's own real time
    start_ms: float  # from spawning to hello (interpreter start-up, imports)
    rounds: int  # blocks answered with advance
    busy: int  # blocks answered busy
    draws: int

    def text(self) -> str:
        return "\n".join(self.trace)


class FixtureConn:
    def __init__(self, sock, route: str, peer_port: int):
        self.sock = sock
        self.route = route
        self.peer_port = peer_port
        self.inbuf = bytearray()
        self.received = 0  # bytes read from the client
        self.sent = 0  # bytes handed to the kernel for the client
        self.outbuf = bytearray()
        self.client_eof = False  # the client closed (FIN or RST seen)
        self.server_closed = False  # we sent FIN (shutdown) or RST
        self.reset = False
        self.close_after_flush = False
        self.call: Call | None = None  # waiting for its scheduled answer
        self.reported = False  # appeared in a block's conns
        self.unreported_since = None  # real time it was first seen unaccounted


class RowRun:
    """One row's clock, fixture server and client process."""

    def __init__(self, runner: "FakeRunner", spec: RowSpec, token: str):
        self.runner = runner
        self.spec = spec
        self.token = token
        self.now = 0
        self.cursors = {r: RouteCursor(entries) for r, entries in spec.routes.items()}
        self.listeners = {}  # sock -> route
        self.urls = {}
        for name in spec.routes:
            # Keyed side scripts (`A GET /v1/models`) share their route's listener.
            route = name.split(" ", 1)[0]
            if route in self.urls:
                continue
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("127.0.0.1", 0))
            ls.listen(64)
            ls.setblocking(False)
            self.listeners[ls] = route
            self.urls[route] = f"http://127.0.0.1:{ls.getsockname()[1]}"
        self.conns: dict[int, FixtureConn] = {}  # by the client's port
        self.calls: list[Call] = []
        self.events = []  # heap of (t, seq, conn, entry, call)
        self.seq = itertools.count()
        self.dirty = set()  # conns whose sent/closed changed since the last advance
        self.client = None  # the row's control connection
        self.hello_real = None
        self.spawn_real = time.monotonic()
        self.last_message_real = None
        self.block_outstanding = False
        self.first_request_seen = False
        self.first_request_real = None
        self.mismatch_since = None
        self.failures = []
        self.stdout = bytearray()
        self.stdout_times = []  # (end offset, virtual time it was read)
        self.stderr = bytearray()
        self.out_open = 2  # stdout and stderr still open
        self.exit_code = None
        self.exited = False
        self.exit_now = None
        self.exit_real = None
        self.draws = 0
        self.rounds = 0
        self.busy = 0
        self.stopped = False
        self.ending = None  # "aborted" | "hung" when the runner stopped the command
        self.proc = None  # one process per row
        self.warm_id = None
        self.pid = None
        self.proto = 1  # the protocol version chosen at the hello

    # -- what the client is told ------------------------------------------

    def welcome(self) -> dict:
        jitter = {"draws": list(self.spec.jitter)} if self.spec.jitter is not None else {"seed": self.spec.jitter_seed}
        return {
            "op": "welcome",
            "v": self.proto,
            "now_ns": 0,
            "wall_start_ns": str(self.spec.wall_start_ns),  # a string: exact in every language
            "monotonic_origin_ns": MONOTONIC_ORIGIN_NS,
            "jitter": jitter,
            "fixtures": [u[len("http://"):] for u in self.urls.values()],
            "stall_ms": STALL_MS,
            "heartbeat_ms": HEARTBEAT_MS,
        }

    def env(self) -> dict:
        env = {}
        for route, url in self.urls.items():
            name = "FAULTMATRIX_URL_" + "".join(c.upper() if c.isalnum() else "_" for c in route)
            env[name] = url
        env["FAULTMATRIX_ROUTES"] = ",".join(f"{r}={u}" for r, u in self.urls.items())
        env["FAULTMATRIX_REQUEST_ID"] = self.spec.request_id
        env["FAULTMATRIX_ROW"] = self.spec.name
        env["FAULTMATRIX_FILE"] = self.spec.file
        env["FAULTMATRIX_CLOCK"] = self.runner.clock_address
        env["FAULTMATRIX_CLOCK_TOKEN"] = self.token
        return env

    # -- failing ----------------------------------------------------------------

    def fail(self, message: str, ending: str = "aborted"):
        """Fails the row and stops the command; its last call's decision
        becomes `aborted` (the harness stopped it) or `hung` (a limit)."""
        if message not in self.failures:
            self.failures.append(message)
        if self.ending is None:
            self.ending = ending
        self.stop()

    def stop(self):
        if self.stopped:
            return
        self.stopped = True
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        if self.pid is not None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
            if self.runner.warm is not None:
                self.runner.warm.send({"op": "kill", "id": self.warm_id, "signal": signal.SIGKILL})

    # -- the client's output -----------------------------------------------------

    def output(self, stream: str, chunk: bytes):
        """Output, dated: the JSON result's virtual time is the row's return."""
        if stream == "stdout":
            self.stdout_times.append((len(self.stdout) + len(chunk), self.now))
            self.stdout.extend(chunk)
        else:
            self.stderr.extend(chunk)

    def drain_output(self):
        """Reads what the client has printed before the clock moves."""
        for key in list(self.runner.sel.get_map().values()):
            kind, row, obj = key.data
            if row is self and kind == "pipe":
                self.runner.read_pipe(self, obj)
            elif kind == "control" and obj.row is self and obj.kind == "attach":
                self.runner.read_control(obj)

    def time_of_offset(self, offset: int) -> int | None:
        for end, t in self.stdout_times:
            if end >= offset:
                return t
        return None

    # -- the fixture server ------------------------------------------------------

    def accept(self, ls):
        route = self.listeners[ls]
        while True:
            try:
                s, addr = ls.accept()
            except BlockingIOError:
                return
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c = FixtureConn(s, route, addr[1])
            self.conns[addr[1]] = c
            self.runner.sel.register(s, selectors.EVENT_READ, ("fixture", self, c))

    def read_conn(self, c: FixtureConn):
        while not c.client_eof and not c.reset:
            try:
                chunk = c.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                c.client_eof = True
                self.runner.unregister(c.sock)
                if c.call is not None:  # gave up before its answer: a timeout
                    self.end_call(c.call, "timeout")
                    c.call = None
                    self.events = [e for e in self.events if e[2] is not c]
                    heapq.heapify(self.events)
                if not c.server_closed:
                    self.close_conn(c, reset=False)
                return
            c.received += len(chunk)
            c.inbuf += chunk
            self.parse_requests(c)

    def parse_requests(self, c: FixtureConn):
        while True:
            head_end = c.inbuf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = bytes(c.inbuf[:head_end]).decode("latin-1")
            lines = head.split("\r\n")
            method, target, _version = (lines[0].split(" ", 2) + ["", ""])[:3]
            headers = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            body_start = head_end + 4
            if "content-length" in headers:
                n = int(headers["content-length"])
                if len(c.inbuf) < body_start + n:
                    return
                body = bytes(c.inbuf[body_start: body_start + n])
                del c.inbuf[: body_start + n]
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                pos, body = body_start, bytearray()
                while True:
                    eol = c.inbuf.find(b"\r\n", pos)
                    if eol < 0:
                        return
                    size = int(bytes(c.inbuf[pos:eol]).split(b";")[0], 16)
                    if len(c.inbuf) < eol + 2 + size + 2:
                        return
                    body += c.inbuf[eol + 2: eol + 2 + size]
                    pos = eol + 2 + size + 2
                    if size == 0:
                        break
                del c.inbuf[:pos]
                body = bytes(body)
            else:
                body = b""
                del c.inbuf[:body_start]
            self.on_request(c, method, target, headers, body)

    def on_request(self, c: FixtureConn, method, target, headers, body):
        if self.client is None:
            self.fail(
                "a request arrived before the client's clock shim said hello: the command is not "
                "running with the shim (PYTHONPATH=shims/python or NODE_OPTIONS=--require "
                "shims/node/preload.cjs); a virtual-clock row never runs on the real clock"
            )
            return
        if not self.first_request_seen:
            self.first_request_real = time.monotonic()
        self.first_request_seen = True
        # A keyed side script (`A GET /v1/models`) serves the calls with its
        # method and path (without the query); they are numbered apart and
        # kept out of the trace. Others go to the route's main script.
        script = f"{c.route} {method} {target.split('?', 1)[0].split('#', 1)[0]}"
        if script not in self.cursors:
            script = c.route
        attempt = sum(1 for k in self.calls if k.route == script) + 1
        call = Call(script, attempt, self.now, method=method, path=target, headers=headers, body_size=len(body))
        try:
            doc = json.loads(body) if body else None
        except ValueError:
            doc = None
        call.body = "json" if doc is not None else ("not json" if body else "empty")
        call.doc = doc
        if isinstance(doc, dict):
            call.model = doc.get("model") if isinstance(doc.get("model"), str) else None
            call.stream = doc.get("stream") is True
        self.calls.append(call)
        cursor = self.cursors.get(script)
        entry = cursor.next() if cursor is not None else None
        close = headers.get("connection", "").lower() == "close"
        # The route's next call is refused at connect time (v2): this answer
        # closes its connection, so the client has to connect again.
        close = close or self.next_refused(c.route)
        if entry is None:
            self.queue(c, response_bytes(500, [("x-should-retry", "false")],
                                         b'{"error":{"message":"faultmatrix: no answer was scripted for this call",'
                                         b'"type":"fixture_exhausted"}}', True), close_after=True)
            self.end_call(call, "unscripted")
            self.fail(f"{call.route}{call.attempt}: a call beyond the script (unscripted)")
            return
        if entry.kind == "timeout":
            c.call = call  # never answered: ends when the client closes
            return
        c.call = call
        heapq.heappush(self.events, (self.now + entry.latency_ns, next(self.seq), c, entry, call, close))

    def next_refused(self, route: str) -> bool:
        cursor = self.cursors.get(route)
        entry = cursor.peek() if cursor is not None else None
        return entry is not None and entry.kind == "refused"

    def on_connect(self, msg: dict):
        """v2 `connect`: refused when the route's next entry is `refused`;
        that entry is then the route's call, at `now`, taking no time."""
        port = int(msg.get("port", 0))
        route = next((r for r, u in self.urls.items() if u.rsplit(":", 1)[1] == str(port)), None)
        refused = route is not None and self.next_refused(route)
        if refused:
            if not self.first_request_seen:
                self.first_request_real = time.monotonic()
            self.first_request_seen = True
            self.cursors[route].next()
            attempt = sum(1 for k in self.calls if k.route == route) + 1
            self.calls.append(Call(route, attempt, self.now, end_ns=self.now, outcome="refused"))
        self.send_client({"op": "connect", "seq": msg.get("seq"), "refused": refused})

    def queue(self, c: FixtureConn, data: bytes, close_after=False):
        c.outbuf += data
        c.close_after_flush = c.close_after_flush or close_after
        self.flush(c)

    def flush(self, c: FixtureConn):
        while c.outbuf and not c.reset:
            try:
                n = c.sock.send(c.outbuf)
            except BlockingIOError:
                self.runner.want_write(c.sock, True)
                return
            except OSError:
                c.outbuf.clear()
                break
            c.sent += n
            del c.outbuf[:n]
            self.dirty.add(c)
        self.runner.want_write(c.sock, False)
        if c.close_after_flush and not c.server_closed:
            self.close_conn(c, reset=False)

    def close_conn(self, c: FixtureConn, reset: bool):
        c.server_closed = True
        self.dirty.add(c)
        if reset:
            c.reset = True
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.runner.unregister(c.sock)
            c.sock.close()
        else:
            try:
                c.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def end_call(self, call: Call, outcome: str):
        if call.end_ns is None:
            call.end_ns = self.now
            call.outcome = outcome

    def fire(self, c: FixtureConn, entry: Entry, call: Call, client_close: bool):
        """A scripted answer's time has come: its bytes go out now."""
        c.call = None
        if entry.kind == "refused":
            self.end_call(call, "unscripted")
            self.close_conn(c, reset=True)
            self.fail(f"{call.route}{call.attempt} is scripted `refused`, but its request came on a connection "
                      "that was already open (or the shim speaks protocol v1)")
        elif entry.kind == "reset":
            self.end_call(call, "reset")
            self.close_conn(c, reset=True)
        elif entry.kind == "malformed":
            self.end_call(call, "malformed")
            self.queue(c, b"HTTP/1.1 2x0 \x00\x01 not a response\r\n\x7f\x7f garbage\r\n\r\n", close_after=True)
        elif entry.kind == "truncated":
            body = b'{"id":"chatcmpl-1","object":"chat.completion","choices":[{'
            raw = response_bytes(200, [], body, True).replace(
                f"content-length: {len(body)}".encode(), f"content-length: {len(body) * 2}".encode())
            self.end_call(call, "malformed")
            self.queue(c, raw, close_after=True)
        elif entry.stream is not None:
            data = b"" if entry.head_sent else stream_head(entry.status, _rendered(entry.headers, self.spec.wall_start_ns + self.now))
            for i, item in enumerate(entry.stream):
                if item[0] == "pause":
                    # A stall: the rest goes out when it has passed.
                    rest = dataclasses.replace(entry, stream=entry.stream[i + 1:], head_sent=True)
                    c.call = call
                    heapq.heappush(self.events, (self.now + item[1], next(self.seq), c, rest, call, client_close))
                    self.queue(c, data)
                    return
                data += sse_chunk(item)
            if entry.breaks:
                self.end_call(call, "broken")
                self.queue(c, data, close_after=True)
            else:
                self.end_call(call, str(entry.status))
                self.queue(c, data + b"0\r\n\r\n", close_after=client_close)
        else:
            call.answer_body = entry.body
            self.end_call(call, str(entry.status))
            self.queue(c, response_bytes(entry.status, _rendered(entry.headers, self.spec.wall_start_ns + self.now), entry.body, client_close),
                       close_after=client_close)

    def drain_fixtures(self):
        for ls in self.listeners:
            self.accept(ls)
        for c in list(self.conns.values()):
            if not c.client_eof and not c.reset:
                self.read_conn(c)
            if c.outbuf:
                self.flush(c)

    # -- the clock ------------------------------------------------------------------

    def mismatch(self, conns: list) -> str | None:
        """None when every byte the client wrote has reached the server, and
        every byte the server sent has reached the client (PROTOCOL.md,
        "Byte accounting"); else what is still in flight."""
        seen = set()
        for e in conns:
            port = e["port"]
            c = self.conns.get(port)
            seen.add(port)
            if c is None:
                return f"the connection from port {port} is not accepted yet"
            c.reported = True
            if not c.reset and c.received != e["written"]:
                return f"port {port}: the client wrote {e['written']} bytes, the server has {c.received}"
            if e.get("closed") and not c.client_eof and not c.reset:
                return f"port {port}: the client closed, the server has not seen it yet"
            if e.get("closed") or e.get("paused"):
                continue
            if c.outbuf:
                return f"port {port}: {len(c.outbuf)} bytes not yet handed to the kernel"
            if c.sent != e["arrived"]:
                return f"port {port}: the server sent {c.sent} bytes, {e['arrived']} arrived"
            if c.server_closed and not e.get("eof"):
                return f"port {port}: the server closed, the client has not seen it yet"
        for port, c in self.conns.items():
            if port not in seen and c.received > 0 and not c.client_eof:
                if c.unreported_since is None:
                    c.unreported_since = time.monotonic()
                elif time.monotonic() - c.unreported_since > STALL_MS / 1000:
                    self.fail(
                        f"a connection from port {port} carried a request but the client's shim does not "
                        "account for it (a socket outside the shim: another process, or a socket the "
                        "shim cannot see); its timing cannot be virtual"
                    )
                return f"port {port} is not accounted for by the shim"
        return None

    def limit(self) -> tuple[int, str]:
        if self.spec.timeout_ns <= self.spec.budget_ns:
            return self.spec.timeout_ns, "system.timeout"
        return self.spec.budget_ns, "budget"

    def on_block(self, msg: dict):
        self.block_outstanding = True
        self.draws = max(self.draws, int(msg.get("draws", 0)))
        self.drain_fixtures()
        self.drain_output()
        problem = self.mismatch(msg.get("conns", []))
        if self.stopped:
            return
        if problem is not None:
            if self.mismatch_since is None:
                self.mismatch_since = time.monotonic()
            elif time.monotonic() - self.mismatch_since > STALL_MS / 1000:
                self.fail(f"bytes stayed in flight for {STALL_MS} ms of real time: {problem}")
                return
            self.busy += 1
            self.send_client({"op": "busy", "seq": msg["seq"], "detail": problem})
            self.block_outstanding = False
            return
        self.mismatch_since = None
        deadline = msg.get("deadline_ns")
        wake_on = set(msg.get("wake_on") or [])
        limit, key = self.limit()
        while True:
            nxt = self.events[0][0] if self.events else None
            t = min(x for x in (deadline, nxt, limit) if x is not None)
            if t == limit and (deadline is None or limit < deadline) and (nxt is None or limit < nxt):
                self.now = limit
                self.fail(
                    f"the command was still running after {format_duration(limit)} of virtual time "
                    f"(the row's `{key}`){self.waiting_on()}",
                    ending="hung",
                )
                return
            self.now = max(self.now, t)
            touched = set()
            while self.events and self.events[0][0] <= self.now:
                _, _, c, entry, call, close = heapq.heappop(self.events)
                self.fire(c, entry, call, close)
                touched.add(c.peer_port)
            woke = None
            if touched & wake_on:
                woke = "io"
            elif deadline is not None and self.now >= deadline:
                woke = "io" if touched else "timer"
            if woke is None:
                continue  # bytes for connections the client is not waiting on: no need to wake it
            changes = [{"port": c.peer_port, "sent": c.sent, "closed": c.server_closed}
                       for c in self.dirty if not c.reset or c.server_closed]
            self.dirty.clear()
            self.rounds += 1
            self.block_outstanding = False
            self.send_client({"op": "advance", "seq": msg["seq"], "now_ns": self.now, "woke": woke,
                              "conns": changes})
            return

    def waiting_on(self) -> str:
        pending = [c.call for c in self.conns.values() if c.call is not None and c.call.end_ns is None]
        if not pending:
            return ""
        call = pending[0]
        return f" and was killed while waiting on {call.route}{call.attempt}"

    def send_client(self, msg: dict):
        self.runner.send(self.client, msg)

    def on_client_message(self, msg: dict):
        self.last_message_real = time.monotonic()
        op = msg.get("op")
        if op == "block":
            self.on_block(msg)
        elif op == "connect" and self.proto >= 2:
            self.on_connect(msg)
        elif op == "heartbeat":
            self.draws = max(self.draws, int(msg.get("draws", 0)))
        elif op == "stalled":
            self.fail(
                f"the client blocked in real time for {msg.get('real_ms')} ms outside the virtual clock "
                f"({msg.get('detail')}); at {msg.get('where')}"
            )
        elif op == "error":
            self.draws = max(self.draws, int(msg.get("draws", 0)))
            if msg.get("code") == "draws_exhausted":
                self.failures.append(msg.get("message"))
            else:
                self.fail(f"the clock shim reported {msg.get('code')}: {msg.get('message')}")
        elif op == "exit":
            self.draws = max(self.draws, int(msg.get("draws", 0)))
            self.exit_now = self.now
            self.exit_real = time.monotonic()
            imported = msg.get("imported") or []
            if imported and self.runner.warm is not None:
                self.runner.learned.update(imported)

    def process_busy(self) -> bool:
        """A thread of the client running, runnable or in disk sleep, or CPU
        used since the last look (Linux, /proc/PID/task/*/stat); False when
        it cannot be seen."""
        try:
            tids = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return False
        runnable, cpu = False, 0
        for tid in tids:
            try:
                with open(f"/proc/{self.pid}/task/{tid}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 1:].split()
            runnable |= fields[:1] in ([b"R"], [b"D"])
            cpu += int(fields[11]) + int(fields[12])
        before, self.cpu_seen = getattr(self, "cpu_seen", None), cpu
        return runnable or (before is not None and cpu > before)

    def check_real_time(self):
        """The bounds that catch a client blocked outside the shim."""
        now = time.monotonic()
        if self.client is None:
            if now - self.spawn_real > CONNECT_REAL_S:
                self.fail(f"the client never connected to the clock within {CONNECT_REAL_S:.0f} s "
                          "(is the shim installed through PYTHONPATH / NODE_OPTIONS?)")
            return
        def silent():
            return (self.first_request_seen and not self.block_outstanding and not self.exited
                    and self.last_message_real is not None and now - self.last_message_real > STALL_MS / 1000)

        if silent() and self.pid is not None and self.process_busy():
            # Computing, or waiting for a CPU or the disk: not blocked.
            self.last_message_real = now
        if silent():
            self.fail(
                f"the client sent nothing on the clock channel for {STALL_MS} ms of real time after its "
                "first request without waiting on the virtual clock: it is blocked outside the shim "
                "(a synchronous wait, a busy loop, or a wait the shim does not cover)"
            )
        if self.hello_real is not None and now - self.hello_real > REAL_LIMIT_S:
            self.fail(f"the row took more than {REAL_LIMIT_S:.0f} s of real time (harness guard)")

    # -- the result ---------------------------------------------------------------------

    def result(self) -> RowResult:
        stdout = self.stdout.decode(errors="replace")
        stderr = self.stderr.decode(errors="replace")
        result = None
        returned_ns = self.exit_now
        raw = bytes(self.stdout)
        end = len(raw)
        for line in reversed(raw.splitlines(keepends=True)):
            start = end - len(line)
            text = line.decode(errors="replace").strip()
            if text.startswith("{"):
                try:
                    result = json.loads(text)
                except ValueError:
                    end = start
                    continue
                t = self.time_of_offset(end)
                if t is not None:
                    returned_ns = t
                break
            end = start
        if result is not None:
            success = result.get("outcome") == "success"
        else:
            success = self.exit_code == 0
        for route, cur in self.cursors.items():
            if cur.unused():
                self.failures.append(f"{route}: {cur.unused()} scripted answer(s) never used")
        if self.spec.jitter is not None and self.draws > len(self.spec.jitter):
            msg = (f"the row scripted {len(self.spec.jitter)} jitter draw"
                   f"{'s' if len(self.spec.jitter) != 1 else ''} but the system asked for more")
            if msg not in self.failures:
                self.failures.append(msg)
        calls = sorted((k for k in self.calls if " " not in k.route), key=lambda k: k.start_ns)
        trace = []
        for i, call in enumerate(calls):
            nxt = calls[i + 1] if i + 1 < len(calls) else None
            code = classify(call.outcome, call.answer_body)
            line = f"{call.route}{call.attempt}" if not call.route[-1:].isdigit() else f"{call.route}#{call.attempt}"
            line += f" {call.outcome}"
            if code:
                line += f" {code}"
            if nxt is not None:
                line += " retry" if nxt.route == call.route else " switch"
                end = call.end_ns if call.end_ns is not None else call.start_ns
                wait = nxt.start_ns - end
                if wait:
                    line += f" wait={format_duration(wait)}"
            elif self.ending is not None:
                line += f" {self.ending}"
            else:
                line += " return" if success else " fail"
            trace.append(line)
        real_ms = ((time.monotonic() - self.hello_real) * 1000) if self.hello_real else 0.0
        start_ms = ((self.hello_real - self.spawn_real) * 1000) if self.hello_real else 0.0
        end = self.exit_real or time.monotonic()
        row_ms = ((end - self.first_request_real) * 1000) if self.first_request_real else 0.0
        return RowResult(self.spec.name, calls, trace, result, self.exit_code, stdout, stderr,
                         list(self.failures), returned_ns, real_ms, row_ms, start_ms, self.rounds, self.busy, self.draws)


# -- the runner ---------------------------------------------------------------------


class Control:
    """One control-channel connection (a row client, a warm parent, or an
    attached output stream)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()
        self.kind = None  # "row" | "warm" | "attach"
        self.row: RowRun | None = None
        self.stream = None


class WarmParent:
    def __init__(self, runner, proc):
        self.runner = runner
        self.proc = proc
        self.control: Control | None = None
        self.ready = None
        self.spawned = {}  # id -> pid
        self.exited = {}  # id -> (code, signal)
        self.output = b""  # the parent's own stdout and stderr (the end of it)

    def send(self, msg):
        if self.control is not None:
            self.runner.send(self.control, msg)


class FakeRunner:
    """The clock authority: one control listener, rows run one at a time."""

    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.ls.setblocking(False)
        self.clock_address = f"127.0.0.1:{self.ls.getsockname()[1]}"
        self.sel.register(self.ls, selectors.EVENT_READ, ("control-listener", None, None))
        self.rows: dict[str, RowRun] = {}
        self.tokens = itertools.count(1)
        self.warm: WarmParent | None = None
        self.learned = set()  # modules rows imported that a warm parent can preload
        self.sent_preload = set()

    # -- plumbing --------------------------------------------------------------------

    def unregister(self, sock):
        try:
            self.sel.unregister(sock)
        except (KeyError, ValueError):
            pass

    def want_write(self, sock, on: bool):
        try:
            key = self.sel.get_key(sock)
        except (KeyError, ValueError):
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0)
        if key.events != events:
            self.sel.modify(sock, events, key.data)

    def send(self, control: Control, msg: dict):
        data = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
        try:
            control.sock.setblocking(True)
            control.sock.sendall(data)
        except OSError:
            pass
        finally:
            try:
                control.sock.setblocking(False)
            except OSError:
                pass

    def stop_warm(self):
        w = self.warm
        for stream in (w.proc.stdout, w.proc.stderr):
            self.unregister(stream)
        w.send({"op": "shutdown"})
        try:
            w.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(w.proc.pid, signal.SIGKILL)
            w.proc.wait()
        if w.control is not None:
            self.unregister(w.control.sock)
            w.control.sock.close()
        w.proc.stdout.close()
        w.proc.stderr.close()
        self.warm = None
        self.warm_key = None
        self.sent_preload = set()
        self.learned = set()

    def close(self):
        if self.warm is not None:
            self.stop_warm()
        for key in list(self.sel.get_map().values()):
            obj = key.fileobj
            self.unregister(obj)
            if obj is not self.ls:
                try:
                    obj.close()
                except OSError:
                    pass
        self.ls.close()
        self.sel.close()

    # -- the loop ------------------------------------------------------------------------

    def step(self, timeout: float):
        for key, mask in self.sel.select(timeout):
            kind, row, obj = key.data
            if kind == "control-listener":
                self.accept_control()
            elif kind == "control":
                self.read_control(obj)
            elif kind == "listener":
                row.accept(obj)
            elif kind == "fixture":
                if mask & selectors.EVENT_READ:
                    row.read_conn(obj)
                if mask & selectors.EVENT_WRITE:
                    row.flush(obj)
            elif kind == "pipe":
                self.read_pipe(row, obj)
            elif kind == "warm-pipe":
                try:
                    chunk = os.read(obj.fileno(), 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    self.unregister(obj)
                elif self.warm is not None:
                    self.warm.output = (self.warm.output + chunk)[-65536:]

    def accept_control(self):
        while True:
            try:
                s, _ = self.ls.accept()
            except BlockingIOError:
                return
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c = Control(s)
            self.sel.register(s, selectors.EVENT_READ, ("control", None, c))

    def read_control(self, c: Control):
        try:
            chunk = c.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.unregister(c.sock)
            c.sock.close()
            if c.kind == "attach" and c.row is not None:
                c.row.out_open -= 1
            elif c.kind == "warm" and self.warm is not None:
                self.warm.control = None
            return
        if c.kind == "attach":
            c.row.output(c.stream, chunk)
            return
        c.buf += chunk
        while True:
            i = c.buf.find(b"\n")
            if i < 0:
                return
            line = bytes(c.buf[:i])
            del c.buf[: i + 1]
            try:
                msg = json.loads(line)
            except ValueError:
                if c.row is not None:
                    c.row.fail(f"the clock shim sent a line that is not JSON: {line[:100]!r}")
                continue
            self.on_message(c, msg)
            if c.kind == "attach":
                # The rest of the buffer is the stream's first bytes.
                if c.buf:
                    c.row.output(c.stream, bytes(c.buf))
                    c.buf.clear()
                return

    def on_message(self, c: Control, msg: dict):
        op = msg.get("op")
        if c.kind is None:
            versions = msg.get("versions") or []
            if op not in ("hello", "attach") or 1 not in versions:
                self.send(c, {"op": "refuse", "error": "expected hello speaking protocol version 1",
                              "versions": PROTOCOL_VERSIONS})
                self.unregister(c.sock)
                c.sock.close()
                return
            token = msg.get("token")
            if op == "attach":
                row = self.rows.get(token)
                if row is None:
                    self.unregister(c.sock)
                    c.sock.close()
                    return
                c.kind, c.row, c.stream = "attach", row, msg.get("stream")
                return
            if msg.get("role") == "warm":
                if self.warm is None or self.warm.control is not None:
                    self.send(c, {"op": "refuse", "error": "no warm parent was started with this token",
                                  "versions": PROTOCOL_VERSIONS})
                    return
                c.kind = "warm"
                self.warm.control = c
                self.send(c, {"op": "welcome", "v": 1, "now_ns": 0, "wall_start_ns": str(DEFAULT_WALL_START_NS),
                              "monotonic_origin_ns": MONOTONIC_ORIGIN_NS, "jitter": {"seed": 0},
                              "fixtures": [], "stall_ms": STALL_MS, "heartbeat_ms": HEARTBEAT_MS})
                return
            row = self.rows.get(token)
            if row is None or row.client is not None:
                why = "a second process for the same row" if row is not None else "unknown token"
                self.send(c, {"op": "refuse", "error": why, "versions": PROTOCOL_VERSIONS})
                return
            c.kind, c.row = "row", row
            row.client = c
            row.proto = max(v for v in versions if v in PROTOCOL_VERSIONS)
            row.hello_real = row.last_message_real = time.monotonic()
            self.send(c, row.welcome())
            return
        if c.kind == "row":
            c.row.on_client_message(msg)
        elif c.kind == "warm":
            self.on_warm_message(msg)

    def on_warm_message(self, msg: dict):
        op = msg.get("op")
        w = self.warm
        if op == "ready":
            w.ready = msg
        elif op == "preloaded":
            w.preloaded = msg.get("modules")
        elif op == "spawned":
            w.spawned[msg["id"]] = msg["pid"]
            row = self.rows.get(msg["id"])
            if row is not None:
                row.pid = msg["pid"]
        elif op == "exited":
            w.exited[msg["id"]] = (msg.get("code"), msg.get("signal"))
            row = self.rows.get(msg["id"])
            if row is not None:
                row.exited = True
                code = msg.get("code")
                row.exit_code = code if code is not None else -int(msg.get("signal") or 9)

    def read_pipe(self, row: RowRun, which: str):
        stream = row.proc.stdout if which == "stdout" else row.proc.stderr
        if stream.closed:
            return
        while True:
            try:
                chunk = os.read(stream.fileno(), 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.unregister(stream)
                stream.close()
                row.out_open -= 1
                return
            row.output(which, chunk)

    # -- rows ----------------------------------------------------------------------------

    def start_warm(self, command: list, env: dict | None = None, cwd: str | None = None, imports=()):
        """Starts a warm parent for `command` (PROTOCOL.md, "Warm mode")."""
        token = f"warm-{next(self.tokens)}"
        full = shim_env(dict(os.environ, **(env or {})))
        full.update({"FAULTMATRIX_CLOCK": self.clock_address, "FAULTMATRIX_CLOCK_TOKEN": token,
                     "FAULTMATRIX_WARM": "1"})
        if imports:
            full["FAULTMATRIX_WARM_IMPORTS"] = ",".join(imports)
        proc = subprocess.Popen(command, env=full, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.warm = WarmParent(self, proc)
        for stream in (proc.stdout, proc.stderr):
            self.sel.register(stream, selectors.EVENT_READ, ("warm-pipe", None, stream))
        self.warm_command = (list(command), dict(env or {}), cwd)
        t0 = time.monotonic()
        while self.warm.ready is None:
            self.step(0.05)
            if proc.poll() is not None:
                raise RuntimeError(f"the warm parent exited with {proc.returncode}: "
                                   f"{self.warm.output.decode(errors='replace')}")
            if time.monotonic() - t0 > CONNECT_REAL_S:
                raise RuntimeError("the warm parent did not become ready")
        return self.warm.ready

    def run_row(self, spec: RowSpec, command: list | None = None, cwd: str | None = None,
                warm: bool = False) -> RowResult:
        token = f"row-{next(self.tokens)}"
        row = RowRun(self, spec, token)
        self.rows[token] = row
        for ls in row.listeners:
            self.sel.register(ls, selectors.EVENT_READ, ("listener", row, ls))
        if warm:
            base_env = dict(self.warm_command[1])
            env = shim_env({**os.environ, **base_env, **spec.env})
            env.update(row.env())
            row.warm_id = token
            row.out_open = 2
            self.warm.send({"op": "spawn", "id": token, "env": env})
        else:
            env = shim_env({**os.environ, **spec.env})
            env.update(row.env())
            row.proc = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            os.set_blocking(row.proc.stdout.fileno(), False)
            os.set_blocking(row.proc.stderr.fileno(), False)
            self.sel.register(row.proc.stdout, selectors.EVENT_READ, ("pipe", row, "stdout"))
            self.sel.register(row.proc.stderr, selectors.EVENT_READ, ("pipe", row, "stderr"))
        try:
            while True:
                self.step(0.01)
                if row.proc is not None and row.exit_code is None:
                    rc = row.proc.poll()
                    if rc is not None:
                        row.exit_code = rc
                        row.exited = True
                if row.exited and row.out_open <= 0:
                    break
                if row.stopped and row.exited:
                    # Killed: give the output a moment, then stop waiting for it.
                    end = time.monotonic() + 1.0
                    while row.out_open > 0 and time.monotonic() < end:
                        self.step(0.01)
                    break
                if not row.stopped:
                    now = time.monotonic()
                    if now - getattr(row, "last_check", now) > RUNNER_ABSENT_S:
                        # This runner was kept from running: what the client
                        # sent meanwhile may be unread; count again from now.
                        if row.last_message_real is not None:
                            row.last_message_real = now
                    else:
                        row.check_real_time()
                    row.last_check = now
                elif row.proc is None and not row.exited and time.monotonic() - row.spawn_real > CONNECT_REAL_S + 5:
                    break
        finally:
            self.finish_row(row)
        return row.result()

    def finish_row(self, row: RowRun):
        if row.exit_now is None:
            row.exit_now = row.now
        for ls in row.listeners:
            self.unregister(ls)
            ls.close()
        for c in row.conns.values():
            if not c.reset:
                self.unregister(c.sock)
                c.sock.close()
        if row.client is not None:
            self.unregister(row.client.sock)
            row.client.sock.close()
        if row.proc is not None:
            for s in (row.proc.stdout, row.proc.stderr):
                self.unregister(s)
                if not s.closed:
                    s.close()
        self.rows.pop(row.token, None)
        if self.warm is not None and self.learned - self.sent_preload:
            new = sorted(self.learned - self.sent_preload)
            self.sent_preload.update(new)
            self.warm.send({"op": "preload", "modules": new})


def shim_env(env: dict) -> dict:
    """The environment that installs both shims (nothing else is needed)."""
    env = dict(env)
    env["PYTHONPATH"] = PYTHON_SHIM + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    opt = f"--require {NODE_PRELOAD}"
    env["NODE_OPTIONS"] = opt + (" " + env["NODE_OPTIONS"] if env.get("NODE_OPTIONS") else "")
    env.setdefault("TZ", "UTC")  # asctime dates and local times read the same everywhere
    env.pop("FAULTMATRIX_WARM", None)
    return env


# -- matrices -------------------------------------------------------------------------


def load_matrix(path: str) -> tuple[dict, list]:
    try:
        import yaml  # noqa: PLC0415
    except ImportError:
        sys.exit("the matrix command needs PyYAML (pip install -r shims/requirements.txt)")
    with open(path) as f:
        doc = yaml.safe_load(f)
    return doc, doc.get("rows", [])


def expand_vars(text: str) -> str:
    out, rest = "", text
    while "${" in rest:
        i = rest.index("${")
        out += rest[:i]
        j = rest.index("}", i)
        inner = rest[i + 2: j]
        name, _, default = inner.partition(":-")
        out += os.environ.get(name) or default
        rest = rest[j + 1:]
    return out + rest


def parse_wall(value: Any) -> int:
    """A `clock: { wall: ... }` as epoch nanoseconds: RFC 3339 (PyYAML may
    have made it a datetime already) or an HTTP-date in any of its three
    forms, as the Rust loader reads it (crates/faultmatrix-core/src/load/clock.rs)."""
    import datetime as dt  # noqa: PLC0415
    import email.utils  # noqa: PLC0415

    if isinstance(value, dt.datetime):
        when = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    else:
        text = str(value).strip()
        try:
            when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            parsed = email.utils.parsedate_tz(text)
            if parsed is None:
                raise ValueError(f"clock.wall {text!r} is neither RFC 3339 nor an HTTP-date") from None
            return email.utils.mktime_tz(parsed) * NS
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
    delta = when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * NS + delta.microseconds * 1000


def row_spec(doc: dict, row: dict, path: str) -> RowSpec:
    defaults = doc.get("defaults") or {}
    merged = dict(defaults, **row)
    system = doc.get("system") or {}
    spec = RowSpec(name=row["name"], routes=row.get("inject") or {}, file=os.path.abspath(path))
    if merged.get("jitter") is not None:
        spec.jitter = list(merged["jitter"])
    spec.jitter_seed = int(merged.get("jitter_seed", 0))
    wall = (row.get("clock") or {}).get("wall") or (doc.get("clock") or {}).get("wall")
    if wall is not None:
        spec.wall_start_ns = parse_wall(wall)
    if system.get("timeout"):
        spec.timeout_ns = parse_duration(system["timeout"])
    if merged.get("budget"):
        spec.budget_ns = parse_duration(merged["budget"])
    spec.env = {k: expand_vars(str(v)) for k, v in (system.get("env") or {}).items()}
    return spec


def check_row(row: dict, res: RowResult) -> list:
    """The differences between a row's expectations and what was observed."""
    expect = row.get("expect") or {}
    problems = list(res.failures)
    if "trace" in expect:
        want = expect["trace"]
        want = [l.strip() for l in (want.splitlines() if isinstance(want, str) else want) if l.strip()]
        got = list(res.trace)
        for i, w in enumerate(want):  # observed lines shaped like the expected ones
            if i < len(got) and " at=" in w:
                got[i] += f" at={format_duration(res.calls[i].start_ns)}"
        res.trace = got
        if want != res.trace:
            diff = ["trace differs (- expected, + observed):"]
            for i in range(max(len(want), len(res.trace))):
                w = want[i] if i < len(want) else None
                g = res.trace[i] if i < len(res.trace) else None
                if w == g:
                    diff.append(f"  {w}")
                else:
                    if w is not None:
                        diff.append(f"- {w}")
                    if g is not None:
                        diff.append(f"+ {g}")
            problems.append("\n".join(diff))
    r = res.result or {}
    if "stop" in expect:
        stop = r.get("stop") or ("success" if r.get("outcome") == "success" else None)
        if stop != expect["stop"]:
            problems.append(f"stop: expected {expect['stop']}, observed {stop}")
    if "output" in expect and r.get("output") != expect["output"]:
        problems.append(f"output: expected {expect['output']!r}, observed {r.get('output')!r}")
    if "error" in expect and "code" in (expect["error"] or {}):
        if r.get("code") != expect["error"]["code"]:
            problems.append(f"error.code: expected {expect['error']['code']}, observed {r.get('code')}")
    problems += check_requests(expect.get("requests") or {}, res.calls)
    if "elapsed" in expect and res.elapsed_ns is not None:
        if parse_duration(expect["elapsed"]) != res.elapsed_ns:
            problems.append(f"elapsed: expected {expect['elapsed']}, observed {format_duration(res.elapsed_ns)}")
    return problems


def json_path(doc: Any, text: str) -> tuple[bool, Any]:
    """(found, value) of a JSON path `$.a["b c"][0]` (docs/format.md, `requests`)."""
    steps = re.findall(r'\.([^.\[]+)|\["([^"]*)"\]|\[(\d+)\]', text[1:])
    for name, quoted, index in steps:
        if index:
            if not isinstance(doc, list) or int(index) >= len(doc):
                return False, None
            doc = doc[int(index)]
        else:
            key = name or quoted
            if not isinstance(doc, dict) or key not in doc:
                return False, None
            doc = doc[key]
    return True, doc


def check_requests(spec: dict, calls: list) -> list:
    """`expect.requests` (docs/over-the-wire.md, "Request assertions")."""
    problems = []
    for key, want in spec.items():
        chosen = [(i, c) for i, c in enumerate(calls)
                  if key == "*" or f"{c.route}{c.attempt}" == key or f"{c.route}#{c.attempt}" == key]
        for name, value in (want.get("headers") or {}).items():
            name = name.lower()
            seen = [c.headers.get(name) for _, c in chosen]
            for (i, c), v in zip(chosen, seen):
                label = f"{c.route}{c.attempt}"
                if value == "$present" and v is None:
                    problems.append(f"{label}: header {name} is absent, expected present")
                elif value == "$absent" and v is not None:
                    problems.append(f"{label}: header {name} is {v!r}, expected absent")
                elif value == "$retries" and v != str(i):
                    problems.append(f"{label}: header {name} is {v!r}, expected {i} (the calls before it)")
                elif not str(value).startswith("$") and v != str(value):
                    problems.append(f"{label}: header {name} is {v!r}, expected {value!r}")
            if value == "$same" and (None in seen or len(set(seen)) > 1):
                problems.append(f"header {name} differs between calls or is missing: {seen}")
        for text, value in (want.get("body") or {}).items():
            seen = []
            for _, c in chosen:
                label = f"{c.route}{c.attempt}"
                if c.body != "json":
                    problems.append(f"{label}: body {text}: the request body is {c.body}")
                    continue
                found, v = json_path(c.doc, text)
                seen.append(json.dumps(v, sort_keys=True) if found else None)
                if value == "$absent" and found:
                    problems.append(f"{label}: body {text} is {v!r}, expected absent")
                elif value in ("$present", "$same") and not found:
                    problems.append(f"{label}: body {text} is absent, expected present")
                elif isinstance(value, str) and value.startswith("$$") and (not found or v != value[1:]):
                    problems.append(f"{label}: body {text} is {v!r}, expected {value[1:]!r}")
                elif not (isinstance(value, str) and value.startswith("$")) and (not found or v != value):
                    problems.append(f"{label}: body {text} is {v!r}, expected {value!r}")
            if value == "$same" and len(set(seen)) > 1:
                problems.append(f"body {text} differs between calls: {seen}")
        for field_name in ("method", "path", "model", "stream"):
            if field_name in want:
                for _, c in chosen:
                    if getattr(c, field_name) != want[field_name]:
                        problems.append(f"{c.route}{c.attempt}: {field_name} is {getattr(c, field_name)!r}, "
                                        f"expected {want[field_name]!r}")
    return problems


def run_matrix(paths: list, warm: bool, only: str | None = None, expect_fail: bool = False) -> int:
    """Runs every row of the files; with `warm`, one warm parent serves all
    files that share a command and directory (a child takes its row's whole
    environment, so files whose `system.env` differ can share it)."""
    runner = FakeRunner()
    failed = total = 0
    t_all = time.monotonic()
    row_ms = []
    try:
        for path in paths:
            doc, rows = load_matrix(path)
            system = doc.get("system") or {}
            if system.get("clock", "virtual") != "virtual":
                print(f"# {path}: `clock: {system.get('clock')}` rows need the real-clock runner; skipped")
                continue
            command = [expand_vars(a) for a in system["command"]]
            cwd = os.path.join(os.path.dirname(os.path.abspath(path)), system.get("cwd", ""))
            if warm:
                key = (tuple(command), os.path.realpath(cwd))
                if getattr(runner, "warm_key", None) != key:
                    if runner.warm is not None:
                        runner.stop_warm()
                    t0 = time.monotonic()
                    ready = runner.start_warm(command, cwd=cwd)
                    runner.warm_key = key
                    print(f"# warm parent for {' '.join(command)}: preloaded {', '.join(ready.get('preloaded', []))} "
                          f"in {time.monotonic() - t0:.2f} s")
            print(f"# {path}")
            for row in rows:
                if only and row["name"] != only:
                    continue
                if row.get("ignore"):
                    print(f"ignored  {row['name']}: {row['ignore']}")
                    continue
                total += 1
                spec = row_spec(doc, row, path)
                res = runner.run_row(spec, command, cwd=cwd, warm=warm)
                problems = check_row(row, res)
                row_ms.append(res.row_ms)
                status = "ok" if not problems else "FAILED"
                if problems:
                    failed += 1
                print(f"{status:6} {row['name']}  (real: {res.row_ms:.0f} ms from the first request, "
                      f"{res.real_ms:.0f} ms from hello, {res.start_ms:.0f} ms start-up; {res.rounds} clock steps)")
                if problems or os.environ.get("FM_VERBOSE"):
                    for line in res.trace:
                        print(f"         {line}")
                    for p in problems:
                        print("       " + p.replace("\n", "\n       "))
                    if problems and res.stderr.strip() and not expect_fail:
                        print("       stderr: " + res.stderr.strip()[-800:].replace("\n", "\n       "))
    finally:
        runner.close()
    med = sorted(row_ms)[len(row_ms) // 2] if row_ms else 0
    print(f"# {total} rows, {failed} failed; real {time.monotonic() - t_all:.2f} s "
          f"(median {med:.0f} ms per row from its first request)")
    if expect_fail:
        return 0 if failed == total and total else 1
    return 1 if failed else 0


# -- the command line -------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run one row given on the command line")
    run.add_argument("--route", action="append", default=[], metavar="NAME=JSON",
                     help="a route and its script as JSON, e.g. api='[503, {\"status\": 200}]'")
    run.add_argument("--jitter", help="explicit draws as JSON, e.g. '[0, 0.5]'")
    run.add_argument("--jitter-seed", type=int, default=0)
    run.add_argument("--timeout", default="30s", help="system.timeout (virtual)")
    run.add_argument("--env", action="append", default=[], metavar="K=V")
    run.add_argument("command", nargs=argparse.REMAINDER)
    mx = sub.add_parser("matrix", help="run a matrix file's rows and compare with their expectations")
    mx.add_argument("paths", nargs="+")
    mx.add_argument("--warm", action="store_true", help="fork rows from a warm parent (Python)")
    mx.add_argument("--row")
    mx.add_argument("--expect-fail", action="store_true", help="succeed only if every row fails (wrong clients)")
    a = p.parse_args(argv)
    if a.cmd == "matrix":
        return run_matrix(a.paths, a.warm, a.row, a.expect_fail)
    routes = {}
    for r in a.route:
        name, _, script = r.partition("=")
        routes[name] = json.loads(script)
    spec = RowSpec(name="command line", routes=routes, timeout_ns=parse_duration(a.timeout),
                   jitter=json.loads(a.jitter) if a.jitter else None, jitter_seed=a.jitter_seed,
                   env=dict(e.split("=", 1) for e in a.env))
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    runner = FakeRunner()
    try:
        res = runner.run_row(spec, command)
    finally:
        runner.close()
    for call in res.calls:
        end = format_duration(call.end_ns) if call.end_ns is not None else "-"
        print(f"# {call.route}{call.attempt} {call.method} {call.path} at={format_duration(call.start_ns)} end={end}")
    for line in res.trace:
        print(line)
    print(f"# result {json.dumps(res.result)} exit={res.exit_code} virtual={format_duration(res.elapsed_ns or 0)} "
          f"real={res.real_ms:.1f}ms row={res.row_ms:.1f}ms start-up={res.start_ms:.0f}ms steps={res.rounds} busy={res.busy} draws={res.draws}")
    for f in res.failures:
        print(f"FAILED: {f}")
    if res.stderr.strip():
        print("# stderr:\n" + res.stderr.rstrip(), file=sys.stderr)
    return 1 if res.failures else 0


if __name__ == "__main__":
    sys.exit(main())
