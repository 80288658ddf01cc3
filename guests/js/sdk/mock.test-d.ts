// A guest's test against the mock's declarations, type-checked by `npx tsc`
// (`make test-js`), never run: the declarations must accept what a test
// writes and refuse what it must not.

import * as sdk from './index.js';
import {
  MockFacts, evaluation, exposureKindRef, kindRef, meta, object, objectMeta, readError, timestamp, workloadIn,
  workloadReady,
} from './mock.js';
import type { Facts } from './index.js';

const JOB = kindRef('batch', 'v1', 'Job');
const SERVICE = kindRef('', 'v1', 'Service');
const selector = { matchLabels: [] as Array<[string, string]>, matchExpressions: [] };

const world: MockFacts = new MockFacts('2026-11-29T12:00:00Z')
  .withWorkload('ns', 'a', workloadIn('ns', 'a', { tag: 'crash-loop-back-off', val: 'back-off' }))
  .withWorkload('ns', 'b', { ...workloadReady('ns', 'b', 2), meta: objectMeta({ metadata: { name: 'b', namespace: 'ns', generation: 2 } }) })
  .withSecret('ns', 'db', ['username'])
  .withSecret('ns', 'tls', ['tls.crt'], { metadata: { name: 'tls', namespace: 'ns', annotations: { a: 'b' } } }, 'kubernetes.io/tls')
  .withSecretFact({ meta: meta('ns', 'creds'), type: 'Opaque', keys: ['password'] })
  .withConfigMap('ns', 'cas', ['ca.crt'])
  .withObject(kindRef('postgresql.cnpg.io', 'v1', 'Cluster'), { metadata: { name: 'pg', namespace: 'ns' }, spec: { instances: 3 } })
  .withChild(SERVICE, { metadata: { name: 'a', namespace: 'ns', uid: 'u1' } })
  .withAvailability(exposureKindRef('route'), 'ns', 'forbidden')
  .withDirectGet(exposureKindRef('route'), 'ns')
  .withExposure('route', 'ns', 'console', { meta: meta('ns', 'console'), kind: 'route', hostnames: ['a.example.com'], admission: { tag: 'pending' } })
  .withClusterRole('view')
  .withCertificates('ns', 'pg-ca', 'ca.crt', { meta: meta('ns', 'pg-ca'), hasKey: true, certificates: [{ sha256: '00', pemBytes: 1 }] })
  .withJob('ns', 'register', {
    meta: meta('ns', 'register'), active: 1, succeeded: 0, failed: 0, conditions: [], state: { tag: 'running' },
  })
  .withNetworkPolicy('ns', { meta: meta('ns', 'in'), podSelector: selector, isolatesIngress: true, ingress: [] })
  .withEgressPolicy('ns', { meta: meta('ns', 'out'), podSelector: selector, isolatesEgress: true, egress: [] })
  .withNodePodCidrs({ tag: 'forbidden', val: 'no list on nodes' })
  .withLastApply(JOB, 'ns', 'a', { tag: 'refused', val: { code: 422, reason: 'Invalid', message: 'bad' } }, 12)
  .withLastApplyTime(JOB, 'ns', 'b', '2026-11-29T12:00:00Z')
  .withChangeState(JOB, 'ns', 'a', { tag: 'held', val: 'awaiting-approval' })
  .withChangeState(JOB, 'ns', 'b', undefined)
  .withController('a', { apiVersion: 'apps/v1', kind: 'Deployment', name: 'legacy', uid: 'u-legacy' })
  .failing('secret', 'db')
  .failing('Cluster', 'pg', 'forbidden');

const facts: Facts = world.facts();
const reads: string[] = world.reads;
const seconds: bigint = timestamp(12).seconds + world.now.seconds;
const json: string = object({ metadata: { name: 'a' } }).json;
const input: sdk.Evaluation = evaluation({ metadata: { name: 'a', namespace: 'ns' }, spec: {} }, { defaultImage: 'x' }, true);
const tag: 'not-declared' | 'not-served' | 'forbidden' | 'failed' = readError('failed', 'the cache is not synced').payload.tag;
export const used = { facts, reads, seconds, json, input, tag };

// What the declarations refuse.
// @ts-expect-error: meta takes a namespace and a name; an object's JSON is objectMeta's
meta({ metadata: { name: 'a' } });
// @ts-expect-error: the keys are a list
world.withSecret('ns', 'db', 'username');
// @ts-expect-error: an object the mock files under its name has one
world.withObject(SERVICE, { metadata: { namespace: 'ns' } });
// @ts-expect-error: a kind is a KindRef, not its name
world.withChild('Service', { metadata: { name: 'a' } });
// @ts-expect-error: a Job's state is a variant
world.withJob('ns', 'a', { meta: meta('ns', 'a'), active: 0, succeeded: 0, failed: 0, conditions: [], state: 'running' });
// @ts-expect-error: a change held says what holds it
world.withChangeState(JOB, 'ns', 'a', { tag: 'held', val: 'later' });
// @ts-expect-error: settings are {name: value}, not pairs
evaluation({ metadata: { name: 'a' } }, [['defaultImage', 'x']]);
// @ts-expect-error: an availability is the contract's
world.withAvailability(SERVICE, 'ns', 'NotServed');
// @ts-expect-error: a read-error tag is the contract's
world.failing('secret', 'db', 'broken');
// @ts-expect-error: an exposure kind is the contract's
exposureKindRef('Route');
