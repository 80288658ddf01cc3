// The SDK's conventions, as the Rust SDK's tests hold them (guests/sdk/src).

import assert from 'node:assert/strict';
import test from 'node:test';

import {
  Parent, Registry, VerdictBuilder, acrossNamespaces, bound, changeAspect, checkImage, chooseImage, debug, exportGuest,
  fails, kindRef, kindSpec, keepsContract, notWithdrawn, ok, metadataOnly, reads, readsOptional, stalls, unknown, withFields,
  read, readFailure, remove, repository, withdraw, within, workloadCondition, MAX_MESSAGE_BYTES, PARENT_GATES,
  TRUNCATION_MARKER, ADOPT_ANNOTATION,
} from './index.js';

test('a later aspect replaces one of the same type; the first stall and the smallest requeue win', () => {
  const v = new VerdictBuilder()
    .aspect(ok('WorkloadReady'))
    .aspect(fails('WorkloadReady', 'PodNotReady', '1/2'))
    .stall('ImageRequired', 'a').stall('ClusterNotFound', 'b')
    .requeueAfter(120).requeueAfter(30).requeueAfter(300)
    .field('url', null).field('a', { z: 1, b: 2 })
    .build();
  assert.deepEqual(v.aspects, [{ type: 'WorkloadReady', status: 'false', reason: 'PodNotReady', message: '1/2' }]);
  assert.equal(v.stall.reason, 'ImageRequired');
  assert.equal(v.requeueAfterSeconds, 30);
  assert.equal(v.statusFields, '{"a":{"b":2,"z":1},"url":null}');
});

test('a registry lists the common reasons once, then the owned ones', () => {
  const reasons = new Registry('me').common(['SecretNotFound', 'SecretNotFound']).owned([['Mine', 'Only mine.']]).build();
  assert.deepEqual(reasons.map((r) => [r.name, r.owner]), [['SecretNotFound', 'common'], ['Mine', 'me']]);
  assert.throws(() => new Registry('me').common(['NotAReason']), /not a common reason/);
});

test('a read names no fields (the whole object) unless withFields names them', () => {
  const pod = kindRef('', 'v1', 'Pod');
  assert.deepEqual(reads(pod), { kind: pod, optional: false, crossNamespace: false, fields: undefined });
  assert.deepEqual(readsOptional(pod), { kind: pod, optional: true, crossNamespace: false, fields: undefined });
  const paths = ['status.phase', 'spec.nodeName', 'data.tls\\.crt'];
  const read = withFields(reads(pod), paths);
  assert.deepEqual(read, { kind: pod, optional: false, crossNamespace: false, fields: ['status.phase', 'spec.nodeName', 'data.tls\\.crt'] });
  // A copy: the caller's array changed later changes no declaration.
  paths.push('spec.containers');
  assert.equal(read.fields.length, 3);
  // The read's other fields are kept, either way round.
  assert.deepEqual(withFields(acrossNamespaces(readsOptional(pod)), []), { ...acrossNamespaces(readsOptional(pod)), fields: [] });
  assert.deepEqual(acrossNamespaces(withFields(reads(pod), ['spec'])).fields, ['spec']);
  // Metadata and typed facts only: no field named.
  assert.deepEqual(metadataOnly(reads(pod)), { ...reads(pod), fields: [] });
});

test('withFields refuses what is not a read and a list of field paths, naming the argument', () => {
  const read = reads(kindRef('', 'v1', 'Pod'));
  assert.throws(() => withFields(read, 'spec.replicas'), {
    name: 'TypeError',
    message: `withFields(read, fields): fields must be an array of non-empty strings (field paths such as 'spec.replicas'), got "spec.replicas"`,
  });
  assert.throws(() => withFields(read), /^TypeError: withFields\(read, fields\): fields must be an array of non-empty strings .*, got undefined$/);
  assert.throws(() => withFields(read, ['spec', '']), {
    name: 'TypeError',
    message: `withFields(read, fields): fields[1] must be a non-empty string (a field path such as 'spec.replicas'), got ""`,
  });
  assert.throws(() => withFields(read, [['spec']]), /withFields\(read, fields\): fields\[0\] must be a non-empty string .*, got \["spec"\]/);
  assert.throws(() => withFields(kindRef('', 'v1', 'Pod'), ['spec']), /withFields\(read, fields\): read must be a read declaration/);
  assert.throws(() => withFields(['spec'], read), /withFields\(read, fields\): read must be a read declaration .*, got \["spec"\]/);
});

test('images: repository, prefixes of whole components, the default held to the list', () => {
  assert.equal(repository('ghcr.io/a/b:1@sha256:0123456789abcdef0123456789abcdef'), 'ghcr.io/a/b');
  // The distribution reference grammar, as the Rust SDK's tests hold it.
  for (const bad of ['ghcr.io/fyannk/x:::@@', 'ghcr.io/fyannk/UPPER:1', 'ghcr.io/fyannk/x@sha256:nothex',
    'ghcr.io/fyannk/../../evil:1', 'ghcr.io/fyannk/a..b:1', 'ghcr.io/fyannk/x:.tag', 'ghcr.io:/x:1', 'UPPER/x:1']) {
    assert.equal(repository(bad), undefined, bad);
  }
  for (const good of ['busybox', 'localhost:5000/a/b_c__d.e-f---g:v1.2-rc_3', 'Registry.Example.com/a:Latest']) {
    assert.notEqual(repository(good), undefined, good);
  }
  assert.equal(repository('registry:5000/a/b:2'), 'registry:5000/a/b');
  assert.equal(repository('ghcr.io/a b'), undefined);
  assert.ok(within('ghcr.io/fyannk/agent', 'ghcr.io/fyannk'));
  assert.ok(!within('ghcr.io/fyannkx/agent', 'ghcr.io/fyannk'));
  assert.deepEqual(chooseImage(undefined, ' ', 'defaultImage', []), {});
  const refused = chooseImage(undefined, 'docker.io/x/y:1', 'defaultImage', ['ghcr.io/fyannk/']);
  assert.equal(refused.refusal.reason, 'ImageNotAllowed');
  assert.ok(refused.refusal.message.startsWith(`the operator's defaultImage "docker.io/x/y:1"`));
  assert.equal(checkImage('a b', 'spec.image', []).refusal.message, 'spec.image "a b" is not an image reference');
});

test('a read error is a value, anything else thrown is a bug', () => {
  const error = { tag: 'forbidden', val: 'no list on secrets' };
  const failing = () => { const e = new Error('x'); e.payload = error; throw e; };
  assert.deepEqual(read(failing), { error });
  assert.equal(readFailure('Secret s', error), 'could not read Secret s: no list on secrets');
  assert.throws(() => read(() => { throw new TypeError('bug'); }), TypeError);
});

test('the workload fact becomes a condition naming the Deployment once', () => {
  const meta = { deletion: undefined };
  const ready = workloadCondition('W', 'a', { value: { meta, state: { tag: 'ready' }, readyReplicas: 2, desiredReplicas: 2 } });
  assert.equal(ready.message, 'Deployment a: 2/2 replicas Ready on the current template');
  const crash = workloadCondition('W', 'a', { value: { meta, state: { tag: 'crash-loop-back-off', val: 'back-off' } } });
  assert.deepEqual([crash.status, crash.reason, crash.message], ['false', 'CrashLoopBackOff', 'Deployment a: back-off']);
  assert.equal(workloadCondition('W', 'a', {}).message, 'Deployment a is not observed yet');
});

test('ownership names both controllers', () => {
  const parent = Parent.of('EvidenceAgent', { namespace: 'ns', name: 'a', uid: 'me' });
  const child = { controller: { kind: 'Deployment', name: 'legacy', uid: 'other' } };
  assert.equal(parent.refusal('Service', 'a-agent', child), 'Service a-agent exists and is controlled by Deployment legacy, not by EvidenceAgent a');
  assert.equal(parent.refusal('Service', 'a-agent', { controller: { uid: 'me' } }), undefined);
});

test('an object nothing controls is adopted only with consent naming the parent', () => {
  const parent = Parent.of('EvidenceAgent', { namespace: 'ns', name: 'a', uid: 'me' });
  assert.equal(
    parent.refusal('Service', 'a-agent', { annotations: [] }),
    'Service a-agent exists and nothing controls it: the operator takes over an object only when whoever may change it consents, with the annotation reconciler.dev/adopt: EvidenceAgent/a; annotate it so, or delete it',
  );
  assert.notEqual(parent.refusal('Service', 'a-agent', { annotations: [[ADOPT_ANNOTATION, 'EvidenceAgent/b']] }), undefined);
  assert.equal(parent.refusal('Service', 'a-agent', { annotations: [[ADOPT_ANNOTATION, 'EvidenceAgent/a']] }), undefined);
  assert.equal(parent.foreign('Service', 'a-agent', { annotations: [] }), undefined);
});

test("messages: Rust's debug quoting and the host's bound", () => {
  assert.equal(debug('a"b\n'), '"a\\"b\\n"');
  assert.equal(bound('a\nb'), 'a b');
  const long = bound('é'.repeat(2000));
  assert.ok(new TextEncoder().encode(long).length <= MAX_MESSAGE_BYTES);
  assert.ok(long.endsWith(TRUNCATION_MARKER));
});

test('an exported guest defaults its spec and derives evaluate from reconcile', () => {
  const guest = exportGuest({
    describe: () => ({ group: 'g', version: 'v1', kind: 'K', plural: 'ks', aspects: ['A'] }),
    reconcile: () => ({ verdict: new VerdictBuilder().aspect(ok('A')).build(), changes: [] }),
  }, {});
  assert.deepEqual(kindSpec({}).printerColumns, []);
  assert.equal(guest.describe().profile, 'progressing');
  assert.deepEqual(guest.writes(), []);
  assert.equal(guest.evaluate({}).aspects[0].reason, 'AsExpected');
});

test('a parent may set both gates unless the guest says otherwise', () => {
  const logic = {
    describe: () => ({ group: 'g', version: 'v1', kind: 'K', plural: 'ks', aspects: ['A'] }),
    reconcile: () => ({ verdict: new VerdictBuilder().build(), changes: [] }),
  };
  assert.deepEqual(exportGuest(logic, {}).parentGates(), ['mode', 'approval']);
  assert.deepEqual(PARENT_GATES, ['mode', 'approval']);
  // The default is a fresh list each call: the frozen constant is never handed out.
  assert.ok(Object.isFrozen(PARENT_GATES));
  assert.ok(!Object.isFrozen(exportGuest(logic, {}).parentGates()));
  assert.deepEqual(exportGuest({ ...logic, parentGates: () => [] }, {}).parentGates(), []);
  assert.deepEqual(exportGuest({ ...logic, parentGates: () => ['mode'] }, {}).parentGates(), ['mode']);
});

test('a withdrawal is a delete with the Event the host raises once it is made', () => {
  const binding = kindRef('rbac.authorization.k8s.io', 'v1', 'RoleBinding');
  const event = { type: 'normal', reason: 'RoleBindingDeleted', message: 'deleted RoleBinding grant at expiry' };
  const change = withdraw(binding, 'grant', 'u-1', event);
  assert.deepEqual(change, { tag: 'withdraw', val: { object: remove(binding, 'grant', 'u-1').val, event } });
  assert.deepEqual(withdraw(binding, 'grant', 'u-1'), {
    tag: 'withdraw',
    val: { object: { kind: binding, name: 'grant', uid: 'u-1' }, event: undefined },
  });
  assert.equal(withdraw(binding, 'grant', 'u-1', { ...event, message: 42 }).val.event.message, '42');
});

test('an aspect claims a child only once the host made its change, else says what holds it', () => {
  const made = () => ok('ChildReady', 'ConfigMap w-config holds the data');
  const say = (state) => changeAspect('ChildReady', 'ConfigMap w-config', state, 'ChildRefused', made);
  assert.equal(say({ tag: 'made' }).status, 'true');
  assert.deepEqual(
    [say({ tag: 'held', val: 'awaiting-approval' }).reason, say({ tag: 'held', val: 'denied' }).reason],
    ['AwaitingApproval', 'ChangesDenied'],
  );
  assert.equal(say({ tag: 'held', val: 'denied' }).message, 'ConfigMap w-config is not made: a reviewer denied its change');
  assert.equal(say(undefined).status, 'unknown');
  const refused = { tag: 'refused', val: { code: 422, reason: 'Invalid', message: 'bad' } };
  assert.deepEqual([say(refused).reason, say(refused).message], ['ChildRefused', 'ConfigMap w-config was refused by the API server (422 Invalid): bad']);
  assert.equal(notWithdrawn('Route a', { tag: 'withdrawn' }), undefined);
  assert.equal(notWithdrawn('Route a', refused), 'Route a is still there: the API server refused its deletion (422 Invalid: bad)');
  assert.equal(notWithdrawn('Route a', undefined), 'Route a is still there: its deletion is not made yet');
});

test("a verdict is held to the contract the host checks, as the Rust SDK's keeps_contract holds it", () => {
  const spec = {
    group: 'g', version: 'v1', kind: 'K', plural: 'ks', aspects: ['A', 'B'], advisory: ['Adv'],
    reasons: new Registry('k').owned([['Mine', 'Mine.']]).build(), stalls: [stalls('Mine')],
  };
  const keeps = (build, paused = false) => keepsContract(spec, build(new VerdictBuilder()).build(), paused);
  keeps((v) => v.aspect(ok('A', 'a')).aspect(ok('B', 'b')));
  // The aspects after the first not True may be left out (not evaluated), or given.
  keeps((v) => v.aspect(fails('A', 'Mine', 'no')).stall('Mine', 'no'));
  keeps((v) => v.aspect(unknown('A', 'Reconciling', 'later')).aspect(ok('B', 'b')));
  keeps((v) => v, true);
  const breaks = (build, pattern) => assert.throws(() => keeps(build), pattern);
  breaks((v) => v.aspect(ok('B', 'b')).aspect(ok('A', 'a')), /aspects in declared order/);
  breaks((v) => v.aspect(ok('A', 'a')), /every aspect up to the first not True/);
  breaks((v) => v.aspect(fails('A', 'Yours', 'no')), /unregistered reason Yours/);
  breaks((v) => v.aspect(ok('A')).aspect(ok('B', 'b')), /A has no message/);
  breaks((v) => v.aspect(ok('A', 'a')).aspect(ok('B', 'b')).advisory(ok('C', 'c')), /C is not advisory/);
  breaks((v) => v.aspect(ok('A', 'a')).aspect(ok('B', 'b')).event('normal', 'Yours', 'e'), /unregistered event Yours/);
  breaks((v) => v.aspect(ok('A', 'a')).aspect(ok('B', 'b')).field('conditions', []), /conditions is the host's/);
  breaks((v) => v.aspect(fails('A', 'Mine', 'no')).stall('Reconciling', 'no'), /stall Reconciling not declared/);
});

test('index.d.ts declares every name index.js exports, and no other', async () => {
  const { readFile } = await import('node:fs/promises');
  const exported = Object.keys(await import('./index.js')).sort();
  const dts = await readFile(new URL('./index.d.ts', import.meta.url), 'utf8');
  const declared = [...dts.matchAll(/^export (?:declare )?(?:const|function|class) (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual([...new Set(declared)].sort(), exported);
});
