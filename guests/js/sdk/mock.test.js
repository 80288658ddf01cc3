// The mock of the facts, as the Rust SDK's tests hold its twin
// (guests/sdk/src/mock.rs), and its argument checks.

import assert from 'node:assert/strict';
import test from 'node:test';

import {
  MockFacts, evaluation, exposureKindRef, kindRef, meta, object, objectMeta, readError, timestamp, workloadIn,
  workloadReady,
} from './mock.js';

const JOB = kindRef('batch', 'v1', 'Job');
const SERVICE = kindRef('', 'v1', 'Service');
const LEGACY = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'legacy', uid: 'uid-legacy' };
const running = (namespace, name) => ({
  meta: meta(namespace, name), active: 1, succeeded: 0, failed: 0, start: undefined, completion: undefined,
  conditions: [], failedPod: undefined, state: { tag: 'running' },
});

test("meta(namespace, name) is the Rust mock's meta; objectMeta reads an object's JSON over it", () => {
  assert.deepEqual(meta('ns', 'a'), {
    name: 'a', namespace: 'ns', uid: 'uid-ns-a', generation: 1n, labels: [], annotations: [],
    controller: undefined, creation: undefined, deletion: undefined,
  });
  assert.deepEqual(objectMeta({ metadata: { name: 'a', namespace: 'ns' } }), meta('ns', 'a'));
  const m = objectMeta({
    metadata: {
      name: 'a', namespace: 'ns', uid: 'u1', generation: 3, labels: { x: 'y' }, creationTimestamp: '2026-11-29T12:00:00Z',
      ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'p', uid: 'u0', controller: true }],
    },
  });
  assert.deepEqual([m.uid, m.generation, m.labels, m.controller.uid], ['u1', 3n, [['x', 'y']], 'u0']);
  assert.equal(m.creation.seconds, 1_795_953_600n);
  assert.deepEqual(object({ metadata: { name: 'a' } }).meta, meta('', 'a'));
  assert.deepEqual(timestamp(12), { seconds: 12n, nanos: 0 });
});

test('a Secret fact keeps its metadata; a Secret without a bundle answers its key, no certificate', () => {
  const m = { ...meta('ns', 's'), uid: 'reissued' };
  const facts = new MockFacts(0).withSecretFact({ meta: m, type: 'kubernetes.io/tls', keys: ['tls.crt'] })
    .withSecret('ns', 'plain', ['ca.crt']).facts();
  assert.equal(facts.secret('ns', 's').meta.uid, 'reissued');
  assert.deepEqual(facts.secretCertificates('ns', 'plain', 'ca.crt'), { meta: meta('ns', 'plain'), hasKey: true, certificates: [] });
  assert.equal(facts.secretCertificates('ns', 'plain', 'tls.crt').hasKey, false);
  assert.equal(facts.secretCertificates('ns', 'none', 'ca.crt'), undefined);
});

test('a controller is given only where there is none', () => {
  const own = { ...workloadReady('ns', 'a', 1), meta: { ...meta('ns', 'a'), controller: { ...LEGACY, uid: 'uid-mine' } } };
  const world = new MockFacts(0)
    .withWorkload('ns', 'a', own)
    .withConfigMap('ns', 'a', [])
    .withObject(SERVICE, { metadata: { name: 'a', namespace: 'ns' } })
    .withJob('ns', 'a', running('ns', 'a'))
    .withController('a', LEGACY);
  const facts = world.facts();
  assert.equal(facts.workload('ns', 'a').meta.controller.uid, 'uid-mine');
  assert.equal(facts.configMap('ns', 'a').meta.controller.uid, 'uid-legacy');
  assert.equal(facts.get(SERVICE, 'ns', 'a').meta.controller.uid, 'uid-legacy');
  assert.equal(facts.list(SERVICE, 'ns', [])[0].meta.controller.uid, 'uid-legacy');
  assert.equal(facts.job('ns', 'a').meta.controller.uid, 'uid-legacy');
  // What the test gave is left as it was.
  assert.equal(world.jobs.get('ns/a').meta.controller, undefined);
});

test('a forbidden kind read past the cache: get and exposure answer, list stays refused', () => {
  const route = exposureKindRef('route');
  assert.deepEqual(route, kindRef('route.openshift.io', 'v1', 'Route'));
  assert.deepEqual(exposureKindRef('http-route'), kindRef('gateway.networking.k8s.io', 'v1', 'HTTPRoute'));
  const console_ = { meta: meta('team-b', 'console'), kind: 'route', hostnames: ['a.example.com'], admission: { tag: 'pending' } };
  const refused = new MockFacts(0).withAvailability(route, 'team-b', 'forbidden').withExposure('route', 'team-b', 'console', console_);
  assert.throws(() => refused.facts().exposure('route', 'team-b', 'console'), (e) => e.payload.tag === 'forbidden');
  const direct = refused.withDirectGet(route, 'team-b').facts();
  assert.equal(direct.exposure('route', 'team-b', 'console'), console_);
  assert.equal(direct.get(route, 'team-b', 'console'), undefined);
  assert.throws(() => direct.list(route, 'team-b', []), (e) => e.payload.tag === 'forbidden');
  assert.equal(direct.apiAvailability(route, 'team-b'), 'forbidden');
  const available = new MockFacts(0).withAvailability(route, 'team-b', 'available').facts();
  assert.deepEqual([available.apiAvailability(route, 'team-b'), available.list(route, 'team-b', [])], ['available', []]);
});

test('the last apply, its time and the change state are answered as given', () => {
  const refusal = { tag: 'refused', val: { code: 422, reason: 'Invalid', message: 'bad' } };
  const facts = new MockFacts(0)
    .withLastApply(JOB, 'ns', 'a', refusal)
    .withLastApplyTime(JOB, 'ns', 'a', 12)
    .withLastApplyTime(JOB, 'ns', 'b', '2026-11-29T12:00:00Z')
    .withChangeState(JOB, 'ns', 'a', undefined)
    .facts();
  assert.equal(facts.lastApply(JOB, 'ns', 'a'), refusal);
  assert.deepEqual(facts.lastApplyTime(JOB, 'ns', 'a'), { seconds: 12n, nanos: 0 });
  assert.equal(facts.lastApplyTime(JOB, 'ns', 'b').seconds, 1_795_953_600n);
  assert.equal(facts.lastApplyTime(JOB, 'ns', 'c'), undefined);
  assert.equal(facts.changeState(JOB, 'ns', 'a'), undefined);
  assert.deepEqual(facts.changeState(JOB, 'ns', 'b'), { tag: 'made' });
});

test("the children of a kind are served, never Secrets' (as the host)", () => {
  const facts = new MockFacts(0).withChild(SERVICE, { metadata: { name: 'a', namespace: 'ns' } }).facts();
  assert.equal(facts.children(SERVICE)[0].meta.uid, 'uid-ns-a');
  assert.throws(() => facts.children(kindRef('', 'v1', 'Secret')), (e) => e.payload.tag === 'forbidden');
});

test('each function names the argument that is wrong, its shape and what it got', async () => {
  const m = new MockFacts(0);
  const refusals = [
    [() => meta({ metadata: { name: 'a' } }), `meta(namespace, name): namespace must be a string (an object's JSON is objectMeta(json)'s), got {"metadata":{"name":"a"}}`],
    [() => meta('ns'), `meta(namespace, name): name must be a string (an object's JSON is objectMeta(json)'s), got undefined`],
    [() => objectMeta('a'), `objectMeta(json): json must be a Kubernetes object's JSON ({metadata: {name, namespace, ...}, ...}), got "a"`],
    [() => objectMeta({ metadata: { name: 'a', generation: '2' } }), 'objectMeta(json): json.metadata.generation must be an integer, or undefined, got "2"'],
    [() => object({ metadata: { labels: { a: 1 } } }), 'object(json): json.metadata.labels.a must be a string, got 1'],
    [() => timestamp('soon'), 'timestamp(at): at must be seconds since the epoch (an integer) or RFC 3339 text, got "soon"'],
    [() => workloadReady('ns', 'a', -1), 'workloadReady(namespace, name, replicas): replicas must be a non-negative integer, got -1'],
    [() => workloadIn('ns', 'a', 'crash'), /^workloadIn\(namespace, name, state\): state must be a WorkloadState \(\{tag: 'ready'\}.*, got "crash"$/],
    [() => workloadIn('ns', 'a', { tag: 'pod-not-ready' }), 'workloadIn(namespace, name, state): state.val must be a string, got undefined'],
    [() => evaluation({ metadata: { name: 'a' } }, [['k', 'v']]), 'evaluation(parent, settings, paused): settings must be an object of strings ({name: value}, as `--setting Kind.name=value`), got [["k","v"]]'],
    [() => evaluation({ metadata: { name: 'a' } }, {}, 'yes'), 'evaluation(parent, settings, paused): paused must be a boolean, got "yes"'],
    [() => evaluation(undefined), /^evaluation\(parent, settings, paused\): parent must be a Kubernetes object's JSON .*, got undefined$/],
    [() => readError('gone', 'x'), `readError(tag, text): tag must be 'not-declared' | 'not-served' | 'forbidden' | 'failed', got "gone"`],
    [() => exposureKindRef('Route'), `exposureKindRef(kind): kind must be 'route' | 'ingress' | 'http-route', got "Route"`],
    [() => new MockFacts(1.5), 'new MockFacts(now): now must be seconds since the epoch (an integer) or RFC 3339 text, got 1.5'],
    [() => m.withWorkload('ns', 'a', { state: { tag: 'ready' } }), /^MockFacts\.withWorkload\(namespace, name, fact\): fact\.meta must be an ObjectMeta .*, got undefined$/],
    [() => m.withSecret('ns', 'a'), 'MockFacts.withSecret(namespace, name, keys, json, type): keys must be an array of strings, got undefined'],
    [() => m.withSecret('ns', 'a', ['k'], undefined, 5), 'MockFacts.withSecret(namespace, name, keys, json, type): type must be a string, got 5'],
    [() => m.withSecretFact({ meta: meta('ns', 'a'), keys: [] }), 'MockFacts.withSecretFact(fact): fact.type must be a string, got undefined'],
    [() => m.withConfigMap('ns', 'a', 'ca.crt'), 'MockFacts.withConfigMap(namespace, name, keys, json): keys must be an array of strings, got "ca.crt"'],
    [() => m.withObject(SERVICE, { metadata: { namespace: 'ns' } }), 'MockFacts.withObject(kind, json): json.metadata.name must be a string, got undefined'],
    [() => m.withObject('Service', { metadata: { name: 'a' } }), /^MockFacts\.withObject\(kind, json\): kind must be a KindRef .*, got "Service"$/],
    [() => m.withChild({ group: '', version: 'v1' }, { metadata: { name: 'a' } }), 'MockFacts.withChild(kind, json): kind.kind must be a string, got undefined'],
    [() => m.withAvailability(SERVICE, 'ns', 'NotServed'), `MockFacts.withAvailability(kind, namespace, availability): availability must be 'available' | 'not-served' | 'forbidden', got "NotServed"`],
    [() => m.withDirectGet(SERVICE), 'MockFacts.withDirectGet(kind, namespace): namespace must be a string, got undefined'],
    [() => m.withExposure('route', 'ns', 'a', { meta: meta('ns', 'a'), kind: 'route', hostnames: 'a.example.com' }), 'MockFacts.withExposure(kind, namespace, name, fact): fact.hostnames must be an array of strings, got "a.example.com"'],
    [() => m.withClusterRole(['view']), 'MockFacts.withClusterRole(name, json): name must be a string, got ["view"]'],
    [() => m.withCertificates('ns', 'a', 'ca.crt', { meta: meta('ns', 'a'), hasKey: 'yes', certificates: [] }), 'MockFacts.withCertificates(namespace, name, key, bundle): bundle.hasKey must be a boolean, got "yes"'],
    [() => m.withJob('ns', 'a'), /^MockFacts\.withJob\(namespace, name, fact\): fact must be a JobFact \(\{meta, .*state, \.\.\.\}\), got undefined$/],
    [() => m.withJob('ns', 'a', { ...running('ns', 'a'), state: 'running' }), /^MockFacts\.withJob\(namespace, name, fact\): fact\.state must be a JobState .*, got "running"$/],
    [() => m.withNetworkPolicy('ns', { meta: meta('ns', 'a') }), /^MockFacts\.withNetworkPolicy\(namespace, fact\): fact\.podSelector must be a LabelSelectorFact .*, got undefined$/],
    [() => m.withEgressPolicy('ns', { meta: meta('ns', 'a'), podSelector: { matchLabels: [], matchExpressions: [] }, isolatesEgress: true }), /^MockFacts\.withEgressPolicy\(namespace, fact\): fact\.egress must be an array of EgressRuleFact .*, got undefined$/],
    [() => m.withNodePodCidrs({ tag: 'too-many', val: '3' }), 'MockFacts.withNodePodCidrs(fact): fact.val must be a non-negative integer, got "3"'],
    [() => m.withLastApply(JOB, 'ns', 'a', 'applied'), /^MockFacts\.withLastApply\(kind, namespace, name, outcome, when\): outcome must be an ApplyOutcome .*, got "applied"$/],
    [() => m.withLastApply(JOB, 'ns', 'a', { tag: 'applied' }, 'later'), 'MockFacts.withLastApply(kind, namespace, name, outcome, when): when must be seconds since the epoch (an integer) or RFC 3339 text, or undefined, got "later"'],
    [() => m.withLastApplyTime(JOB, 'ns', 'a', 12n), 'MockFacts.withLastApplyTime(kind, namespace, name, at): at must be seconds since the epoch (an integer) or RFC 3339 text, got 12n'],
    [() => m.withChangeState(JOB, 'ns', 'a', { tag: 'held', val: 'later' }), `MockFacts.withChangeState(kind, namespace, name, state): state.val must be 'observe' | 'awaiting-approval' | 'denied' | 'pass-failed', got "later"`],
    [() => m.withChangeState(JOB, 'ns', 'a', { tag: 'refused', val: { code: 422 } }), 'MockFacts.withChangeState(kind, namespace, name, state): state.val.reason must be a string, got undefined'],
    [() => m.withController('a', { ...LEGACY, uid: undefined }), 'MockFacts.withController(name, controller): controller.uid must be a string, got undefined'],
    [() => m.failing('secret', 'a', 'broken'), `MockFacts.failing(what, name, tag): tag must be 'not-declared' | 'not-served' | 'forbidden' | 'failed', got "broken"`],
  ];
  for (const [call, message] of refusals) {
    assert.throws(call, (e) => {
      assert.ok(e instanceof TypeError, e.stack);
      if (typeof message === 'string') assert.equal(e.message, message);
      else assert.match(e.message, message);
      return true;
    });
  }
  // Every method of the mock, and every function of the module, is among them.
  const named = new Set(refusals.map(([call]) => /(?:m\.|new |\(\) => )(\w+)\(/.exec(call.toString())[1]));
  const methods = Object.getOwnPropertyNames(MockFacts.prototype).filter((n) => n.startsWith('with') || n === 'failing');
  const functions = Object.keys(await import('./mock.js')).filter((n) => n !== 'kindRef');
  assert.deepEqual([...methods, ...functions].filter((n) => !named.has(n)), []);
});

test('a value shown in a message is short, its type plain', () => {
  assert.throws(() => new MockFacts(0).withSecret('ns', 'a', new Set(['k'])), /keys must be an array of strings, got a Set$/);
  assert.throws(() => new MockFacts(0).withSecret('ns', 'a', () => ['k']), /got a function$/);
  assert.throws(() => new MockFacts(0).withSecret('ns', 'a', 'k'.repeat(500)), /got "k{96}\.\.\.$/);
});

test('mock.d.ts declares every name mock.js exports, and no other', async () => {
  const { readFile } = await import('node:fs/promises');
  const exported = Object.keys(await import('./mock.js')).sort();
  const dts = await readFile(new URL('./mock.d.ts', import.meta.url), 'utf8');
  const declared = [...dts.matchAll(/^export (?:declare )?(?:const|function|class) (\w+)|^export \{ (\w+) \}/gm)].map((m) => m[1] ?? m[2]);
  assert.deepEqual([...new Set(declared)].sort(), exported);
});
