// The JavaScript EvidenceAgent's logic under node against the SDK's mock
// facts, as the Rust guest's tests hold it (guests/evidenceagent/tests):
// its fixtures, with the Rust goldens, are run on the built component by
// `make fixtures`.

import assert from 'node:assert/strict';
import test from 'node:test';

import { MockFacts, evaluation, objectMeta, workloadIn, workloadReady } from '../sdk/mock.js';
import { kindRef } from '../sdk/index.js';
import * as agent from './src/agent.js';

const NS = 'team-a';
const OPERATOR = { defaultImage: 'ghcr.io/fyannk/evidence-agent:1.0', allowedImageRepositories: 'ghcr.io/fyannk/' };
const CLUSTER = kindRef('postgresql.cnpg.io', 'v1', 'Cluster');
const OBJECT_STORE = kindRef('barmancloud.cnpg.io', 'v1', 'ObjectStore');
const SERVICE = kindRef('', 'v1', 'Service');
const CONFIG_MAP = kindRef('', 'v1', 'ConfigMap');

const parent = (spec = { cluster: { name: 'pg' } }, name = 'a') => ({
  apiVersion: 'pgtoolbox.fyannk.dev/v1alpha1',
  kind: 'EvidenceAgent',
  metadata: { name, namespace: NS, uid: 'uid-team-a-a', generation: 1 },
  spec,
});

const selector = (key) => ({ name: 'aws-creds', key });

const owned = { apiVersion: 'pgtoolbox.fyannk.dev/v1alpha1', kind: 'EvidenceAgent', name: 'a', uid: 'uid-team-a-a', controller: true };

/** The agent's Deployment as the operator made it (the agent controls it), in `fact`'s state. */
const ownedWorkload = (fact) => ({
  ...fact,
  meta: objectMeta({ metadata: { name: 'a-evidence-agent', namespace: NS, generation: 1, ownerReferences: [owned] } }),
});

/** A healthy agent whose serving certificate the operator issued. */
function healthy() {
  return new MockFacts('2026-11-29T12:00:00Z')
    .withObject(CLUSTER, {
      metadata: { name: 'pg', namespace: NS },
      spec: { instances: 3, plugins: [{ name: 'barman-cloud.cloudnative-pg.io', isWALArchiver: true, parameters: { barmanObjectName: 'backups' } }] },
    })
    .withObject(OBJECT_STORE, {
      metadata: { name: 'backups', namespace: NS },
      spec: {
        configuration: {
          destinationPath: 's3://evidence-backups/pg',
          s3Credentials: { accessKeyId: selector('ACCESS_KEY_ID'), secretAccessKey: selector('ACCESS_SECRET_KEY'), region: selector('REGION') },
        },
      },
    })
    .withSecret(NS, 'aws-creds', ['ACCESS_KEY_ID', 'ACCESS_SECRET_KEY', 'REGION'])
    .withSecret(NS, 'a-serving-cert', ['ca.crt', 'tls.crt', 'tls.key'], {
      metadata: {
        name: 'a-serving-cert', namespace: NS, ownerReferences: [owned],
        annotations: { 'reconciler.dev/certificate-expiry': '2027-11-29T12:00:00Z' },
      },
    })
    .withWorkload(NS, 'a-evidence-agent', ownedWorkload(workloadReady(NS, 'a-evidence-agent', 1)))
    .withObject(SERVICE, { metadata: { name: 'a-evidence-agent', namespace: NS, ownerReferences: [owned] } });
}

const reconcile = (world, p = parent(), settings = OPERATOR, paused = false) =>
  agent.reconcile(evaluation(p, settings, paused), world.facts());

const aspect = (verdict, type) => verdict.aspects.find((c) => c.type === type);
const summary = (change) => `${change.tag} ${change.val.kind ? change.val.kind.kind + ' ' : ''}${change.val.name}`;

test('a healthy agent is valid, asks for its certificate, Service and Deployment, and copies the workload', () => {
  const world = healthy();
  const { verdict, changes } = reconcile(world);
  assert.deepEqual(aspect(verdict, 'ConfigurationValid'), {
    type: 'ConfigurationValid', status: 'true', reason: 'AsExpected',
    message: 'Cluster pg archives to ObjectStore backups (s3://evidence-backups/pg); image ghcr.io/fyannk/evidence-agent:1.0',
  });
  assert.equal(aspect(verdict, 'WorkloadReady').status, 'true');
  assert.equal(verdict.stall, undefined);
  assert.deepEqual(changes.map(summary), ['certificate a-serving-cert', 'apply Service a-evidence-agent', 'apply Deployment a-evidence-agent']);
  assert.deepEqual(changes[0].val.dnsNames, ['a-evidence-agent', 'a-evidence-agent.team-a', 'a-evidence-agent.team-a.svc', 'a-evidence-agent.team-a.svc.cluster.local']);
  assert.ok(world.reads.includes('get postgresql.cnpg.io/v1/Cluster team-a/pg'), world.reads.join('\n'));
});

test("a Deployment's crash loop is the workload's reason, its message naming the Deployment once", () => {
  const world = healthy().withWorkload(NS, 'a-evidence-agent', ownedWorkload(workloadIn(NS, 'a-evidence-agent', { tag: 'crash-loop-back-off', val: 'Pod p container c: back-off' })));
  const c = aspect(reconcile(world).verdict, 'WorkloadReady');
  assert.deepEqual([c.status, c.reason, c.message], ['false', 'CrashLoopBackOff', 'Deployment a-evidence-agent: Pod p container c: back-off']);
});

test('a missing Cluster stalls and renders nothing; a failed read of it is retried', () => {
  const world = healthy();
  world.objects.delete('postgresql.cnpg.io/v1/Cluster team-a/pg');
  let r = reconcile(world);
  assert.deepEqual(r.verdict.stall, { reason: 'ClusterNotFound', message: 'Cluster pg does not exist in team-a' });
  assert.deepEqual(r.changes, []);
  r = reconcile(healthy().failing('Cluster', 'pg'));
  const c = aspect(r.verdict, 'ConfigurationValid');
  assert.deepEqual([c.status, c.reason], ['unknown', 'Reconciling']);
  assert.match(c.message, /^could not read Cluster pg: /);
  assert.equal(r.verdict.requeueAfterSeconds, 30);
  assert.deepEqual(r.changes, []);
});

test('an ObjectStore API the host may not read stalls naming it', () => {
  const r = reconcile(healthy().withAvailability(OBJECT_STORE, NS, 'forbidden'));
  assert.equal(r.verdict.stall.reason, 'ObjectStoreAPIUnavailable');
  assert.match(r.verdict.stall.message, /the operator may not read ObjectStores \(barmancloud\.cnpg\.io\/v1\) in team-a/);
});

test('a failed read of the children defers the deletion, the rest is asked for', () => {
  const world = healthy()
    .withChild(CONFIG_MAP, { metadata: { name: 'a-service-ca', namespace: NS, uid: 'uid-bundle' } })
    .failing('children', 'ConfigMap');
  const r = reconcile(world);
  assert.equal(r.verdict.requeueAfterSeconds, 30);
  assert.deepEqual(r.changes.map((c) => c.tag), ['certificate', 'apply', 'apply']);
  const deleted = reconcile(healthy().withChild(CONFIG_MAP, { metadata: { name: 'a-service-ca', namespace: NS, uid: 'uid-bundle' } })).changes;
  assert.deepEqual(deleted[0], { tag: 'delete', val: { kind: CONFIG_MAP, name: 'a-service-ca', uid: 'uid-bundle' } });
});

test('settings and names the Rust guest refuses, refused with its words', () => {
  let r = reconcile(healthy(), parent(), { ...OPERATOR, servingCertificate: 'cert-manager' });
  assert.equal(r.verdict.stall.reason, 'ConfigurationInvalid');
  assert.match(r.verdict.stall.message, /^the operator setting servingCertificate is "cert-manager"/);
  r = reconcile(healthy(), parent(undefined, 'a'.repeat(49)));
  assert.match(r.verdict.stall.message, /which is not a DNS-1035 label/);
  r = reconcile(healthy(), parent({ cluster: { name: 'pg' }, image: 'docker.io/evil/agent:1' }));
  assert.equal(r.verdict.stall.reason, 'ImageNotAllowed');
});

test('a paused pass evaluates nothing and asks for nothing', () => {
  const world = healthy();
  const r = reconcile(world, parent(), OPERATOR, true);
  assert.deepEqual(r.verdict.aspects, []);
  assert.deepEqual(r.changes, []);
  assert.deepEqual(world.reads, []);
});
