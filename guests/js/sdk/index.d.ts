// The JavaScript guest SDK's declarations (index.js), for editors and
// `tsc`: each name index.js exports is declared here (the SDK's tests hold
// the two lists equal). The contract's own types are generated from
// wit/reconciler.wit into contract/ (`make js-types`).

/// <reference path="./contract/contract.d.ts" />

import type * as facts from 'reconciler:guest/facts@0.6.0';
import type {
  Change, Condition, ConditionStatus, Evaluation, Gate, KindEvent, KindRef, KindSpec, PauseAnnotation, PrinterColumn,
  ReadDecl, ReasonEntry, Reconciliation, StallRule, Verdict,
} from 'reconciler:guest/reconciler@0.6.0';
import type { ControllerRef, ObjectMeta } from 'reconciler:guest/types@0.6.0';

export type Facts = typeof facts;
export type { Change, Condition, ConditionStatus, Evaluation, Gate, KindEvent, KindRef, KindSpec, ReasonEntry, Verdict };

export const AS_EXPECTED: 'AsExpected';
export const RECONCILING: 'Reconciling';
/** How soon a pass whose read failed is tried again (seconds). */
export const RETRY_SECONDS: 30;
export const CONFIGURATION_INVALID: 'ConfigurationInvalid';
export const RESOURCE_NOT_OWNED: 'ResourceNotOwned';
export const COMMON: 'common';

// ---- conditions and the verdict ---------------------------------------------

export function condition(type: string, status: ConditionStatus, reason: string, message?: unknown): Condition;
/** True, AsExpected. */
export function ok(type: string, message?: unknown): Condition;
/** True with a reason of its own. */
export function holds(type: string, reason: string, message?: unknown): Condition;
export function fails(type: string, reason: string, message?: unknown): Condition;
export function unknown(type: string, reason: string, message?: unknown): Condition;

/** Collects a verdict as the Rust SDK's VerdictBuilder does. */
export class VerdictBuilder {
  /** An aspect; a later one of the same type replaces it. */
  aspect(c: Condition): this;
  advisory(c: Condition): this;
  /** The first stall wins. */
  stall(reason: string, message: unknown): this;
  /** A member of `.status` (null deletes it). */
  field(key: string, value: unknown): this;
  event(type: 'normal' | 'warning', reason: string, message: unknown): this;
  /** The smallest requeue wins. */
  requeueAfter(seconds: number): this;
  aspectOf(type: string): Condition | undefined;
  build(): Verdict;
}

/** JSON with object keys sorted, as serde_json writes a map. */
export function stringify(value: unknown): string;

// ---- the kind spec -----------------------------------------------------------

/** Reasons the host registers and sets itself. */
export const HOST_REASONS: readonly string[];
/** The shared vocabulary, with its meanings (the Rust SDK's COMMON_REASONS). */
export const COMMON_REASONS: Readonly<Record<string, string>>;
/** A reason of the shared vocabulary, its meaning with it (throws for another name). */
export function common(name: string): ReasonEntry;
export function owned(owner: string, name: string, meaning: string): ReasonEntry;

/** A reason registry: the common reasons used, then the kind's own. */
export class Registry {
  constructor(owner: string);
  /** Common reasons, each registered once (throws for a name not in COMMON_REASONS). */
  common(names: readonly string[]): this;
  /** `[[name, meaning], ...]` owned by the kind. */
  owned(entries: ReadonlyArray<readonly [string, string]>): this;
  build(): ReasonEntry[];
}

export function kindRef(group: string, version: string, kind: string): KindRef;
export function reads(kind: KindRef): ReadDecl;
export function readsOptional(kind: KindRef): ReadDecl;
export function acrossNamespaces(read: ReadDecl): ReadDecl;
/**
 * The same read, naming the fields of the kind's objects the guest reads
 * (contract 0.6.0, `read-decl.fields`): each a path of field names joined
 * by `.` (a `.` in a name escaped as `\.`: `data.tls\.crt`), through
 * every item of a list on its way (`spec.containers.image`). The host
 * serves those fields only, with `apiVersion`, `kind` and the whole
 * `metadata`; its caches hold no more than what the kind's readers name.
 * A fixture whose verdict changes with a field left out fails, naming it.
 * Without it (`reads`, `readsOptional`) the whole object is served.
 * Throws a TypeError unless `fields` is an array of non-empty strings.
 */
export function withFields(read: ReadDecl, fields: readonly string[]): ReadDecl;
/** `withFields` naming none: the guest parses none of the kind's objects itself (metadata and typed facts only). */
export function metadataOnly(read: ReadDecl): ReadDecl;
export function stalls(reason: string): StallRule;
export function stallsRechecked(reason: string, seconds: number): StallRule;
export function pause(key: string, value: string): PauseAnnotation;
export function column(name: string, type: string, jsonPath: string): PrinterColumn;
export function wideColumn(name: string, type: string, jsonPath: string): PrinterColumn;
export function conditionColumn(type: string): PrinterColumn;

/** What a guest's `describe` gives `kindSpec`: the kind, its aspects; every other field defaults. */
export type KindSpecInput = Pick<KindSpec, 'group' | 'version' | 'kind' | 'plural' | 'aspects'> & Partial<KindSpec>;
/** A complete kind spec: what `describe` returns, with every list defaulted. */
export function kindSpec(spec: KindSpecInput): KindSpec;

// ---- the evaluation's input ----------------------------------------------------

/** The parent object, parsed from its JSON (null when it is not JSON). */
export function parentJson(input: Evaluation): any;
/** An operator setting (`--setting Kind.name=value`), or undefined. */
export function setting(input: Evaluation, name: string): string | undefined;
/** A comma-separated setting, trimmed, empty entries dropped. */
export function settingList(input: Evaluation, name: string): string[];

// ---- reads -----------------------------------------------------------------------

/** What a facts call answered: its value, or the host's `read-error`. */
export type Read<T> = { value: T; error?: undefined } | { value?: undefined; error: facts.ReadError };
/**
 * Calls a facts function: `{value}` on success, `{error}` with the
 * `read-error` when the host answered one. Anything else thrown is
 * rethrown (a bug, not a read).
 */
export function read<T>(call: () => T): Read<T>;
/** The text of a read error. */
export function readErrorText(error: facts.ReadError): string;
/** "could not read {what}: {text}" */
export function readFailure(what: string, error: facts.ReadError): string;

// ---- Rust's formatting, for messages identical to the Rust guests' -------------

/** A string as Rust's `{:?}` writes it. */
export function debug(s: unknown): string;
/** The byte length of a string in UTF-8 (the host bounds messages in bytes). */
export function utf8Length(s: string): number;
export const MAX_MESSAGE_BYTES: 1024;
export const TRUNCATION_MARKER: string;
/** A message bounded as the host bounds it (controls become spaces). */
export function bound(message: unknown, max?: number): string;

// ---- the workload fact -------------------------------------------------------------

/** The reasons `workloadCondition` may copy from the host's classification. */
export const WORKLOAD_REASONS: readonly string[];
/** The condition of a Deployment as read (`read(() => facts.workload(ns, name))`). */
export function workloadCondition(type: string, deployment: string, observed: Read<facts.WorkloadFact | undefined>): Condition;
export function workloadFromState(type: string, deployment: string, workload: facts.WorkloadFact): Condition;

// ---- images --------------------------------------------------------------------------

export const ALLOWED_REPOSITORIES: 'allowedImageRepositories';
/** A refused image: the reason and message of its condition. */
export interface ImageRefusal {
  reason: string;
  message: string;
}
/** The repository of an image reference (no tag, no digest; a registry port stays), or undefined. */
export function repository(image: string): string | undefined;
/** Whether `repo` is within `prefix`, whole path components. */
export function within(repo: string, prefix: string): boolean;
/** An image held to the allow-list. */
export function checkImage(image: string, origin: string, allowed: readonly string[]): { image: string } | { refusal: ImageRefusal };
/** `spec.image`, else the default setting (blank is none), each held to the list; `{}` when neither. */
export function chooseImage(
  specImage: string | undefined,
  defaultImage: string | undefined,
  defaultSetting: string,
  allowed: readonly string[],
): { image?: string; refusal?: ImageRefusal };

// ---- ownership and configuration -------------------------------------------------------

/** The parent a pass is about. */
export class Parent {
  constructor(kind: string, meta: ObjectMeta);
  static of(kind: string, meta: ObjectMeta): Parent;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  /** The ResourceNotOwned message for a child another object controls, or undefined. */
  refusal(kind: string, name: string, meta: ObjectMeta): string | undefined;
  foreign(kind: string, name: string, meta: ObjectMeta): string | undefined;
  adoptable(meta: ObjectMeta): boolean;
}
/** The controller of `meta` when it is not the object `uid`. */
export function foreignController(meta: ObjectMeta, uid: string): ControllerRef | undefined;
export const ADOPT_ANNOTATION: string;

/**
 * Why a configuration is not valid, thrown by the checks and caught by the
 * guest: a stall with its reason, or a read that failed (`unread`).
 */
export class NotValid extends Error {
  constructor(kind: 'stalled' | 'unread', reason: string | undefined, message: string);
  kind: 'stalled' | 'unread';
  reason: string | undefined;
}
export function stalled(reason: string, message: string): NotValid;
export function unread(message: string): NotValid;
/** Throws ResourceNotOwned when the child read (`{value: meta}`) is another's, `unread` when the read failed. */
export function checkOwned(parent: Parent, kind: string, name: string, observed: Read<ObjectMeta | undefined>): void;

// ---- changes -----------------------------------------------------------------------------

/** Apply `body` (any JSON object) as the child `name` of `kind`. */
export function apply(kind: KindRef, name: string, body: unknown): Change;
/** Delete the child `name` of `kind`, only if its UID is still `uid`. */
export function remove(kind: KindRef, name: string, uid: string): Change;
/** A Secret `name` the host generates: `[key, length]` random bytes under each key. */
export function generate(name: string, keys: Array<[string, number]>): Change;
/** A serving certificate Secret `name` the host signs for `dnsNames`. */
export function certificate(name: string, dnsNames: string[]): Change;
/** A ConfigMap `name` whose `key` holds the CA certificates of `sources`. */
export function caBundle(name: string, key: string, sources: Array<[string, string]>, labels?: Array<[string, string]>): Change;
/**
 * A withdrawal (contract 0.5.0): delete the child `name` of `kind` (only if
 * its UID is still `uid`), a deletion that takes access or exposure away,
 * whatever holds the parent's other changes; the host raises `event` (a
 * reason of the kind's registry) once the child is gone, none when
 * undefined.
 */
export function withdraw(kind: KindRef, name: string, uid: string, event?: KindEvent): Change;

// ---- what became of a change (contract 0.5.0) ---------------------------------------------

/** Whether `state` (`facts.changeState`) says the change is made (or taken away). */
export function isMade(state: facts.ChangeOutcome | undefined): boolean;
/**
 * The aspect `type` about `what` (`ConfigMap w-config`), a child whose
 * change is in `state` (`facts.changeState`): `made()` once the host made
 * it; otherwise not True, saying what holds it with the host's reason
 * (AwaitingApproval, ChangesDenied, Planned, ReconcileError), or that the
 * API server refused it (with `refusedReason`, the kind's own).
 */
export function changeAspect(
  type: string, what: string, state: facts.ChangeOutcome | undefined, refusedReason: string, made: () => Condition,
): Condition;
/** What a withdrawal of `what` still waits for: undefined once the host took it away. */
export function notWithdrawn(what: string, state: facts.ChangeOutcome | undefined): string | undefined;

// ---- testing -------------------------------------------------------------------------------

/**
 * What the host checks of a verdict (the Rust SDK's
 * `testing::keeps_contract`), for a guest's tests: every aspect once in
 * declared order up to the first that is not True, the later ones given or
 * left out (when `paused`, the ones given, in that order), registered
 * reasons (the kind's, or HOST_REASONS) with a message, declared advisory
 * conditions and stalls, no reserved status field. Throws an Error naming
 * what is broken.
 */
export function keepsContract(spec: KindSpecInput, verdict: Verdict, paused?: boolean): void;

// ---- the export ----------------------------------------------------------------------------

/**
 * The gates a parent may set on itself (contract 0.5.0: the annotations
 * `reconciler.dev/mode` and `reconciler.dev/approval`, or `spec.mode` and
 * `spec.approval` where the spec declares them): both, unless a guest's
 * `parentGates()` says otherwise.
 */
export const PARENT_GATES: readonly ['mode', 'approval'];

/** A guest's logic, with the facts it is handed. */
export interface GuestLogic {
  describe(): KindSpecInput;
  writes?(): KindRef[];
  reconcile(input: Evaluation, facts: Facts): Reconciliation;
  /** The gates a parent may set on itself; PARENT_GATES when absent. */
  parentGates?(): readonly Gate[];
}

/**
 * The `reconciler` export of a guest: `describe()`, `writes()`,
 * `reconcile(input, facts)` returning `{verdict, changes}` and, optionally,
 * `parentGates()` (PARENT_GATES when absent). `evaluate` is
 * derived. An exception a guest lets escape is written to stderr, which
 * the host puts in the guest error (bounded), and traps the call.
 */
export function exportGuest(guest: GuestLogic, facts: Facts): {
  describe(): KindSpec;
  writes(): KindRef[];
  reconcile(input: Evaluation): Reconciliation;
  parentGates(): Gate[];
  evaluate(input: Evaluation): Verdict;
};
