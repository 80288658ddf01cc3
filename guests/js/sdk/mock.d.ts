// The declarations of the mock of the facts (mock.js), for editors and
// `tsc`: each name mock.js exports is declared here (mock.test.js holds the
// two lists equal). Every function checks its arguments at run time too,
// and throws a TypeError naming the function, the argument, the shape
// declared here and what it got.

/// <reference path="./contract/contract.d.ts" />

import type {
  ApplyOutcome, Availability, CertificateBundleFact, ChangeOutcome, EgressPolicyFact, ExposureFact, ExposureKind,
  JobFact, NetworkPolicyFact, NodePodCidrsFact, ReadError, SecretFact, WorkloadFact, WorkloadState,
} from 'reconciler:guest/facts@0.6.0';
import type { Evaluation } from 'reconciler:guest/reconciler@0.6.0';
import type { ControllerRef, KindRef, Object as ObjectFact, ObjectMeta, Timestamp } from 'reconciler:guest/types@0.6.0';
import type { Facts } from './index.js';

export { kindRef } from './index.js';

/** A point in time as the mock takes one: seconds since the epoch (an integer), or RFC 3339 text. */
export type Time = number | string;

/**
 * A Kubernetes object's JSON, as `kubectl get -o json` prints it. The mock
 * reads its `metadata` as the host does (`objectMeta`); the rest is the
 * object's `json` text, for the guest's `spec` and `status`.
 */
export interface ObjectJson {
  metadata?: {
    name?: string;
    /** Left out for cluster-scoped objects. */
    namespace?: string;
    /** `uid-<namespace>-<name>` when left out. */
    uid?: string;
    /** 1 when left out. */
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    /** The one with `controller: true` is the object's `controller`. */
    ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
    creationTimestamp?: string;
    /** Set while the object is being deleted. */
    deletionTimestamp?: string;
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

/** The JSON of an object the mock files under its name (`withObject`, `withChild`). */
export type NamedObjectJson = ObjectJson & { metadata: { name: string } };

/**
 * Metadata with a name and namespace, the UID `uid-<namespace>-<name>`,
 * generation 1, everything else empty (the Rust mock's `meta`). For an
 * object's JSON: `objectMeta`.
 */
export function meta(namespace: string, name: string): ObjectMeta;

/**
 * An object's metadata read from its JSON as the host reads it (the Rust
 * mock's `object_meta`): name, namespace, uid, generation, labels,
 * annotations, the controller owner, creation and deletion times; what
 * `metadata` leaves out is `meta`'s.
 */
export function objectMeta(json: ObjectJson): ObjectMeta;

/** A contract timestamp from seconds since the epoch or RFC 3339 text. */
export function timestamp(at: Time): Timestamp;

/** A contract object (what `facts.get`, `list` and `children` answer): its metadata and its JSON text. */
export function object(json: ObjectJson): ObjectFact;

/** A Deployment `name` whose `replicas` Pods are all Ready on the current template (the Rust mock's `workload_ready`). */
export function workloadReady(namespace: string, name: string, replicas: number): WorkloadFact;

/**
 * A Deployment `name` in `state` (the host's classification:
 * `{tag: 'crash-loop-back-off', val: message}` ...), no replica Ready
 * (the Rust mock's `workload_in`).
 */
export function workloadIn(namespace: string, name: string, state: WorkloadState): WorkloadFact;

/**
 * The input of a guest's `reconcile`: the parent from its JSON, the
 * operator's settings (`{name: value}`, as `--setting Kind.name=value`;
 * none by default) and whether the parent is paused (not by default).
 */
export function evaluation(parent: ObjectJson, settings?: Record<string, string>, paused?: boolean): Evaluation;

/** The API of an exposure kind, as the host declares and probes it (the Rust mock's `exposure_kind_ref`). */
export function exposureKindRef(kind: ExposureKind): KindRef;

/** The error a facts function throws for a `read-error`, as componentize-js throws it (the error in `payload`). */
export function readError(tag: ReadError['tag'], text: string): Error & { payload: ReadError };

/**
 * The facts of one test (the Rust SDK's `mock::MockFacts`): start from
 * the clock, add what the pass reads with the `with...` methods (each
 * returns the mock, to chain), and hand `facts()` to the guest's
 * `reconcile`. A read of anything not added answers `undefined` (or an
 * empty list), an optional API is available unless `withAvailability`
 * says otherwise, a change the guest asks for reads as made unless
 * `withChangeState` says otherwise, and `failing` makes a read fail.
 */
export class MockFacts {
  /** Facts at `now` (the epoch by default), with nothing else. */
  constructor(now?: Time);
  /** The clock of the pass (`facts.now()`). */
  readonly now: Timestamp;
  /**
   * Every read the guest made, in order: `workload ns/name`,
   * `secret ns/name`, `configmap ns/name`, `get <group>/<version>/<kind>
   * ns/name`, `list <group>/<version>/<kind> ns [selector]`,
   * `network-policies ns`, `egress-policies ns`, `exposure <kind> ns/name`,
   * `clusterrole name`, `certificates ns/name key`,
   * `change-state <group>/<version>/<kind> ns/name`,
   * `children <group>/<version>/<kind>`, `job ns/name`.
   */
  readonly reads: string[];

  /** The Deployment `namespace/name` `facts.workload` answers: `workloadReady(...)`, `workloadIn(...)`, or a WorkloadFact of your own. */
  withWorkload(namespace: string, name: string, fact: WorkloadFact): this;
  /**
   * A Secret holding `keys` (names only, as the host serves it), its
   * metadata read from `json` (by default `{metadata: {name, namespace}}`),
   * of `type` (Opaque by default).
   */
  withSecret(namespace: string, name: string, keys: readonly string[], json?: ObjectJson, type?: string): this;
  /** A Secret as the host reads it, under its metadata's namespace and name. */
  withSecretFact(fact: SecretFact): this;
  /** A ConfigMap holding `keys`, its metadata read from `json` (by default `{metadata: {name, namespace}}`). */
  withConfigMap(namespace: string, name: string, keys: readonly string[], json?: ObjectJson): this;
  /** An object of `kind`, from its JSON (`metadata.name` required), served by `facts.get` and `facts.list`. */
  withObject(kind: KindRef, json: NamedObjectJson): this;
  /** A child of the parent, of a kind the guest writes, from its JSON: served by `facts.children(kind)`. */
  withChild(kind: KindRef, json: NamedObjectJson): this;
  /**
   * The optional API `kind` in `namespace` ('' for every namespace):
   * `facts.apiAvailability` says so, and reads of the kind there throw
   * the read-error `not-served` or `forbidden`.
   */
  withAvailability(kind: KindRef, namespace: string, availability: Availability): this;
  /**
   * A kind `withAvailability` made 'forbidden' in `namespace` ('' for
   * every namespace) whose objects the host still reads one by one, past
   * its cache: `facts.get` and `facts.exposure` find them, `facts.list`
   * and `facts.children` stay refused.
   */
  withDirectGet(kind: KindRef, namespace: string): this;
  /** A Route, Ingress or HTTPRoute (`kind`), served by `facts.exposure`. */
  withExposure(kind: ExposureKind, namespace: string, name: string, fact: ExposureFact): this;
  /** A ClusterRole that exists, its metadata read from `json` (by default `{metadata: {name}}`). */
  withClusterRole(name: string, json?: ObjectJson): this;
  /**
   * What `facts.secretCertificates(namespace, name, key)` answers. A
   * Secret given by `withSecret` without a bundle answers whether it has
   * `key`, with no certificate.
   */
  withCertificates(namespace: string, name: string, key: string, bundle: CertificateBundleFact): this;
  /** The Job `namespace/name`, served by `facts.job`. */
  withJob(namespace: string, name: string, fact: JobFact): this;
  /** A NetworkPolicy of `namespace` (its ingress side), served by `facts.networkPolicies`. */
  withNetworkPolicy(namespace: string, fact: NetworkPolicyFact): this;
  /** A NetworkPolicy of `namespace` (its egress side), served by `facts.egressPolicies`. */
  withEgressPolicy(namespace: string, fact: EgressPolicyFact): this;
  /** What `facts.nodePodCidrs` answers (`{tag: 'known', val: []}` unless set). */
  withNodePodCidrs(fact: NodePodCidrsFact): this;
  /** How the API server answered the host's last apply of the child (`facts.lastApply`), and when, if `when` is given. */
  withLastApply(kind: KindRef, namespace: string, name: string, outcome: ApplyOutcome, when?: Time): this;
  /** When the API server answered the host's last apply of the child (`facts.lastApplyTime`). */
  withLastApplyTime(kind: KindRef, namespace: string, name: string, at: Time): this;
  /**
   * What became of the change asked for the child (`facts.changeState`):
   * `undefined` before the host acted, `{tag: 'made'}`, `{tag: 'held',
   * val: 'awaiting-approval'}`, `{tag: 'refused', val: {code, reason,
   * message}}`, `{tag: 'withdrawn'}`. A child not given answers
   * `{tag: 'made'}`, as if a host made every change.
   */
  withChangeState(kind: KindRef, namespace: string, name: string, state: ChangeOutcome | undefined): this;
  /**
   * The workloads, ConfigMaps, Jobs and objects (of `facts.get` and
   * `facts.list`) named `name` that have no controller of their own are
   * controlled by `controller`.
   */
  withController(name: string, controller: ControllerRef): this;
  /**
   * The read of `name` by `what` throws the read-error `tag` ('failed' by
   * default). `what` is `workload`, `secret`, `configmap`, `clusterrole`,
   * `exposure`, `certificates`, `job`, `networkpolicies` or
   * `egresspolicies` (with the namespace as `name`); a kind's name
   * (`Cluster`) for `facts.get`; `list` or `children` with the kind's
   * name as `name`.
   */
  failing(what: string, name: string, tag?: ReadError['tag']): this;
  /** The facts interface handed to a guest's `reconcile` (`reconciler:guest/facts@0.6.0`). */
  facts(): Facts;
}
