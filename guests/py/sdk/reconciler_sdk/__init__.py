"""The Python guest SDK: the conventions of the Rust SDK (guests/sdk) over
componentize-py's bindings of wit/reconciler.wit (`wit_world`, generated at
build time).

A guest's `app.py` defines its kind (`describe`, `writes`, `reconcile(input,
facts)`, optionally `parent_gates()`) and exports it with `export(Kind)`,
which makes the `Reconciler` class componentize-py looks for. Facts raise
`componentize_py_types.Err` with a `ReadError_*` value when the host
answers an error; `read()` turns that into a `Read` a guest can branch on.

Outside a component (a guest's tests, under `reconciler_sdk.mock`) there is
no `wit_world` to import unless the guest generated one beside its code;
then `reconciler_sdk._bindings` generates componentize-py's stubs of
`reconciler_sdk/wit` for this process (see there).
"""

import dataclasses
import json
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

try:
    import wit_world  # noqa: F401  (componentize-py's, in a component)
except ModuleNotFoundError:
    from ._bindings import install

    install()

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import reconciler as r
from wit_world.imports import facts as host_facts
from wit_world.imports import types

AS_EXPECTED = "AsExpected"
RECONCILING = "Reconciling"
RETRY_SECONDS = 30
CONFIGURATION_INVALID = "ConfigurationInvalid"
RESOURCE_NOT_OWNED = "ResourceNotOwned"
COMMON = "common"

TRUE = types.ConditionStatus.TRUE
FALSE = types.ConditionStatus.FALSE
UNKNOWN = types.ConditionStatus.UNKNOWN

# ---- conditions and the verdict ---------------------------------------------


def condition(type_: str, status, reason: str, message: str = "") -> r.Condition:
    return r.Condition(type=type_, status=status, reason=reason, message=str(message))


def ok(type_: str, message: str = "") -> r.Condition:
    """True, AsExpected."""
    return condition(type_, TRUE, AS_EXPECTED, message)


def holds(type_: str, reason: str, message: str = "") -> r.Condition:
    """True with a reason of its own."""
    return condition(type_, TRUE, reason, message)


def fails(type_: str, reason: str, message: str = "") -> r.Condition:
    return condition(type_, FALSE, reason, message)


def unknown(type_: str, reason: str, message: str = "") -> r.Condition:
    return condition(type_, UNKNOWN, reason, message)


def kind_event(warning: bool, reason: str, message: str) -> r.KindEvent:
    """An Event of the kind's own: Warning or Normal, a reason of its registry."""
    kind = r.EventType.WARNING if warning else r.EventType.NORMAL
    return r.KindEvent(type=kind, reason=reason, message=str(message))


def stringify(value: Any) -> str:
    """JSON with object keys sorted and no spaces, as serde_json writes a map."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _upsert(items: List[r.Condition], c: r.Condition) -> None:
    for i, existing in enumerate(items):
        if existing.type == c.type:
            items[i] = c
            return
    items.append(c)


class VerdictBuilder:
    """Collects a verdict as the Rust SDK's VerdictBuilder does."""

    def __init__(self) -> None:
        self.aspects: List[r.Condition] = []
        self.advisories: List[r.Condition] = []
        self.stalled: Optional[r.Stall] = None
        self.fields: Dict[str, Any] = {}
        self.events: List[r.KindEvent] = []
        self.requeue: Optional[int] = None

    def aspect(self, c: r.Condition) -> "VerdictBuilder":
        """An aspect; a later one of the same type replaces it."""
        _upsert(self.aspects, c)
        return self

    def advisory(self, c: r.Condition) -> "VerdictBuilder":
        _upsert(self.advisories, c)
        return self

    def stall(self, reason: str, message: str) -> "VerdictBuilder":
        """The first stall wins."""
        if self.stalled is None:
            self.stalled = r.Stall(reason=reason, message=str(message))
        return self

    def field(self, key: str, value: Any) -> "VerdictBuilder":
        """A member of `.status` (None deletes it)."""
        self.fields[key] = value
        return self

    def event(self, warning: bool, reason: str, message: str) -> "VerdictBuilder":
        self.events.append(kind_event(warning, reason, message))
        return self

    def requeue_after(self, seconds: int) -> "VerdictBuilder":
        """The smallest requeue wins."""
        self.requeue = seconds if self.requeue is None else min(self.requeue, seconds)
        return self

    def build(self) -> r.Verdict:
        return r.Verdict(
            aspects=list(self.aspects),
            advisory=list(self.advisories),
            stall=self.stalled,
            status_fields=stringify(self.fields),
            events=list(self.events),
            requeue_after_seconds=self.requeue,
        )


# ---- the kind spec ------------------------------------------------------------

COMMON_REASONS = {
    "ConfigurationInvalid": "ConfigurationValid=False (and Stalled=True): a cross-object check the CRD cannot express failed.",
    "ResourceNotOwned": "An object the operator must manage exists under the generated name and is controlled by someone else.",
    "SecretNotFound": "A referenced Secret does not exist.",
    "SecretKeyMissing": "A referenced Secret's key is missing.",
    "ConfigMapNotFound": "A referenced ConfigMap does not exist.",
    "ClusterNotFound": "A referenced CloudNativePG Cluster does not exist in the namespace.",
    "RolloutInProgress": "A rollout is on its way.",
    "RolloutStuck": "The Deployment's progress deadline is exceeded.",
    "PodUnschedulable": "The child's own fact, copied: a Pod cannot be scheduled.",
    "ImagePullFailed": "The child's own fact, copied: an image cannot be pulled.",
    "CrashLoopBackOff": "The child's own fact, copied: a container restarts in a loop.",
    "ReplicaFailure": "The child's own fact, copied: the Deployment cannot create a Pod (e.g. a quota).",
    "PodNotReady": "The child's own fact, copied: a Pod is not Ready.",
    "ScaledToZero": "Registered; no current reconciler sets it.",
    "NotRequested": "The exposure is clusterIP: nothing to publish.",
    "NotAdmitted": "The Route or Ingress was not accepted by its controller.",
    "NotAccepted": "The HTTPRoute was not accepted by its controller.",
    "GatewayNotFound": "The Gateway named by parentRef is absent. Registered; the current reconcilers do not set it.",
    "HostnameConflict": "Another route claims the hostname. Registered; the current reconcilers do not set it.",
    "RouteAPIUnavailable": "The Route API the exposure needs is not served or not readable.",
    "GatewayAPIUnavailable": "The Gateway API the exposure needs is not served or not readable.",
    "ImageNotAllowed": "A spec.image or oauth-proxy image repository is outside the operator's allow-list.",
    "HostnameNotAllowed": "spec.exposure.hostname is outside the allowed host suffixes; what was published under the name is withdrawn.",
}


def common(name: str) -> r.ReasonEntry:
    """A reason of the shared vocabulary, with its meaning (KeyError for another name)."""
    return r.ReasonEntry(name=name, owner=COMMON, meaning=COMMON_REASONS[name])


def registry(owner: str, common_used: List[str], owned: List[Tuple[str, str]]) -> List[r.ReasonEntry]:
    """The common reasons used, then the kind's own `(name, meaning)`."""
    out = [common(n) for n in common_used]
    out += [r.ReasonEntry(name=n, owner=owner, meaning=m) for n, m in owned]
    return out


def kind_ref(group: str, version: str, kind: str) -> types.KindRef:
    return types.KindRef(group=group, version=version, kind=kind)


def reads(kind: types.KindRef, optional: bool = False) -> r.ReadDecl:
    """A read of `kind`'s objects, whole (no fields named: see `with_fields`)."""
    return r.ReadDecl(kind=kind, optional=optional, cross_namespace=False, fields=None)


def with_fields(read: r.ReadDecl, fields: List[str]) -> r.ReadDecl:
    """The same read, naming the fields of the kind's objects the guest
    reads (contract 0.6.0, `read-decl.fields`): each a path of field names
    joined by `.` (a `.` in a name escaped as `\\.`: `data.tls\\.crt`),
    through every item of a list on its way (`spec.containers.image`). The
    host serves those fields only, with `apiVersion`, `kind` and the whole
    `metadata`; its caches hold no more than what the kind's readers name.
    A fixture whose verdict changes with a field left out fails, naming it.
    Without it (`reads`) the whole object is served.

        with_fields(reads(kind_ref("", "v1", "Pod")), ["status.phase", "spec.nodeName"])

    Raises TypeError unless `read` is a ReadDecl and `fields` a list (or
    tuple) of str, ValueError for an empty path."""
    call = "with_fields(read, fields)"
    if not isinstance(read, r.ReadDecl):
        raise TypeError(f"{call}: read must be a ReadDecl (reads(kind)), got {type(read).__name__}")
    if isinstance(fields, str) or not isinstance(fields, (list, tuple)):
        raise TypeError(
            f"{call}: fields must be a list of non-empty str (field paths such as 'spec.replicas'), "
            f"got {type(fields).__name__}"
        )
    for i, path in enumerate(fields):
        if not isinstance(path, str):
            raise TypeError(f"{call}: fields[{i}] must be a non-empty str (a field path such as 'spec.replicas'), got {type(path).__name__}")
        if path == "":
            raise ValueError(f"{call}: fields[{i}] must be a non-empty str (a field path such as 'spec.replicas'), got ''")
    return dataclasses.replace(read, fields=list(fields))


def metadata_only(read: r.ReadDecl) -> r.ReadDecl:
    """`with_fields` naming none: the guest parses none of the kind's objects
    itself. It reads their metadata (an object's `meta`), or reads them
    through the typed facts the host derives (`workload`, `secret`,
    `config_map` ...), which are served as before."""
    return with_fields(read, [])


def stalls(reason: str, recheck_seconds: Optional[int] = None) -> r.StallRule:
    return r.StallRule(reason=reason, recheck_seconds=recheck_seconds)


def kind_spec(**fields) -> r.KindSpec:
    """A kind spec with every list defaulted (profile: progressing)."""
    spec = dict(
        namespaced=True,
        profile=r.ConventionProfile.PROGRESSING,
        advisory=[],
        reasons=[],
        negative_polarity=[],
        quiet_reasons=[],
        stalls=[],
        reads=[],
        pause=None,
        spec_schema=None,
        printer_columns=[],
    )
    spec.update(fields)
    if isinstance(spec["spec_schema"], dict):
        spec["spec_schema"] = json.dumps(spec["spec_schema"], sort_keys=True)
    return r.KindSpec(**spec)


# ---- the input -------------------------------------------------------------------


def parent_json(input: r.Evaluation) -> Any:
    try:
        return json.loads(input.parent.json)
    except ValueError:
        return None


def setting(input: r.Evaluation, name: str) -> Optional[str]:
    for n, v in input.settings:
        if n == name:
            return v
    return None


# ---- reads -------------------------------------------------------------------------


@dataclass
class Read:
    """What a facts call answered: `value`, or `error` (a `ReadError_*`)."""

    value: Any = None
    error: Any = None


def read(call: Callable[[], Any]) -> Read:
    try:
        return Read(value=call())
    except Err as e:
        return Read(error=e.value)


def read_failure(what: str, error: Any) -> str:
    """"could not read {what}: {text}"."""
    return f"could not read {what}: {error.value}"


# ---- ownership and configuration ------------------------------------------------------

# The annotation by which whoever may change an object nothing controls
# consents to its adoption (`<Kind>/<name>`).
ADOPT_ANNOTATION = "reconciler.dev/adopt"


class Parent:
    """The parent a pass is about, as its children's messages name it."""

    def __init__(self, kind: str, meta: types.ObjectMeta) -> None:
        self.kind = kind
        self.namespace = meta.namespace
        self.name = meta.name
        self.uid = meta.uid

    @classmethod
    def of(cls, kind: str, meta: types.ObjectMeta) -> "Parent":
        return cls(kind, meta)

    def refusal(self, kind: str, name: str, meta: types.ObjectMeta) -> Optional[str]:
        """The ResourceNotOwned message for a child the parent may not take
        over (another object controls it, or nothing does and it does not
        carry ADOPT_ANNOTATION naming the parent), or None."""
        if meta.controller is None and not self.adoptable(meta):
            return (
                f"{kind} {name} exists and nothing controls it: the operator takes over an object "
                f"only when whoever may change it consents, with the annotation "
                f"{ADOPT_ANNOTATION}: {self.kind}/{self.name}; annotate it so, or delete it"
            )
        return self.foreign(kind, name, meta)

    def foreign(self, kind: str, name: str, meta: types.ObjectMeta) -> Optional[str]:
        """The message for a child another object controls, or None."""
        c = foreign_controller(meta, self.uid)
        if c is None:
            return None
        return f"{kind} {name} exists and is controlled by {c.kind} {c.name}, not by {self.kind} {self.name}"

    def adoptable(self, meta: types.ObjectMeta) -> bool:
        """Whether an object nothing controls carries the consent to its adoption by this parent."""
        consent = f"{self.kind}/{self.name}"
        return any(k == ADOPT_ANNOTATION and v == consent for k, v in meta.annotations)


def foreign_controller(meta: types.ObjectMeta, uid: str) -> Optional[types.ControllerRef]:
    """The controller of `meta` when it is not the parent `uid`."""
    c = meta.controller
    return c if c is not None and c.uid != uid else None


class NotValid(Exception):
    """Why a configuration is not valid, raised by the checks and caught by
    the guest: a stall with its reason (`stalled`), or a read that failed
    (`unread`, reason None)."""

    def __init__(self, kind: str, reason: Optional[str], message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason
        self.message = message


def stalled(reason: str, message: str) -> NotValid:
    return NotValid("stalled", reason, message)


def unread(message: str) -> NotValid:
    return NotValid("unread", None, message)


def check_owned(parent: Parent, kind: str, name: str, observed: Read) -> None:
    """Raises ResourceNotOwned (`stalled`) when the child read (`Read` of its
    ObjectMeta) is another's, `unread` when the read failed."""
    if observed.error is not None:
        raise unread(read_failure(f"{kind} {name}", observed.error))
    if observed.value is not None:
        why = parent.refusal(kind, name, observed.value)
        if why is not None:
            raise stalled(RESOURCE_NOT_OWNED, why)


# ---- changes ---------------------------------------------------------------------------


def apply(kind: types.KindRef, name: str, body: Any) -> r.Change_Apply:
    """An object the guest wants to exist (`body`: a dict, written as sorted JSON)."""
    return r.Change_Apply(r.ApplyObject(kind=kind, name=name, body=stringify(body)))


def remove(kind: types.KindRef, name: str, uid: str) -> r.Change_Delete:
    """A child the guest no longer wants, deleted only if it still has `uid`."""
    return r.Change_Delete(r.DeleteObject(kind=kind, name=name, uid=uid))


def generate(name: str, keys: List[Tuple[str, int]]) -> r.Change_Generate:
    """A Secret of random values the guest never sees: `(key, length)` each."""
    return r.Change_Generate(r.GenerateSecret(name=name, keys=list(keys)))


def certificate(name: str, dns_names: List[str]) -> r.Change_Certificate:
    return r.Change_Certificate(r.ServingCertificate(name=name, dns_names=list(dns_names)))


def ca_bundle(name: str, key: str, sources: List[Tuple[str, str]], labels: List[Tuple[str, str]] = ()) -> r.Change_Bundle:
    return r.Change_Bundle(r.CaBundle(name=name, key=key, sources=list(sources), labels=list(labels)))


def withdraw(kind: types.KindRef, name: str, uid: str, event: Optional[r.KindEvent] = None) -> r.Change_Withdraw:
    """A withdrawal (contract 0.5.0): the deletion of a child whose going
    takes access or exposure away (a RoleBinding or Role; a Route, Ingress,
    HTTPRoute or Service), which the host makes whatever holds the parent's
    other changes, only if its UID is still `uid`, raising `event`
    (`kind_event(...)`, a reason of the kind's registry) once the child is
    gone; None where the verdict's own transition says it."""
    if event is not None:
        event = r.KindEvent(type=event.type, reason=event.reason, message=str(event.message))
    return r.Change_Withdraw(r.Withdrawal(object=r.DeleteObject(kind=kind, name=name, uid=uid), event=event))


# ---- what became of a change (contract 0.5.0) -----------------------------------------

# Each `hold` (its WIT name): the host's reason, and why the change is not made.
HELD = {
    "observe": ("Planned", "its change is planned, never made (mode observe)"),
    "awaiting-approval": ("AwaitingApproval", "its change awaits a reviewer's approval"),
    "denied": ("ChangesDenied", "a reviewer denied its change"),
    "pass-failed": ("ReconcileError", "the pass failed before it (Ready says why)"),
}


def wit_name(case) -> str:
    """The WIT name of a case of a componentize-py enum (`Hold.PASS_FAILED`: `pass-failed`)."""
    return case.name.lower().replace("_", "-")


def is_made(state) -> bool:
    """Whether `state` (`facts.change_state`) says the change is made (or taken away)."""
    return isinstance(state, (host_facts.ChangeOutcome_Made, host_facts.ChangeOutcome_Withdrawn))


def change_aspect(type_: str, what: str, state, refused_reason: str, made: Callable[[], r.Condition]) -> r.Condition:
    """The aspect `type_` about `what` (`ConfigMap w-config`), a child whose
    change is in `state` (`facts.change_state`): `made()` once the host made
    it; otherwise not True, saying what holds it with the host's reason, or
    that the API server refused it (with `refused_reason`, the kind's own)."""
    if is_made(state):
        return made()
    if state is None:
        return unknown(type_, RECONCILING, f"{what} is asked for; the host has not acted on it yet")
    if isinstance(state, host_facts.ChangeOutcome_Refused):
        x = state.value
        return fails(type_, refused_reason, f"{what} was refused by the API server ({x.code} {x.reason}): {x.message}")
    reason, why = HELD[wit_name(state.value)]
    return fails(type_, reason, f"{what} is not made: {why}")


def not_withdrawn(what: str, state) -> Optional[str]:
    """What a withdrawal of `what` still waits for: None once the host took it away."""
    if is_made(state):
        return None
    if isinstance(state, host_facts.ChangeOutcome_Refused):
        x = state.value
        why = f"the API server refused its deletion ({x.code} {x.reason}: {x.message})"
    else:
        why = "its deletion is not made yet"
    return f"{what} is still there: {why}"


# ---- the export ----------------------------------------------------------------------

# The gates a parent may set on itself (contract 0.5.0: the annotations
# `reconciler.dev/mode` and `reconciler.dev/approval`, or `spec.mode` and
# `spec.approval` where the spec declares them): both, unless the kind's
# `parent_gates()` says otherwise (a kind whose parents are made by someone
# who must not hold back the operator's changes lets them set none).
PARENT_GATES = (r.Gate.MODE, r.Gate.APPROVAL)


def export(kind) -> type:
    """The `Reconciler` class componentize-py exports, over `kind` (an object
    or module with `describe()`, `writes()`, `reconcile(input, facts)`
    returning `(verdict, changes)` and, optionally, `parent_gates()`, else
    PARENT_GATES). An exception's last traceback lines go to stderr, which
    the host puts (bounded) in the guest error."""

    def guarded(f):
        def call(*args):
            try:
                return f(*args)
            except Exception:
                lines = traceback.format_exc().strip().splitlines()
                sys.stderr.write("\n".join(lines[-6:]) + "\n")
                raise

        return call

    describe = guarded(lambda: kind.describe())
    writes = guarded(lambda: list(getattr(kind, "writes", lambda: [])()))
    reconcile = guarded(lambda input: kind.reconcile(input, host_facts))
    parent_gates = guarded(lambda: list(getattr(kind, "parent_gates", lambda: PARENT_GATES)()))

    class Reconciler(exports.Reconciler):
        def describe(self) -> r.KindSpec:
            return describe()

        def writes(self) -> List[types.KindRef]:
            return writes()

        def reconcile(self, input: r.Evaluation) -> r.Reconciliation:
            verdict, changes = reconcile(input)
            return r.Reconciliation(verdict=verdict, changes=list(changes))

        def evaluate(self, input: r.Evaluation) -> r.Verdict:
            return reconcile(input)[0]

        def parent_gates(self) -> List[r.Gate]:
            return parent_gates()

    return Reconciler
