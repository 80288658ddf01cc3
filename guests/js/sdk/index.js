// The JavaScript guest SDK: the conventions of the Rust SDK (guests/sdk)
// for a guest built with componentize-js against wit/reconciler.wit.
//
// Plain ES module with no import of the contract: a guest's entry imports
// `reconciler:guest/facts@0.6.0` and hands it to its logic, so the same
// logic runs under node's test runner against `mock.js`. Types for editors
// are in index.d.ts and contract/ (generated from the WIT by contract.mjs).
//
// The contract's values as componentize-js gives them: records are objects
// with camelCase fields; enums are their WIT names as strings ('true',
// 'progressing', 'not-served'); variants are `{tag, val}`; `option<T>` is
// the value or `undefined`; s64 (generation, timestamp seconds) is a
// BigInt; a facts function whose result is an error throws an error whose
// `payload` is the `read-error` (`{tag: 'not-declared', val: text}`).

export const AS_EXPECTED = 'AsExpected';
export const RECONCILING = 'Reconciling';
/** How soon a pass whose read failed is tried again (seconds). */
export const RETRY_SECONDS = 30;
export const CONFIGURATION_INVALID = 'ConfigurationInvalid';
export const RESOURCE_NOT_OWNED = 'ResourceNotOwned';
export const COMMON = 'common';

// ---- conditions and the verdict -------------------------------------------

export function condition(type, status, reason, message = '') {
  return { type, status, reason, message: String(message) };
}
/** True, AsExpected. */
export const ok = (type, message) => condition(type, 'true', AS_EXPECTED, message);
/** True with a reason of its own. */
export const holds = (type, reason, message) => condition(type, 'true', reason, message);
export const fails = (type, reason, message) => condition(type, 'false', reason, message);
export const unknown = (type, reason, message) => condition(type, 'unknown', reason, message);

function upsert(list, c) {
  const i = list.findIndex((x) => x.type === c.type);
  if (i >= 0) list[i] = c;
  else list.push(c);
}

/** Collects a verdict as the Rust SDK's VerdictBuilder does. */
export class VerdictBuilder {
  constructor() {
    this.aspects = [];
    this.advisories = [];
    this.stalled = undefined;
    this.fields = {};
    this.events = [];
    this.requeue = undefined;
  }
  /** An aspect; a later one of the same type replaces it. */
  aspect(c) {
    upsert(this.aspects, c);
    return this;
  }
  advisory(c) {
    upsert(this.advisories, c);
    return this;
  }
  /** The first stall wins. */
  stall(reason, message) {
    if (this.stalled === undefined) this.stalled = { reason, message: String(message) };
    return this;
  }
  /** A member of `.status` (null deletes it). */
  field(key, value) {
    this.fields[key] = value;
    return this;
  }
  event(type, reason, message) {
    this.events.push({ type, reason, message: String(message) });
    return this;
  }
  /** The smallest requeue wins. */
  requeueAfter(seconds) {
    this.requeue = this.requeue === undefined ? seconds : Math.min(this.requeue, seconds);
    return this;
  }
  aspectOf(type) {
    return this.aspects.find((c) => c.type === type);
  }
  build() {
    return {
      aspects: [...this.aspects],
      advisory: [...this.advisories],
      stall: this.stalled,
      statusFields: stringify(this.fields),
      events: [...this.events],
      requeueAfterSeconds: this.requeue,
    };
  }
}

/** JSON with object keys sorted, as serde_json writes a map. */
export function stringify(value) {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out = {};
    for (const k of Object.keys(value).sort()) out[k] = sortKeys(value[k]);
    return out;
  }
  return value;
}

// ---- the kind spec -----------------------------------------------------------

/** Reasons the host registers and sets itself. */
export const HOST_REASONS = [
  'AsExpected', 'Initializing', 'Reconciling', 'ReconcileError', 'ReconciliationPaused',
  'ReconciliationFailed', 'QuotaExceeded', 'AdmissionDenied', 'GuestFailed', 'ObjectUndecodable',
  'NamespaceNotWatched', 'Planned', 'ChangesPending', 'InSync', 'ObserveMode', 'PlanCreated', 'PlanApproved', 'PlanRejected',
  'PlanSuperseded', 'PlanApplied', 'PlanFailed', 'AwaitingApproval', 'ChangeNotSettling', 'ChangesDenied',
];

/** The shared vocabulary, with its meanings (the Rust SDK's COMMON_REASONS). */
export const COMMON_REASONS = {
  ConfigurationInvalid: 'ConfigurationValid=False (and Stalled=True): a cross-object check the CRD cannot express failed.',
  ResourceNotOwned: 'An object the operator must manage exists under the generated name and is controlled by someone else.',
  SecretNotFound: 'A referenced Secret does not exist.',
  SecretKeyMissing: "A referenced Secret's key is missing.",
  ConfigMapNotFound: 'A referenced ConfigMap does not exist.',
  ClusterNotFound: 'A referenced CloudNativePG Cluster does not exist in the namespace.',
  RolloutInProgress: 'A rollout is on its way.',
  RolloutStuck: "The Deployment's progress deadline is exceeded.",
  PodUnschedulable: "The child's own fact, copied: a Pod cannot be scheduled.",
  ImagePullFailed: "The child's own fact, copied: an image cannot be pulled.",
  CrashLoopBackOff: "The child's own fact, copied: a container restarts in a loop.",
  ReplicaFailure: "The child's own fact, copied: the Deployment cannot create a Pod (e.g. a quota).",
  PodNotReady: "The child's own fact, copied: a Pod is not Ready.",
  ScaledToZero: 'Registered; no current reconciler sets it.',
  NotRequested: 'The exposure is clusterIP: nothing to publish.',
  NotAdmitted: 'The Route or Ingress was not accepted by its controller.',
  NotAccepted: 'The HTTPRoute was not accepted by its controller.',
  GatewayNotFound: 'The Gateway named by parentRef is absent. Registered; the current reconcilers do not set it.',
  HostnameConflict: 'Another route claims the hostname. Registered; the current reconcilers do not set it.',
  RouteAPIUnavailable: 'The Route API the exposure needs is not served or not readable.',
  GatewayAPIUnavailable: 'The Gateway API the exposure needs is not served or not readable.',
  ImageNotAllowed: "A spec.image or oauth-proxy image repository is outside the operator's allow-list.",
  HostnameNotAllowed: 'spec.exposure.hostname is outside the allowed host suffixes; what was published under the name is withdrawn.',
};

/** A reason of the shared vocabulary, its meaning with it (throws for another name). */
export function common(name) {
  const meaning = COMMON_REASONS[name];
  if (meaning === undefined) throw new Error(`${name} is not a common reason`);
  return { name, owner: COMMON, meaning };
}

export const owned = (owner, name, meaning) => ({ name, owner, meaning });

/** A reason registry: the common reasons used, then the kind's own. */
export class Registry {
  constructor(owner) {
    this.owner = owner;
    this.reasons = [];
  }
  common(names) {
    for (const n of names) if (!this.reasons.some((r) => r.name === n)) this.reasons.push(common(n));
    return this;
  }
  /** `[[name, meaning], ...]` owned by the kind. */
  owned(entries) {
    for (const [name, meaning] of entries) this.reasons.push(owned(this.owner, name, meaning));
    return this;
  }
  build() {
    return [...this.reasons];
  }
}

export const kindRef = (group, version, kind) => ({ group, version, kind });
export const reads = (kind) => ({ kind, optional: false, crossNamespace: false, fields: undefined });
export const readsOptional = (kind) => ({ kind, optional: true, crossNamespace: false, fields: undefined });
export const acrossNamespaces = (read) => ({ ...read, crossNamespace: true });

/**
 * The same read, naming the fields of the kind's objects the guest reads
 * (contract 0.6.0, `read-decl.fields`): each a path of field names joined
 * by `.` (a `.` in a name escaped as `\.`: `data.tls\.crt`), through
 * every item of a list on its way (`spec.containers.image`). The host
 * serves those fields only, with `apiVersion`, `kind` and the whole
 * `metadata`; its caches hold no more than what the kind's readers name.
 * A fixture whose verdict changes with a field left out fails, naming it.
 * Without it (`reads`, `readsOptional`) the whole object is served.
 *
 *   withFields(reads(kindRef('', 'v1', 'Pod')), ['status.phase', 'spec.nodeName'])
 *
 * Throws a TypeError naming the argument unless `read` is a read
 * declaration and `fields` an array of non-empty strings.
 */
export function withFields(read, fields) {
  const signature = 'withFields(read, fields)';
  if (read === null || typeof read !== 'object' || Array.isArray(read) || read.kind === null || typeof read.kind !== 'object') {
    throw new TypeError(`${signature}: read must be a read declaration (reads(kind) or readsOptional(kind)), got ${shown(read)}`);
  }
  if (!Array.isArray(fields)) {
    throw new TypeError(`${signature}: fields must be an array of non-empty strings (field paths such as 'spec.replicas'), got ${shown(fields)}`);
  }
  fields.forEach((path, i) => {
    if (typeof path !== 'string' || path === '') {
      throw new TypeError(`${signature}: fields[${i}] must be a non-empty string (a field path such as 'spec.replicas'), got ${shown(path)}`);
    }
  });
  return { ...read, fields: [...fields] };
}

/**
 * `withFields` naming none: the guest parses none of the kind's objects
 * itself. It reads their metadata (an object's `meta`), or reads them
 * through the typed facts the host derives (`workload`, `secret`,
 * `configMap` ...), which are served as before.
 */
export const metadataOnly = (read) => withFields(read, []);

/** A value as an argument check's message shows it. */
function shown(v) {
  if (v === undefined) return 'undefined';
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'bigint') return `${v}n`;
  const text = JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

export const stalls = (reason) => ({ reason, recheckSeconds: undefined });
export const stallsRechecked = (reason, seconds) => ({ reason, recheckSeconds: seconds });
export const pause = (key, value) => ({ key, value });
export const column = (name, type, jsonPath) => ({ name, type, jsonPath, wide: false, description: undefined });
export const wideColumn = (name, type, jsonPath) => ({ ...column(name, type, jsonPath), wide: true });
export const conditionColumn = (type) => wideColumn(type, 'string', `.status.conditions[?(@.type=="${type}")].status`);

/** A complete kind spec: what `describe` returns, with every list defaulted. */
export function kindSpec(spec) {
  return {
    namespaced: true,
    profile: 'progressing',
    advisory: [],
    reasons: [],
    negativePolarity: [],
    quietReasons: [],
    stalls: [],
    reads: [],
    pause: undefined,
    specSchema: undefined,
    printerColumns: [],
    ...spec,
  };
}

// ---- the evaluation's input ------------------------------------------------

/** The parent object, parsed from its JSON. */
export function parentJson(input) {
  try {
    return JSON.parse(input.parent.json);
  } catch {
    return null;
  }
}

/** An operator setting (`--setting Kind.name=value`), or undefined. */
export function setting(input, name) {
  const found = input.settings.find(([n]) => n === name);
  return found ? found[1] : undefined;
}

/** A comma-separated setting, trimmed, empty entries dropped. */
export function settingList(input, name) {
  const v = setting(input, name);
  return v === undefined ? [] : v.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

// ---- reads -----------------------------------------------------------------

/**
 * Calls a facts function: `{value}` on success, `{error}` with the
 * `read-error` (`{tag, val}`) when the host answered one. Anything else
 * thrown is rethrown (a bug, not a read).
 */
export function read(call) {
  try {
    return { value: call() };
  } catch (e) {
    if (e && e.payload && typeof e.payload.tag === 'string') return { error: e.payload };
    throw e;
  }
}

/** The text of a read error. */
export const readErrorText = (error) => error.val;

/** "could not read {what}: {text}" */
export const readFailure = (what, error) => `could not read ${what}: ${readErrorText(error)}`;

// ---- Rust's formatting, for messages identical to the Rust guests' ---------

/** A string as Rust's `{:?}` writes it. */
export function debug(s) {
  let out = '"';
  for (const ch of String(s)) {
    const c = ch.codePointAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\0') out += '\\0';
    else if (c < 0x20 || c === 0x7f || (c >= 0x80 && c < 0xa0)) out += `\\u{${c.toString(16)}}`;
    else out += ch;
  }
  return out + '"';
}

/** The byte length of a string in UTF-8 (the host bounds messages in bytes). */
export const utf8Length = (s) => new TextEncoder().encode(s).length;

export const MAX_MESSAGE_BYTES = 1024;
export const TRUNCATION_MARKER = ' …[truncated]';

/** A message bounded as the host bounds it (controls become spaces). */
export function bound(message, max = MAX_MESSAGE_BYTES) {
  const clean = Array.from(String(message), (ch) => {
    const c = ch.codePointAt(0);
    return c < 0x20 || (c >= 0x7f && c < 0xa0) ? ' ' : ch;
  });
  if (utf8Length(clean.join('')) <= max) return clean.join('');
  const room = max - utf8Length(TRUNCATION_MARKER);
  let out = '';
  let used = 0;
  for (const ch of clean) {
    const n = utf8Length(ch);
    if (used + n > room) break;
    out += ch;
    used += n;
  }
  return out + TRUNCATION_MARKER;
}

// ---- the workload fact -------------------------------------------------------

/** The reasons `workloadCondition` may copy from the host's classification. */
export const WORKLOAD_REASONS = [
  'ReplicaFailure', 'RolloutStuck', 'SecretNotFound', 'SecretKeyMissing', 'ConfigMapNotFound',
  'PodUnschedulable', 'ImagePullFailed', 'CrashLoopBackOff', 'RolloutInProgress', 'PodNotReady',
];

const WORKLOAD_STATE_REASONS = {
  'replica-failure': 'ReplicaFailure',
  'rollout-stuck': 'RolloutStuck',
  'secret-not-found': 'SecretNotFound',
  'secret-key-missing': 'SecretKeyMissing',
  'config-map-not-found': 'ConfigMapNotFound',
  'pod-unschedulable': 'PodUnschedulable',
  'image-pull-failed': 'ImagePullFailed',
  'crash-loop-back-off': 'CrashLoopBackOff',
  'rollout-in-progress': 'RolloutInProgress',
  'pod-not-ready': 'PodNotReady',
};

/** The condition of a Deployment as read (`read(() => facts.workload(ns, name))`). */
export function workloadCondition(type, deployment, observed) {
  if (observed.error) return unknown(type, RECONCILING, readFailure(`Deployment ${deployment}`, observed.error));
  if (observed.value === undefined) return unknown(type, RECONCILING, `Deployment ${deployment} is not observed yet`);
  return workloadFromState(type, deployment, observed.value);
}

export function workloadFromState(type, deployment, workload) {
  if (workload.meta.deletion !== undefined) {
    return unknown(type, RECONCILING, `Deployment ${deployment} is being deleted`);
  }
  const state = workload.state;
  if (state.tag === 'ready') {
    return ok(type, `Deployment ${deployment}: ${workload.readyReplicas}/${workload.desiredReplicas} replicas Ready on the current template`);
  }
  const reason = WORKLOAD_STATE_REASONS[state.tag];
  const fact = state.val;
  const message = fact.startsWith(`Deployment ${deployment}`) ? fact : `Deployment ${deployment}: ${fact}`;
  return fails(type, reason, message);
}

// ---- images ------------------------------------------------------------------

export const ALLOWED_REPOSITORIES = 'allowedImageRepositories';

/**
 * The repository of an image reference (no tag, no digest; a registry port
 * stays), or undefined when it does not follow the distribution reference
 * grammar (the Rust SDK's `image::repository`, rule for rule).
 */
export function repository(image) {
  const at = image.indexOf('@');
  const named = at >= 0 ? image.slice(0, at) : image;
  if (at >= 0 && !/^[A-Za-z][A-Za-z0-9]*(?:[+._-][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/.test(image.slice(at + 1))) {
    return undefined;
  }
  const lastSlash = named.lastIndexOf('/') + 1;
  const colon = named.slice(lastSlash).indexOf(':');
  const repo = colon >= 0 ? named.slice(0, lastSlash + colon) : named;
  if (colon >= 0 && !/^\w[\w.-]{0,127}$/.test(named.slice(lastSlash + colon + 1))) return undefined;
  return repo.length <= 255 && validName(repo) ? repo : undefined;
}

const DOMAIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?$/;
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;

function validName(name) {
  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : '';
  const isDomain = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  const path = isDomain ? name.slice(slash + 1) : name;
  if (isDomain && !DOMAIN.test(first)) return false;
  return path !== '' && path.split('/').every((c) => COMPONENT.test(c));
}

/** Whether `repo` is within `prefix`, whole path components. */
export function within(repo, prefix) {
  if (!repo.startsWith(prefix)) return false;
  const rest = repo.slice(prefix.length);
  return rest === '' || prefix.endsWith('/') || rest.startsWith('/');
}

/** An image held to the allow-list: `{image}` or `{refusal: {reason, message}}`. */
export function checkImage(image, origin, allowed) {
  const repo = repository(image);
  if (repo === undefined) {
    return { refusal: { reason: CONFIGURATION_INVALID, message: `${origin} ${debug(image)} is not an image reference` } };
  }
  if (allowed.length === 0 || allowed.some((p) => within(repo, p))) return { image };
  return {
    refusal: {
      reason: 'ImageNotAllowed',
      message: `${origin} ${debug(image)}: repository ${repo} is outside the operator's allowedImageRepositories (${allowed.join(', ')})`,
    },
  };
}

/** `spec.image`, else the default setting (blank is none), each held to the list; `{}` when neither. */
export function chooseImage(specImage, defaultImage, defaultSetting, allowed) {
  if (specImage !== undefined) return checkImage(specImage, 'spec.image', allowed);
  const d = defaultImage === undefined ? '' : defaultImage.trim();
  if (d !== '') return checkImage(d, `the operator's ${defaultSetting}`, allowed);
  return {};
}

// ---- ownership and configuration ---------------------------------------------

/** The parent a pass is about. */
export class Parent {
  constructor(kind, meta) {
    this.kind = kind;
    this.namespace = meta.namespace;
    this.name = meta.name;
    this.uid = meta.uid;
  }
  static of(kind, meta) {
    return new Parent(kind, meta);
  }
  /**
   * The ResourceNotOwned message for a child the parent may not take over
   * (another object controls it, or nothing does and it does not carry
   * ADOPT_ANNOTATION naming the parent), or undefined.
   */
  refusal(kind, name, meta) {
    if (meta.controller === undefined && !this.adoptable(meta)) {
      return `${kind} ${name} exists and nothing controls it: the operator takes over an object only when whoever may change it consents, with the annotation ${ADOPT_ANNOTATION}: ${this.kind}/${this.name}; annotate it so, or delete it`;
    }
    return this.foreign(kind, name, meta);
  }
  /** The message for a child another object controls, or undefined. */
  foreign(kind, name, meta) {
    const c = foreignController(meta, this.uid);
    return c && `${kind} ${name} exists and is controlled by ${c.kind} ${c.name}, not by ${this.kind} ${this.name}`;
  }
  /** Whether an object nothing controls carries the consent to its adoption by this parent. */
  adoptable(meta) {
    const consent = `${this.kind}/${this.name}`;
    return (meta.annotations ?? []).some(([k, v]) => k === ADOPT_ANNOTATION && v === consent);
  }
}

/** The annotation by which whoever may change an object nothing controls consents to its adoption (`<Kind>/<name>`). */
export const ADOPT_ANNOTATION = 'reconciler.dev/adopt';

export function foreignController(meta, uid) {
  const c = meta.controller;
  return c !== undefined && c.uid !== uid ? c : undefined;
}

/**
 * Why a configuration is not valid, thrown by the checks and caught by the
 * guest: a stall with its reason, or a read that failed (`unread`).
 */
export class NotValid extends Error {
  constructor(kind, reason, message) {
    super(message);
    this.kind = kind;
    this.reason = reason;
  }
}

export const stalled = (reason, message) => new NotValid('stalled', reason, message);
export const unread = (message) => new NotValid('unread', undefined, message);

/** Throws ResourceNotOwned when the child read (`{value: meta}`) is another's, `unread` when the read failed. */
export function checkOwned(parent, kind, name, observed) {
  if (observed.error) throw unread(readFailure(`${kind} ${name}`, observed.error));
  if (observed.value !== undefined) {
    const m = parent.refusal(kind, name, observed.value);
    if (m !== undefined) throw stalled(RESOURCE_NOT_OWNED, m);
  }
}

// ---- changes -----------------------------------------------------------------

export const apply = (kind, name, body) => ({ tag: 'apply', val: { kind, name, body: stringify(body) } });
export const remove = (kind, name, uid) => ({ tag: 'delete', val: { kind, name, uid } });
export const generate = (name, keys) => ({ tag: 'generate', val: { name, keys } });
export const certificate = (name, dnsNames) => ({ tag: 'certificate', val: { name, dnsNames } });
export const caBundle = (name, key, sources, labels = []) => ({ tag: 'bundle', val: { name, key, sources, labels } });
/**
 * A withdrawal (contract 0.5.0): the deletion of a child whose going takes
 * access or exposure away (a RoleBinding or Role; a Route, Ingress,
 * HTTPRoute or Service), which the host makes whatever holds the parent's
 * other changes, only if its UID is still `uid`, raising `event` (`{type,
 * reason, message}`, a reason of the kind's registry) once the child is
 * gone; undefined where the verdict's own transition says it.
 */
export const withdraw = (kind, name, uid, event = undefined) => ({
  tag: 'withdraw',
  val: { object: { kind, name, uid }, event: event && { ...event, message: String(event.message) } },
});

// ---- what became of a change (contract 0.5.0) -----------------------------------

const HELD = {
  observe: ['Planned', 'its change is planned, never made (mode observe)'],
  'awaiting-approval': ['AwaitingApproval', "its change awaits a reviewer's approval"],
  denied: ['ChangesDenied', 'a reviewer denied its change'],
  'pass-failed': ['ReconcileError', 'the pass failed before it (Ready says why)'],
};

/** Whether `state` (`facts.changeState`) says the change is made (or taken away). */
export const isMade = (state) => state !== undefined && (state.tag === 'made' || state.tag === 'withdrawn');

/**
 * The aspect `type` about `what` (`ConfigMap w-config`), a child whose
 * change is in `state` (`facts.changeState`): `made()` once the host made
 * it; otherwise not True, saying what holds it with the host's reason, or
 * that the API server refused it (with `refusedReason`, the kind's own).
 */
export function changeAspect(type, what, state, refusedReason, made) {
  if (isMade(state)) return made();
  if (state === undefined) return unknown(type, RECONCILING, `${what} is asked for; the host has not acted on it yet`);
  if (state.tag === 'refused') {
    const r = state.val;
    return fails(type, refusedReason, `${what} was refused by the API server (${r.code} ${r.reason}): ${r.message}`);
  }
  const [reason, why] = HELD[state.val];
  return fails(type, reason, `${what} is not made: ${why}`);
}

/** What a withdrawal of `what` still waits for: undefined once the host took it away. */
export function notWithdrawn(what, state) {
  if (isMade(state)) return undefined;
  const why = state !== undefined && state.tag === 'refused'
    ? `the API server refused its deletion (${state.val.code} ${state.val.reason}: ${state.val.message})`
    : 'its deletion is not made yet';
  return `${what} is still there: ${why}`;
}

// ---- testing ---------------------------------------------------------------------

/** The top-level `.status` fields the host owns: a verdict may not set them. */
const RESERVED_STATUS_FIELDS = ['conditions', 'observedGeneration', 'currentPlanRef', 'changeSummary'];

/**
 * What the host checks of a verdict (the Rust SDK's
 * `testing::keeps_contract`), for a guest's tests: every aspect once in
 * declared order up to the first that is not True, the later ones given or
 * left out (when `paused`, the ones given, in that order), registered
 * reasons (the kind's, or HOST_REASONS) with a message, declared advisory
 * conditions and stalls, no reserved status field. Throws an Error naming
 * what is broken.
 */
export function keepsContract(spec, verdict, paused = false) {
  const kind = kindSpec(spec);
  const broken = (what) => {
    throw new Error(`the verdict breaks the contract: ${what}`);
  };
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const types = verdict.aspects.map((c) => c.type);
  const declared = kind.aspects.filter((a) => types.includes(a));
  if (!same(types, declared)) broken(`aspects in declared order: ${types.join(', ')}, declared ${declared.join(', ')}`);
  if (!paused) {
    const first = verdict.aspects.findIndex((c) => c.status !== 'true');
    const deciding = first < 0 ? kind.aspects.length : first + 1;
    if (!same(types.slice(0, deciding), kind.aspects.slice(0, deciding))) {
      broken(`every aspect up to the first not True: ${types.join(', ')}, declared ${kind.aspects.join(', ')}`);
    }
  }
  const registered = (r) => HOST_REASONS.includes(r) || kind.reasons.some((e) => e.name === r);
  for (const c of [...verdict.aspects, ...verdict.advisory]) {
    if (!registered(c.reason)) broken(`unregistered reason ${c.reason}`);
    if (c.message === '') broken(`${c.type} has no message`);
  }
  for (const c of verdict.advisory) if (!kind.advisory.includes(c.type)) broken(`${c.type} is not advisory`);
  for (const e of verdict.events) if (!registered(e.reason)) broken(`unregistered event ${e.reason}`);
  const fields = verdict.statusFields ? JSON.parse(verdict.statusFields) : {};
  for (const reserved of RESERVED_STATUS_FIELDS) {
    if (fields && Object.hasOwn(fields, reserved)) broken(`${reserved} is the host's`);
  }
  if (verdict.stall !== undefined && !kind.stalls.some((s) => s.reason === verdict.stall.reason)) {
    broken(`stall ${verdict.stall.reason} not declared`);
  }
}

// ---- the export ----------------------------------------------------------------

/**
 * The gates a parent may set on itself (contract 0.5.0: the annotations
 * `reconciler.dev/mode` and `reconciler.dev/approval`, or `spec.mode` and
 * `spec.approval` where the spec declares them), as the contract's enum
 * values: both, unless a guest's `parentGates()` says otherwise.
 */
export const PARENT_GATES = Object.freeze(['mode', 'approval']);

/**
 * The `reconciler` export of a guest: `describe()`, `writes()`,
 * `reconcile(input, facts)` returning `{verdict, changes}` and, optionally,
 * `parentGates()` (PARENT_GATES when absent). `evaluate` is
 * derived. An exception a guest lets escape is written to stderr, which
 * the host puts in the guest error (bounded), and traps the call.
 */
export function exportGuest(guest, facts) {
  const guarded = (f) => (...args) => {
    try {
      return f(...args);
    } catch (e) {
      console.error(e && e.stack ? `${e}\n${e.stack}` : String(e));
      throw e;
    }
  };
  const reconcile = guarded((input) => guest.reconcile(input, facts));
  return {
    describe: guarded(() => kindSpec(guest.describe())),
    writes: guarded(() => (guest.writes ? guest.writes() : [])),
    reconcile,
    parentGates: guarded(() => (guest.parentGates ? [...guest.parentGates()] : [...PARENT_GATES])),
    evaluate: (input) => reconcile(input).verdict,
  };
}
