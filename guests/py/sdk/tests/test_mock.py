"""MockFacts: what a test adds is found, anything else is absent, a read
made to fail raises the host's read-error, every read is recorded, and a
wrong argument says which and what shape was expected."""

import unittest

import reconciler_sdk as sdk
from componentize_py_types import Err
from reconciler_sdk.mock import MockFacts, evaluation, kind_ref, meta, object, workload_in, workload_ready
from wit_world.imports import facts as f
from wit_world.imports import types

CLUSTER = kind_ref("postgresql.cnpg.io", "v1", "Cluster")
CONFIG_MAP = kind_ref("", "v1", "ConfigMap")
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

    def test_meta_and_evaluation_from_kubernetes_json(self):
        parent = {
            "metadata": {
                "name": "app", "namespace": "team-a", "uid": "u-1", "generation": 3, "labels": {"a": "b"},
                "creationTimestamp": "2026-11-29T11:00:00.250Z",
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u-x", "controller": True}],
            }
        }
        m = meta(parent)
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
            "'not-served', 'forbidden', got 'available'",
            lambda: m.with_availability(CLUSTER, "", "available"),
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


if __name__ == "__main__":
    unittest.main()
