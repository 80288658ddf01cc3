"""MockFacts: what a test adds is found, anything else is absent, a read
made to fail raises the host's read-error, every read is recorded, and a
wrong argument says which and what shape was expected."""

import re
import unittest
from pathlib import Path

import reconciler_sdk as sdk
from componentize_py_types import Err
from reconciler_sdk import mock
from reconciler_sdk.mock import (
    MockFacts,
    evaluation,
    exposure_kind_ref,
    kind_ref,
    meta,
    object,
    object_meta,
    workload_in,
    workload_ready,
)
from wit_world.imports import facts as f
from wit_world.imports import types

CLUSTER = kind_ref("postgresql.cnpg.io", "v1", "Cluster")
CONFIG_MAP = kind_ref("", "v1", "ConfigMap")
SECRET = kind_ref("", "v1", "Secret")
ROUTE = kind_ref("route.openshift.io", "v1", "Route")
OWNER = types.ControllerRef(api_version="apps/v1", kind="Deployment", name="legacy", uid="u-legacy")
# The JavaScript mock, whose MockFacts this one's methods follow.
MOCK_JS = Path(__file__).resolve().parents[3] / "js" / "sdk" / "mock.js"


def snake_case(name):
    """A JavaScript function's name as Python's (`withSecretFact`: `with_secret_fact`); a class's as it is."""
    return name if name[0].isupper() else re.sub(r"([A-Z])", lambda c: "_" + c.group(1).lower(), name)
NOW = "2026-11-29T12:00:00Z"


def cluster(name, labels=None, namespace="team-a"):
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": {"instances": 1}}


class Facts(unittest.TestCase):
    def test_what_is_added_is_found_anything_else_is_absent_and_every_read_recorded(self):
        m = MockFacts(NOW).with_secret("team-a", "db", ["username", "password"]).with_config_map("team-a", "cfg", ["k"])
        facts = m.facts()
        self.assertEqual(facts.now(), types.Timestamp(seconds=1795953600, nanos=0))
        self.assertEqual(facts.secret("team-a", "db").keys, ["username", "password"])
        self.assertEqual(facts.secret("team-a", "db").type, "Opaque")
        self.assertIsNone(facts.secret("team-b", "db"))
        self.assertEqual(facts.config_map("team-a", "cfg").meta.name, "cfg")
        self.assertEqual(m.reads, ["secret team-a/db", "secret team-a/db", "secret team-b/db", "configmap team-a/cfg"])

    def test_get_and_list_answer_objects_by_name_and_by_labels_sorted(self):
        m = (
            MockFacts()
            .with_object(CLUSTER, cluster("pg-b", {"app": "x"}))
            .with_object(CLUSTER, cluster("pg-a", {"app": "x"}))
            .with_object(CLUSTER, cluster("pg-c", {"app": "y"}))
        )
        facts = m.facts()
        found = facts.get(CLUSTER, "team-a", "pg-a")
        self.assertEqual(found, object(cluster("pg-a", {"app": "x"})))
        self.assertEqual(found.json, '{"metadata":{"name":"pg-a","namespace":"team-a","labels":{"app":"x"}},"spec":{"instances":1}}')
        self.assertEqual([o.meta.name for o in facts.list(CLUSTER, "team-a", [("app", "x")])], ["pg-a", "pg-b"])
        self.assertEqual([o.meta.name for o in facts.list(CLUSTER, "", [])], ["pg-a", "pg-b", "pg-c"])
        self.assertEqual(m.reads[-1], "list postgresql.cnpg.io/v1/Cluster  []")
        self.assertEqual(m.reads[1], 'list postgresql.cnpg.io/v1/Cluster team-a [["app","x"]]')

    def test_a_read_made_to_fail_raises_the_read_error_the_host_would_answer(self):
        m = MockFacts().with_object(CLUSTER, cluster("pg")).failing("Cluster", "pg").failing("secret", "db", "forbidden")
        m.failing("list", "Cluster")
        facts = m.facts()
        with self.assertRaises(Err) as failed:
            facts.get(CLUSTER, "team-a", "pg")
        self.assertEqual(failed.exception.value, f.ReadError_Failed("Cluster pg is made to fail"))
        self.assertEqual(sdk.read(lambda: facts.secret("team-a", "db")).error, f.ReadError_Forbidden("secret db is made to fail"))
        self.assertIsNotNone(sdk.read(lambda: facts.list(CLUSTER, "team-a", [])).error)

    def test_an_api_not_served_fails_get_and_list_and_answers_its_availability(self):
        m = MockFacts().with_availability(CLUSTER, "", "not-served").with_availability(CONFIG_MAP, "team-b", f.Availability.FORBIDDEN)
        facts = m.facts()
        self.assertEqual(facts.api_availability(CLUSTER, "team-a"), f.Availability.NOT_SERVED)
        self.assertEqual(facts.api_availability(CONFIG_MAP, "team-a"), f.Availability.AVAILABLE)
        self.assertEqual(facts.api_availability(CONFIG_MAP, "team-b"), f.Availability.FORBIDDEN)
        self.assertEqual(
            sdk.read(lambda: facts.get(CLUSTER, "team-a", "pg")).error,
            f.ReadError_NotServed('postgresql.cnpg.io/v1/Cluster is not-served in "team-a"'),
        )

    def test_workloads_children_jobs_and_the_last_apply(self):
        stuck = workload_in("team-a", "web", ("crash-loop-back-off", "back-off"))
        m = (
            MockFacts(0)
            .with_workload("team-a", "web", stuck)
            .with_child(CONFIG_MAP, {"metadata": {"name": "w-config", "namespace": "team-a"}})
            .with_job("team-a", "migrate", {"state": ("failed", "BackoffLimitExceeded: 6 Pods failed"), "failed": 6})
            .with_job("team-a", "done", {"state": "succeeded", "succeeded": 1, "completion": NOW})
            .with_last_apply(CONFIG_MAP, "team-a", "w-config", ("refused", (422, "Invalid", "bad")), 1795953600)
        )
        facts = m.facts()
        self.assertEqual(workload_ready("team-a", "web", 2).ready_replicas, 2)
        self.assertEqual(facts.workload("team-a", "web").state, f.WorkloadState_CrashLoopBackOff("back-off"))
        self.assertEqual([c.meta.name for c in facts.children(CONFIG_MAP)], ["w-config"])
        job = facts.job("team-a", "migrate")
        self.assertEqual((job.meta.name, job.failed, job.state), ("migrate", 6, f.JobState_Failed("BackoffLimitExceeded: 6 Pods failed")))
        self.assertEqual(facts.job("team-a", "done").completion, types.Timestamp(seconds=1795953600, nanos=0))
        self.assertIsNone(facts.job("team-a", "other"))
        self.assertEqual(facts.last_apply(CONFIG_MAP, "team-a", "w-config"), f.ApplyOutcome_Refused(f.ApplyRefusal(422, "Invalid", "bad")))
        self.assertEqual(facts.last_apply_time(CONFIG_MAP, "team-a", "w-config").seconds, 1795953600)
        self.assertEqual(m.reads, ["workload team-a/web", "children /v1/ConfigMap", "job team-a/migrate", "job team-a/done", "job team-a/other"])

    def test_an_api_available_in_one_namespace_is_read_there_though_refused_in_every_other(self):
        m = MockFacts().with_availability(CLUSTER, "", "forbidden").with_availability(CLUSTER, "team-a", "available")
        m.with_object(CLUSTER, cluster("pg"))
        facts = m.facts()
        self.assertEqual(facts.api_availability(CLUSTER, "team-a"), f.Availability.AVAILABLE)
        self.assertEqual(facts.get(CLUSTER, "team-a", "pg").meta.name, "pg")
        self.assertEqual(facts.api_availability(CLUSTER, "team-b"), f.Availability.FORBIDDEN)
        self.assertIsNotNone(sdk.read(lambda: facts.list(CLUSTER, "team-b", [])).error)

    def test_an_exposure_is_refused_as_its_api_and_a_direct_get_reads_past_a_forbidden_cache(self):
        route = f.ExposureFact(meta=meta("team-b", "web"), kind=f.ExposureKind.ROUTE, hostnames=["web.example"], admission=f.Admission_Admitted())
        m = (
            MockFacts()
            .with_availability(ROUTE, "team-b", "forbidden")
            .with_availability(ROUTE, "team-c", "not-served")
            .with_direct_get(ROUTE, "team-b")
            .with_exposure("route", "team-b", "web", route)
            .with_object(ROUTE, {"metadata": {"name": "web", "namespace": "team-b"}})
        )
        facts = m.facts()
        self.assertEqual(facts.exposure(f.ExposureKind.ROUTE, "team-b", "web"), route)
        self.assertEqual(facts.get(ROUTE, "team-b", "web").meta.name, "web")
        self.assertEqual(
            sdk.read(lambda: facts.list(ROUTE, "team-b", [])).error,
            f.ReadError_Forbidden('route.openshift.io/v1/Route is forbidden in "team-b"'),
        )
        self.assertEqual(
            sdk.read(lambda: facts.exposure(f.ExposureKind.ROUTE, "team-c", "web")).error,
            f.ReadError_NotServed('route.openshift.io/v1/Route is not-served in "team-c"'),
        )
        self.assertEqual(m.reads[0], "exposure route team-b/web")

    def test_exposure_kind_ref_is_the_api_the_host_probes(self):
        self.assertEqual(exposure_kind_ref("route"), ROUTE)
        self.assertEqual(exposure_kind_ref(f.ExposureKind.INGRESS), kind_ref("networking.k8s.io", "v1", "Ingress"))
        self.assertEqual(exposure_kind_ref("http-route"), kind_ref("gateway.networking.k8s.io", "v1", "HTTPRoute"))

    def test_a_secret_fact_is_served_as_given(self):
        fact = f.SecretFact(meta=object_meta({"metadata": {"name": "db", "namespace": "team-a", "labels": {"a": "b"}}}), type="kubernetes.io/tls", keys=["tls.crt"])
        facts = MockFacts().with_secret_fact(fact).facts()
        self.assertEqual(facts.secret("team-a", "db"), fact)

    def test_a_secret_without_a_bundle_answers_its_key_and_no_certificate(self):
        bundle = f.CertificateBundleFact(meta=meta("team-a", "ca"), has_key=True, certificates=[f.CertificateFact(sha256="ab", pem_bytes=10)])
        m = MockFacts().with_secret("team-a", "tls", ["tls.crt"]).with_secret("team-a", "ca", ["ca.crt"]).with_certificates("team-a", "ca", "ca.crt", bundle)
        facts = m.facts()
        self.assertEqual(
            facts.secret_certificates("team-a", "tls", "tls.crt"),
            f.CertificateBundleFact(meta=meta("team-a", "tls"), has_key=True, certificates=[]),
        )
        self.assertFalse(facts.secret_certificates("team-a", "tls", "ca.crt").has_key)
        self.assertEqual(facts.secret_certificates("team-a", "ca", "ca.crt"), bundle)
        self.assertIsNone(facts.secret_certificates("team-a", "other", "tls.crt"))
        self.assertEqual(m.reads[0], "certificates team-a/tls tls.crt")

    def test_the_children_of_secrets_are_refused_as_the_host_refuses_them(self):
        m = MockFacts().with_child(SECRET, {"metadata": {"name": "db", "namespace": "team-a"}})
        facts = m.facts()
        self.assertEqual(
            sdk.read(lambda: facts.children(SECRET)).error,
            f.ReadError_Forbidden("Secrets are served only as key names, through facts.secret"),
        )
        self.assertEqual(m.reads, ["children /v1/Secret"])

    def test_a_controller_given_by_name_controls_what_has_none_of_its_own(self):
        own = types.ControllerRef(api_version="v1", kind="X", name="x", uid="u-x")
        owned = {"metadata": {"name": "legacy", "namespace": "team-a", "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u-x", "controller": True}]}}
        m = (
            MockFacts()
            .with_controller("web", OWNER)
            .with_controller("legacy", OWNER)
            .with_workload("team-a", "web", workload_ready("team-a", "web", 1))
            .with_config_map("team-a", "web", ["k"])
            .with_job("team-a", "web", {"state": "running"})
            .with_object(CLUSTER, cluster("web"))
            .with_object(CLUSTER, owned)
            .with_object(CLUSTER, cluster("other"))
        )
        facts = m.facts()
        self.assertEqual(facts.workload("team-a", "web").meta.controller, OWNER)
        self.assertEqual(facts.config_map("team-a", "web").meta.controller, OWNER)
        self.assertEqual(facts.job("team-a", "web").meta.controller, OWNER)
        self.assertEqual(facts.get(CLUSTER, "team-a", "web").meta.controller, OWNER)
        self.assertEqual(facts.get(CLUSTER, "team-a", "legacy").meta.controller, own)
        self.assertEqual([o.meta.controller for o in facts.list(CLUSTER, "team-a", [])], [own, None, OWNER])
        self.assertIsNone(m.workloads["team-a/web"].meta.controller)

    def test_the_last_apply_time_is_given_alone(self):
        facts = MockFacts().with_last_apply_time(CONFIG_MAP, "team-a", "c", NOW).facts()
        self.assertEqual(facts.last_apply_time(CONFIG_MAP, "team-a", "c"), types.Timestamp(seconds=1795953600, nanos=0))
        self.assertIsNone(facts.last_apply(CONFIG_MAP, "team-a", "c"))
        self.assertIsNone(facts.last_apply_time(CONFIG_MAP, "team-a", "other"))

    def test_a_change_state_not_given_is_made_as_if_a_host_made_every_change(self):
        m = (
            MockFacts()
            .with_change_state(CONFIG_MAP, "team-a", "held", ("held", "awaiting-approval"))
            .with_change_state(CONFIG_MAP, "team-a", "new", None)
            .with_change_state(CONFIG_MAP, "team-a", "gone", "withdrawn")
        )
        facts = m.facts()
        self.assertEqual(facts.change_state(CONFIG_MAP, "team-a", "held"), f.ChangeOutcome_Held(f.Hold.AWAITING_APPROVAL))
        self.assertIsNone(facts.change_state(CONFIG_MAP, "team-a", "new"))
        self.assertEqual(facts.change_state(CONFIG_MAP, "team-a", "gone"), f.ChangeOutcome_Withdrawn())
        self.assertEqual(facts.change_state(CONFIG_MAP, "team-a", "other"), f.ChangeOutcome_Made())
        self.assertEqual(m.reads[0], "change-state /v1/ConfigMap team-a/held")

    def test_meta_names_an_object_as_the_rust_mock_and_object_meta_defaults_to_it(self):
        m = meta("team-a", "db")
        self.assertEqual((m.namespace, m.name, m.uid, m.generation), ("team-a", "db", "uid-team-a-db", 1))
        self.assertEqual((m.labels, m.annotations, m.controller, m.creation, m.deletion), ([], [], None, None, None))
        self.assertEqual(object_meta({"metadata": {"name": "db", "namespace": "team-a"}}), m)
        self.assertEqual(object_meta({"spec": {}}), meta("", ""))
        self.assertEqual(object_meta({"metadata": {"name": "a", "uid": "u-1", "generation": 4}}).uid, "u-1")
        self.assertEqual(object_meta({"metadata": {"name": "a", "generation": 4}}).generation, 4)
        self.assertEqual(workload_ready("team-a", "web", 1).meta, meta("team-a", "web"))
        self.assertEqual(MockFacts().with_job("team-a", "j", {"state": "running"}).facts().job("team-a", "j").meta, meta("team-a", "j"))

    def test_object_meta_and_evaluation_from_kubernetes_json(self):
        parent = {
            "metadata": {
                "name": "app", "namespace": "team-a", "uid": "u-1", "generation": 3, "labels": {"a": "b"},
                "creationTimestamp": "2026-11-29T11:00:00.250Z",
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u-x", "controller": True}],
            }
        }
        m = object_meta(parent)
        self.assertEqual((m.generation, m.labels, m.controller.uid), (3, [("a", "b")], "u-x"))
        self.assertEqual(m.creation, types.Timestamp(seconds=1795950000, nanos=250_000_000))
        e = evaluation(parent, {"allowedImageRepositories": "ghcr.io/fyannk/"}, paused=True)
        self.assertEqual((e.paused, sdk.setting(e, "allowedImageRepositories")), (True, "ghcr.io/fyannk/"))
        self.assertEqual(sdk.parent_json(e), parent)


class WrongArguments(unittest.TestCase):
    def says(self, error, message, call):
        with self.assertRaises(error) as raised:
            call()
        self.assertEqual(str(raised.exception), message)

    def test_a_wrong_argument_names_the_call_the_argument_and_the_shape(self):
        m = MockFacts()
        self.says(
            TypeError,
            "with_job(namespace, name, fact): fact must be a JobFact or a dict with 'state' ('running', 'succeeded', "
            "'suspended' or ('failed', message)) and optionally 'active', 'succeeded', 'failed' (ints), 'start', "
            "'completion' (timestamps), 'conditions' (a list of JobCondition), 'failed_pod' (a JobPodFailure), got list",
            lambda: m.with_job("team-a", "migrate", []),
        )
        self.says(
            ValueError,
            "with_job(namespace, name, fact): fact['state'] must be a JobState_* or 'running', 'succeeded', "
            "'suspended' or ('failed', message), got 'sometimes'",
            lambda: m.with_job("team-a", "migrate", {"state": "sometimes"}),
        )
        self.says(TypeError, "with_secret(namespace, name, keys, json, type): keys must be a list of str, got str", lambda: m.with_secret("ns", "db", "username"))
        self.says(TypeError, "with_secret(namespace, name, keys, json, type): namespace must be a str, got NoneType", lambda: m.with_secret(None, "db", []))
        self.says(
            TypeError,
            "with_object(kind, json): kind must be a KindRef (kind_ref(group, version, kind)), got str",
            lambda: m.with_object("Cluster", cluster("pg")),
        )
        self.says(
            ValueError,
            "with_object(kind, json): json must be a Kubernetes object's JSON with metadata.name, got {'spec': {}}",
            lambda: m.with_object(CLUSTER, {"spec": {}}),
        )
        self.says(
            TypeError,
            "with_workload(namespace, name, fact): fact must be a WorkloadFact (workload_ready(...) or workload_in(...)), got dict",
            lambda: m.with_workload("ns", "web", {"state": "ready"}),
        )
        self.says(
            ValueError,
            "with_change_state(kind, namespace, name, state): state[1] must be a Hold or one of 'observe', "
            "'awaiting-approval', 'denied', 'pass-failed', got 'later'",
            lambda: m.with_change_state(CONFIG_MAP, "ns", "c", ("held", "later")),
        )
        self.says(
            TypeError,
            "with_last_apply(kind, namespace, name, outcome, when): outcome[1] must be an ApplyRefusal or (code, reason, message), got list",
            lambda: m.with_last_apply(CONFIG_MAP, "ns", "c", ("refused", [422])),
        )
        self.says(
            ValueError,
            "with_availability(kind, namespace, availability): availability must be an Availability or one of "
            "'available', 'not-served', 'forbidden', got 'maybe'",
            lambda: m.with_availability(CLUSTER, "", "maybe"),
        )
        self.says(
            ValueError,
            "failing(what, name, tag): tag must be one of 'not-declared', 'not-served', 'forbidden', 'failed', got 'nope'",
            lambda: m.failing("secret", "db", "nope"),
        )
        self.says(
            ValueError,
            "MockFacts(now): now must be RFC 3339 text such as '2026-11-29T12:00:00Z', got 'yesterday'",
            lambda: MockFacts("yesterday"),
        )
        self.says(
            TypeError,
            "evaluation(parent, settings, paused): settings must be a dict of str to str, got list",
            lambda: evaluation({"metadata": {}}, [("a", "b")]),
        )
        self.says(
            TypeError,
            "workload_in(namespace, name, state): state must be a WorkloadState_* or 'ready' or (state, message) "
            "such as ('crash-loop-back-off', 'back-off'), got dict",
            lambda: workload_in("ns", "web", {"tag": "ready"}),
        )

    def test_the_functions_issue_53_brought_check_their_arguments(self):
        m = MockFacts()
        self.says(
            TypeError,
            "meta(namespace, name): namespace must be a str (an object's JSON is object_meta(json)'s), got dict",
            lambda: meta({"metadata": {"name": "a"}}, "a"),
        )
        self.says(
            TypeError,
            "object_meta(json): json['metadata']['labels'] must be a dict of str to str, got list",
            lambda: object_meta({"metadata": {"labels": [["a", "b"]]}}),
        )
        self.says(
            ValueError,
            "object_meta(json): json['metadata']['creationTimestamp'] must be RFC 3339 text such as '2026-11-29T12:00:00Z', got 'today'",
            lambda: object_meta({"metadata": {"creationTimestamp": "today"}}),
        )
        self.says(
            ValueError,
            "exposure_kind_ref(kind): kind must be an ExposureKind or one of 'route', 'ingress', 'http-route', got 'gateway'",
            lambda: exposure_kind_ref("gateway"),
        )
        self.says(TypeError, "with_secret_fact(fact): fact must be a SecretFact, got dict", lambda: m.with_secret_fact({"meta": {}}))
        self.says(
            TypeError,
            "with_secret_fact(fact): fact.meta must be an ObjectMeta (meta(namespace, name) or object_meta(json)), got dict",
            lambda: m.with_secret_fact(f.SecretFact(meta={"name": "db"}, type="Opaque", keys=[])),
        )
        self.says(
            TypeError,
            "with_direct_get(kind, namespace): kind must be a KindRef (kind_ref(group, version, kind)), got str",
            lambda: m.with_direct_get("Route", "team-b"),
        )
        self.says(TypeError, "with_direct_get(kind, namespace): namespace must be a str, got NoneType", lambda: m.with_direct_get(ROUTE, None))
        self.says(
            TypeError,
            "with_controller(name, controller): controller must be a ControllerRef (ControllerRef(api_version, kind, name, uid)), got dict",
            lambda: m.with_controller("web", {"kind": "Deployment"}),
        )
        self.says(TypeError, "with_controller(name, controller): name must be a str, got int", lambda: m.with_controller(1, OWNER))
        self.says(
            ValueError,
            "with_last_apply_time(kind, namespace, name, at): at must be RFC 3339 text such as '2026-11-29T12:00:00Z', got 'yesterday'",
            lambda: m.with_last_apply_time(CONFIG_MAP, "ns", "c", "yesterday"),
        )
        self.says(
            ValueError,
            "with_child(kind, json): json must be a Kubernetes object's JSON with metadata.name, got {'spec': {}}",
            lambda: m.with_child(CONFIG_MAP, {"spec": {}}),
        )


class SameMethodsAsTheJavaScriptMock(unittest.TestCase):
    def test_mock_facts_has_the_methods_of_mock_js_under_snake_case_names(self):
        text = MOCK_JS.read_text(encoding="utf-8")
        body = text[text.index("export class MockFacts {"):]
        body = body[: body.index("\n}\n")]
        js = {snake_case(name) for name in re.findall(r"^  (\w+)\(", body, re.M)} - {"constructor"}
        py = {name for name in vars(MockFacts) if not name.startswith("_")}
        self.assertEqual(py, js)

    def test_the_module_exports_what_mock_js_exports_under_snake_case_names(self):
        text = MOCK_JS.read_text(encoding="utf-8")
        names = re.findall(r"^export (?:function|class) (\w+)", text, re.M)
        names += [n.strip() for listed in re.findall(r"^export \{(.*)\};", text, re.M) for n in listed.split(",")]
        self.assertEqual(set(mock.__all__), {snake_case(name) for name in names})


if __name__ == "__main__":
    unittest.main()
