"""The system under test for the anthropic Python matrices on the virtual
clock: the official anthropic SDK (anthropic==2.15.0), sync client, used as
a service would use it, pointed at faultmatrix's fixture server. Unchanged
by the clock: the shim is installed by the environment.

faultmatrix sets FAULTMATRIX_URL_API (the route `api`); the SDK is given it
as base_url. This file only reports how the call ended, as one JSON line.

Settings (from the matrix's `system.env`):
  ANTHROPIC_MAX_RETRIES  unset: the SDK default (DEFAULT_MAX_RETRIES = 2)
  ANTHROPIC_TIMEOUT      seconds per attempt (default 5)
  FM_STREAM              "1": stream=True and read the events
"""

import json
import os
import sys

try:
    import anthropic
except ImportError:
    print("anthropic is not installed: pip install -r shims/requirements.txt", file=sys.stderr)
    sys.exit(3)


def main():
    kwargs = {
        "base_url": os.environ["FAULTMATRIX_URL_API"],
        "api_key": "sk-ant-test-not-a-real-key",
        "timeout": float(os.environ.get("ANTHROPIC_TIMEOUT", "5")),
    }
    if "ANTHROPIC_MAX_RETRIES" in os.environ:
        kwargs["max_retries"] = int(os.environ["ANTHROPIC_MAX_RETRIES"])
    client = anthropic.Anthropic(**kwargs)
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "ping"}],
        "extra_headers": {"x-request-id": os.environ.get("FAULTMATRIX_REQUEST_ID", "")},
    }
    try:
        if os.environ.get("FM_STREAM") == "1":
            out = []
            with client.messages.stream(**request) as stream:
                for text in stream.text_stream:
                    out.append(text)
            result = {"outcome": "success", "output": "".join(out)}
        else:
            r = client.messages.create(**request)
            result = {"outcome": "success", "output": "".join(b.text for b in r.content if b.type == "text")}
    except anthropic.APIStatusError as e:
        result = {"outcome": "error", "stop": "status-error", "code": f"HTTP_{e.status_code}"}
    except anthropic.APITimeoutError:
        result = {"outcome": "error", "stop": "timeout"}
    except anthropic.APIConnectionError:
        result = {"outcome": "error", "stop": "connection-error"}
    except Exception as e:  # for example a stream that breaks while it is read
        result = {"outcome": "error", "stop": "exception", "detail": type(e).__name__}
    print(json.dumps(result))
    return 0 if result["outcome"] == "success" else 1


if __name__ == "__main__":
    sys.exit(main())
