"""A Python guest that tries to reach outside the pass, as the parent's
`spec.attempt` says, and reports what it got in its one aspect's message
(the Python twin of guests/testing/escape): clock, sleep, random,
read-file, list-root, connect, resolve, env, stderr (`spec.bytes` bytes,
then an exception), raise, loop."""

import os
import random
import socket
import sys
import time

import reconciler_sdk as sdk


def describe():
    return sdk.kind_spec(
        group="testing.reconciler.dev",
        version="v1",
        kind="PyEscape",
        plural="pyescapes",
        aspects=["Escaped"],
        reasons=sdk.registry("escape", [], [("Attempted", "The guest tried what it was told.")]),
    )


def attempt(spec):
    what = spec.get("attempt")
    if what == "clock":
        return f"wall {time.time()!r}"
    if what == "sleep":
        start = time.monotonic()
        time.sleep(spec.get("seconds", 5))
        return f"slept {time.monotonic() - start:.1f}"
    if what == "random":
        return f"random {random.random()!r} {os.urandom(8).hex()}"
    if what == "read-file":
        try:
            with open(spec.get("path", "/etc/passwd"), "rb") as f:
                return f"read {len(f.read())} bytes"
        except OSError as e:
            return f"read refused: {e}"
    if what == "list-root":
        try:
            return f"listed {len(os.listdir('/'))} entries"
        except OSError as e:
            return f"list refused: {e}"
    if what == "connect":
        host, port = spec.get("address", "127.0.0.1:1").rsplit(":", 1)
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.connect((host, int(port)))
            s.close()
            return "connected"
        except OSError as e:
            return f"connect refused: {e}"
    if what == "resolve":
        try:
            # Bytes: the name as given (a str would need the idna codec).
            return f"resolved {len(socket.getaddrinfo(spec.get('host', 'localhost').encode(), 443))}"
        except OSError as e:
            return f"resolve refused: {e}"
    if what == "env":
        return f"env {dict(os.environ)!r} args {sys.argv!r}"
    if what == "stderr":
        n = spec.get("bytes", 100)
        sys.stderr.write("e" * n)
        sys.stderr.flush()
        raise RuntimeError(f"after {n} bytes of stderr")
    if what == "raise":
        raise ValueError("told to raise")
    if what == "loop":
        while True:
            time.sleep(1)
    return f"nothing to attempt: {what!r}"


def reconcile(input, facts):
    spec = (sdk.parent_json(input) or {}).get("spec") or {}
    verdict = sdk.VerdictBuilder()
    verdict.aspect(sdk.ok("Escaped", attempt(spec)))
    return verdict.build(), []


Reconciler = sdk.export(sys.modules[__name__])
