"""The system under test for the openai Python matrices on the virtual clock:
the official openai SDK (openai==3.57.0), used as a service would use it,
pointed at faultmatrix's fixture server. Unchanged by the clock: the shim is
installed by the environment (PYTHONPATH=shims/python, FAULTMATRIX_CLOCK).

faultmatrix sets FAULTMATRIX_URL_API (the route `api`); the SDK is given it
as base_url and nothing else changes. The SDK's retry loop is the thing
tested: this file only reports how the call ended, as one JSON line.

Settings (from the matrix's `system.env`):
  OPENAI_MAX_RETRIES  unset: the SDK default (DEFAULT_MAX_RETRIES = 2)
  OPENAI_TIMEOUT      seconds per attempt (default 5)
  FM_STREAM           "1": stream=True and read the events
  FM_ASYNC            "1": the AsyncOpenAI client under asyncio
  FM_LIST_MODELS      "1": call client.models.list() before the create (sync
                      client), as a service validating its model name does
"""

import asyncio
import json
import os
import sys

try:
    import openai
except ImportError:
    print("openai is not installed: pip install -r shims/requirements.txt", file=sys.stderr)
    sys.exit(3)


def settings():
    kwargs = {
        "base_url": os.environ["FAULTMATRIX_URL_API"] + "/v1",
        "api_key": "sk-test-not-a-real-key",
        "timeout": float(os.environ.get("OPENAI_TIMEOUT", "5")),
    }
    if "OPENAI_MAX_RETRIES" in os.environ:
        kwargs["max_retries"] = int(os.environ["OPENAI_MAX_RETRIES"])
    return kwargs


REQUEST = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "ping"}],
}


def headers():
    return {"x-request-id": os.environ.get("FAULTMATRIX_REQUEST_ID", "")}


def ending(err, out):
    """The JSON result of a failed call; `output` is what the stream delivered before it."""
    if isinstance(err, openai.APIStatusError):
        result = {"outcome": "error", "stop": "status-error", "code": f"HTTP_{err.status_code}"}
    elif isinstance(err, openai.APITimeoutError):
        result = {"outcome": "error", "stop": "timeout"}
    elif isinstance(err, openai.APIConnectionError):
        result = {"outcome": "error", "stop": "connection-error"}
    else:
        result = {"outcome": "error", "stop": "exception", "detail": type(err).__name__}
    if out:
        result["output"] = "".join(out)
    return result


def run_sync():
    client = openai.OpenAI(**settings())
    out = []
    try:
        if os.environ.get("FM_STREAM") == "1":
            for chunk in client.chat.completions.create(**REQUEST, stream=True, extra_headers=headers()):
                for choice in chunk.choices:
                    if choice.delta and choice.delta.content:
                        out.append(choice.delta.content)
            return {"outcome": "success", "output": "".join(out)}
        if os.environ.get("FM_LIST_MODELS") == "1":
            client.models.list(extra_headers=headers())
        r = client.chat.completions.create(**REQUEST, extra_headers=headers())
        return {"outcome": "success", "output": r.choices[0].message.content}
    except Exception as err:  # for example a stream that breaks while it is read
        return ending(err, out)


async def run_async():
    client = openai.AsyncOpenAI(**settings())
    out = []
    try:
        if os.environ.get("FM_STREAM") == "1":
            stream = await client.chat.completions.create(**REQUEST, stream=True, extra_headers=headers())
            async for chunk in stream:
                for choice in chunk.choices:
                    if choice.delta and choice.delta.content:
                        out.append(choice.delta.content)
            return {"outcome": "success", "output": "".join(out)}
        r = await client.chat.completions.create(**REQUEST, extra_headers=headers())
        return {"outcome": "success", "output": r.choices[0].message.content}
    except Exception as err:
        return ending(err, out)


def main():
    result = asyncio.run(run_async()) if os.environ.get("FM_ASYNC") == "1" else run_sync()
    print(json.dumps(result))
    return 0 if result["outcome"] == "success" else 1


if __name__ == "__main__":
    sys.exit(main())
