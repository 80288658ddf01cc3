"""guests/py/secretcheck/app.py under the mock: each of its fixtures
(guests/py/secretcheck/fixtures/*.yaml), its rule stated here, gives the
verdict the fixture expects of the guest (the aspect's status, reason and
message, the stall, the status field). What the host adds to it (Ready)
is the fixtures' to check, through the component."""

import importlib.util
import sys
import unittest
from pathlib import Path

import reconciler_sdk as sdk
from reconciler_sdk.mock import MockFacts, evaluation

APP = Path(__file__).resolve().parents[2] / "secretcheck" / "app.py"
NOW = "2026-11-29T12:00:00Z"


def load_app():
    spec = importlib.util.spec_from_file_location("secretcheck_app", APP)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


app = load_app()


def parent(spec):
    return {
        "apiVersion": "examples.reconciler.dev/v1alpha1",
        "kind": "SecretCheck",
        "metadata": {"name": "app", "namespace": "team-a", "uid": "3c9d0f6e-0000-4000-8000-000000000001", "generation": 1},
        "spec": spec,
    }


class SecretCheck(unittest.TestCase):
    def reconcile(self, spec, facts):
        verdict, changes = app.reconcile(evaluation(parent(spec)), facts.facts())
        self.assertEqual(changes, [])
        (aspect,) = verdict.aspects
        self.assertEqual(aspect.type, "KeysPresent")
        return verdict, aspect

    def test_keys_present(self):
        # keys-present.yaml: the Secret holds every key the spec names:
        # KeysPresent True, AsExpected, 'holds username, password'; no stall; status.checkedKeys 2.
        facts = MockFacts(NOW).with_secret("team-a", "app-db", ["username", "password"])
        verdict, aspect = self.reconcile({"secretName": "app-db", "keys": ["username", "password"]}, facts)
        self.assertEqual((aspect.status, aspect.reason), (sdk.TRUE, "AsExpected"))
        self.assertIn("holds username, password", aspect.message)
        self.assertIsNone(verdict.stall)
        self.assertEqual(verdict.status_fields, '{"checkedKeys":2}')
        self.assertEqual(facts.reads, ["secret team-a/app-db"])

    def test_key_missing(self):
        # key-missing.yaml: a key the spec names is not in the Secret:
        # KeysPresent False, SecretKeyMissing, 'has no key host'; no stall.
        facts = MockFacts(NOW).with_secret("team-a", "app-db", ["username", "password"])
        verdict, aspect = self.reconcile({"secretName": "app-db", "keys": ["username", "password", "host"]}, facts)
        self.assertEqual((aspect.status, aspect.reason), (sdk.FALSE, "SecretKeyMissing"))
        self.assertIn("has no key host", aspect.message)
        self.assertIsNone(verdict.stall)

    def test_secret_not_found(self):
        # secret-not-found.yaml: the Secret does not exist: KeysPresent False,
        # SecretNotFound, 'Secret app-db does not exist in team-a'; not a stall.
        verdict, aspect = self.reconcile({"secretName": "app-db", "keys": ["username"]}, MockFacts(NOW))
        self.assertEqual((aspect.status, aspect.reason), (sdk.FALSE, "SecretNotFound"))
        self.assertIn("Secret app-db does not exist in team-a", aspect.message)
        self.assertIsNone(verdict.stall)

    def test_secret_read_refused(self):
        # secret-read-refused.yaml: the host may not read Secrets in the
        # namespace: KeysPresent Unknown, Reconciling, 'could not read Secret
        # app-db: '; no stall (the guest asks to be evaluated again).
        facts = MockFacts(NOW).failing("secret", "app-db", "forbidden")
        verdict, aspect = self.reconcile({"secretName": "app-db", "keys": ["username"]}, facts)
        self.assertEqual((aspect.status, aspect.reason), (sdk.UNKNOWN, "Reconciling"))
        self.assertIn("could not read Secret app-db: ", aspect.message)
        self.assertIsNone(verdict.stall)
        self.assertEqual(verdict.requeue_after_seconds, sdk.RETRY_SECONDS)

    def test_configuration_invalid(self):
        # configuration-invalid.yaml: a spec naming no keys cannot be checked:
        # KeysPresent False, ConfigurationInvalid, 'spec.keys must be a
        # non-empty list'; stall ConfigurationInvalid. Nothing is read.
        facts = MockFacts(NOW)
        verdict, aspect = self.reconcile({"secretName": "app-db", "keys": []}, facts)
        self.assertEqual((aspect.status, aspect.reason), (sdk.FALSE, "ConfigurationInvalid"))
        self.assertIn("spec.keys must be a non-empty list", aspect.message)
        self.assertEqual(verdict.stall.reason, "ConfigurationInvalid")
        self.assertEqual(facts.reads, [])

    def test_a_paused_parent_is_not_checked(self):
        verdict, changes = app.reconcile(evaluation(parent({"secretName": "app-db", "keys": ["username"]}), paused=True), MockFacts(NOW).facts())
        self.assertEqual((verdict.aspects, changes), ([], []))

    def test_the_export_describes_the_kind(self):
        spec = app.Reconciler().describe()
        self.assertEqual((spec.kind, spec.aspects), ("SecretCheck", ["KeysPresent"]))
        self.assertEqual(app.Reconciler().writes(), [])


if __name__ == "__main__":
    unittest.main()
