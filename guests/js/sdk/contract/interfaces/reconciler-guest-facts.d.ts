/// <reference path="./reconciler-guest-types.d.ts" />
declare module 'reconciler:guest/facts@0.6.0' {
  /**
   * The clock of this pass (fixed for the whole pass).
   */
  export function now(): Timestamp;
  /**
   * The Deployment `name` in `namespace` with its Pods, if it exists.
   */
  export function workload(namespace: string, name: string): WorkloadFact | undefined;
  /**
   * The Secret `name` in `namespace`, if it exists (key names only).
   */
  export function secret(namespace: string, name: string): SecretFact | undefined;
  /**
   * The ConfigMap `name` in `namespace`, if it exists (key names only).
   */
  export function configMap(namespace: string, name: string): ConfigMapFact | undefined;
  /**
   * Any declared kind by name. `namespace` is empty for cluster-scoped kinds.
   */
  export function get(kind: KindRef, namespace: string, name: string): Object | undefined;
  /**
   * Any declared kind by label selector, sorted by name.
   */
  export function list(kind: KindRef, namespace: string, selector: LabelSelector): Array<Object>;
  /**
   * Whether an optional API is usable in a namespace.
   */
  export function apiAvailability(kind: KindRef, namespace: string): Availability;
  /**
   * Since 0.2.0: the NetworkPolicies of `namespace`, sorted by name.
   * Needs networking.k8s.io/v1 NetworkPolicy declared.
   */
  export function networkPolicies(namespace: string): Array<NetworkPolicyFact>;
  /**
   * Since 0.2.0: the Nodes' pod CIDRs. Needs core v1 Node declared
   * (optional: a host without the grant answers `forbidden`).
   */
  export function nodePodCidrs(): NodePodCidrsFact;
  /**
   * Since 0.2.0: the Route, Ingress or HTTPRoute `name`, if it exists.
   * Needs its kind declared (Routes and HTTPRoutes as optional).
   */
  export function exposure(kind: ExposureKind, namespace: string, name: string): ExposureFact | undefined;
  /**
   * Since 0.2.0: the ClusterRole `name` (metadata only), if it exists.
   * Needs rbac.authorization.k8s.io/v1 ClusterRole declared.
   */
  export function clusterRole(name: string): ObjectMeta | undefined;
  /**
   * Since 0.2.0: the certificates under `key` of the Secret `name`, if
   * the Secret exists. Needs core v1 Secret declared.
   */
  export function secretCertificates(namespace: string, name: string, key: string): CertificateBundleFact | undefined;
  /**
   * Since 0.2.0: the outcome of the host's last apply of the child
   * `name` of `kind`, if the host applied it since it started.
   */
  export function lastApply(kind: KindRef, namespace: string, name: string): ApplyOutcome | undefined;
  /**
   * Since 0.3.0: the parent's own children of `kind` (a kind the guest
   * writes): the objects of its namespace whose controller is the
   * parent, sorted by name. What the guest no longer wants among them,
   * it deletes.
   */
  export function children(kind: KindRef): Array<Object>;
  /**
   * Since 0.3.0: when the API server answered the host's last apply of
   * the child `name` of `kind` (the answer is `last-apply`), if the host
   * applied it since it started: a guest that maps a refusal to a reason
   * of its own holds the change back for a while, then asks again.
   */
  export function lastApplyTime(kind: KindRef, namespace: string, name: string): Timestamp | undefined;
  /**
   * Since 0.4.0: the Job `name` in `namespace` with the failure of its
   * latest failed Pod, if the Job exists. Needs batch/v1 Job and core v1
   * Pod declared.
   */
  export function job(namespace: string, name: string): JobFact | undefined;
  /**
   * Since 0.4.0: the egress side of the NetworkPolicies of `namespace`,
   * sorted by name. Needs networking.k8s.io/v1 NetworkPolicy declared.
   */
  export function egressPolicies(namespace: string): Array<EgressPolicyFact>;
  /**
   * Since 0.5.0: what became of the change the guest asked for the
   * child `name` of `kind` (a kind it writes), if the host acted on one
   * since it started. Answered for this pass: the host makes the pass's
   * changes, then, when an answer the guest read has changed, evaluates
   * the pass again and writes the status of that evaluation (its
   * changes are the next pass's). So a guest that says a child is made
   * only when this answers `made` claims nothing before it happened,
   * and says instead what holds it (`held`), what refused it
   * (`refused`) or that it took it away (`withdrawn`). `none`: nothing
   * was asked of the host for that child yet (before the pass's
   * changes are made, or a child the guest does not ask for).
   */
  export function changeState(kind: KindRef, namespace: string, name: string): ChangeOutcome | undefined;
  export type Timestamp = import('reconciler:guest/types@0.6.0').Timestamp;
  export type KindRef = import('reconciler:guest/types@0.6.0').KindRef;
  export type ObjectMeta = import('reconciler:guest/types@0.6.0').ObjectMeta;
  export type Object = import('reconciler:guest/types@0.6.0').Object;
  export type ConditionStatus = import('reconciler:guest/types@0.6.0').ConditionStatus;
  /**
   * Why a read could not be served.
   */
  export type ReadError = ReadErrorNotDeclared | ReadErrorNotServed | ReadErrorForbidden | ReadErrorFailed;
  /**
   * The guest did not declare this kind in `kind-spec.reads`.
   */
  export interface ReadErrorNotDeclared {
    tag: 'not-declared',
    val: string,
  }
  /**
   * The API is not served by this cluster (an optional API).
   */
  export interface ReadErrorNotServed {
    tag: 'not-served',
    val: string,
  }
  /**
   * The host's identity may not read this kind in this namespace.
   */
  export interface ReadErrorForbidden {
    tag: 'forbidden',
    val: string,
  }
  /**
   * The read failed for another reason (text for the message).
   */
  export interface ReadErrorFailed {
    tag: 'failed',
    val: string,
  }
  /**
   * Whether an optional API can be used in a namespace, as probed by the
   * host at start.
   * # Variants
   * 
   * ## `"available"`
   * 
   * ## `"not-served"`
   * 
   * Not served by the cluster at all.
   * ## `"forbidden"`
   * 
   * Served, but the host may not read it in this namespace (403).
   */
  export type Availability = 'available' | 'not-served' | 'forbidden';
  export interface ContainerWaiting {
    container: string,
    reason: string,
    message: string,
  }
  /**
   * The state of one Pod, as generic Kubernetes knowledge classifies it.
   */
  export interface PodFact {
    meta: ObjectMeta,
    /**
     * `status.phase`: Pending, Running, Succeeded, Failed or Unknown.
     */
    phase: string,
    /**
     * The Pod's Ready condition is True.
     */
    ready: boolean,
    /**
     * The first container (init containers first) that waits, with
     * the kubelet's reason (CrashLoopBackOff, ImagePullBackOff,
     * ErrImagePull, CreateContainerConfigError, ...) and message.
     */
    waiting?: ContainerWaiting,
    /**
     * PodScheduled=False with reason Unschedulable: the message.
     */
    unschedulable?: string,
    /**
     * The sum of all containers' restart counts.
     */
    restartCount: number,
    podIp?: string,
    nodeName?: string,
  }
  /**
   * Why a workload is not ready, derived by the host from the Deployment
   * and its Pods. When several hold, the first in this order wins: the
   * most specific cause before the symptom it produces.
   */
  export type WorkloadState = WorkloadStateReady | WorkloadStateReplicaFailure | WorkloadStateSecretNotFound | WorkloadStateSecretKeyMissing | WorkloadStateConfigMapNotFound | WorkloadStatePodUnschedulable | WorkloadStateImagePullFailed | WorkloadStateCrashLoopBackOff | WorkloadStateRolloutStuck | WorkloadStateRolloutInProgress | WorkloadStatePodNotReady;
  /**
   * Every desired replica runs the current template and is Ready.
   */
  export interface WorkloadStateReady {
    tag: 'ready',
  }
  /**
   * The Deployment's ReplicaFailure condition (it cannot create a Pod).
   */
  export interface WorkloadStateReplicaFailure {
    tag: 'replica-failure',
    val: string,
  }
  /**
   * A container references a Secret that does not exist.
   */
  export interface WorkloadStateSecretNotFound {
    tag: 'secret-not-found',
    val: string,
  }
  /**
   * A container references a key its Secret or ConfigMap lacks.
   */
  export interface WorkloadStateSecretKeyMissing {
    tag: 'secret-key-missing',
    val: string,
  }
  /**
   * A container references a ConfigMap that does not exist.
   */
  export interface WorkloadStateConfigMapNotFound {
    tag: 'config-map-not-found',
    val: string,
  }
  /**
   * A Pod cannot be scheduled.
   */
  export interface WorkloadStatePodUnschedulable {
    tag: 'pod-unschedulable',
    val: string,
  }
  /**
   * A container's image cannot be pulled.
   */
  export interface WorkloadStateImagePullFailed {
    tag: 'image-pull-failed',
    val: string,
  }
  /**
   * A container restarts in a loop.
   */
  export interface WorkloadStateCrashLoopBackOff {
    tag: 'crash-loop-back-off',
    val: string,
  }
  /**
   * The Deployment's progress deadline is exceeded.
   */
  export interface WorkloadStateRolloutStuck {
    tag: 'rollout-stuck',
    val: string,
  }
  /**
   * The rollout of the current template is on its way.
   */
  export interface WorkloadStateRolloutInProgress {
    tag: 'rollout-in-progress',
    val: string,
  }
  /**
   * The replicas exist but not all are Ready.
   */
  export interface WorkloadStatePodNotReady {
    tag: 'pod-not-ready',
    val: string,
  }
  /**
   * A Deployment and its Pods.
   */
  export interface WorkloadFact {
    meta: ObjectMeta,
    /**
     * `status.observedGeneration` has reached `metadata.generation`.
     */
    generationObserved: boolean,
    desiredReplicas: number,
    updatedReplicas: number,
    readyReplicas: number,
    availableReplicas: number,
    /**
     * Progressing=False with reason ProgressDeadlineExceeded.
     */
    progressDeadlineExceeded: boolean,
    /**
     * The ReplicaFailure condition's message, when it is True.
     */
    replicaFailure?: string,
    /**
     * The Pods the Deployment's selector matches.
     */
    pods: Array<PodFact>,
    /**
     * The host's classification of all of the above.
     */
    state: WorkloadState,
  }
  /**
   * A Secret: never its data, only the names of its keys.
   */
  export interface SecretFact {
    meta: ObjectMeta,
    type: string,
    keys: Array<string>,
  }
  /**
   * A ConfigMap: never its data, only the names of its keys
   * (`data` and `binaryData` together).
   */
  export interface ConfigMapFact {
    meta: ObjectMeta,
    keys: Array<string>,
  }
  /**
   * A label selector: every pair must match (`matchLabels`).
   */
  export type LabelSelector = Array<[string, string]>;
  /**
   * ---- 0.2.0: NetworkPolicies ------------------------------------------
   * One `matchExpressions` entry of a label selector.
   */
  export interface SelectorRequirement {
    key: string,
    /**
     * In, NotIn, Exists or DoesNotExist.
     */
    operator: string,
    values: Array<string>,
  }
  /**
   * A full Kubernetes `LabelSelector`. Both lists empty selects
   * everything.
   */
  export interface LabelSelectorFact {
    matchLabels: Array<[string, string]>,
    matchExpressions: Array<SelectorRequirement>,
  }
  /**
   * An `ipBlock` peer, as written (the guest does the CIDR arithmetic).
   */
  export interface IpBlockFact {
    cidr: string,
    except: Array<string>,
  }
  /**
   * One `from` peer of an ingress rule: either selectors (one or both)
   * or an ip-block.
   */
  export interface PeerFact {
    podSelector?: LabelSelectorFact,
    namespaceSelector?: LabelSelectorFact,
    ipBlock?: IpBlockFact,
  }
  /**
   * One `ports` entry of an ingress rule.
   */
  export interface PortFact {
    /**
     * TCP, UDP or SCTP (TCP when the policy leaves it out).
     */
    protocol: string,
    /**
     * A port number or a named port, as written; none: every port.
     */
    port?: string,
    /**
     * The last port of a range starting at `port`.
     */
    endPort?: number,
  }
  /**
   * One ingress rule: traffic from any of `from-peers` to any of
   * `ports`. An empty list means every peer / every port.
   */
  export interface IngressRuleFact {
    ports: Array<PortFact>,
    fromPeers: Array<PeerFact>,
  }
  /**
   * A NetworkPolicy's ingress side.
   */
  export interface NetworkPolicyFact {
    meta: ObjectMeta,
    /**
     * The Pods of its namespace the policy applies to.
     */
    podSelector: LabelSelectorFact,
    /**
     * Ingress is among its policy types (written, or implied because
     * `policyTypes` is left out): the selected Pods only accept what
     * some policy's rules admit.
     */
    isolatesIngress: boolean,
    ingress: Array<IngressRuleFact>,
  }
  /**
   * ---- 0.2.0: Nodes -----------------------------------------------------
   * One Node's `spec.podCIDRs`.
   */
  export interface NodeCidrs {
    node: string,
    podCidrs: Array<string>,
  }
  /**
   * What the host knows of the Nodes' pod CIDRs.
   */
  export type NodePodCidrsFact = NodePodCidrsFactKnown | NodePodCidrsFactForbidden | NodePodCidrsFactTooMany | NodePodCidrsFactIncomplete;
  /**
   * Every Node, sorted by name, each with its pod CIDRs.
   */
  export interface NodePodCidrsFactKnown {
    tag: 'known',
    val: Array<NodeCidrs>,
  }
  /**
   * The host may not list Nodes (the text says which permission).
   */
  export interface NodePodCidrsFactForbidden {
    tag: 'forbidden',
    val: string,
  }
  /**
   * More Nodes than the host checks (the count it saw).
   */
  export interface NodePodCidrsFactTooMany {
    tag: 'too-many',
    val: number,
  }
  /**
   * Some Nodes have no `spec.podCIDRs` (their names, sorted); the
   * CNI allocates Pod addresses elsewhere.
   */
  export interface NodePodCidrsFactIncomplete {
    tag: 'incomplete',
    val: Array<string>,
  }
  /**
   * ---- 0.2.0: exposure objects -------------------------------------------
   * The kinds that publish a Service outside the cluster.
   * # Variants
   * 
   * ## `"route"`
   * 
   * route.openshift.io/v1 Route.
   * ## `"ingress"`
   * 
   * networking.k8s.io/v1 Ingress.
   * ## `"http-route"`
   * 
   * gateway.networking.k8s.io/v1 HTTPRoute.
   */
  export type ExposureKind = 'route' | 'ingress' | 'http-route';
  /**
   * How the controller of an exposure object answered it.
   */
  export type Admission = AdmissionAdmitted | AdmissionRefused | AdmissionPending;
  /**
   * Route: Admitted=True on an ingress; Ingress: an address in
   * `status.loadBalancer`; HTTPRoute: Accepted=True on a parent.
   */
  export interface AdmissionAdmitted {
    tag: 'admitted',
  }
  /**
   * Route: Admitted=False; HTTPRoute: Accepted=False. The text is the
   * controller's reason and message.
   */
  export interface AdmissionRefused {
    tag: 'refused',
    val: string,
  }
  /**
   * No answer yet.
   */
  export interface AdmissionPending {
    tag: 'pending',
  }
  /**
   * A Route, Ingress or HTTPRoute.
   */
  export interface ExposureFact {
    meta: ObjectMeta,
    kind: ExposureKind,
    /**
     * The host names it publishes, as written.
     */
    hostnames: Array<string>,
    admission: Admission,
  }
  /**
   * ---- 0.2.0: certificates -------------------------------------------------
   * One PEM certificate block.
   */
  export interface CertificateFact {
    /**
     * SHA-256 of the DER certificate, lowercase hex.
     */
    sha256: string,
    /**
     * The size of its PEM text, header and footer included.
     */
    pemBytes: number,
  }
  /**
   * The certificates under one key of a Secret; the data itself never
   * crosses the boundary.
   */
  export interface CertificateBundleFact {
    meta: ObjectMeta,
    /**
     * The Secret has the key.
     */
    hasKey: boolean,
    /**
     * The `CERTIFICATE` PEM blocks under it that decode, in order.
     */
    certificates: Array<CertificateFact>,
  }
  export interface ApplyRefusal {
    code: number,
    reason: string,
    message: string,
  }
  /**
   * ---- 0.2.0: the host's last apply of a child -----------------------------
   * How the API server answered the host's last apply of a child.
   */
  export type ApplyOutcome = ApplyOutcomeApplied | ApplyOutcomeRefused;
  export interface ApplyOutcomeApplied {
    tag: 'applied',
  }
  /**
   * Refused: the HTTP code, the Status reason (Invalid, Forbidden,
   * ...) and the server's message.
   */
  export interface ApplyOutcomeRefused {
    tag: 'refused',
    val: ApplyRefusal,
  }
  /**
   * ---- 0.4.0: Jobs ------------------------------------------------------------
   * One condition of a Job's `status.conditions`, as the Job controller
   * wrote it (Complete, Failed, Suspended, FailureTarget,
   * SuccessCriteriaMet).
   */
  export interface JobCondition {
    type: string,
    status: ConditionStatus,
    reason: string,
    message: string,
  }
  /**
   * Why a Pod of a Job failed, as the Pod's status says.
   */
  export interface JobPodFailure {
    /**
     * The Pod's name.
     */
    pod: string,
    /**
     * The Pod's `status.reason` (Evicted, DeadlineExceeded, ...) or,
     * without one, the reason of the first container (init containers
     * first) that terminated with a non-zero exit code (Error,
     * OOMKilled, ...); "Failed" when neither says more.
     */
    reason: string,
    /**
     * That container, when a container's termination is the reason.
     */
    container?: string,
    /**
     * Its exit code.
     */
    exitCode?: number,
    /**
     * The Pod's or the container's message, as written.
     */
    message: string,
  }
  /**
   * Where a Job stands, derived by the host from its conditions. When
   * several hold, the first in this order wins.
   */
  export type JobState = JobStateFailed | JobStateSucceeded | JobStateSuspended | JobStateRunning;
  /**
   * Failed=True or FailureTarget=True: that condition's reason and
   * message.
   */
  export interface JobStateFailed {
    tag: 'failed',
    val: string,
  }
  /**
   * Complete=True or SuccessCriteriaMet=True.
   */
  export interface JobStateSucceeded {
    tag: 'succeeded',
  }
  /**
   * Suspended=True: the Job runs no Pod until it is resumed.
   */
  export interface JobStateSuspended {
    tag: 'suspended',
  }
  /**
   * None of the above: Pods pending or running, or none made yet.
   */
  export interface JobStateRunning {
    tag: 'running',
  }
  /**
   * A batch/v1 Job and the Pods its selector matches.
   */
  export interface JobFact {
    meta: ObjectMeta,
    /**
     * `status.active`: Pods pending or running.
     */
    active: number,
    /**
     * `status.succeeded`: Pods that succeeded.
     */
    succeeded: number,
    /**
     * `status.failed`: Pods that failed.
     */
    failed: number,
    /**
     * `status.startTime`.
     */
    start?: Timestamp,
    /**
     * `status.completionTime` (set once the Job succeeded).
     */
    completion?: Timestamp,
    /**
     * `status.conditions`, in the Job's order.
     */
    conditions: Array<JobCondition>,
    /**
     * The failure of its most recently failed Pod (phase Failed, the
     * latest by creation, then name), if any of its Pods failed and
     * still exists.
     */
    failedPod?: JobPodFailure,
    /**
     * The host's classification of the conditions.
     */
    state: JobState,
  }
  /**
   * ---- 0.4.0: NetworkPolicies' egress side -----------------------------------
   * One egress rule: traffic to any of `to-peers` on any of `ports`. An
   * empty list means every destination / every port.
   */
  export interface EgressRuleFact {
    ports: Array<PortFact>,
    toPeers: Array<PeerFact>,
  }
  /**
   * A NetworkPolicy's egress side (`network-policy-fact` is its ingress
   * side).
   */
  export interface EgressPolicyFact {
    meta: ObjectMeta,
    /**
     * The Pods of its namespace the policy applies to.
     */
    podSelector: LabelSelectorFact,
    /**
     * Egress is among its policy types (written, or implied because
     * `policyTypes` is left out and the policy has egress rules): the
     * selected Pods only reach what some policy's rules admit.
     */
    isolatesEgress: boolean,
    egress: Array<EgressRuleFact>,
  }
  /**
   * ---- 0.5.0: what became of a change ------------------------------------------
   * What holds a change the host did not make. A pause holds nothing
   * by itself: a paused guest knows it is (`evaluation.paused`) and
   * asks only for what still happens then.
   * # Variants
   * 
   * ## `"observe"`
   * 
   * Mode `observe`: the change is planned, never made.
   * ## `"awaiting-approval"`
   * 
   * Approval `manual`: the plan holding it awaits a reviewer's
   * decision.
   * ## `"denied"`
   * 
   * A reviewer denied the plan holding it.
   * ## `"pass-failed"`
   * 
   * The pass failed before making it (a read that failed, a gate
   * set to what it cannot be, a plan that could not be written):
   * Ready says why.
   */
  export type Hold = 'observe' | 'awaiting-approval' | 'denied' | 'pass-failed';
  /**
   * What became of the change the guest asked for a child.
   */
  export type ChangeOutcome = ChangeOutcomeMade | ChangeOutcomeHeld | ChangeOutcomeRefused | ChangeOutcomeWithdrawn;
  /**
   * Made: the child is as the guest asked (applied, found already
   * so, or deleted).
   */
  export interface ChangeOutcomeMade {
    tag: 'made',
  }
  /**
   * Not made: what holds it.
   */
  export interface ChangeOutcomeHeld {
    tag: 'held',
    val: Hold,
  }
  /**
   * The API server refused it (as `last-apply` answers).
   */
  export interface ChangeOutcomeRefused {
    tag: 'refused',
    val: ApplyRefusal,
  }
  /**
   * Deleted as a withdrawal (`change.withdraw`).
   */
  export interface ChangeOutcomeWithdrawn {
    tag: 'withdrawn',
  }
}
