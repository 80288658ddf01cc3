"""A mock of the host's facts for a guest's tests, natively (unittest or
pytest, no component built): the Python twin of the JavaScript SDK's
`mock.js` and the Rust SDK's `mock::MockFacts`. What a test adds is found,
anything else reads as absent, a read made to fail raises the `read-error`
the host would answer (`componentize_py_types.Err`), and every read is
recorded in `reads`.

    from reconciler_sdk.mock import MockFacts, evaluation
    import app

    facts = MockFacts("2026-11-29T12:00:00Z").with_secret("team-a", "db", ["username"])
    verdict, changes = app.reconcile(evaluation(parent_json), facts.facts())
    assert facts.reads == ["secret team-a/db"]

The values are the contract's own: the dataclasses of componentize-py's
bindings of the SDK's `wit/` (`wit_world`). Natively, importing
`reconciler_sdk` (by the guest's `app.py` or by this module, in either
order) generates them for the process when no `wit_world` is importable
(`reconciler_sdk._bindings`: componentize-py on `PATH`, beside the
interpreter, or `$COMPONENTIZE_PY`; Python 3.11 or later). The bindings'
facts functions are stubs: `facts()` is what a guest's `reconcile(input,
facts)` is handed instead, with the same functions (`secret`, `get`,
`change_state`, ...).

Every argument is checked: a wrong one raises TypeError (a wrong type) or
ValueError (a wrong value) naming the call, the argument and the shape
expected.
"""

import dataclasses
import json as jsonlib
from datetime import datetime
from typing import Any, Dict, List, Optional, Set

from componentize_py_types import Err
from wit_world.exports import reconciler as r
from wit_world.imports import facts as f
from wit_world.imports import types

from . import kind_ref, wit_name

__all__ = [
    "MockFacts",
    "evaluation",
    "exposure_kind_ref",
    "kind_ref",
    "meta",
    "object",
    "object_meta",
    "read_error",
    "timestamp",
    "workload_in",
    "workload_ready",
]

# ---- checking arguments --------------------------------------------------------------


def _got(value: Any) -> str:
    return type(value).__name__


def _a(name: str) -> str:
    return f"an {name}" if name[0] in "AEIOU" else f"a {name}"


def _wrong_type(call: str, arg: str, expected: str, value: Any) -> TypeError:
    return TypeError(f"{call}: {arg} must be {expected}, got {_got(value)}")


def _wrong_value(call: str, arg: str, expected: str, value: Any) -> ValueError:
    return ValueError(f"{call}: {arg} must be {expected}, got {value!r}")


def _str(call: str, arg: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _wrong_type(call, arg, "a str", value)
    return value


def _strs(call: str, arg: str, value: Any) -> List[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise _wrong_type(call, arg, "a list of str", value)
    for item in value:
        if not isinstance(item, str):
            raise _wrong_type(call, arg, "a list of str", item)
    return list(value)


def _count(call: str, arg: str, value: Any) -> int:
    if _integer(call, arg, value) < 0:
        raise _wrong_value(call, arg, "an int of 0 or more", value)
    return value


def _kind(call: str, arg: str, value: Any) -> types.KindRef:
    if not isinstance(value, types.KindRef):
        raise _wrong_type(call, arg, "a KindRef (kind_ref(group, version, kind))", value)
    return value


def _instance(call: str, arg: str, value: Any, cls: type, made_by: str = "") -> Any:
    if not isinstance(value, cls):
        raise _wrong_type(call, arg, f"{_a(cls.__name__)}{made_by}", value)
    return value


def _k8s(call: str, arg: str, value: Any) -> Dict[str, Any]:
    """A Kubernetes object's JSON: a dict whose `metadata`, if any, is a
    dict whose members, each optional, are what the API server writes."""
    if not isinstance(value, dict):
        raise _wrong_type(call, arg, "a dict (a Kubernetes object's JSON)", value)
    m = value.get("metadata", {})
    if not isinstance(m, dict):
        raise _wrong_type(call, f"{arg}['metadata']", "a dict", m)
    at = f"{arg}['metadata']"
    for field in ("name", "namespace", "uid"):
        if m.get(field) is not None:
            _str(call, f"{at}[{field!r}]", m[field])
    if m.get("generation") is not None:
        _integer(call, f"{at}['generation']", m["generation"])
    for field in ("labels", "annotations"):
        if m.get(field) is not None:
            _str_dict(call, f"{at}[{field!r}]", m[field])
    owners = m.get("ownerReferences")
    if owners is not None and (not isinstance(owners, list) or not all(isinstance(o, dict) for o in owners)):
        raise _wrong_type(call, f"{at}['ownerReferences']", "a list of dicts ({'apiVersion', 'kind', 'name', 'uid', 'controller'})", owners)
    for field in ("creationTimestamp", "deletionTimestamp"):
        if m.get(field):
            _timestamp(call, f"{at}[{field!r}]", _str(call, f"{at}[{field!r}]", m[field]))
    return value


def _integer(call: str, arg: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type(call, arg, "an int", value)
    return value


def _str_dict(call: str, arg: str, value: Any) -> Dict[str, str]:
    if not isinstance(value, dict):
        raise _wrong_type(call, arg, "a dict of str to str", value)
    for name, item in value.items():
        _str(call, f"{arg}' names", name)
        _str(call, f"{arg}[{name!r}]", item)
    return value


def _named(call: str, arg: str, value: Any) -> Dict[str, Any]:
    """The JSON of an object the mock files under its name: `metadata.name` a str."""
    m = _k8s(call, arg, value).get("metadata", {})
    if not isinstance(m.get("name"), str) or not m["name"]:
        raise _wrong_value(call, arg, "a Kubernetes object's JSON with metadata.name", value)
    return value


def _camel(tag: str) -> str:
    return "".join(part.capitalize() for part in tag.split("-"))


def _variant(call: str, arg: str, value: Any, prefix: str, plain: List[str], carrying: Dict[str, Any], shape: str) -> Any:
    """A case of the WIT variant whose bindings are `f.<prefix>_<Case>`: an
    instance of one, a case without payload by its WIT name (`'made'`), or
    `(wit name, payload)`, the payload converted by `carrying[name]`."""
    expected = f"{_a(prefix)}_* or {shape}"
    cases = plain + list(carrying)
    classes = tuple(getattr(f, f"{prefix}_{_camel(tag)}") for tag in cases)
    if isinstance(value, classes):
        return value
    if isinstance(value, str):
        if value not in plain:
            raise _wrong_value(call, arg, expected, value)
        return getattr(f, f"{prefix}_{_camel(value)}")()
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        tag, payload = value
        if tag not in carrying:
            raise _wrong_value(call, arg, expected, value)
        return getattr(f, f"{prefix}_{_camel(tag)}")(carrying[tag](call, f"{arg}[1]", payload))
    raise _wrong_type(call, arg, expected, value)


def _enum(call: str, arg: str, value: Any, cls: type, allowed: List[str]) -> Any:
    """A member of the binding enum `cls`, or its WIT name among `allowed`."""
    expected = f"{_a(cls.__name__)} or one of {', '.join(repr(a) for a in allowed)}"
    if isinstance(value, cls) and wit_name(value) in allowed:
        return value
    if isinstance(value, (str, cls)):
        if value not in allowed:
            raise _wrong_value(call, arg, expected, value)
        return cls[value.upper().replace("-", "_")]
    raise _wrong_type(call, arg, expected, value)


def _refusal(call: str, arg: str, value: Any) -> f.ApplyRefusal:
    expected = "an ApplyRefusal or (code, reason, message)"
    if isinstance(value, f.ApplyRefusal):
        return value
    if not isinstance(value, tuple) or len(value) != 3:
        raise _wrong_type(call, arg, expected, value)
    code, reason, message = value
    return f.ApplyRefusal(
        code=_count(call, f"{arg}[0] (code)", code),
        reason=_str(call, f"{arg}[1] (reason)", reason),
        message=_str(call, f"{arg}[2] (message)", message),
    )


def _hold(call: str, arg: str, value: Any) -> f.Hold:
    return _enum(call, arg, value, f.Hold, [wit_name(h) for h in f.Hold])


# ---- the contract's values from Kubernetes JSON ---------------------------------------


def timestamp(at: Any) -> types.Timestamp:
    """A `timestamp` from RFC 3339 text or seconds since the epoch."""
    return _timestamp("timestamp(at)", "at", at)


def _timestamp(call: str, arg: str, at: Any) -> types.Timestamp:
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        return types.Timestamp(seconds=int(at), nanos=0)
    if not isinstance(at, str):
        raise _wrong_type(call, arg, "RFC 3339 text or seconds since the epoch (an int)", at)
    try:
        when = datetime.fromisoformat(at)
    except ValueError:
        raise _wrong_value(call, arg, "RFC 3339 text such as '2026-11-29T12:00:00Z'", at) from None
    if when.tzinfo is None:
        raise _wrong_value(call, arg, "RFC 3339 text with its offset ('Z' or '+01:00')", at)
    return types.Timestamp(seconds=int(when.timestamp()), nanos=when.microsecond * 1000)


def meta(namespace: str, name: str) -> types.ObjectMeta:
    """Metadata with a name and namespace, the UID `uid-<namespace>-<name>`,
    generation 1, everything else empty (the Rust mock's `meta`)."""
    call = "meta(namespace, name)"
    for arg, value in (("namespace", namespace), ("name", name)):
        if not isinstance(value, str):
            raise _wrong_type(call, arg, "a str (an object's JSON is object_meta(json)'s)", value)
    return _meta(namespace, name)


def _meta(namespace: str, name: str) -> types.ObjectMeta:
    return types.ObjectMeta(
        name=name,
        namespace=namespace,
        uid=f"uid-{namespace}-{name}",
        generation=1,
        labels=[],
        annotations=[],
        controller=None,
        creation=None,
        deletion=None,
    )


def object_meta(json: Any) -> types.ObjectMeta:
    """A `reconciler:guest/types` ObjectMeta read from a Kubernetes object's
    JSON as the host reads it (the Rust mock's `object_meta`): what
    `metadata` leaves out is `meta`'s."""
    return _object_meta("object_meta(json)", "json", json)


def _object_meta(call: str, arg: str, json: Any) -> types.ObjectMeta:
    m = _k8s(call, arg, json).get("metadata", {})
    owner = next((o for o in m.get("ownerReferences") or [] if o.get("controller") is True), None)
    base = _meta(m.get("namespace") or "", m.get("name") or "")
    return dataclasses.replace(
        base,
        uid=m.get("uid") or base.uid,
        generation=1 if m.get("generation") is None else m["generation"],
        labels=list((m.get("labels") or {}).items()),
        annotations=list((m.get("annotations") or {}).items()),
        controller=owner
        and types.ControllerRef(api_version=owner.get("apiVersion"), kind=owner.get("kind"), name=owner.get("name"), uid=owner.get("uid")),
        creation=_timestamp(call, arg, m["creationTimestamp"]) if m.get("creationTimestamp") else None,
        deletion=_timestamp(call, arg, m["deletionTimestamp"]) if m.get("deletionTimestamp") else None,
    )


def object(json: Any) -> types.Object:
    """A `reconciler:guest/types` Object: the metadata and the JSON text."""
    return _object("object(json)", "json", json)


def _object(call: str, arg: str, json: Any) -> types.Object:
    return types.Object(meta=_object_meta(call, arg, json), json=jsonlib.dumps(json, separators=(",", ":"), ensure_ascii=False))


def _workload_state(call: str, arg: str, value: Any) -> f.WorkloadState:
    carrying = {
        tag: _str
        for tag in (
            "replica-failure", "secret-not-found", "secret-key-missing", "config-map-not-found", "pod-unschedulable",
            "image-pull-failed", "crash-loop-back-off", "rollout-stuck", "rollout-in-progress", "pod-not-ready",
        )
    }
    return _variant(call, arg, value, "WorkloadState", ["ready"], carrying, "'ready' or (state, message) such as ('crash-loop-back-off', 'back-off')")


def workload_ready(namespace: str, name: str, replicas: int) -> f.WorkloadFact:
    """A Deployment `name` whose `replicas` Pods are Ready on the current template."""
    call = "workload_ready(namespace, name, replicas)"
    return f.WorkloadFact(
        meta=_meta(_str(call, "namespace", namespace), _str(call, "name", name)),
        generation_observed=True,
        desired_replicas=_count(call, "replicas", replicas),
        updated_replicas=replicas,
        ready_replicas=replicas,
        available_replicas=replicas,
        progress_deadline_exceeded=False,
        replica_failure=None,
        pods=[],
        state=f.WorkloadState_Ready(),
    )


def workload_in(namespace: str, name: str, state: Any) -> f.WorkloadFact:
    """The same Deployment, one replica none Ready, in another `state`
    (`('crash-loop-back-off', 'message')`, or a WorkloadState_*)."""
    state = _workload_state("workload_in(namespace, name, state)", "state", state)
    return dataclasses.replace(workload_ready(namespace, name, 1), ready_replicas=0, available_replicas=0, state=state)


def evaluation(parent: Any, settings: Optional[Dict[str, str]] = None, paused: bool = False) -> r.Evaluation:
    """The evaluation a guest's `reconcile` takes: the parent's JSON, the
    settings (`{name: value}`), paused or not."""
    call = "evaluation(parent, settings, paused)"
    _k8s(call, "parent", parent)
    settings = {} if settings is None else settings
    if not isinstance(settings, dict):
        raise _wrong_type(call, "settings", "a dict of str to str", settings)
    for name, value in settings.items():
        _str(call, "settings' names", name)
        _str(call, f"settings[{name!r}]", value)
    if not isinstance(paused, bool):
        raise _wrong_type(call, "paused", "a bool", paused)
    return r.Evaluation(parent=object(parent), paused=paused, settings=list(settings.items()))


_EXPOSURE_APIS = {
    "route": ("route.openshift.io", "Route"),
    "ingress": ("networking.k8s.io", "Ingress"),
    "http-route": ("gateway.networking.k8s.io", "HTTPRoute"),
}


def exposure_kind_ref(kind: Any) -> types.KindRef:
    """The API of an exposure kind (an ExposureKind or its WIT name,
    'route', 'ingress' or 'http-route'), as the host declares and probes it
    (the Rust mock's `exposure_kind_ref`)."""
    return _exposure_api(_exposure_kind("exposure_kind_ref(kind)", "kind", kind))


def _exposure_kind(call: str, arg: str, kind: Any) -> f.ExposureKind:
    return _enum(call, arg, kind, f.ExposureKind, list(_EXPOSURE_APIS))


def _exposure_api(kind: f.ExposureKind) -> types.KindRef:
    group, name = _EXPOSURE_APIS[wit_name(kind)]
    return kind_ref(group, "v1", name)


READ_ERRORS = ("not-declared", "not-served", "forbidden", "failed")


def read_error(tag: str, text: str) -> Err:
    """The exception a facts function raises for a `read-error`, as componentize-py raises it."""
    call = "read_error(tag, text)"
    return Err(getattr(f, f"ReadError_{_camel(_read_error_tag(call, tag))}")(_str(call, "text", text)))


def _read_error_tag(call: str, tag: Any) -> str:
    expected = f"one of {', '.join(repr(t) for t in READ_ERRORS)}"
    if not isinstance(tag, str):
        raise _wrong_type(call, "tag", expected, tag)
    if tag not in READ_ERRORS:
        raise _wrong_value(call, "tag", expected, tag)
    return tag


def _key(kind: types.KindRef) -> str:
    return f"{kind.group}/{kind.version}/{kind.kind}"


def _job(call: str, arg: str, value: Any, job_meta: types.ObjectMeta) -> f.JobFact:
    """A JobFact, or the dict shorthand `{'state': ..., 'active': n, ...}` (its metadata `job_meta`)."""
    shape = (
        "a JobFact or a dict with 'state' ('running', 'succeeded', 'suspended' or ('failed', message)) "
        "and optionally 'active', 'succeeded', 'failed' (ints), 'start', 'completion' (timestamps), "
        "'conditions' (a list of JobCondition), 'failed_pod' (a JobPodFailure)"
    )
    if isinstance(value, f.JobFact):
        return value
    if not isinstance(value, dict):
        raise _wrong_type(call, arg, shape, value)
    if "state" not in value:
        raise _wrong_value(call, arg, shape, value)
    unknown = sorted(set(value) - {"state", "active", "succeeded", "failed", "start", "completion", "conditions", "failed_pod"})
    if unknown:
        raise _wrong_value(call, arg, f"{shape} (not {', '.join(unknown)})", value)
    conditions = value.get("conditions", [])
    if not isinstance(conditions, list):
        raise _wrong_type(call, f"{arg}['conditions']", "a list of JobCondition", conditions)
    for c in conditions:
        _instance(call, f"{arg}['conditions']", c, f.JobCondition)
    failed_pod = value.get("failed_pod")
    if failed_pod is not None:
        _instance(call, f"{arg}['failed_pod']", failed_pod, f.JobPodFailure)
    state = _variant(call, f"{arg}['state']", value["state"], "JobState", ["succeeded", "suspended", "running"], {"failed": _str}, "'running', 'succeeded', 'suspended' or ('failed', message)")
    return f.JobFact(
        meta=job_meta,
        active=_count(call, f"{arg}['active']", value.get("active", 0)),
        succeeded=_count(call, f"{arg}['succeeded']", value.get("succeeded", 0)),
        failed=_count(call, f"{arg}['failed']", value.get("failed", 0)),
        start=None if value.get("start") is None else _timestamp(call, f"{arg}['start']", value["start"]),
        completion=None if value.get("completion") is None else _timestamp(call, f"{arg}['completion']", value["completion"]),
        conditions=list(conditions),
        failed_pod=failed_pod,
        state=state,
    )


# ---- the mock --------------------------------------------------------------------------


class MockFacts:
    """The facts of one test, as the builder says; `facts()` is what a
    guest's `reconcile` is handed."""

    def __init__(self, now: Any = 0) -> None:
        """`now`: seconds since the epoch, or RFC 3339 text."""
        self.now = _timestamp("MockFacts(now)", "now", now)
        self.workloads: Dict[str, f.WorkloadFact] = {}
        self.secrets: Dict[str, f.SecretFact] = {}
        self.config_maps: Dict[str, f.ConfigMapFact] = {}
        self.objects: Dict[str, Any] = {}
        self.children: Dict[str, List[types.Object]] = {}
        self.availability: Dict[str, f.Availability] = {}
        self.direct_gets: Set[str] = set()
        self.exposures: Dict[str, f.ExposureFact] = {}
        self.cluster_roles: Dict[str, types.ObjectMeta] = {}
        self.certificates: Dict[str, f.CertificateBundleFact] = {}
        self.jobs: Dict[str, f.JobFact] = {}
        self.last_applies: Dict[str, f.ApplyOutcome] = {}
        self.last_apply_times: Dict[str, types.Timestamp] = {}
        self.change_states: Dict[str, Optional[f.ChangeOutcome]] = {}
        self.controllers: Dict[str, types.ControllerRef] = {}
        self.network_policies: Dict[str, List[f.NetworkPolicyFact]] = {}
        self.egress_policies: Dict[str, List[f.EgressPolicyFact]] = {}
        self.node_pod_cidrs: f.NodePodCidrsFact = f.NodePodCidrsFact_Known([])
        self.failures: Dict[str, str] = {}
        # Every read made, in order: `secret ns/name`, `get <group>/<version>/<kind> ns/name` ...
        self.reads: List[str] = []

    def with_workload(self, namespace: str, name: str, fact: f.WorkloadFact) -> "MockFacts":
        """A Deployment's `workload-fact` (workload_ready(...), workload_in(...))."""
        call = "with_workload(namespace, name, fact)"
        key = f"{_str(call, 'namespace', namespace)}/{_str(call, 'name', name)}"
        self.workloads[key] = _instance(call, "fact", fact, f.WorkloadFact, " (workload_ready(...) or workload_in(...))")
        return self

    def with_secret(self, namespace: str, name: str, keys: List[str], json: Any = None, type_: str = "Opaque") -> "MockFacts":
        """A Secret holding `keys` (its metadata from `json`, when given)."""
        call = "with_secret(namespace, name, keys, json, type)"
        key = f"{_str(call, 'namespace', namespace)}/{_str(call, 'name', name)}"
        json = {"metadata": {"name": name, "namespace": namespace}} if json is None else json
        keys = _strs(call, "keys", keys)
        self.secrets[key] = f.SecretFact(meta=_object_meta(call, "json", json), type=_str(call, "type", type_), keys=keys)
        return self

    def with_secret_fact(self, fact: f.SecretFact) -> "MockFacts":
        """A Secret as the host reads it (its metadata as given: a
        controller, labels), under its metadata's namespace and name."""
        call = "with_secret_fact(fact)"
        _instance(call, "fact", fact, f.SecretFact)
        m = _instance(call, "fact.meta", fact.meta, types.ObjectMeta, " (meta(namespace, name) or object_meta(json))")
        _str(call, "fact.type", fact.type)
        _strs(call, "fact.keys", fact.keys)
        self.secrets[f"{_str(call, 'fact.meta.namespace', m.namespace)}/{_str(call, 'fact.meta.name', m.name)}"] = fact
        return self

    def with_config_map(self, namespace: str, name: str, keys: List[str], json: Any = None) -> "MockFacts":
        call = "with_config_map(namespace, name, keys, json)"
        key = f"{_str(call, 'namespace', namespace)}/{_str(call, 'name', name)}"
        json = {"metadata": {"name": name, "namespace": namespace}} if json is None else json
        keys = _strs(call, "keys", keys)
        self.config_maps[key] = f.ConfigMapFact(meta=_object_meta(call, "json", json), keys=keys)
        return self

    def with_object(self, kind: types.KindRef, json: Any) -> "MockFacts":
        """An object of `kind` for `get` and `list`, from its JSON."""
        call = "with_object(kind, json)"
        _kind(call, "kind", kind)
        m = _named(call, "json", json)["metadata"]
        self.objects[f"{_key(kind)} {m.get('namespace') or ''}/{m['name']}"] = (kind, _object(call, "json", json))
        return self

    def with_child(self, kind: types.KindRef, json: Any) -> "MockFacts":
        """A child of the parent, for `children(kind)`."""
        call = "with_child(kind, json)"
        _kind(call, "kind", kind)
        self.children.setdefault(_key(kind), []).append(_object(call, "json", _named(call, "json", json)))
        return self

    def with_availability(self, kind: types.KindRef, namespace: str, availability: Any) -> "MockFacts":
        """An optional API's availability in a namespace ('' for every one):
        'not-served' or 'forbidden'; 'available' in a namespace where ''
        says otherwise."""
        call = "with_availability(kind, namespace, availability)"
        key = f"{_key(_kind(call, 'kind', kind))} {_str(call, 'namespace', namespace)}"
        self.availability[key] = _enum(call, "availability", availability, f.Availability, ["available", "not-served", "forbidden"])
        return self

    def with_direct_get(self, kind: types.KindRef, namespace: str) -> "MockFacts":
        """A kind `with_availability` made 'forbidden' in `namespace` ('' for
        every one) whose objects the host still reads one by one, past its
        cache: `get` and `exposure` find them, `list` and `children` stay
        refused."""
        call = "with_direct_get(kind, namespace)"
        self.direct_gets.add(f"{_key(_kind(call, 'kind', kind))} {_str(call, 'namespace', namespace)}")
        return self

    def with_exposure(self, kind: Any, namespace: str, name: str, fact: f.ExposureFact) -> "MockFacts":
        """A Route, Ingress or HTTPRoute (`kind` an ExposureKind or 'route',
        'ingress', 'http-route'; `exposure_kind_ref(kind)` is its API)."""
        call = "with_exposure(kind, namespace, name, fact)"
        kind = _exposure_kind(call, "kind", kind)
        key = f"{wit_name(kind)} {_str(call, 'namespace', namespace)}/{_str(call, 'name', name)}"
        self.exposures[key] = _instance(call, "fact", fact, f.ExposureFact)
        return self

    def with_cluster_role(self, name: str, json: Any = None) -> "MockFacts":
        call = "with_cluster_role(name, json)"
        json = {"metadata": {"name": _str(call, "name", name)}} if json is None else json
        self.cluster_roles[_str(call, "name", name)] = _object_meta(call, "json", json)
        return self

    def with_certificates(self, namespace: str, name: str, key: str, bundle: f.CertificateBundleFact) -> "MockFacts":
        """What `secret_certificates` answers for the Secret's `key` (a Secret
        given without a bundle answers whether it has `key`, no certificate)."""
        call = "with_certificates(namespace, name, key, bundle)"
        at = f"{_str(call, 'namespace', namespace)}/{_str(call, 'name', name)} {_str(call, 'key', key)}"
        self.certificates[at] = _instance(call, "bundle", bundle, f.CertificateBundleFact)
        return self

    def with_job(self, namespace: str, name: str, fact: Any) -> "MockFacts":
        """A Job: a JobFact, or `{'state': 'running' | 'succeeded' |
        'suspended' | ('failed', message), 'active': n, ...}` (its metadata
        then `meta(namespace, name)`)."""
        call = "with_job(namespace, name, fact)"
        key = f"{_str(call, 'namespace', namespace)}/{_str(call, 'name', name)}"
        self.jobs[key] = _job(call, "fact", fact, _meta(namespace, name))
        return self

    def with_network_policy(self, namespace: str, fact: f.NetworkPolicyFact) -> "MockFacts":
        call = "with_network_policy(namespace, fact)"
        self.network_policies.setdefault(_str(call, "namespace", namespace), []).append(
            _instance(call, "fact", fact, f.NetworkPolicyFact)
        )
        return self

    def with_egress_policy(self, namespace: str, fact: f.EgressPolicyFact) -> "MockFacts":
        call = "with_egress_policy(namespace, fact)"
        self.egress_policies.setdefault(_str(call, "namespace", namespace), []).append(
            _instance(call, "fact", fact, f.EgressPolicyFact)
        )
        return self

    def with_node_pod_cidrs(self, fact: f.NodePodCidrsFact) -> "MockFacts":
        call = "with_node_pod_cidrs(fact)"
        classes = (f.NodePodCidrsFact_Known, f.NodePodCidrsFact_Forbidden, f.NodePodCidrsFact_TooMany, f.NodePodCidrsFact_Incomplete)
        if not isinstance(fact, classes):
            raise _wrong_type(call, "fact", "a NodePodCidrsFact_* (Known, Forbidden, TooMany or Incomplete)", fact)
        self.node_pod_cidrs = fact
        return self

    def with_last_apply(self, kind: types.KindRef, namespace: str, name: str, outcome: Any, when: Any = None) -> "MockFacts":
        """The host's last apply of a child: 'applied', ('refused', (code,
        reason, message)) or an ApplyOutcome_*, and when (`when`, for
        `last_apply_time`)."""
        call = "with_last_apply(kind, namespace, name, outcome, when)"
        key = f"{_key(_kind(call, 'kind', kind))} {_str(call, 'namespace', namespace)}/{_str(call, 'name', name)}"
        self.last_applies[key] = _variant(call, "outcome", outcome, "ApplyOutcome", ["applied"], {"refused": _refusal}, "'applied' or ('refused', (code, reason, message))")
        if when is not None:
            self.last_apply_times[key] = _timestamp(call, "when", when)
        return self

    def with_last_apply_time(self, kind: types.KindRef, namespace: str, name: str, at: Any) -> "MockFacts":
        """When the API server answered the host's last apply of the child
        (`facts.last_apply_time`): seconds since the epoch or RFC 3339 text."""
        call = "with_last_apply_time(kind, namespace, name, at)"
        key = f"{_key(_kind(call, 'kind', kind))} {_str(call, 'namespace', namespace)}/{_str(call, 'name', name)}"
        self.last_apply_times[key] = _timestamp(call, "at", at)
        return self

    def with_change_state(self, kind: types.KindRef, namespace: str, name: str, state: Any) -> "MockFacts":
        """What became of the change asked for a child (`facts.change_state`):
        None (not acted on yet), 'made', 'withdrawn', ('held',
        'awaiting-approval'), ('refused', (code, reason, message)), or a
        ChangeOutcome_*. A child not given answers made, as if a host made
        every change."""
        call = "with_change_state(kind, namespace, name, state)"
        key = f"{_key(_kind(call, 'kind', kind))} {_str(call, 'namespace', namespace)}/{_str(call, 'name', name)}"
        shape = "None, 'made', 'withdrawn', ('held', hold) with hold one of 'observe', 'awaiting-approval', 'denied', 'pass-failed', or ('refused', (code, reason, message))"
        self.change_states[key] = None if state is None else _variant(
            call, "state", state, "ChangeOutcome", ["made", "withdrawn"], {"held": _hold, "refused": _refusal}, shape
        )
        return self

    def with_controller(self, name: str, controller: types.ControllerRef) -> "MockFacts":
        """The workloads, ConfigMaps, Jobs and objects (of `get` and `list`)
        named `name` that have no controller of their own are controlled by
        `controller`."""
        call = "with_controller(name, controller)"
        self.controllers[_str(call, "name", name)] = _instance(
            call, "controller", controller, types.ControllerRef, " (ControllerRef(api_version, kind, name, uid))"
        )
        return self

    def failing(self, what: str, name: str, tag: str = "failed") -> "MockFacts":
        """A read that fails (with the read-error `tag`): `what` is
        `workload`, `secret`, `configmap`, `clusterrole`, `exposure`,
        `certificates` or `job` with the object's `name`; a kind's name
        (`Cluster`) for `get`; `list` or `children` with the kind's name as
        `name`; `networkpolicies` or `egresspolicies` with the namespace."""
        call = "failing(what, name, tag)"
        self.failures[f"{_str(call, 'what', what)} {_str(call, 'name', name)}"] = _read_error_tag(call, tag)
        return self

    def facts(self) -> "Facts":
        """The facts a guest's logic reads (`reconciler:guest/facts@0.6.0`)."""
        return Facts(self)

    def _read(self, line: str, what: str, name: str) -> None:
        self.reads.append(line)
        tag = self.failures.get(f"{what} {name}")
        if tag is not None:
            raise read_error(tag, f"{what} {name} is made to fail")

    def _controlled(self, fact: Any) -> Any:
        """`fact` with `with_controller`'s controller when its metadata names none."""
        controller = fact and fact.meta.controller is None and self.controllers.get(fact.meta.name)
        return dataclasses.replace(fact, meta=dataclasses.replace(fact.meta, controller=controller)) if controller else fact

    def _unavailable(self, kind: types.KindRef, namespace: str) -> Optional[f.Availability]:
        a = self.availability.get(f"{_key(kind)} {namespace}", self.availability.get(f"{_key(kind)} "))
        return None if a == f.Availability.AVAILABLE else a

    def _refuse(self, kind: types.KindRef, namespace: str) -> None:
        a = self._unavailable(kind, namespace)
        if a is not None:
            raise read_error(wit_name(a), f"{_key(kind)} is {wit_name(a)} in {jsonlib.dumps(namespace)}")

    def _refuse_unreadable(self, kind: types.KindRef, namespace: str) -> None:
        """As `_refuse`, for a read of one object: a kind read past the cache (`with_direct_get`) is answered."""
        if f"{_key(kind)} {namespace}" not in self.direct_gets and f"{_key(kind)} " not in self.direct_gets:
            self._refuse(kind, namespace)


class Facts:
    """`wit_world.imports.facts`'s functions, answered from a MockFacts."""

    def __init__(self, mock: MockFacts) -> None:
        self._m = mock

    def now(self) -> types.Timestamp:
        return self._m.now

    def workload(self, namespace: str, name: str) -> Optional[f.WorkloadFact]:
        self._m._read(f"workload {namespace}/{name}", "workload", name)
        return self._m._controlled(self._m.workloads.get(f"{namespace}/{name}"))

    def secret(self, namespace: str, name: str) -> Optional[f.SecretFact]:
        self._m._read(f"secret {namespace}/{name}", "secret", name)
        return self._m.secrets.get(f"{namespace}/{name}")

    def config_map(self, namespace: str, name: str) -> Optional[f.ConfigMapFact]:
        self._m._read(f"configmap {namespace}/{name}", "configmap", name)
        return self._m._controlled(self._m.config_maps.get(f"{namespace}/{name}"))

    def get(self, kind: types.KindRef, namespace: str, name: str) -> Optional[types.Object]:
        self._m._read(f"get {_key(kind)} {namespace}/{name}", kind.kind, name)
        self._m._refuse_unreadable(kind, namespace)
        found = self._m.objects.get(f"{_key(kind)} {namespace}/{name}")
        return found and self._m._controlled(found[1])

    def list(self, kind: types.KindRef, namespace: str, selector: List[Any]) -> List[types.Object]:
        selector = [tuple(pair) for pair in selector]
        self._m._read(f"list {_key(kind)} {namespace} {jsonlib.dumps(selector, separators=(',', ':'))}", "list", kind.kind)
        self._m._refuse(kind, namespace)
        found = [
            self._m._controlled(o)
            for k, o in self._m.objects.values()
            if _key(k) == _key(kind)
            and (namespace == "" or o.meta.namespace == namespace)
            and all(pair in o.meta.labels for pair in selector)
        ]
        return sorted(found, key=lambda o: o.meta.name)

    def api_availability(self, kind: types.KindRef, namespace: str) -> f.Availability:
        a = self._m._unavailable(kind, namespace)
        return f.Availability.AVAILABLE if a is None else a

    def network_policies(self, namespace: str) -> List[f.NetworkPolicyFact]:
        self._m._read(f"network-policies {namespace}", "networkpolicies", namespace)
        return list(self._m.network_policies.get(namespace, []))

    def egress_policies(self, namespace: str) -> List[f.EgressPolicyFact]:
        self._m._read(f"egress-policies {namespace}", "egresspolicies", namespace)
        return list(self._m.egress_policies.get(namespace, []))

    def node_pod_cidrs(self) -> f.NodePodCidrsFact:
        return self._m.node_pod_cidrs

    def exposure(self, kind: f.ExposureKind, namespace: str, name: str) -> Optional[f.ExposureFact]:
        self._m._read(f"exposure {wit_name(kind)} {namespace}/{name}", "exposure", name)
        self._m._refuse_unreadable(_exposure_api(kind), namespace)
        return self._m.exposures.get(f"{wit_name(kind)} {namespace}/{name}")

    def cluster_role(self, name: str) -> Optional[types.ObjectMeta]:
        self._m._read(f"clusterrole {name}", "clusterrole", name)
        return self._m.cluster_roles.get(name)

    def secret_certificates(self, namespace: str, name: str, key: str) -> Optional[f.CertificateBundleFact]:
        self._m._read(f"certificates {namespace}/{name} {key}", "certificates", name)
        bundle = self._m.certificates.get(f"{namespace}/{name} {key}")
        secret = self._m.secrets.get(f"{namespace}/{name}")
        # As the Rust mock: a Secret given without a bundle answers its key, no certificate.
        return bundle or (secret and f.CertificateBundleFact(meta=secret.meta, has_key=key in secret.keys, certificates=[]))

    def last_apply(self, kind: types.KindRef, namespace: str, name: str) -> Optional[f.ApplyOutcome]:
        return self._m.last_applies.get(f"{_key(kind)} {namespace}/{name}")

    def last_apply_time(self, kind: types.KindRef, namespace: str, name: str) -> Optional[types.Timestamp]:
        return self._m.last_apply_times.get(f"{_key(kind)} {namespace}/{name}")

    def change_state(self, kind: types.KindRef, namespace: str, name: str) -> Optional[f.ChangeOutcome]:
        self._m.reads.append(f"change-state {_key(kind)} {namespace}/{name}")
        return self._m.change_states.get(f"{_key(kind)} {namespace}/{name}", f.ChangeOutcome_Made())

    def children(self, kind: types.KindRef) -> List[types.Object]:
        self._m._read(f"children {_key(kind)}", "children", kind.kind)
        # As the host: a Secret's data never reaches a guest.
        if kind.group == "" and kind.kind == "Secret":
            raise read_error("forbidden", "Secrets are served only as key names, through facts.secret")
        return list(self._m.children.get(_key(kind), []))

    def job(self, namespace: str, name: str) -> Optional[f.JobFact]:
        self._m._read(f"job {namespace}/{name}", "job", name)
        return self._m._controlled(self._m.jobs.get(f"{namespace}/{name}"))
