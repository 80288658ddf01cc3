// A mock of the host's facts for a guest's tests under node (`node --test`),
// the JavaScript twin of the Rust SDK's `mock::MockFacts`: what a test adds
// is found, anything else reads as absent, a read made to fail throws the
// `read-error` the host would answer, and every read is recorded.
//
//   const facts = new MockFacts(NOW)
//     .withSecret('team-a', 'db', ['username', 'password'])
//     .withObject(kindRef('postgresql.cnpg.io', 'v1', 'Cluster'), clusterJson);
//   const { verdict, changes } = guest.reconcile(evaluation(parentJson), facts.facts());
//   assert.deepEqual(facts.reads, ['secret team-a/db', ...]);

import { kindRef } from './index.js';

/**
 * Metadata with a name and namespace, the UID `uid-<namespace>-<name>`,
 * generation 1, everything else empty (the Rust mock's `meta`).
 */
export function meta(namespace, name) {
  return {
    name,
    namespace,
    uid: `uid-${namespace}-${name}`,
    generation: 1n,
    labels: [],
    annotations: [],
    controller: undefined,
    creation: undefined,
    deletion: undefined,
  };
}

/**
 * A `reconciler:guest/types` ObjectMeta read from a Kubernetes object's
 * JSON as the host reads it (the Rust mock's `object_meta`): what
 * `metadata` leaves out is `meta`'s.
 */
export function objectMeta(json) {
  const m = (json && json.metadata) || {};
  const owner = (m.ownerReferences || []).find((o) => o.controller === true);
  const base = meta(m.namespace || '', m.name || '');
  return {
    ...base,
    uid: m.uid || base.uid,
    generation: BigInt(m.generation ?? 1),
    labels: Object.entries(m.labels || {}),
    annotations: Object.entries(m.annotations || {}),
    controller: owner && { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid },
    creation: m.creationTimestamp ? timestamp(m.creationTimestamp) : undefined,
    deletion: m.deletionTimestamp ? timestamp(m.deletionTimestamp) : undefined,
  };
}

/** A `timestamp` from RFC 3339 text or seconds since the epoch. */
export function timestamp(at) {
  if (typeof at === 'number') return { seconds: BigInt(at), nanos: 0 };
  const ms = Date.parse(at);
  if (Number.isNaN(ms)) throw new Error(`not a timestamp: ${at}`);
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
}

/** A `reconciler:guest/types` Object: the metadata and the JSON text. */
export const object = (json) => ({ meta: objectMeta(json), json: JSON.stringify(json) });

/** A Deployment `name` whose `replicas` Pods are Ready on the current template (the Rust mock's `workload_ready`). */
export function workloadReady(namespace, name, replicas) {
  return {
    meta: meta(namespace, name),
    generationObserved: true,
    desiredReplicas: replicas,
    updatedReplicas: replicas,
    readyReplicas: replicas,
    availableReplicas: replicas,
    progressDeadlineExceeded: false,
    replicaFailure: undefined,
    pods: [],
    state: { tag: 'ready' },
  };
}

/** The same Deployment in another `state` (`{tag: 'crash-loop-back-off', val: 'message'}` ...). */
export const workloadIn = (namespace, name, state) => ({ ...workloadReady(namespace, name, 1), readyReplicas: 0, availableReplicas: 0, state });

/** The evaluation a guest's `reconcile` takes: the parent's JSON, the settings (`{name: value}`), paused or not. */
export function evaluation(parent, settings = {}, paused = false) {
  return { parent: object(parent), settings: Object.entries(settings), paused };
}

const key = (kind) => `${kind.group}/${kind.version}/${kind.kind}`;
const at = (namespace, name) => `${namespace}/${name}`;

/** The error a facts function throws for a `read-error`, as componentize-js throws it. */
export function readError(tag, text) {
  const e = new Error(`${tag}: ${text}`);
  e.payload = { tag, val: text };
  return e;
}

/** The facts of one test, as the builder says; `facts()` is what a guest's `reconcile` is handed. */
export class MockFacts {
  /** `now`: seconds since the epoch, or RFC 3339 text. */
  constructor(now = 0) {
    this.now = timestamp(now);
    this.workloads = new Map();
    this.secrets = new Map();
    this.configMaps = new Map();
    this.objects = new Map();
    this.children = new Map();
    this.availability = new Map();
    this.exposures = new Map();
    this.clusterRoles = new Map();
    this.certificates = new Map();
    this.jobs = new Map();
    this.lastApplies = new Map();
    this.lastApplyTimes = new Map();
    this.changeStates = new Map();
    this.networkPolicies = new Map();
    this.egressPolicies = new Map();
    this.nodePodCidrs = { tag: 'known', val: [] };
    this.failures = new Map();
    /** Every read made, in order: `secret ns/name`, `get <group>/<version>/<kind> ns/name` ... */
    this.reads = [];
  }

  /** A Deployment's `workload-fact` (its `meta`, `state`, replicas, Pods). */
  withWorkload(namespace, name, fact) {
    this.workloads.set(at(namespace, name), fact);
    return this;
  }
  /** A Secret holding `keys` (its metadata from `json`, when given). */
  withSecret(namespace, name, keys, json = { metadata: { name, namespace } }, type = 'Opaque') {
    this.secrets.set(at(namespace, name), { meta: objectMeta(json), type, keys: [...keys] });
    return this;
  }
  withConfigMap(namespace, name, keys, json = { metadata: { name, namespace } }) {
    this.configMaps.set(at(namespace, name), { meta: objectMeta(json), keys: [...keys] });
    return this;
  }
  /** An object of `kind` (a kindRef) for `get` and `list`, from its JSON. */
  withObject(kind, json) {
    const m = json.metadata || {};
    this.objects.set(`${key(kind)} ${at(m.namespace || '', m.name)}`, { kind, object: object(json) });
    return this;
  }
  /** A child of the parent, for `children(kind)`. */
  withChild(kind, json) {
    const list = this.children.get(key(kind)) || [];
    list.push(object(json));
    this.children.set(key(kind), list);
    return this;
  }
  /** An optional API's availability in a namespace ('' for every one): 'not-served' or 'forbidden'. */
  withAvailability(kind, namespace, availability) {
    this.availability.set(`${key(kind)} ${namespace}`, availability);
    return this;
  }
  withExposure(kind, namespace, name, fact) {
    this.exposures.set(`${kind} ${at(namespace, name)}`, fact);
    return this;
  }
  withClusterRole(name, json = { metadata: { name } }) {
    this.clusterRoles.set(name, objectMeta(json));
    return this;
  }
  withCertificates(namespace, name, key_, bundle) {
    this.certificates.set(`${at(namespace, name)} ${key_}`, bundle);
    return this;
  }
  withJob(namespace, name, fact) {
    this.jobs.set(at(namespace, name), fact);
    return this;
  }
  withNetworkPolicy(namespace, fact) {
    this.networkPolicies.set(namespace, [...(this.networkPolicies.get(namespace) || []), fact]);
    return this;
  }
  withEgressPolicy(namespace, fact) {
    this.egressPolicies.set(namespace, [...(this.egressPolicies.get(namespace) || []), fact]);
    return this;
  }
  withNodePodCidrs(fact) {
    this.nodePodCidrs = fact;
    return this;
  }
  withLastApply(kind, namespace, name, outcome, when = undefined) {
    this.lastApplies.set(`${key(kind)} ${at(namespace, name)}`, outcome);
    if (when !== undefined) this.lastApplyTimes.set(`${key(kind)} ${at(namespace, name)}`, timestamp(when));
    return this;
  }
  /**
   * What became of the change asked for a child (`facts.changeState`;
   * undefined: not acted on yet); a child not given answers `{tag: 'made'}`,
   * as if a host made every change.
   */
  withChangeState(kind, namespace, name, state) {
    this.changeStates.set(`${key(kind)} ${at(namespace, name)}`, state);
    return this;
  }
  /**
   * A read that fails (`failed`, or the tag given): `what` is `workload`,
   * `secret`, `configmap`, `clusterrole`, `exposure`, `certificates`,
   * `job`, or a kind's name for `get` and `list`; `name` the object's name
   * (for `list` and `children`, the kind's name again).
   */
  failing(what, name, tag = 'failed') {
    this.failures.set(`${what} ${name}`, tag);
    return this;
  }

  #read(line, what, name, answer) {
    this.reads.push(line);
    const tag = this.failures.get(`${what} ${name}`);
    if (tag !== undefined) throw readError(tag, `${what} ${name} is made to fail`);
    return answer();
  }

  /** The facts interface a guest's logic reads (`reconciler:guest/facts@0.5.0`). */
  facts() {
    const m = this;
    const unavailable = (kind, namespace) => m.availability.get(`${key(kind)} ${namespace}`) ?? m.availability.get(`${key(kind)} `);
    const refuse = (kind, namespace) => {
      const a = unavailable(kind, namespace);
      if (a !== undefined) throw readError(a, `${key(kind)} is ${a} in ${JSON.stringify(namespace)}`);
    };
    return {
      now: () => m.now,
      workload: (ns, name) => m.#read(`workload ${at(ns, name)}`, 'workload', name, () => m.workloads.get(at(ns, name))),
      secret: (ns, name) => m.#read(`secret ${at(ns, name)}`, 'secret', name, () => m.secrets.get(at(ns, name))),
      configMap: (ns, name) => m.#read(`configmap ${at(ns, name)}`, 'configmap', name, () => m.configMaps.get(at(ns, name))),
      get: (kind, ns, name) => m.#read(`get ${key(kind)} ${at(ns, name)}`, kind.kind, name, () => {
        refuse(kind, ns);
        const found = m.objects.get(`${key(kind)} ${at(ns, name)}`);
        return found && found.object;
      }),
      list: (kind, ns, selector) => m.#read(`list ${key(kind)} ${ns} ${JSON.stringify(selector)}`, 'list', kind.kind, () => {
        refuse(kind, ns);
        return [...m.objects.values()]
          .filter((o) => key(o.kind) === key(kind) && (ns === '' || o.object.meta.namespace === ns))
          .filter((o) => selector.every(([k, v]) => o.object.meta.labels.some(([lk, lv]) => lk === k && lv === v)))
          .map((o) => o.object)
          .sort((a, b) => (a.meta.name < b.meta.name ? -1 : a.meta.name > b.meta.name ? 1 : 0));
      }),
      apiAvailability: (kind, ns) => unavailable(kind, ns) ?? 'available',
      networkPolicies: (ns) => m.#read(`network-policies ${ns}`, 'networkpolicies', ns, () => m.networkPolicies.get(ns) || []),
      egressPolicies: (ns) => m.#read(`egress-policies ${ns}`, 'egresspolicies', ns, () => m.egressPolicies.get(ns) || []),
      nodePodCidrs: () => m.nodePodCidrs,
      exposure: (kind, ns, name) => m.#read(`exposure ${kind} ${at(ns, name)}`, 'exposure', name, () => m.exposures.get(`${kind} ${at(ns, name)}`)),
      clusterRole: (name) => m.#read(`clusterrole ${name}`, 'clusterrole', name, () => m.clusterRoles.get(name)),
      secretCertificates: (ns, name, k) => m.#read(`certificates ${at(ns, name)} ${k}`, 'certificates', name, () => m.certificates.get(`${at(ns, name)} ${k}`)),
      lastApply: (kind, ns, name) => m.lastApplies.get(`${key(kind)} ${at(ns, name)}`),
      lastApplyTime: (kind, ns, name) => m.lastApplyTimes.get(`${key(kind)} ${at(ns, name)}`),
      changeState: (kind, ns, name) => {
        m.reads.push(`change-state ${key(kind)} ${at(ns, name)}`);
        const k = `${key(kind)} ${at(ns, name)}`;
        return m.changeStates.has(k) ? m.changeStates.get(k) : { tag: 'made' };
      },
      children: (kind) => m.#read(`children ${key(kind)}`, 'children', kind.kind, () => [...(m.children.get(key(kind)) || [])]),
      job: (ns, name) => m.#read(`job ${at(ns, name)}`, 'job', name, () => m.jobs.get(at(ns, name))),
    };
  }
}

export { kindRef };
