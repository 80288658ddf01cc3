"""The Python guest SDK: the conventions of the Rust SDK (guests/sdk) over
componentize-py's bindings of wit/reconciler.wit (`wit_world`, generated at
build time).

A guest's `app.py` defines its kind (`describe`, `writes`, `reconcile(input,
facts)`, optionally `parent_gates()`) and exports it with `export(Kind)`,
which makes the `Reconciler` class componentize-py looks for. Facts raise
`componentize_py_types.Err` with a `ReadError_*` value when the host
answers an error; `read()` turns that into a `Read` a guest can branch on.
"""

import json
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import reconciler as r
from wit_world.imports import facts as host_facts
from wit_world.imports import types

AS_EXPECTED = "AsExpected"
RECONCILING = "Reconciling"
RETRY_SECONDS = 30
CONFIGURATION_INVALID = "ConfigurationInvalid"
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


def fails(type_: str, reason: str, message: str = "") -> r.Condition:
    return condition(type_, FALSE, reason, message)


def unknown(type_: str, reason: str, message: str = "") -> r.Condition:
    return condition(type_, UNKNOWN, reason, message)


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
        kind = r.EventType.WARNING if warning else r.EventType.NORMAL
        self.events.append(r.KindEvent(type=kind, reason=reason, message=str(message)))
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
            status_fields=json.dumps(self.fields, sort_keys=True, separators=(",", ":")),
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
    return r.ReadDecl(kind=kind, optional=optional, cross_namespace=False)


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
