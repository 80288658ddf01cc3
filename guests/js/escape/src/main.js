// A JavaScript guest that tries to reach outside the pass, as the parent's
// `spec.attempt` says, and reports what it got in its one aspect's message
// (the JavaScript twin of guests/testing/escape). The engine's own APIs
// (Date, performance, crypto, Math.random, console, fetch) and, where
// JavaScript has none, the WASI interfaces themselves, imported directly
// (wit/escape.wit):
//
// clock: Date.now(); monotonic: a busy wait of `spec.ms` on
// performance.now(); sleep: a pollable of `spec.seconds` on the monotonic
// clock, blocked on; random: Math.random and crypto.getRandomValues;
// read-file: the preopened directories (JavaScript has no file API: a
// descriptor would come from there); connect: a TCP socket to 127.0.0.1
// port `spec.port`; fetch: fetch() of `spec.url`; env: the environment and
// the arguments; stderr: `spec.bytes` bytes of console.error, then a
// throw; throw; loop; undeclared-field: `spec.clusterIP` of the first
// Service of its namespace, a field its read of Services (which names
// `spec.ports` only) does not declare. No name lookup: componentize-js
// 0.23's bindings of `wasi:sockets/ip-name-lookup` fail before calling the
// host ("Network is not defined"); the Rust and Python escape guests try
// one.

import * as facts from 'reconciler:guest/facts@0.6.0';
import { getArguments, getEnvironment } from 'wasi:cli/environment@0.2.12';
import { now, subscribeDuration } from 'wasi:clocks/monotonic-clock@0.2.12';
import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';
import { instanceNetwork } from 'wasi:sockets/instance-network@0.2.12';
import { createTcpSocket } from 'wasi:sockets/tcp-create-socket@0.2.12';
import {
  VerdictBuilder, debug, exportGuest, kindRef, kindSpec, ok, owned, parentJson, read, reads, withFields,
} from '../../sdk/index.js';

const SERVICE = kindRef('', 'v1', 'Service');

/** A WASI error code (`access-denied`), or the exception's text. */
const refusal = (e) => (e && e.payload !== undefined ? String(e.payload) : String(e));

/** A `read-error` as the Rust guest's `{e:?}` writes it: `ReadError::NotDeclared("...")`. */
const readErrorDebug = (error) => {
  const name = error.tag.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join('');
  return `ReadError::${name}(${debug(error.val)})`;
};

function attempt(spec, parent, facts) {
  switch (spec.attempt) {
    case 'clock':
      return `wall ${Date.now()} ${new Date().toISOString()}`;
    case 'monotonic': {
      const start = performance.now();
      while (performance.now() - start < (spec.ms ?? 1000)) { /* wait for time to pass */ }
      return `waited ${performance.now() - start}`;
    }
    case 'sleep': {
      const start = now();
      subscribeDuration(BigInt(spec.seconds ?? 5) * 1_000_000_000n).block();
      return `slept ${(now() - start) / 1_000_000_000n}s`;
    }
    case 'random': {
      const bytes = new Uint8Array(8);
      crypto.getRandomValues(bytes);
      return `random ${Math.random()} ${Array.from(bytes).join(',')}`;
    }
    case 'read-file':
      return `preopened directories: ${getDirectories().length}`;
    case 'connect':
      try {
        const socket = createTcpSocket('ipv4');
        socket.startConnect(instanceNetwork(), { tag: 'ipv4', val: { port: spec.port, address: [127, 0, 0, 1] } });
        return 'connect started';
      } catch (e) {
        return `connect refused: ${refusal(e)}`;
      }
    case 'fetch':
      try {
        return `fetch gave ${typeof fetch(spec.url)}`;
      } catch (e) {
        return `fetch refused: ${refusal(e)}`;
      }
    case 'env':
      return `env ${JSON.stringify(getEnvironment())} args ${JSON.stringify(getArguments())}`;
    case 'stderr':
      console.error('e'.repeat(spec.bytes ?? 100));
      throw new Error(`after ${spec.bytes ?? 100} bytes of stderr`);
    case 'throw':
      throw new Error('told to throw');
    case 'loop':
      for (;;) { /* spin */ }
    case 'undeclared-field': {
      const namespace = parent.metadata?.namespace;
      const listed = read(() => facts.list(SERVICE, typeof namespace === 'string' ? namespace : '', []));
      if (listed.error) return `list refused: ${readErrorDebug(listed.error)}`;
      if (listed.value.length === 0) return 'no Service';
      let service = null;
      try {
        service = JSON.parse(listed.value[0].json);
      } catch { /* as absent */ }
      const ip = service?.spec?.clusterIP;
      return `clusterIP ${typeof ip === 'string' ? ip : 'absent'}`;
    }
    default:
      return `nothing to attempt: ${spec.attempt}`;
  }
}

const guest = {
  describe: () => kindSpec({
    group: 'testing.reconciler.dev',
    version: 'v1',
    kind: 'JsEscape',
    plural: 'jsescapes',
    aspects: ['Escaped'],
    reasons: [owned('escape', 'Attempted', 'The guest tried what it was told.')],
    reads: [withFields(reads(SERVICE), ['spec.ports'])],
  }),
  reconcile(input, facts) {
    const parent = parentJson(input) || {};
    const spec = parent.spec || {};
    return { verdict: new VerdictBuilder().aspect(ok('Escaped', attempt(spec, parent, facts))).build(), changes: [] };
  },
};

export const reconciler = exportGuest(guest, facts);
