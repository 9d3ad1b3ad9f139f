"""A small retrying HTTP client, standard library only, explored on the
virtual clock by `faultmatrix explore` (docs/explore.md, "Command systems").

Its policy, written from its own rules (not from any run): the routes of
FAULTMATRIX_ROUTES in order; on each at most 3 calls; a 408, 429 or 5xx,
a timeout (2 s per call), a reset or an unreadable answer is retried after
0.5 s * 2^n (capped at 4 s), or after `Retry-After` (delay-seconds or an
HTTP-date, read against the wall clock) when that is longer, up to 30 s;
after the third call the next route is tried; any other 4xx is terminal:
one call, one escalation, no further call. The result is printed as the
runner's JSON line (docs/over-the-wire.md).

FM_WRONG=terminal makes it wrong on purpose: it retries every 4xx as well
(a 400 or 401 will never succeed on a resend), which explore's `terminal`
invariant catches.
"""

import email.utils
import json
import os
import sys
import time
import urllib.error
import urllib.request

ATTEMPTS = 3
TIMEOUT = 2.0
WRONG = os.environ.get("FM_WRONG", "")


def routes():
    out = []
    for item in os.environ["FAULTMATRIX_ROUTES"].split(","):
        name, _, url = item.partition("=")
        out.append((name, url))
    return out


def guidance(value):
    """Seconds to wait from a Retry-After value, or None."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if at is None:
        return None
    wait = at.timestamp() - time.time()
    return wait if wait > 0 else None


def call(url, request_id, body):
    """(status, retry_after) or (None, fault) for a call that got no answer."""
    req = urllib.request.Request(
        url + "/v1/chat/completions",
        data=body,
        method="POST",
        headers={"content-type": "application/json", "x-request-id": request_id},
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            r.read()
            return r.status, None
    except urllib.error.HTTPError as e:
        try:
            e.read()
        except Exception:  # a body cut short: the status is what counts
            pass
        return e.code, e.headers.get("Retry-After")
    except Exception as e:  # timeout, reset, not HTTP, cut short
        return None, type(e).__name__


# The client's own names for what went wrong (the same names as the
# built-in registry's codes, so its JSON result reads like the trace).
CODES = {
    400: "INVALID_REQUEST",
    401: "AUTH_FAILED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "REQUEST_TIMEOUT",
    409: "CONFLICT",
    422: "INVALID_INPUT",
    429: "RATE_LIMITED",
    500: "SERVER_ERROR",
    502: "BAD_GATEWAY",
    503: "UPSTREAM_UNAVAILABLE",
    504: "GATEWAY_TIMEOUT",
    529: "OVERLOADED",
}


def code_of(status, fault):
    if status is None:
        if fault in ("timeout", "TimeoutError"):
            return "TIMEOUT"
        if fault in ("ConnectionResetError", "RemoteDisconnected", "ConnectionAbortedError"):
            return "CONNECTION_RESET"
        return "MALFORMED_RESPONSE"
    if status in CODES:
        return CODES[status]
    return "CLIENT_ERROR" if status < 500 else "SERVER_ERROR"


def retryable(status):
    if status is None or status in (408, 429) or status >= 500:
        return True
    return WRONG == "terminal" and 400 <= status < 500


def main():
    request_id = os.environ.get("FAULTMATRIX_REQUEST_ID", "req")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "ping"}]}).encode()
    attempts = []
    code = None
    stop = "exhausted"
    for name, url in routes():
        for n in range(ATTEMPTS):
            status, extra = call(url, request_id, body)
            code = code_of(status, extra)
            attempts.append(f"{name}{n + 1} {code}")
            if status is not None and 200 <= status < 300:
                print(json.dumps({"outcome": "success", "route": name}))
                return 0
            if not retryable(status):
                stop = "terminal"
                break
            if n + 1 == ATTEMPTS:
                break
            wait = min(0.5 * 2**n, 4.0)
            g = guidance(extra) if status is not None else None
            if g is not None:
                wait = max(wait, min(g, 30.0))
            time.sleep(wait)
        if stop == "terminal":
            break
    print(
        json.dumps(
            {
                "outcome": "error",
                "stop": stop,
                "code": code,
                "request_id": request_id,
                "attempts": attempts[:16],
                "escalations": [{"code": code, "to": "platform-oncall"}],
            }
        )
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
