// A mock of the host's facts for a guest's tests under node (`node --test`),
// the JavaScript twin of the Rust SDK's `mock::MockFacts`: what a test adds
// is found, anything else reads as absent, a read made to fail throws the
// `read-error` the host would answer, and every read is recorded. Types and
// the shape of each argument: mock.d.ts. Every function checks its
// arguments and throws a TypeError naming the one that is wrong.
//
//   const facts = new MockFacts(NOW)
//     .withSecret('team-a', 'db', ['username', 'password'])
//     .withObject(kindRef('postgresql.cnpg.io', 'v1', 'Cluster'), clusterJson);
//   const { verdict, changes } = guest.reconcile(evaluation(parentJson), facts.facts());
//   assert.deepEqual(facts.reads, ['secret team-a/db', ...]);

import { kindRef } from './index.js';

// ---- argument checks ---------------------------------------------------------
// A shape is what a value must be, in words (`what`), and `fault(value,
// path)`: undefined when the value has the shape, else the first part that
// has not, as [its path, what it must be, what it is].

const isRecord = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const firstFault = (items, fault) => {
  for (const [i, item] of items.entries()) {
    const found = fault(item, i);
    if (found !== undefined) return found;
  }
  return undefined;
};
const shape = (what, test) => ({ what, fault: (v, path) => (test(v) ? undefined : [path, what, v]) });
const optional = (s) => {
  const what = `${s.what}, or undefined`;
  return {
    what,
    fault: (v, path) => {
      const found = v === undefined ? undefined : s.fault(v, path);
      return found && found[0] === path ? [path, what, v] : found;
    },
  };
};
const oneOf = (...names) => shape(names.map((n) => `'${n}'`).join(' | '), (v) => names.includes(v));
const arrayOf = (what, item) => ({
  what,
  fault: (v, path) => (Array.isArray(v) ? firstFault(v, (x, i) => item.fault(x, `${path}[${i}]`)) : [path, what, v]),
});
const recordOf = (what, value) => ({
  what,
  fault: (v, path) => (isRecord(v) ? firstFault(Object.entries(v), ([k, x]) => value.fault(x, `${path}.${k}`)) : [path, what, v]),
});
const record = (what, fields) => ({
  what,
  fault: (v, path) => (isRecord(v) ? firstFault(Object.entries(fields), ([k, s]) => s.fault(v[k], `${path}.${k}`)) : [path, what, v]),
});
/** A variant: `{tag}`, or `{tag, val}` where `cases[tag]` is the val's shape. */
const variant = (what, cases) => ({
  what,
  fault: (v, path) => {
    if (!isRecord(v) || !Object.hasOwn(cases, v.tag)) return [path, what, v];
    return cases[v.tag] === undefined ? undefined : cases[v.tag].fault(v.val, `${path}.val`);
  },
});

const STRING = shape('a string', (v) => typeof v === 'string');
const BOOLEAN = shape('a boolean', (v) => typeof v === 'boolean');
const COUNT = shape('a non-negative integer', (v) => Number.isInteger(v) && v >= 0);
const STRINGS = arrayOf('an array of strings', STRING);
const isTimeText = (v) => typeof v === 'string' && !Number.isNaN(Date.parse(v));
const RFC3339 = shape('RFC 3339 text', isTimeText);
const TIME = shape('seconds since the epoch (an integer) or RFC 3339 text', (v) => Number.isInteger(v) || isTimeText(v));
const KIND_REF = record("a KindRef ({group, version, kind}: kindRef('apps', 'v1', 'Deployment'))", {
  group: STRING, version: STRING, kind: STRING,
});
const META = record("an ObjectMeta ({name, namespace, uid, ...}: meta(namespace, name))", { name: STRING, namespace: STRING });
/** An object's JSON whose `metadata` is `metadata` (the object's name of shape `name`). */
const objectJson = (metadata, name) => record("a Kubernetes object's JSON ({metadata: {name, namespace, ...}, ...})", {
  metadata: metadata(record(`an object ({name, namespace, uid, generation, labels, ...})${name === STRING ? " with a 'name' string" : ''}`, {
    name,
    namespace: optional(STRING),
    uid: optional(STRING),
    generation: optional(shape('an integer', Number.isInteger)),
    labels: optional(recordOf('an object of strings', STRING)),
    annotations: optional(recordOf('an object of strings', STRING)),
    ownerReferences: optional(arrayOf('an array of owner references', shape('an object ({apiVersion, kind, name, uid, controller})', isRecord))),
    creationTimestamp: optional(RFC3339),
    deletionTimestamp: optional(RFC3339),
  })),
});
/** Any object's JSON: `metadata` may be left out, and each of its members. */
const OBJECT_JSON = objectJson(optional, optional(STRING));
/** The JSON of an object the mock files under its name. */
const NAMED_JSON = objectJson((s) => s, STRING);
const SETTINGS = recordOf("an object of strings ({name: value}, as `--setting Kind.name=value`)", STRING);
const READ_ERROR_TAG = oneOf('not-declared', 'not-served', 'forbidden', 'failed');
const AVAILABILITY = oneOf('available', 'not-served', 'forbidden');
const EXPOSURE_KIND = oneOf('route', 'ingress', 'http-route');
const WORKLOAD_STATE = variant(
  "a WorkloadState ({tag: 'ready'}, or {tag: 'crash-loop-back-off' | 'pod-not-ready' | ..., val: message})",
  Object.fromEntries([['ready', undefined], ...[
    'replica-failure', 'secret-not-found', 'secret-key-missing', 'config-map-not-found', 'pod-unschedulable',
    'image-pull-failed', 'crash-loop-back-off', 'rollout-stuck', 'rollout-in-progress', 'pod-not-ready',
  ].map((tag) => [tag, STRING])]),
);
const WORKLOAD_FACT = record('a WorkloadFact ({meta, state, ...}: workloadReady(namespace, name, replicas) or workloadIn(namespace, name, state))', {
  meta: META, state: WORKLOAD_STATE,
});
const SECRET_FACT = record('a SecretFact ({meta, type, keys})', { meta: META, type: STRING, keys: STRINGS });
const JOB_FACT = record("a JobFact ({meta, active, succeeded, failed, conditions, state, ...})", {
  meta: META,
  state: variant(
    "a JobState ({tag: 'running' | 'succeeded' | 'suspended'}, or {tag: 'failed', val: message})",
    { failed: STRING, succeeded: undefined, suspended: undefined, running: undefined },
  ),
});
const EXPOSURE_FACT = record('an ExposureFact ({meta, kind, hostnames, admission})', {
  meta: META,
  kind: EXPOSURE_KIND,
  hostnames: STRINGS,
  admission: variant("an Admission ({tag: 'admitted' | 'pending'}, or {tag: 'refused', val: message})", {
    admitted: undefined, refused: STRING, pending: undefined,
  }),
});
const CERTIFICATE_BUNDLE = record('a CertificateBundleFact ({meta, hasKey, certificates})', {
  meta: META,
  hasKey: BOOLEAN,
  certificates: arrayOf('an array of CertificateFact', record('a CertificateFact ({sha256, pemBytes})', { sha256: STRING, pemBytes: COUNT })),
});
const LABEL_SELECTOR = record('a LabelSelectorFact ({matchLabels, matchExpressions})', {
  matchLabels: arrayOf('an array of [key, value] pairs', arrayOf('a [key, value] pair', STRING)),
  matchExpressions: arrayOf('an array of SelectorRequirement', shape('an object ({key, operator, values})', isRecord)),
});
const NETWORK_POLICY = record('a NetworkPolicyFact ({meta, podSelector, isolatesIngress, ingress})', {
  meta: META,
  podSelector: LABEL_SELECTOR,
  isolatesIngress: BOOLEAN,
  ingress: arrayOf('an array of IngressRuleFact ({ports, fromPeers})', shape('an object ({ports, fromPeers})', isRecord)),
});
const EGRESS_POLICY = record('an EgressPolicyFact ({meta, podSelector, isolatesEgress, egress})', {
  meta: META,
  podSelector: LABEL_SELECTOR,
  isolatesEgress: BOOLEAN,
  egress: arrayOf('an array of EgressRuleFact ({ports, toPeers})', shape('an object ({ports, toPeers})', isRecord)),
});
const NODE_POD_CIDRS = variant(
  "a NodePodCidrsFact ({tag: 'known', val: [{node, podCidrs}]}, {tag: 'forbidden', val: text}, {tag: 'too-many', val: count} or {tag: 'incomplete', val: [node names]})",
  {
    known: arrayOf('an array of NodeCidrs', record('a NodeCidrs ({node, podCidrs})', { node: STRING, podCidrs: STRINGS })),
    forbidden: STRING,
    'too-many': COUNT,
    incomplete: STRINGS,
  },
);
const REFUSAL = record('an ApplyRefusal ({code, reason, message})', { code: COUNT, reason: STRING, message: STRING });
const APPLY_OUTCOME = variant("an ApplyOutcome ({tag: 'applied'}, or {tag: 'refused', val: {code, reason, message}})", {
  applied: undefined, refused: REFUSAL,
});
const CHANGE_OUTCOME = variant(
  "a ChangeOutcome ({tag: 'made' | 'withdrawn'}, {tag: 'held', val: 'observe' | 'awaiting-approval' | 'denied' | 'pass-failed'} or {tag: 'refused', val: {code, reason, message}})",
  { made: undefined, held: oneOf('observe', 'awaiting-approval', 'denied', 'pass-failed'), refused: REFUSAL, withdrawn: undefined },
);
const CONTROLLER_REF = record('a ControllerRef ({apiVersion, kind, name, uid})', {
  apiVersion: STRING, kind: STRING, name: STRING, uid: STRING,
});

/** A value as a message shows it: short, its type plain. */
function show(v) {
  if (v === undefined) return 'undefined';
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'bigint') return `${v}n`;
  if (isRecord(v) && ![Object.prototype, null].includes(Object.getPrototypeOf(v))) return `a ${v.constructor?.name ?? 'object'}`;
  const text = JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

/** Throws a TypeError naming `signature`, the argument (or its part) and its shape, unless each `[name, value, shape]` holds. */
function check(signature, ...args) {
  for (const [name, value, s] of args) {
    const fault = s.fault(value, name);
    if (fault !== undefined) {
      const [path, what, got] = fault;
      throw new TypeError(`${signature}: ${path} must be ${what}, got ${show(got)}`);
    }
  }
}

// ---- the facts' values ---------------------------------------------------------

const metaOf = (namespace, name) => ({
  name,
  namespace,
  uid: `uid-${namespace}-${name}`,
  generation: 1n,
  labels: [],
  annotations: [],
  controller: undefined,
  creation: undefined,
  deletion: undefined,
});

/**
 * Metadata with a name and namespace, the UID `uid-<namespace>-<name>`,
 * generation 1, everything else empty (the Rust mock's `meta`).
 */
export function meta(namespace, name) {
  const text = shape("a string (an object's JSON is objectMeta(json)'s)", (v) => typeof v === 'string');
  check('meta(namespace, name)', ['namespace', namespace, text], ['name', name, text]);
  return metaOf(namespace, name);
}

const timestampOf = (at) => {
  if (typeof at === 'number') return { seconds: BigInt(at), nanos: 0 };
  const ms = Date.parse(at);
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
};

/** A `timestamp` from RFC 3339 text or seconds since the epoch. */
export function timestamp(at) {
  check('timestamp(at)', ['at', at, TIME]);
  return timestampOf(at);
}

const objectMetaOf = (json) => {
  const m = json.metadata || {};
  const owner = (m.ownerReferences || []).find((o) => o.controller === true);
  const base = metaOf(m.namespace || '', m.name || '');
  return {
    ...base,
    uid: m.uid || base.uid,
    generation: BigInt(m.generation ?? 1),
    labels: Object.entries(m.labels || {}),
    annotations: Object.entries(m.annotations || {}),
    controller: owner && { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid },
    creation: m.creationTimestamp ? timestampOf(m.creationTimestamp) : undefined,
    deletion: m.deletionTimestamp ? timestampOf(m.deletionTimestamp) : undefined,
  };
};

/**
 * A `reconciler:guest/types` ObjectMeta read from a Kubernetes object's
 * JSON as the host reads it (the Rust mock's `object_meta`): what
 * `metadata` leaves out is `meta`'s.
 */
export function objectMeta(json) {
  check('objectMeta(json)', ['json', json, OBJECT_JSON]);
  return objectMetaOf(json);
}

const objectOf = (json) => ({ meta: objectMetaOf(json), json: JSON.stringify(json) });

/** A `reconciler:guest/types` Object: the metadata and the JSON text. */
export function object(json) {
  check('object(json)', ['json', json, OBJECT_JSON]);
  return objectOf(json);
}

const workloadOf = (namespace, name, replicas) => ({
  meta: metaOf(namespace, name),
  generationObserved: true,
  desiredReplicas: replicas,
  updatedReplicas: replicas,
  readyReplicas: replicas,
  availableReplicas: replicas,
  progressDeadlineExceeded: false,
  replicaFailure: undefined,
  pods: [],
  state: { tag: 'ready' },
});

/** A Deployment `name` whose `replicas` Pods are Ready on the current template (the Rust mock's `workload_ready`). */
export function workloadReady(namespace, name, replicas) {
  check('workloadReady(namespace, name, replicas)', ['namespace', namespace, STRING], ['name', name, STRING], ['replicas', replicas, COUNT]);
  return workloadOf(namespace, name, replicas);
}

/** The same Deployment in another `state` (`{tag: 'crash-loop-back-off', val: 'message'}` ...), no replica Ready. */
export function workloadIn(namespace, name, state) {
  check('workloadIn(namespace, name, state)', ['namespace', namespace, STRING], ['name', name, STRING], ['state', state, WORKLOAD_STATE]);
  return { ...workloadOf(namespace, name, 1), readyReplicas: 0, availableReplicas: 0, state };
}

/** The evaluation a guest's `reconcile` takes: the parent's JSON, the settings (`{name: value}`), paused or not. */
export function evaluation(parent, settings = {}, paused = false) {
  check('evaluation(parent, settings, paused)', ['parent', parent, OBJECT_JSON], ['settings', settings, SETTINGS], ['paused', paused, BOOLEAN]);
  return { parent: objectOf(parent), settings: Object.entries(settings), paused };
}

const EXPOSURE_APIS = {
  route: ['route.openshift.io', 'Route'],
  ingress: ['networking.k8s.io', 'Ingress'],
  'http-route': ['gateway.networking.k8s.io', 'HTTPRoute'],
};

/** The API of an exposure kind, as the host declares and probes it (the Rust mock's `exposure_kind_ref`). */
export function exposureKindRef(kind) {
  check('exposureKindRef(kind)', ['kind', kind, EXPOSURE_KIND]);
  const [group, name] = EXPOSURE_APIS[kind];
  return kindRef(group, 'v1', name);
}

const key = (kind) => `${kind.group}/${kind.version}/${kind.kind}`;
const at = (namespace, name) => `${namespace}/${name}`;

const readErrorOf = (tag, text) => {
  const e = new Error(`${tag}: ${text}`);
  e.payload = { tag, val: text };
  return e;
};

/** The error a facts function throws for a `read-error`, as componentize-js throws it. */
export function readError(tag, text) {
  check('readError(tag, text)', ['tag', tag, READ_ERROR_TAG], ['text', text, STRING]);
  return readErrorOf(tag, text);
}

// ---- the mock ------------------------------------------------------------------------

const KIND = ['kind', KIND_REF];
const NAMESPACE = ['namespace', STRING];
const NAME = ['name', STRING];
/** The checks of a method's arguments, each `[name, shape]` in order. */
const method = (name, ...params) => (...values) => check(
  `MockFacts.${name}(${params.map(([p]) => p).join(', ')})`,
  ...params.map(([p, s], i) => [p, values[i], s]),
);
const checks = {
  withWorkload: method('withWorkload', NAMESPACE, NAME, ['fact', WORKLOAD_FACT]),
  withSecret: method('withSecret', NAMESPACE, NAME, ['keys', STRINGS], ['json', OBJECT_JSON], ['type', STRING]),
  withSecretFact: method('withSecretFact', ['fact', SECRET_FACT]),
  withConfigMap: method('withConfigMap', NAMESPACE, NAME, ['keys', STRINGS], ['json', OBJECT_JSON]),
  withObject: method('withObject', KIND, ['json', NAMED_JSON]),
  withChild: method('withChild', KIND, ['json', NAMED_JSON]),
  withAvailability: method('withAvailability', KIND, NAMESPACE, ['availability', AVAILABILITY]),
  withDirectGet: method('withDirectGet', KIND, NAMESPACE),
  withExposure: method('withExposure', ['kind', EXPOSURE_KIND], NAMESPACE, NAME, ['fact', EXPOSURE_FACT]),
  withClusterRole: method('withClusterRole', NAME, ['json', OBJECT_JSON]),
  withCertificates: method('withCertificates', NAMESPACE, NAME, ['key', STRING], ['bundle', CERTIFICATE_BUNDLE]),
  withJob: method('withJob', NAMESPACE, NAME, ['fact', JOB_FACT]),
  withNetworkPolicy: method('withNetworkPolicy', NAMESPACE, ['fact', NETWORK_POLICY]),
  withEgressPolicy: method('withEgressPolicy', NAMESPACE, ['fact', EGRESS_POLICY]),
  withNodePodCidrs: method('withNodePodCidrs', ['fact', NODE_POD_CIDRS]),
  withLastApply: method('withLastApply', KIND, NAMESPACE, NAME, ['outcome', APPLY_OUTCOME], ['when', optional(TIME)]),
  withLastApplyTime: method('withLastApplyTime', KIND, NAMESPACE, NAME, ['at', TIME]),
  withChangeState: method('withChangeState', KIND, NAMESPACE, NAME, ['state', optional(CHANGE_OUTCOME)]),
  withController: method('withController', NAME, ['controller', CONTROLLER_REF]),
  failing: method('failing', ['what', STRING], NAME, ['tag', READ_ERROR_TAG]),
};

/** The facts of one test, as the builder says; `facts()` is what a guest's `reconcile` is handed. */
export class MockFacts {
  /** `now`: seconds since the epoch, or RFC 3339 text. */
  constructor(now = 0) {
    check('new MockFacts(now)', ['now', now, TIME]);
    this.now = timestampOf(now);
    this.workloads = new Map();
    this.secrets = new Map();
    this.configMaps = new Map();
    this.objects = new Map();
    this.children = new Map();
    this.availability = new Map();
    this.directGets = new Set();
    this.exposures = new Map();
    this.clusterRoles = new Map();
    this.certificates = new Map();
    this.jobs = new Map();
    this.lastApplies = new Map();
    this.lastApplyTimes = new Map();
    this.changeStates = new Map();
    this.controllers = new Map();
    this.networkPolicies = new Map();
    this.egressPolicies = new Map();
    this.nodePodCidrs = { tag: 'known', val: [] };
    this.failures = new Map();
    /** Every read made, in order: `secret ns/name`, `get <group>/<version>/<kind> ns/name` ... */
    this.reads = [];
  }

  /** A Deployment's `workload-fact` (its `meta`, `state`, replicas, Pods). */
  withWorkload(namespace, name, fact) {
    checks.withWorkload(namespace, name, fact);
    this.workloads.set(at(namespace, name), fact);
    return this;
  }
  /** A Secret holding `keys` (its metadata from `json`, when given). */
  withSecret(namespace, name, keys, json = { metadata: { name, namespace } }, type = 'Opaque') {
    checks.withSecret(namespace, name, keys, json, type);
    this.secrets.set(at(namespace, name), { meta: objectMetaOf(json), type, keys: [...keys] });
    return this;
  }
  /** A Secret as the host reads it, under its metadata's namespace and name. */
  withSecretFact(fact) {
    checks.withSecretFact(fact);
    this.secrets.set(at(fact.meta.namespace, fact.meta.name), fact);
    return this;
  }
  withConfigMap(namespace, name, keys, json = { metadata: { name, namespace } }) {
    checks.withConfigMap(namespace, name, keys, json);
    this.configMaps.set(at(namespace, name), { meta: objectMetaOf(json), keys: [...keys] });
    return this;
  }
  /** An object of `kind` (a kindRef) for `get` and `list`, from its JSON. */
  withObject(kind, json) {
    checks.withObject(kind, json);
    const m = json.metadata;
    this.objects.set(`${key(kind)} ${at(m.namespace || '', m.name)}`, { kind, object: objectOf(json) });
    return this;
  }
  /** A child of the parent, for `children(kind)`. */
  withChild(kind, json) {
    checks.withChild(kind, json);
    const list = this.children.get(key(kind)) || [];
    list.push(objectOf(json));
    this.children.set(key(kind), list);
    return this;
  }
  /** An optional API's availability in a namespace ('' for every one): 'not-served' or 'forbidden'. */
  withAvailability(kind, namespace, availability) {
    checks.withAvailability(kind, namespace, availability);
    this.availability.set(`${key(kind)} ${namespace}`, availability);
    return this;
  }
  /**
   * A kind `withAvailability` made 'forbidden' in `namespace` ('' for every
   * one) whose objects the host still reads one by one, past its cache:
   * `get` and `exposure` find them, `list` and `children` stay refused.
   */
  withDirectGet(kind, namespace) {
    checks.withDirectGet(kind, namespace);
    this.directGets.add(`${key(kind)} ${namespace}`);
    return this;
  }
  withExposure(kind, namespace, name, fact) {
    checks.withExposure(kind, namespace, name, fact);
    this.exposures.set(`${kind} ${at(namespace, name)}`, fact);
    return this;
  }
  withClusterRole(name, json = { metadata: { name } }) {
    checks.withClusterRole(name, json);
    this.clusterRoles.set(name, objectMetaOf(json));
    return this;
  }
  withCertificates(namespace, name, key_, bundle) {
    checks.withCertificates(namespace, name, key_, bundle);
    this.certificates.set(`${at(namespace, name)} ${key_}`, bundle);
    return this;
  }
  withJob(namespace, name, fact) {
    checks.withJob(namespace, name, fact);
    this.jobs.set(at(namespace, name), fact);
    return this;
  }
  withNetworkPolicy(namespace, fact) {
    checks.withNetworkPolicy(namespace, fact);
    this.networkPolicies.set(namespace, [...(this.networkPolicies.get(namespace) || []), fact]);
    return this;
  }
  withEgressPolicy(namespace, fact) {
    checks.withEgressPolicy(namespace, fact);
    this.egressPolicies.set(namespace, [...(this.egressPolicies.get(namespace) || []), fact]);
    return this;
  }
  withNodePodCidrs(fact) {
    checks.withNodePodCidrs(fact);
    this.nodePodCidrs = fact;
    return this;
  }
  withLastApply(kind, namespace, name, outcome, when = undefined) {
    checks.withLastApply(kind, namespace, name, outcome, when);
    this.lastApplies.set(`${key(kind)} ${at(namespace, name)}`, outcome);
    if (when !== undefined) this.lastApplyTimes.set(`${key(kind)} ${at(namespace, name)}`, timestampOf(when));
    return this;
  }
  /** When the API server answered the host's last apply of the child (`facts.lastApplyTime`). */
  withLastApplyTime(kind, namespace, name, when) {
    checks.withLastApplyTime(kind, namespace, name, when);
    this.lastApplyTimes.set(`${key(kind)} ${at(namespace, name)}`, timestampOf(when));
    return this;
  }
  /**
   * What became of the change asked for a child (`facts.changeState`;
   * undefined: not acted on yet); a child not given answers `{tag: 'made'}`,
   * as if a host made every change.
   */
  withChangeState(kind, namespace, name, state) {
    checks.withChangeState(kind, namespace, name, state);
    this.changeStates.set(`${key(kind)} ${at(namespace, name)}`, state);
    return this;
  }
  /**
   * The workloads, ConfigMaps, Jobs and objects (of `get` and `list`) named
   * `name` that have no controller of their own are controlled by
   * `controller`.
   */
  withController(name, controller) {
    checks.withController(name, controller);
    this.controllers.set(name, controller);
    return this;
  }
  /**
   * A read that fails (`failed`, or the tag given): `what` is `workload`,
   * `secret`, `configmap`, `clusterrole`, `exposure`, `certificates`,
   * `job`, or a kind's name for `get` and `list`; `name` the object's name
   * (for `list` and `children`, the kind's name again).
   */
  failing(what, name, tag = 'failed') {
    checks.failing(what, name, tag);
    this.failures.set(`${what} ${name}`, tag);
    return this;
  }

  #read(line, what, name, answer) {
    this.reads.push(line);
    const tag = this.failures.get(`${what} ${name}`);
    if (tag !== undefined) throw readErrorOf(tag, `${what} ${name} is made to fail`);
    return answer();
  }

  /** `fact` with `withController`'s controller when its metadata names none. */
  #controlled(fact) {
    const controller = fact && fact.meta.controller === undefined ? this.controllers.get(fact.meta.name) : undefined;
    return controller === undefined ? fact : { ...fact, meta: { ...fact.meta, controller } };
  }

  /** The facts interface a guest's logic reads (`reconciler:guest/facts@0.6.0`). */
  facts() {
    const m = this;
    const lookup = (table, k, namespace) => table.get(`${k} ${namespace}`) ?? table.get(`${k} `);
    const unavailable = (kind, namespace) => {
      const a = lookup(m.availability, key(kind), namespace);
      return a === 'available' ? undefined : a;
    };
    const refuse = (kind, namespace) => {
      const a = unavailable(kind, namespace);
      if (a !== undefined) throw readErrorOf(a, `${key(kind)} is ${a} in ${JSON.stringify(namespace)}`);
    };
    const refuseUnreadable = (kind, namespace) => {
      if (!m.directGets.has(`${key(kind)} ${namespace}`) && !m.directGets.has(`${key(kind)} `)) refuse(kind, namespace);
    };
    return {
      now: () => m.now,
      workload: (ns, name) => m.#read(`workload ${at(ns, name)}`, 'workload', name, () => m.#controlled(m.workloads.get(at(ns, name)))),
      secret: (ns, name) => m.#read(`secret ${at(ns, name)}`, 'secret', name, () => m.secrets.get(at(ns, name))),
      configMap: (ns, name) => m.#read(`configmap ${at(ns, name)}`, 'configmap', name, () => m.#controlled(m.configMaps.get(at(ns, name)))),
      get: (kind, ns, name) => m.#read(`get ${key(kind)} ${at(ns, name)}`, kind.kind, name, () => {
        refuseUnreadable(kind, ns);
        const found = m.objects.get(`${key(kind)} ${at(ns, name)}`);
        return found && m.#controlled(found.object);
      }),
      list: (kind, ns, selector) => m.#read(`list ${key(kind)} ${ns} ${JSON.stringify(selector)}`, 'list', kind.kind, () => {
        refuse(kind, ns);
        return [...m.objects.values()]
          .filter((o) => key(o.kind) === key(kind) && (ns === '' || o.object.meta.namespace === ns))
          .filter((o) => selector.every(([k, v]) => o.object.meta.labels.some(([lk, lv]) => lk === k && lv === v)))
          .map((o) => m.#controlled(o.object))
          .sort((a, b) => (a.meta.name < b.meta.name ? -1 : a.meta.name > b.meta.name ? 1 : 0));
      }),
      apiAvailability: (kind, ns) => unavailable(kind, ns) ?? 'available',
      networkPolicies: (ns) => m.#read(`network-policies ${ns}`, 'networkpolicies', ns, () => m.networkPolicies.get(ns) || []),
      egressPolicies: (ns) => m.#read(`egress-policies ${ns}`, 'egresspolicies', ns, () => m.egressPolicies.get(ns) || []),
      nodePodCidrs: () => m.nodePodCidrs,
      exposure: (kind, ns, name) => m.#read(`exposure ${kind} ${at(ns, name)}`, 'exposure', name, () => {
        refuseUnreadable(exposureKindRef(kind), ns);
        return m.exposures.get(`${kind} ${at(ns, name)}`);
      }),
      clusterRole: (name) => m.#read(`clusterrole ${name}`, 'clusterrole', name, () => m.clusterRoles.get(name)),
      secretCertificates: (ns, name, k) => m.#read(`certificates ${at(ns, name)} ${k}`, 'certificates', name, () => {
        const bundle = m.certificates.get(`${at(ns, name)} ${k}`);
        const secret = m.secrets.get(at(ns, name));
        // As the Rust mock: a Secret given without a bundle answers its key, no certificate.
        return bundle ?? (secret && { meta: secret.meta, hasKey: secret.keys.includes(k), certificates: [] });
      }),
      lastApply: (kind, ns, name) => m.lastApplies.get(`${key(kind)} ${at(ns, name)}`),
      lastApplyTime: (kind, ns, name) => m.lastApplyTimes.get(`${key(kind)} ${at(ns, name)}`),
      changeState: (kind, ns, name) => {
        m.reads.push(`change-state ${key(kind)} ${at(ns, name)}`);
        const k = `${key(kind)} ${at(ns, name)}`;
        return m.changeStates.has(k) ? m.changeStates.get(k) : { tag: 'made' };
      },
      children: (kind) => m.#read(`children ${key(kind)}`, 'children', kind.kind, () => {
        // As the host: a Secret's data never reaches a guest.
        if (kind.group === '' && kind.kind === 'Secret') throw readErrorOf('forbidden', 'Secrets are served only as key names, through facts.secret');
        return [...(m.children.get(key(kind)) || [])];
      }),
      job: (ns, name) => m.#read(`job ${at(ns, name)}`, 'job', name, () => m.#controlled(m.jobs.get(at(ns, name)))),
    };
  }
}

export { kindRef };
