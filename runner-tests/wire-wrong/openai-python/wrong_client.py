"""A client made wrong on purpose: a service's own wrapper around the openai
SDK that retries every APIStatusError once more after 1 s, a 400 included
(the SDK itself never retries a 400). Its row must fail, with a diff naming
the call: wrong.yaml. Unchanged by the clock, like client.py."""

import json
import os
import sys
import time

import openai


def main():
    client = openai.OpenAI(
        base_url=os.environ["FAULTMATRIX_URL_API"] + "/v1",
        api_key="sk-test-not-a-real-key",
        timeout=5.0,
        max_retries=0,
    )
    for attempt in range(2):
        try:
            r = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "ping"}])
            result = {"outcome": "success", "output": r.choices[0].message.content}
            break
        except openai.APIStatusError as e:  # the bug: 4xx are not transient
            result = {"outcome": "error", "stop": "status-error", "code": f"HTTP_{e.status_code}"}
            if attempt == 0:
                time.sleep(1)
    print(json.dumps(result))
    return 0 if result["outcome"] == "success" else 1


if __name__ == "__main__":
    sys.exit(main())
