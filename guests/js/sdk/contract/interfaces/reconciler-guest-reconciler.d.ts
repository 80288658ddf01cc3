/// <reference path="./reconciler-guest-types.d.ts" />
declare module 'reconciler:guest/reconciler@0.6.0' {
  export function describe(): KindSpec;
  export function evaluate(input: Evaluation): Verdict;
  /**
   * The kinds the guest writes (applies and deletes). The host watches
   * them, serves their children through `facts.children`, and needs
   * RBAC to write them (`reconciler-host rbac`).
   */
  export function writes(): Array<KindRef>;
  /**
   * One pass with its changes; the host calls it instead of `evaluate`.
   */
  export function reconcile(input: Evaluation): Reconciliation;
  /**
   * Since 0.5.0: the gates a parent of the kind may set on itself; a
   * gate not listed is ignored on the parent (a requester who may
   * create the parent must not hold back what the operator decided).
   */
  export function parentGates(): Array<Gate>;
  export type Timestamp = import('reconciler:guest/types@0.6.0').Timestamp;
  export type KindRef = import('reconciler:guest/types@0.6.0').KindRef;
  export type Object = import('reconciler:guest/types@0.6.0').Object;
  export type ConditionStatus = import('reconciler:guest/types@0.6.0').ConditionStatus;
  /**
   * How the host reports status for the kind.
   * # Variants
   * 
   * ## `"progressing"`
   * 
   * Ready, Progressing, Stalled and the aspects (seed "Conditions
   * and reasons").
   * ## `"kstatus"`
   * 
   * Ready, Reconciling, Stalled, and Degraded where declared (the
   * kstatus vocabulary, seed "Status conventions").
   */
  export type ConventionProfile = 'progressing' | 'kstatus';
  /**
   * One registered reason. Reasons are frozen API: only ever added.
   */
  export interface ReasonEntry {
    name: string,
    /**
     * "common" for the shared vocabulary, else the kind's owner name.
     */
    owner: string,
    meaning: string,
  }
  /**
   * A reason of ConfigurationValid (or any aspect) that stalls the object.
   */
  export interface StallRule {
    reason: string,
    /**
     * Looked at again after this many seconds even without a watched
     * change (for inputs the host's caches do not see).
     */
    recheckSeconds?: number,
  }
  /**
   * A kind the guest reads through `facts`; the host watches it.
   */
  export interface ReadDecl {
    kind: KindRef,
    /**
     * Optional APIs are probed at start; the guest learns their
     * availability per namespace through `facts.api-availability`.
     */
    optional: boolean,
    /**
     * Since 0.4.0: the guest may read the kind (`facts.get`,
     * `facts.list`, and the typed facts read through it) in other
     * namespaces than its parent's; a kind not declared so is read in
     * the parent's namespace only (listing every namespace, `""`,
     * still shows the parent's objects only). Each such
     * read is answered as that namespace answers: `forbidden` where
     * the host does not watch it or may not read the kind there (the
     * pass goes on, the guest says what it makes of it), the objects
     * of that namespace otherwise. Whether the parent is entitled to
     * what it reads there is the guest's business (a grant it reads).
     */
    crossNamespace: boolean,
    /**
     * Since 0.6.0: the fields of the kind's objects the guest reads
     * through `facts.get` and `facts.list`, each a path of field names
     * joined by `.` (`spec.replicas`, `status.conditions`, a `.` inside
     * a name escaped as `\.`: `data.tls\.crt`). A path keeps its field
     * with everything under it, through every item of a list on its
     * way (`spec.containers.image`). `apiVersion`, `kind` and the
     * whole `metadata` are always served. Every other field reads as
     * absent, in the operator as in `test` and `capture` (where a
     * fixture whose verdict changes with a field left out fails, naming
     * the field and the read). `none`: the whole object, as before
     * 0.6.0. The typed facts the host derives (`workload`, `job`,
     * `exposure` ...) are unaffected: the host keeps what they need.
     */
    fields?: Array<string>,
  }
  /**
   * The annotation that pauses reconciliation, e.g.
   * `pgtoolbox.fyannk.dev/reconcile: skip`.
   */
  export interface PauseAnnotation {
    key: string,
    value: string,
  }
  /**
   * A column of `kubectl get` (the CRD's additionalPrinterColumns).
   */
  export interface PrinterColumn {
    /**
     * The header, such as `URL`.
     */
    name: string,
    /**
     * `string`, `integer`, `number`, `boolean` or `date`.
     */
    type: string,
    /**
     * A JSONPath into the object, such as `.status.url`.
     */
    jsonPath: string,
    /**
     * Shown only with `-o wide`.
     */
    wide: boolean,
    description?: string,
  }
  /**
   * Everything the host needs to serve the kind without being recompiled.
   */
  export interface KindSpec {
    group: string,
    version: string,
    kind: string,
    plural: string,
    namespaced: boolean,
    profile: ConventionProfile,
    /**
     * The conditions that decide Ready, in Ready order.
     */
    aspects: Array<string>,
    /**
     * Conditions that never enter Ready.
     */
    advisory: Array<string>,
    reasons: Array<ReasonEntry>,
    /**
     * Condition types whose True is the bad state.
     */
    negativePolarity: Array<string>,
    /**
     * Reasons of a child on its way: an aspect turning False with one
     * emits no Warning.
     */
    quietReasons: Array<string>,
    stalls: Array<StallRule>,
    reads: Array<ReadDecl>,
    pause?: PauseAnnotation,
    /**
     * The OpenAPI v3 schema of the kind's `spec`, as JSON, if any.
     */
    specSchema?: string,
    /**
     * Columns `kubectl get` shows beside Ready, Reason and Age.
     */
    printerColumns: Array<PrinterColumn>,
  }
  /**
   * A condition the guest decides.
   */
  export interface Condition {
    type: string,
    status: ConditionStatus,
    reason: string,
    message: string,
  }
  /**
   * The object cannot make progress without a change of input.
   */
  export interface Stall {
    reason: string,
    message: string,
  }
  /**
   * # Variants
   * 
   * ## `"normal"`
   * 
   * ## `"warning"`
   */
  export type EventType = 'normal' | 'warning';
  /**
   * An Event of the kind's own (e.g. CertificateIssued); emitted after the
   * status write that carries the transition it reports.
   */
  export interface KindEvent {
    type: EventType,
    reason: string,
    message: string,
  }
  /**
   * What one pass decided.
   */
  export interface Verdict {
    /**
     * Every aspect of the kind up to the first that is not True; the
     * aspects after that one may be left out, not evaluated (after a
     * stall, or while an earlier aspect is False or Unknown): each
     * then keeps its previous condition, its older observedGeneration
     * included, or is Unknown (Initializing) when it has none. Leave
     * an aspect out rather than guess it. A paused pass may give only
     * the aspects it still checks.
     */
    aspects: Array<Condition>,
    /**
     * The advisory conditions present now; one left out is removed.
     * A verdict that does not evaluate everything (paused, stalled, or
     * leaving an aspect out) carries a condition it did not evaluate
     * forward by giving it as the status has it (status, reason and
     * message): it keeps its observedGeneration.
     */
    advisory: Array<Condition>,
    stall?: Stall,
    /**
     * A JSON object merged into `.status` (null members delete).
     */
    statusFields: string,
    events: Array<KindEvent>,
    /**
     * Evaluate again after this many seconds at the latest.
     */
    requeueAfterSeconds?: number,
  }
  /**
   * The parent being reconciled.
   */
  export interface Evaluation {
    parent: Object,
    /**
     * The kind's pause annotation is set.
     */
    paused: boolean,
    /**
     * The operator's settings for the kind (allow-lists, defaults), as
     * the host was configured: `--setting <kind>.<name>=<value>`.
     */
    settings: Array<[string, string]>,
  }
  /**
   * ---- 0.3.0: changes ------------------------------------------------------
   * An object the guest wants to exist: its kind, name and body (JSON:
   * `apiVersion`, `kind`, `metadata.name`, and the fields the guest
   * sets). The host sets the namespace to the parent's, the parent as
   * its controller owner, and its managed-by label, and applies it by
   * server-side apply under its field manager: the fields the body sets
   * are the host's, every other field stays its writer's.
   */
  export interface ApplyObject {
    kind: KindRef,
    name: string,
    body: string,
  }
  /**
   * A child the guest no longer wants: deleted only if it still has the
   * `uid` the guest saw (and is the parent's).
   */
  export interface DeleteObject {
    kind: KindRef,
    name: string,
    uid: string,
  }
  /**
   * A Secret whose values the host makes and the guest never sees:
   * `length` random bytes under each named key. Created only when it
   * does not exist, never overwritten: a restart or a second replica
   * adopts the one that exists.
   */
  export interface GenerateSecret {
    name: string,
    keys: Array<[string, number]>,
  }
  /**
   * A TLS serving certificate for `dns-names` (1 to 100 names), signed
   * by the operator's own CA, in the Secret `name` of type
   * `kubernetes.io/tls` (`tls.crt`, `tls.key`, `ca.crt`), annotated
   * `reconciler.dev/certificate-expiry` (RFC 3339). The host creates it
   * when missing and replaces it before it expires or when the names
   * change, and never otherwise; the private key never reaches a guest.
   */
  export interface ServingCertificate {
    name: string,
    dnsNames: Array<string>,
  }
  /**
   * A ConfigMap `name` whose key `key` holds the `CERTIFICATE` PEM
   * blocks found under each (Secret name, key) of `sources`, in that
   * order, each certificate once: a CA bundle mirrored from Secrets the
   * guest sees only as certificate facts. Nothing but certificates
   * crosses from a Secret. Applied as an `apply-object` would be (owner,
   * label, skipped when the ConfigMap already holds that bundle).
   */
  export interface CaBundle {
    name: string,
    key: string,
    sources: Array<[string, string]>,
    /**
     * The ConfigMap's labels (the host adds its managed-by label).
     */
    labels: Array<[string, string]>,
  }
  /**
   * ---- 0.5.0: withdrawals and the gates a parent may set ---------------
   * Since 0.5.0: a child whose going takes access or exposure away (a
   * RoleBinding or Role granting access; a Route, Ingress, HTTPRoute or
   * Service publishing a name). The host deletes it (only if it still has the `uid` the guest saw and the
   * parent controls it) whatever holds the parent's other changes: the
   * pause, mode `observe`, approval `manual`, a pending or denied plan,
   * a gate set to what it cannot be, a read that failed. Where plans are
   * served it is recorded (a plan made without review, saying why).
   * Only a deletion of such a kind can be a withdrawal: the host refuses
   * any other (a NetworkPolicy's going widens what Pods reach), blamed
   * on the guest, and nothing of the pass is made.
   */
  export interface Withdrawal {
    /**
     * The child, as the guest saw it.
     */
    object: DeleteObject,
    /**
     * The Event the host raises once the child is gone (a reason of
     * the kind's registry), none when the child was already gone; or
     * none at all, where the verdict's own transition says it (a
     * refused hostname's Warning).
     */
    event?: KindEvent,
  }
  export type Change = ChangeApply | ChangeDelete | ChangeGenerate | ChangeCertificate | ChangeBundle | ChangeWithdraw;
  export interface ChangeApply {
    tag: 'apply',
    val: ApplyObject,
  }
  export interface ChangeDelete {
    tag: 'delete',
    val: DeleteObject,
  }
  export interface ChangeGenerate {
    tag: 'generate',
    val: GenerateSecret,
  }
  export interface ChangeCertificate {
    tag: 'certificate',
    val: ServingCertificate,
  }
  export interface ChangeBundle {
    tag: 'bundle',
    val: CaBundle,
  }
  /**
   * Since 0.5.0: a deletion that takes access or exposure away.
   */
  export interface ChangeWithdraw {
    tag: 'withdraw',
    val: Withdrawal,
  }
  /**
   * Since 0.5.0: a gate the parent itself may set, by the annotation
   * `reconciler.dev/mode` or `reconciler.dev/approval`, or by
   * `spec.mode` or `spec.approval` where the kind's spec schema
   * declares the field. The operator's `--mode` and `--approval` always
   * apply.
   * # Variants
   * 
   * ## `"mode"`
   * 
   * `observe` or `apply`.
   * ## `"approval"`
   * 
   * `manual` (an annotation can only ask for review, never waive it).
   */
  export type Gate = 'mode' | 'approval';
  /**
   * What one pass decided and the changes it wants made. The host
   * checks the changes as a whole before making any, makes them, then
   * writes the status.
   */
  export interface Reconciliation {
    verdict: Verdict,
    changes: Array<Change>,
  }
}
