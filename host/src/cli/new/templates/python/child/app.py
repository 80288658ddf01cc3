"""The reconciler guest of `{{Kind}}` ({{group}}/{{version}}), in Python: its kind spec (aspects, reasons, spec
schema), and each pass's verdict and the child it wants, a {{Child}} made from the spec, which the host applies (by
server-side apply), owns (the parent as its controller) and keeps as asked (drift is applied again). componentize-py
builds it with the SDK (reconciler_sdk) into a component; test_app.py tests its logic against the SDK's mock facts."""

import sys

import reconciler_sdk as sdk
from reconciler_sdk import CONFIGURATION_INVALID, RESOURCE_NOT_OWNED, Parent, apply, change_aspect, fails, ok, read
from wit_world.exports.reconciler import PauseAnnotation

GROUP = "{{group}}"
KIND = "{{Kind}}"
# The first aspect: the spec makes sense.
CONFIGURATION_VALID = "ConfigurationValid"
# The second aspect: the {{Child}} is made as asked.
CHILD_READY = "ChildReady"
# ConfigurationValid=False (and a stall): no greeting to say.
GREETING_MISSING = "GreetingMissing"
# ChildReady=False: the API server refused the host's apply of the {{Child}}.
CHILD_REFUSED = "ChildRefused"

# `.spec`'s schema, as the CRD declares it; `spec_of` reads the spec by it (each field's default when absent).
SPEC_SCHEMA = {
    "type": "object",
    "properties": {
        "greeting": {"type": "string", "description": "What to say.", "default": "", "maxLength": 256},
{{child_fields}}    },
}


def spec_of(input):
    """`.spec` as SPEC_SCHEMA says, every field a string: `(spec, None)`, a field absent (or null, or blank) its
    default; or `(None, error)`, the message naming the field that is not a string (the schema let it through, or
    no API server checked it)."""
    given = (sdk.parent_json(input) or {}).get("spec")
    if given is None:
        given = {}
    if not isinstance(given, dict):
        return None, f"spec must be an object, not {sdk.stringify(given)}"
    spec = {}
    for field, schema in SPEC_SCHEMA["properties"].items():
        value = given.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            spec[field] = schema["default"]
        elif not isinstance(value, str):
            return None, f"spec.{field} must be a string, not {sdk.stringify(value)}"
        else:
            spec[field] = value
    return spec, None


def child_kind():
    """The kind of the child."""
    return sdk.kind_ref("{{child_group}}", "{{child_version}}", "{{Child}}")


def child_name(parent):
    """The child's name: its parent's{{child_suffix}}."""
    return f"{parent}{{child_suffix}}"


def child_body(name, spec):
    """The {{Child}} `name` a parent of `spec` wants: only the fields this guest decides (the host adds the
    namespace, the owner and its label)."""
{{child_body}}

def describe():
    return sdk.kind_spec(
        group=GROUP,
        version="{{version}}",
        kind=KIND,
        plural="{{kind}}s",
        aspects=[CONFIGURATION_VALID, CHILD_READY],
        reasons=sdk.registry(
            "{{kind}}",
            [CONFIGURATION_INVALID, RESOURCE_NOT_OWNED],
            [
                (GREETING_MISSING, "ConfigurationValid=False (and Stalled=True): spec.greeting is empty."),
                (CHILD_REFUSED, "ChildReady=False: the API server refused the host's apply of the {{Child}}."),
            ],
        ),
        stalls=[sdk.stalls(CONFIGURATION_INVALID), sdk.stalls(GREETING_MISSING)],
        pause=PauseAnnotation(key="{{group}}/reconcile", value="skip"),
        spec_schema=SPEC_SCHEMA,
    )


def writes():
    """The kinds it changes: the host watches them (a written kind is readable without declaring it in `reads`)
    and needs RBAC on them (`reconciler-host rbac`)."""
    return [child_kind()]


def reconcile(input, facts):
    verdict = sdk.VerdictBuilder()
    changes = []
    if input.paused:
        return verdict.build(), changes
    spec, error = spec_of(input)
    if error is not None:
        verdict.aspect(fails(CONFIGURATION_VALID, CONFIGURATION_INVALID, error)).stall(CONFIGURATION_INVALID, error)
        return verdict.build(), changes
    if spec["greeting"] == "":
        message = "spec.greeting is empty: say something"
        verdict.aspect(fails(CONFIGURATION_VALID, GREETING_MISSING, message)).stall(GREETING_MISSING, message)
        return verdict.build(), changes
    # The greeting quoted and escaped, as JSON.
    verdict.aspect(ok(CONFIGURATION_VALID, f"Says {sdk.stringify(spec['greeting'])}"))

    meta = input.parent.meta
    name = child_name(meta.name)
    what = f"{{Child}} {name}"
    # An object of that name another controls is never taken over.
    existing = read(lambda: facts.get(child_kind(), meta.namespace, name)).value
    why = existing and Parent.of(KIND, meta).refusal("{{Child}}", name, existing.meta)
    if why:
        verdict.aspect(fails(CHILD_READY, RESOURCE_NOT_OWNED, why))
        return verdict.build(), changes
    changes.append(apply(child_kind(), name, child_body(name, spec)))
    # True only once the host made it: what holds it (a plan awaiting approval, mode observe) or refused it
    # says so instead.
    state = facts.change_state(child_kind(), meta.namespace, name)
    verdict.aspect(
        change_aspect(CHILD_READY, what, state, CHILD_REFUSED, lambda: ok(CHILD_READY, f"{what} is applied as asked"))
    )
    return verdict.build(), changes


Reconciler = sdk.export(sys.modules[__name__])
