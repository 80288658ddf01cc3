// A guest against the SDK's declarations, type-checked by `npx tsc` (`make
// test-js`), never run: the declarations must accept what a guest writes
// and refuse what it must not.

import * as sdk from './index.js';
import type { Facts, Evaluation } from './index.js';

const SECRET = sdk.kindRef('', 'v1', 'Secret');

export const guest: sdk.GuestLogic = {
  describe: () => ({
    group: 'examples.reconciler.dev',
    version: 'v1alpha1',
    kind: 'Typed',
    plural: 'typeds',
    aspects: ['KeysPresent'],
    reasons: new sdk.Registry('typed').common(['SecretNotFound']).owned([['Odd', 'An odd reason.']]).build(),
    reads: [
      sdk.reads(SECRET),
      sdk.withFields(sdk.readsOptional(sdk.kindRef('', 'v1', 'Service')), ['spec.ports', 'metadata.labels']),
      sdk.acrossNamespaces(sdk.withFields(sdk.reads(sdk.kindRef('', 'v1', 'ConfigMap')), [])),
    ],
    stalls: [sdk.stalls(sdk.CONFIGURATION_INVALID)],
    pause: sdk.pause('examples.reconciler.dev/reconcile', 'skip'),
  }),
  reconcile(input: Evaluation, facts: Facts) {
    const verdict = new sdk.VerdictBuilder();
    const name: string = sdk.parentJson(input)?.spec?.secretName ?? '';
    const found = sdk.read(() => facts.secret(input.parent.meta.namespace, name));
    if (found.error !== undefined) {
      const tag: 'not-declared' | 'not-served' | 'forbidden' | 'failed' = found.error.tag;
      verdict.aspect(sdk.unknown('KeysPresent', sdk.RECONCILING, sdk.readFailure(`Secret ${name} (${tag})`, found.error)));
      verdict.requeueAfter(sdk.RETRY_SECONDS);
    } else if (found.value === undefined) {
      verdict.aspect(sdk.fails('KeysPresent', 'SecretNotFound', `Secret ${name} does not exist`));
    } else {
      const keys: string[] = found.value.keys;
      verdict.aspect(sdk.ok('KeysPresent', keys.join(', '))).field('checkedKeys', keys.length);
    }
    const generation: bigint = input.parent.meta.generation;
    verdict.event('normal', 'Checked', `generation ${generation}`);
    const changes = [
      sdk.apply(sdk.kindRef('', 'v1', 'ConfigMap'), 'a', { data: { k: 'v' } }),
      sdk.generate('creds', [['password', 32]]),
    ];
    changes.push(
      sdk.withdraw(sdk.kindRef('rbac.authorization.k8s.io', 'v1', 'RoleBinding'), 'grant', 'u-1', {
        type: 'normal',
        reason: 'RoleBindingDeleted',
        message: 'deleted RoleBinding grant at expiry',
      }),
      sdk.withdraw(sdk.kindRef('route.openshift.io', 'v1', 'Route'), 'console', 'u-2'),
    );
    return { verdict: verdict.build(), changes };
  },
  parentGates: () => ['mode'],
};

// What the declarations refuse.
// @ts-expect-error: a condition status is 'true', 'false' or 'unknown'
sdk.condition('Ready', 'True', 'AsExpected');
// @ts-expect-error: a kind spec needs its aspects
sdk.kindSpec({ group: 'g', version: 'v1', kind: 'K', plural: 'ks' });
// @ts-expect-error: a generated key has a length
sdk.generate('creds', ['password']);
// @ts-expect-error: a gate is 'mode' or 'approval'
export const ungated: sdk.GuestLogic = { ...guest, parentGates: () => ['pause'] };
// @ts-expect-error: a withdrawal's event is a kind event, not a reason
sdk.withdraw(SECRET, 'a', 'u', 'Deleted');
// @ts-expect-error: the fields a read names are a list of paths, not one path
sdk.withFields(sdk.reads(SECRET), 'spec.ports');
// @ts-expect-error: withFields takes a read declaration, not a kind
sdk.withFields(SECRET, ['spec.ports']);
const named: string[] | undefined = sdk.withFields(sdk.reads(SECRET), ['type']).fields;
export { named };
declare const facts: Facts;
// @ts-expect-error: facts.secret takes a namespace and a name
facts.secret('only-a-name');
