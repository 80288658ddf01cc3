"""SecretCheck (examples.reconciler.dev/v1alpha1): a Python guest. Its spec
names a Secret and the keys an application needs from it; KeysPresent is
True when the Secret has every one, False with SecretNotFound or
SecretKeyMissing otherwise, and ConfigurationInvalid (a stall) for a spec
that names no Secret or no keys."""

import reconciler_sdk as sdk
from reconciler_sdk import fails, ok, read, read_failure, unknown

KIND = "SecretCheck"
KEYS_PRESENT = "KeysPresent"
SECRET = sdk.kind_ref("", "v1", "Secret")

SPEC_SCHEMA = {
    "type": "object",
    "required": ["secretName", "keys"],
    "properties": {
        "secretName": {"type": "string", "description": "The Secret, in the object's namespace.", "minLength": 1},
        "keys": {
            "type": "array",
            "description": "The keys the Secret must hold.",
            "items": {"type": "string"},
        },
    },
}


def describe():
    return sdk.kind_spec(
        group="examples.reconciler.dev",
        version="v1alpha1",
        kind=KIND,
        plural="secretchecks",
        aspects=[KEYS_PRESENT],
        reasons=sdk.registry("secretcheck", ["ConfigurationInvalid", "SecretNotFound", "SecretKeyMissing"], []),
        stalls=[sdk.stalls(sdk.CONFIGURATION_INVALID)],
        reads=[sdk.reads(SECRET)],
        spec_schema=SPEC_SCHEMA,
    )


def writes():
    return []


def reconcile(input, facts):
    verdict = sdk.VerdictBuilder()
    if input.paused:
        return verdict.build(), []
    spec = (sdk.parent_json(input) or {}).get("spec") or {}
    name = spec.get("secretName")
    keys = spec.get("keys")
    if not isinstance(name, str) or not name.strip():
        return invalid(verdict, "spec.secretName is required"), []
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
        return invalid(verdict, "spec.keys must be a non-empty list of key names"), []
    namespace = input.parent.meta.namespace
    found = read(lambda: facts.secret(namespace, name))
    if found.error is not None:
        verdict.aspect(unknown(KEYS_PRESENT, sdk.RECONCILING, read_failure(f"Secret {name}", found.error)))
        verdict.requeue_after(sdk.RETRY_SECONDS)
    elif found.value is None:
        verdict.aspect(fails(KEYS_PRESENT, "SecretNotFound", f"Secret {name} does not exist in {namespace}"))
    else:
        missing = [k for k in keys if k not in found.value.keys]
        if missing:
            verdict.aspect(fails(KEYS_PRESENT, "SecretKeyMissing", f"Secret {name} has no key {', '.join(missing)}"))
        else:
            verdict.aspect(ok(KEYS_PRESENT, f"Secret {name} holds {', '.join(keys)}"))
    verdict.field("checkedKeys", len(keys))
    return verdict.build(), []


def invalid(verdict, message):
    verdict.aspect(fails(KEYS_PRESENT, sdk.CONFIGURATION_INVALID, message))
    verdict.stall(sdk.CONFIGURATION_INVALID, message)
    return verdict.build()


import sys  # noqa: E402

Reconciler = sdk.export(sys.modules[__name__])
