// The reconciler guest of `{{Kind}}` ({{group}}/{{version}}): its kind spec (aspects, reasons, spec schema), and each
// pass's verdict and the child it wants, a {{Child}} made from the spec, which the host applies (by server-side apply),
// owns (the parent as its controller) and keeps as asked (drift is applied again). Plain JavaScript with no import of
// the contract, so that the same logic runs under `node --test` against the SDK's mock facts.

import {
  CONFIGURATION_INVALID, Parent, RESOURCE_NOT_OWNED, Registry, VerdictBuilder, apply, changeAspect, debug, fails,
  kindRef, kindSpec, ok, parentJson, pause, read, stalls, stringify,
} from '@reconciler-host/guest-sdk';

export const GROUP = '{{group}}';
export const KIND = '{{Kind}}';
/** The first aspect: the spec makes sense. */
export const CONFIGURATION_VALID = 'ConfigurationValid';
/** The second aspect: the {{Child}} is made as asked. */
export const CHILD_READY = 'ChildReady';
/** ConfigurationValid=False (and a stall): no greeting to say. */
export const GREETING_MISSING = 'GreetingMissing';
/** ChildReady=False: the API server refused the host's apply of the {{Child}}. */
export const CHILD_REFUSED = 'ChildRefused';

/** `.spec`'s schema, as the CRD declares it; `specOf` reads the spec by it (each field's default when absent). */
const SPEC_SCHEMA = {
  type: 'object',
  properties: {
    greeting: { type: 'string', description: 'What to say.', default: '', maxLength: 256 },
{{child_fields}}  },
};

/**
 * `.spec` as SPEC_SCHEMA says, every field a string: `{spec}`, a field absent (or null, or blank) its default; or
 * `{error}`, the message naming the field that is not a string (the schema let it through, or no API server checked it).
 */
export function specOf(input) {
  const given = parentJson(input)?.spec ?? {};
  if (typeof given !== 'object' || Array.isArray(given)) return { error: `spec must be an object, not ${JSON.stringify(given)}` };
  const spec = {};
  for (const [field, schema] of Object.entries(SPEC_SCHEMA.properties)) {
    const value = given[field];
    if (value == null || (typeof value === 'string' && value.trim() === '')) spec[field] = schema.default;
    else if (typeof value !== 'string') return { error: `spec.${field} must be a string, not ${JSON.stringify(value)}` };
    else spec[field] = value;
  }
  return { spec };
}

/** The kind of the child. */
export const childKind = () => kindRef('{{child_group}}', '{{child_version}}', '{{Child}}');

/** The child's name: its parent's{{child_suffix}}. */
export const childName = (parent) => `${parent}{{child_suffix}}`;

/** The {{Child}} `name` a parent of `spec` wants: only the fields this guest decides (the host adds the namespace, the owner and its label). */
export function childBody(name, spec) {
{{child_body}}}

export function describe() {
  return kindSpec({
    group: GROUP,
    version: '{{version}}',
    kind: KIND,
    plural: '{{kind}}s',
    namespaced: true,
    profile: 'progressing',
    aspects: [CONFIGURATION_VALID, CHILD_READY],
    reasons: new Registry('{{kind}}')
      .common([CONFIGURATION_INVALID, RESOURCE_NOT_OWNED])
      .owned([
        [GREETING_MISSING, 'ConfigurationValid=False (and Stalled=True): spec.greeting is empty.'],
        [CHILD_REFUSED, "ChildReady=False: the API server refused the host's apply of the {{Child}}."],
      ])
      .build(),
    stalls: [stalls(CONFIGURATION_INVALID), stalls(GREETING_MISSING)],
    pause: pause('{{group}}/reconcile', 'skip'),
    specSchema: stringify(SPEC_SCHEMA),
  });
}

/** The kinds it changes: the host watches them (a written kind is readable without declaring it in `reads`) and needs RBAC on them (`reconciler-host rbac`). */
export const writes = () => [childKind()];

export function reconcile(input, facts) {
  const verdict = new VerdictBuilder();
  const changes = [];
  if (input.paused) return { verdict: verdict.build(), changes };
  const { spec, error } = specOf(input);
  if (error !== undefined) {
    verdict.aspect(fails(CONFIGURATION_VALID, CONFIGURATION_INVALID, error)).stall(CONFIGURATION_INVALID, error);
    return { verdict: verdict.build(), changes };
  }
  if (spec.greeting === '') {
    const message = 'spec.greeting is empty: say something';
    verdict.aspect(fails(CONFIGURATION_VALID, GREETING_MISSING, message)).stall(GREETING_MISSING, message);
    return { verdict: verdict.build(), changes };
  }
  verdict.aspect(ok(CONFIGURATION_VALID, `Says ${debug(spec.greeting)}`));

  const meta = input.parent.meta;
  const name = childName(meta.name);
  const what = `{{Child}} ${name}`;
  // An object of that name another controls is never taken over.
  const existing = read(() => facts.get(childKind(), meta.namespace, name)).value;
  const why = existing && Parent.of(KIND, meta).refusal('{{Child}}', name, existing.meta);
  if (why !== undefined) {
    verdict.aspect(fails(CHILD_READY, RESOURCE_NOT_OWNED, why));
    return { verdict: verdict.build(), changes };
  }
  changes.push(apply(childKind(), name, childBody(name, spec)));
  // True only once the host made it: what holds it (a plan awaiting approval, mode observe) or refused it says so instead.
  const state = facts.changeState(childKind(), meta.namespace, name);
  verdict.aspect(changeAspect(CHILD_READY, what, state, CHILD_REFUSED, () => ok(CHILD_READY, `${what} is applied as asked`)));
  return { verdict: verdict.build(), changes };
}
