"""A Python guest that tries to reach outside the pass, as the parent's
`spec.attempt` says, and reports what it got in its one aspect's message
(the Python twin of guests/testing/escape): clock, sleep, random,
read-file, list-root, connect, resolve, env, stderr (`spec.bytes` bytes,
then an exception), raise, loop, undeclared-field (`spec.clusterIP` of the
first Service of its namespace, a field its read of Services, which names
`spec.ports` only, does not declare)."""

import json
import os
import random
import socket
import sys
import time

import reconciler_sdk as sdk

SERVICE = sdk.kind_ref("", "v1", "Service")


def describe():
    return sdk.kind_spec(
        group="testing.reconciler.dev",
        version="v1",
        kind="PyEscape",
        plural="pyescapes",
        aspects=["Escaped"],
        reasons=sdk.registry("escape", [], [("Attempted", "The guest tried what it was told.")]),
        reads=[sdk.with_fields(sdk.reads(SERVICE), ["spec.ports"])],
    )


def read_error_debug(error):
    """A `read-error` as the Rust guest's `{e:?}` writes it:
    `ReadError::NotDeclared("...")` (componentize-py's `ReadError_NotDeclared`)."""
    return f"{type(error).__name__.replace('_', '::', 1)}({json.dumps(error.value, ensure_ascii=False)})"


def member(value, key):
    """`value[key]` of a JSON object, None for anything else (serde_json's `value[key]`)."""
    return value.get(key) if isinstance(value, dict) else None


def undeclared_field(parent, facts):
    namespace = member(member(parent, "metadata"), "namespace")
    listed = sdk.read(lambda: facts.list(SERVICE, namespace if isinstance(namespace, str) else "", []))
    if listed.error is not None:
        return f"list refused: {read_error_debug(listed.error)}"
    if not listed.value:
        return "no Service"
    try:
        service = json.loads(listed.value[0].json)
    except ValueError:
        service = None
    ip = member(member(service, "spec"), "clusterIP")
    return f"clusterIP {ip if isinstance(ip, str) else 'absent'}"


def attempt(spec, parent, facts):
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
    if what == "undeclared-field":
        return undeclared_field(parent, facts)
    return f"nothing to attempt: {what!r}"


def reconcile(input, facts):
    parent = sdk.parent_json(input)
    parent = parent if isinstance(parent, dict) else {}
    spec = parent.get("spec") or {}
    verdict = sdk.VerdictBuilder()
    verdict.aspect(sdk.ok("Escaped", attempt(spec, parent, facts)))
    return verdict.build(), []


Reconciler = sdk.export(sys.modules[__name__])
