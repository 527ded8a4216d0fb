"""Wait until every URL answers with a body containing its expected text.

    python3 wait_for_endpoints.py TIMEOUT_S URL=TEXT ...

Prints one line per endpoint that never did (what it answered, or why it could not be reached); exit 1 then.
Run by the monitoring role's health check (stdlib only: the hosts' system python3).
"""
import sys
import time
import urllib.request


def main(timeout_s, *checks):
    pending = dict(check.split("=", 1) for check in checks)
    last_problem = {}
    deadline = time.monotonic() + float(timeout_s)
    while True:
        for url, text in list(pending.items()):
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    body = response.read().decode("utf-8", "replace")
            except OSError as error:
                last_problem[url] = f"no answer ({error})"
                continue
            if text in body:
                del pending[url]
            else:
                last_problem[url] = f"answers, but without {text!r}"
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(1)
    for url in pending:
        print(f"{url}: {last_problem[url]}")
    return 1 if pending else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
