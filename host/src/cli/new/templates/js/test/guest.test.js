// The guest's logic under node, with the SDK's mock facts: no host, no cluster.

import assert from 'node:assert/strict';
import test from 'node:test';

import { MockFacts, evaluation } from '@reconciler-host/guest-sdk/mock';
import { CONFIGURATION_VALID, GREETING_MISSING, reconcile } from '../src/guest.js';

const parent = (spec) => ({
  apiVersion: '{{group}}/{{version}}',
  kind: '{{Kind}}',
  metadata: { name: 'hello', namespace: 'default', generation: 1 },
  spec,
});

const pass = (spec) => reconcile(evaluation(parent(spec)), new MockFacts('2026-01-01T00:00:00Z').facts()).verdict;

test('a greeting is valid', () => {
  const [c] = pass({ greeting: 'hi' }).aspects;
  assert.equal(c.type, CONFIGURATION_VALID);
  assert.equal(c.status, 'true');
  assert.equal(c.message, 'Says "hi"');
});

test('a greeting that is not text is named', () => {
  const verdict = pass({ greeting: 5 });
  assert.equal(verdict.aspects[0].reason, 'ConfigurationInvalid');
  assert.match(verdict.aspects[0].message, /spec\.greeting/);
});

test('no greeting stalls', () => {
  const verdict = pass({});
  assert.equal(verdict.aspects[0].reason, GREETING_MISSING);
  assert.equal(verdict.stall?.reason, GREETING_MISSING);
});
