"""The system under test for the openai matrices: the official openai SDK,
used as a service would use it, pointed at faultmatrix's fixture server.

faultmatrix sets FAULTMATRIX_URL_API (the route `api`); the SDK is given it
as base_url and nothing else changes. The SDK's retry loop is the thing
tested: this file only reports how the call ended, as one JSON line.

Settings (from the matrix's `system.env`):
  OPENAI_MAX_RETRIES  unset: the SDK default (DEFAULT_MAX_RETRIES = 2)
  OPENAI_TIMEOUT      seconds per attempt (default 5)
  FM_STREAM           "1": stream=True and read the events
"""

import json
import os
import sys

try:
    import openai
except ImportError:
    print(
        "openai is not installed: python3 -m venv .venv && "
        ".venv/bin/pip install -r runner-tests/wire/openai/requirements.txt",
        file=sys.stderr,
    )
    sys.exit(3)


def main() -> int:
    kwargs = {
        "base_url": os.environ["FAULTMATRIX_URL_API"] + "/v1",
        "api_key": "sk-test-not-a-real-key",
        "timeout": float(os.environ.get("OPENAI_TIMEOUT", "5")),
    }
    if "OPENAI_MAX_RETRIES" in os.environ:
        kwargs["max_retries"] = int(os.environ["OPENAI_MAX_RETRIES"])
    client = openai.OpenAI(**kwargs)
    stream = os.environ.get("FM_STREAM") == "1"
    headers = {"x-request-id": os.environ.get("FAULTMATRIX_REQUEST_ID", "")}
    try:
        if stream:
            out = []
            for chunk in client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "ping"}],
                stream=True,
                extra_headers=headers,
            ):
                for choice in chunk.choices:
                    if choice.delta and choice.delta.content:
                        out.append(choice.delta.content)
            result = {"outcome": "success", "output": "".join(out)}
        else:
            r = client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "ping"}],
                extra_headers=headers,
            )
            result = {"outcome": "success", "output": r.choices[0].message.content}
    except openai.APIStatusError as e:
        result = {"outcome": "error", "stop": "status-error", "code": f"HTTP_{e.status_code}"}
    except openai.APITimeoutError:
        result = {"outcome": "error", "stop": "timeout"}
    except openai.APIConnectionError:
        result = {"outcome": "error", "stop": "connection-error"}
    except Exception as e:  # for example a stream that breaks while it is read
        result = {"outcome": "error", "stop": "exception", "detail": type(e).__name__}
    print(json.dumps(result))
    return 0 if result["outcome"] == "success" else 1


if __name__ == "__main__":
    sys.exit(main())
