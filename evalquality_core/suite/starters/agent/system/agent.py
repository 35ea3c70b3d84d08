"""A scripted stand-in for an agent behind a runner command: slow, seeded-flaky, then the notes CLI.

It stands in for a vendor call through a runner (harness.md A.3, A.8): every call first waits
``latency_ms`` (an agent takes seconds), then either fails the way a runner reports a failed vendor
call, or answers as ``notes.py`` (the system the contract describes). The knobs are in ``agent.toml``
beside this file, part of the system, so changing them changes the system digest:

* ``seed``: the failure schedule is a pure function of (seed, argv, stdin, attempt): reruns repeat it;
* ``latency_ms``: the wait of every call (failed ones too: a rate limit is slow to say no);
* ``transient_rate``: the share of requests whose first one or two attempts fail transiently, with exit
  4 (environment-transport, "rate limited") or 5 (environment-timeout);
* ``configuration_error``: when true, every call exits 3 (environment-configuration: a missing login).

The attempt number is ``EVALQUALITY_ATTEMPT`` (the harness sets it when the registry permits the key).
A call without one (``eval-quality suite generate`` and ``suite trials`` call the system directly, with
no retry loop around them) is answered as a last attempt, never failed, so a starter can be generated.
"""

import hashlib
import os
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import notes  # noqa: E402  (the system the contract describes, beside this file)


def main(argv):
    knobs = tomllib.loads((HERE / "agent.toml").read_text(encoding="utf-8"))
    stdin = sys.stdin.read() if not sys.stdin.isatty() else ""
    attempt_text = os.environ.get("EVALQUALITY_ATTEMPT", "")
    attempt = int(attempt_text) if attempt_text.isdigit() else None
    time.sleep(knobs.get("latency_ms", 0) / 1000)
    if knobs.get("configuration_error"):
        print("agent: no stored login for the vendor", file=sys.stderr)
        return 3
    digest = hashlib.sha256(f"{knobs.get('seed', 0)}\0{argv}\0{stdin}".encode()).digest()
    flaky = digest[0] / 256 < knobs.get("transient_rate", 0.0)
    failing_attempts = 1 + digest[1] % 2  # a flaky request fails its first one or two attempts
    if flaky and attempt is not None and attempt <= failing_attempts:
        if digest[2] % 2:
            print("agent: rate limited by the vendor (429)", file=sys.stderr)
            return 4
        print("agent: the vendor call timed out", file=sys.stderr)
        return 5
    sys.stdin = _Replay(stdin)
    return notes.main(argv)


class _Replay:
    """stdin again for notes.py, which reads it itself."""

    def __init__(self, text):
        self.text = text

    def read(self, *_):
        text, self.text = self.text, ""
        return text


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
