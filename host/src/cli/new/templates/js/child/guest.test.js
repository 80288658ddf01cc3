// The guest's logic under node, with the SDK's mock facts: no host, no cluster.

import assert from 'node:assert/strict';
import test from 'node:test';

import { keepsContract } from '@reconciler-host/guest-sdk';
import { MockFacts, evaluation } from '@reconciler-host/guest-sdk/mock';
import {
  CHILD_READY, CHILD_REFUSED, GREETING_MISSING, childKind, childName, describe, reconcile,
} from '../src/guest.js';

const parent = (spec) => ({
  apiVersion: '{{group}}/{{version}}',
  kind: '{{Kind}}',
  metadata: { name: 'hello', namespace: 'default', uid: 'u1', generation: 1 },
  spec,
});

/** One pass over `spec`, the change asked for the child in `state` (`facts.changeState`), its verdict held to the contract. */
const pass = (spec, facts = new MockFacts(0)) => {
  const r = reconcile(evaluation(parent(spec)), facts.facts());
  keepsContract(describe(), r.verdict);
  return r;
};
const inState = (state) => new MockFacts(0).withChangeState(childKind(), 'default', childName('hello'), state);

test('a greeting asks for the child and is ready once it is made', () => {
  // The host has not acted on the change yet.
  const asked = pass({ greeting: 'hi' }, inState(undefined));
  assert.equal(asked.changes.length, 1, JSON.stringify(asked.changes));
  const [{ tag, val: applied }] = asked.changes;
  assert.equal(tag, 'apply');
  assert.deepEqual([applied.kind, applied.name], [childKind(), childName('hello')]);
  const body = JSON.parse(applied.body);
  assert.equal(body.kind, '{{Child}}');
  assert.match(applied.body, /"hi"/);
  // Not made yet: ChildReady says it is asked for, not that it is there.
  assert.equal(asked.verdict.aspects[1].status, 'unknown');

  const made = pass({ greeting: 'hi' }, inState({ tag: 'made' })).verdict;
  assert.equal(made.aspects[1].type, CHILD_READY);
  assert.equal(made.aspects[1].status, 'true');
});

test('a child held or refused is not Ready, and says why', () => {
  const held = pass({ greeting: 'hi' }, inState({ tag: 'held', val: 'awaiting-approval' })).verdict.aspects[1];
  assert.deepEqual([held.status, held.reason], ['false', 'AwaitingApproval']);
  const refused = { tag: 'refused', val: { code: 422, reason: 'Invalid', message: 'bad' } };
  const c = pass({ greeting: 'hi' }, inState(refused)).verdict.aspects[1];
  assert.deepEqual([c.status, c.reason], ['false', CHILD_REFUSED]);
  assert.match(c.message, /was refused by the API server \(422 Invalid\): bad/);
});

test('a child another object controls is not taken over', () => {
  const theirs = new MockFacts(0).withObject(childKind(), {
    metadata: {
      name: childName('hello'), namespace: 'default', uid: 'c1',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Other', name: 'x', uid: 'someone-else', controller: true }],
    },
  });
  const r = pass({ greeting: 'hi' }, theirs);
  assert.deepEqual(r.changes, []);
  assert.equal(r.verdict.aspects[1].reason, 'ResourceNotOwned');
});

test('no greeting stalls and asks for nothing', () => {
  const r = pass({});
  assert.deepEqual(r.changes, []);
  assert.equal(r.verdict.aspects[0].reason, GREETING_MISSING);
  assert.equal(r.verdict.stall?.reason, GREETING_MISSING);
});

test('a greeting that is not text is named', () => {
  const r = pass({ greeting: 5 });
  assert.deepEqual(r.changes, []);
  assert.equal(r.verdict.aspects[0].reason, 'ConfigurationInvalid');
  assert.equal(r.verdict.aspects[0].message, 'spec.greeting must be a string, not 5');
});
