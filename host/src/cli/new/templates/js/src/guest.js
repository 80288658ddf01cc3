// The reconciler guest of `{{Kind}}` ({{group}}/{{version}}): its kind spec (aspects, reasons, spec schema) and
// its evaluation, one pass at a time. Plain JavaScript with no import of the contract, so that the same logic
// runs under `node --test` against the SDK's mock facts.

import {
  CONFIGURATION_INVALID, Registry, VerdictBuilder, debug, fails, kindSpec, ok, parentJson, pause, stalls,
  stringify,
} from '@reconciler-host/guest-sdk';

export const GROUP = '{{group}}';
export const KIND = '{{Kind}}';
/** The aspect: the spec makes sense. */
export const CONFIGURATION_VALID = 'ConfigurationValid';
/** ConfigurationValid=False (and a stall): no greeting to say. */
export const GREETING_MISSING = 'GreetingMissing';

/** `.spec`'s schema, as the CRD declares it. */
const SPEC_SCHEMA = {
  type: 'object',
  properties: {
    greeting: { type: 'string', description: 'What to say.', maxLength: 256 },
  },
};

export function describe() {
  return kindSpec({
    group: GROUP,
    version: '{{version}}',
    kind: KIND,
    plural: '{{kind}}s',
    namespaced: true,
    profile: 'progressing',
    aspects: [CONFIGURATION_VALID],
    reasons: new Registry('{{kind}}')
      .common([CONFIGURATION_INVALID])
      .owned([[GREETING_MISSING, 'ConfigurationValid=False (and Stalled=True): spec.greeting is empty.']])
      .build(),
    stalls: [stalls(CONFIGURATION_INVALID), stalls(GREETING_MISSING)],
    pause: pause('{{group}}/reconcile', 'skip'),
    specSchema: stringify(SPEC_SCHEMA),
  });
}

export function reconcile(input, _facts) {
  const verdict = new VerdictBuilder();
  if (input.paused) return { verdict: verdict.build(), changes: [] };
  const greeting = parentJson(input)?.spec?.greeting;
  if (greeting != null && typeof greeting !== 'string') {
    // The schema let it through (or no API server checked it): the message names the field.
    const message = `spec.greeting must be a string, not ${JSON.stringify(greeting)}`;
    verdict.aspect(fails(CONFIGURATION_VALID, CONFIGURATION_INVALID, message)).stall(CONFIGURATION_INVALID, message);
  } else if (!greeting) {
    const message = 'spec.greeting is empty: say something';
    verdict.aspect(fails(CONFIGURATION_VALID, GREETING_MISSING, message)).stall(GREETING_MISSING, message);
  } else {
    verdict.aspect(ok(CONFIGURATION_VALID, `Says ${debug(greeting)}`));
  }
  return { verdict: verdict.build(), changes: [] };
}
