"""guests/py/escape/app.py's `undeclared-field` under the mock: its read of
Services names `spec.ports` only, and the attempt reads `spec.clusterIP` of
the first Service of its namespace (the Rust escape guest's words). The
mock serves whole objects, as a read naming no fields is served: what the
host serves of a read naming its fields (the field absent), and the
fixture that fails naming it, are host/tests/field_projection.rs's."""

import importlib.util
import sys
import unittest
from pathlib import Path

import reconciler_sdk as sdk
from reconciler_sdk.mock import MockFacts, evaluation

APP = Path(__file__).resolve().parents[2] / "escape" / "app.py"
SERVICE = sdk.kind_ref("", "v1", "Service")


def load_app():
    spec = importlib.util.spec_from_file_location("escape_app", APP)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


app = load_app()

PARENT = {
    "apiVersion": "testing.reconciler.dev/v1",
    "kind": "PyEscape",
    "metadata": {"name": "e", "namespace": "ns", "uid": "u-1", "generation": 1},
    "spec": {"attempt": "undeclared-field"},
}


def service(namespace, name, spec):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


class UndeclaredField(unittest.TestCase):
    def said(self, facts):
        verdict, changes = app.reconcile(evaluation(PARENT), facts.facts())
        self.assertEqual(changes, [])
        return verdict.aspects[0].message

    def test_its_read_of_services_names_spec_ports_only(self):
        self.assertEqual(app.describe().reads, [sdk.with_fields(sdk.reads(SERVICE), ["spec.ports"])])

    def test_it_says_the_cluster_ip_of_the_first_service_of_its_namespace(self):
        facts = (
            MockFacts()
            .with_object(SERVICE, service("ns", "web", {"clusterIP": "10.96.0.11"}))
            .with_object(SERVICE, service("ns", "db", {"clusterIP": "10.96.0.10", "ports": [{"port": 5432}]}))
            .with_object(SERVICE, service("other", "a", {"clusterIP": "10.96.0.12"}))
        )
        self.assertEqual(self.said(facts), "clusterIP 10.96.0.10")
        self.assertEqual(facts.reads, ["list /v1/Service ns []"])

    def test_a_field_absent_none_listed_and_a_refused_list_are_said(self):
        self.assertEqual(self.said(MockFacts().with_object(SERVICE, service("ns", "db", {"ports": []}))), "clusterIP absent")
        self.assertEqual(self.said(MockFacts()), "no Service")
        self.assertEqual(
            self.said(MockFacts().failing("list", "Service", "not-declared")),
            'list refused: ReadError::NotDeclared("list Service is made to fail")',
        )


if __name__ == "__main__":
    unittest.main()
