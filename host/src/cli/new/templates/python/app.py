"""The reconciler guest of `{{Kind}}` ({{group}}/{{version}}), in Python: its kind spec (aspects, reasons, spec
schema) and its evaluation, one pass at a time. componentize-py builds it with the SDK (reconciler_sdk) into
a component; the fixtures test it."""

import sys

import reconciler_sdk as sdk
from reconciler_sdk import fails, ok

GROUP = "{{group}}"
KIND = "{{Kind}}"
# The aspect: the spec makes sense.
CONFIGURATION_VALID = "ConfigurationValid"
# ConfigurationValid=False (and a stall): no greeting to say.
GREETING_MISSING = "GreetingMissing"

# `.spec`'s schema, as the CRD declares it.
SPEC_SCHEMA = {
    "type": "object",
    "properties": {
        "greeting": {"type": "string", "description": "What to say.", "maxLength": 256},
    },
}


def describe():
    return sdk.kind_spec(
        group=GROUP,
        version="{{version}}",
        kind=KIND,
        plural="{{kind}}s",
        aspects=[CONFIGURATION_VALID],
        reasons=sdk.registry(
            "{{kind}}",
            [sdk.CONFIGURATION_INVALID],
            [(GREETING_MISSING, "ConfigurationValid=False (and Stalled=True): spec.greeting is empty.")],
        ),
        stalls=[sdk.stalls(sdk.CONFIGURATION_INVALID), sdk.stalls(GREETING_MISSING)],
        spec_schema=SPEC_SCHEMA,
    )


def writes():
    return []


def reconcile(input, facts):
    verdict = sdk.VerdictBuilder()
    if input.paused:
        return verdict.build(), []
    greeting = ((sdk.parent_json(input) or {}).get("spec") or {}).get("greeting")
    if greeting is not None and not isinstance(greeting, str):
        # The schema let it through (or no API server checked it): the message names the field.
        message = f"spec.greeting must be a string, not {greeting!r}"
        verdict.aspect(fails(CONFIGURATION_VALID, sdk.CONFIGURATION_INVALID, message))
        verdict.stall(sdk.CONFIGURATION_INVALID, message)
    elif not greeting:
        message = "spec.greeting is empty: say something"
        verdict.aspect(fails(CONFIGURATION_VALID, GREETING_MISSING, message))
        verdict.stall(GREETING_MISSING, message)
    else:
        verdict.aspect(ok(CONFIGURATION_VALID, f'Says "{greeting}"'))
    return verdict.build(), []


Reconciler = sdk.export(sys.modules[__name__])
