"""The change helpers, as the JavaScript SDK's tests (guests/js/sdk/index.test.js)
and the Rust SDK's (change.rs, ownership.rs) hold them."""

import json
import unittest

import reconciler_sdk as sdk
from reconciler_sdk import ADOPT_ANNOTATION, Parent, change_aspect, fails, ok, read
from reconciler_sdk.mock import meta, object_meta, read_error
from wit_world.exports import reconciler as r
from wit_world.imports import facts as f

CONFIG_MAP = sdk.kind_ref("", "v1", "ConfigMap")
BINDING = sdk.kind_ref("rbac.authorization.k8s.io", "v1", "RoleBinding")


def child(controller=None, annotations=None):
    m = {"name": "a-agent", "namespace": "ns", "annotations": annotations or {}}
    if controller is not None:
        kind, name, uid = controller
        m["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": True}]
    return object_meta({"metadata": m})


class Changes(unittest.TestCase):
    def test_an_apply_carries_its_body_as_sorted_json(self):
        change = sdk.apply(CONFIG_MAP, "w-config", {"metadata": {"name": "w-config"}, "apiVersion": "v1", "data": {"é": "1"}})
        self.assertIsInstance(change, r.Change_Apply)
        self.assertEqual(change.value.kind, CONFIG_MAP)
        self.assertEqual(change.value.body, '{"apiVersion":"v1","data":{"é":"1"},"metadata":{"name":"w-config"}}')

    def test_the_other_changes_are_the_contracts_cases(self):
        self.assertEqual(sdk.remove(CONFIG_MAP, "old", "u-1"), r.Change_Delete(r.DeleteObject(kind=CONFIG_MAP, name="old", uid="u-1")))
        self.assertEqual(sdk.generate("creds", [("password", 32)]).value.keys, [("password", 32)])
        self.assertEqual(sdk.certificate("tls", ["a.ns.svc"]).value.dns_names, ["a.ns.svc"])
        bundle = sdk.ca_bundle("ca", "ca.crt", [("tls", "ca.crt")])
        self.assertEqual((bundle.value.sources, bundle.value.labels), ([("tls", "ca.crt")], []))

    def test_a_withdrawal_is_a_delete_with_the_event_the_host_raises_once_it_is_made(self):
        event = sdk.kind_event(False, "RoleBindingDeleted", "deleted RoleBinding grant at expiry")
        change = sdk.withdraw(BINDING, "grant", "u-1", event)
        self.assertEqual(change, r.Change_Withdraw(r.Withdrawal(object=sdk.remove(BINDING, "grant", "u-1").value, event=event)))
        self.assertEqual(event.type, r.EventType.NORMAL)
        self.assertIsNone(sdk.withdraw(BINDING, "grant", "u-1").value.event)
        numbered = r.KindEvent(type=r.EventType.WARNING, reason="RoleBindingDeleted", message=42)
        self.assertEqual(sdk.withdraw(BINDING, "grant", "u-1", numbered).value.event.message, "42")

    def test_status_fields_and_bodies_are_written_alike(self):
        verdict = sdk.VerdictBuilder().field("url", None).field("a", {"z": 1, "b": 2}).build()
        self.assertEqual(verdict.status_fields, '{"a":{"b":2,"z":1},"url":null}')
        self.assertEqual(json.loads(verdict.status_fields)["a"], {"b": 2, "z": 1})


class Ownership(unittest.TestCase):
    parent = Parent.of("EvidenceAgent", meta("ns", "a"))

    def test_a_child_another_controls_is_refused_naming_both_controllers(self):
        self.assertEqual(
            self.parent.refusal("Service", "a-agent", child(("Deployment", "legacy", "other"))),
            "Service a-agent exists and is controlled by Deployment legacy, not by EvidenceAgent a",
        )
        self.assertIsNone(self.parent.refusal("Service", "a-agent", child(("EvidenceAgent", "a", "uid-ns-a"))))

    def test_an_object_nothing_controls_is_adopted_only_with_consent_naming_the_parent(self):
        self.assertEqual(
            self.parent.refusal("Service", "a-agent", child()),
            "Service a-agent exists and nothing controls it: the operator takes over an object only when whoever "
            "may change it consents, with the annotation reconciler.dev/adopt: EvidenceAgent/a; annotate it so, or delete it",
        )
        self.assertIsNotNone(self.parent.refusal("Service", "a-agent", child(annotations={ADOPT_ANNOTATION: "EvidenceAgent/b"})))
        self.assertIsNone(self.parent.refusal("Service", "a-agent", child(annotations={ADOPT_ANNOTATION: "EvidenceAgent/a"})))
        self.assertIsNone(self.parent.foreign("Service", "a-agent", child()))

    def test_check_owned_stalls_with_resource_not_owned_or_says_the_read_failed(self):
        with self.assertRaises(sdk.NotValid) as refused:
            sdk.check_owned(self.parent, "Service", "a-agent", sdk.Read(value=child(("Deployment", "legacy", "other"))))
        self.assertEqual((refused.exception.kind, refused.exception.reason), ("stalled", sdk.RESOURCE_NOT_OWNED))
        self.assertEqual(sdk.RESOURCE_NOT_OWNED, "ResourceNotOwned")

        def failing():
            raise read_error("forbidden", "no get on services")

        with self.assertRaises(sdk.NotValid) as unread:
            sdk.check_owned(self.parent, "Service", "a-agent", read(failing))
        self.assertEqual((unread.exception.kind, unread.exception.reason), ("unread", None))
        self.assertEqual(str(unread.exception), "could not read Service a-agent: no get on services")
        sdk.check_owned(self.parent, "Service", "a-agent", sdk.Read())


class ChangeState(unittest.TestCase):
    def say(self, state):
        made = lambda: ok("ChildReady", "ConfigMap w-config holds the data")  # noqa: E731
        return change_aspect("ChildReady", "ConfigMap w-config", state, "ChildRefused", made)

    def test_an_aspect_claims_a_child_only_once_the_host_made_its_change(self):
        self.assertEqual(self.say(f.ChangeOutcome_Made()).status, sdk.TRUE)
        self.assertEqual(self.say(f.ChangeOutcome_Withdrawn()).status, sdk.TRUE)
        asked = self.say(None)
        self.assertEqual((asked.status, asked.reason), (sdk.UNKNOWN, "Reconciling"))
        self.assertEqual(asked.message, "ConfigMap w-config is asked for; the host has not acted on it yet")

    def test_else_it_says_what_holds_it_with_the_hosts_reason(self):
        said = {h: self.say(f.ChangeOutcome_Held(h)) for h in f.Hold}
        self.assertEqual(
            {sdk.wit_name(h): (c.status, c.reason) for h, c in said.items()},
            {
                "observe": (sdk.FALSE, "Planned"),
                "awaiting-approval": (sdk.FALSE, "AwaitingApproval"),
                "denied": (sdk.FALSE, "ChangesDenied"),
                "pass-failed": (sdk.FALSE, "ReconcileError"),
            },
        )
        self.assertEqual(said[f.Hold.DENIED].message, "ConfigMap w-config is not made: a reviewer denied its change")
        self.assertEqual(
            said[f.Hold.AWAITING_APPROVAL].message, "ConfigMap w-config is not made: its change awaits a reviewer's approval"
        )

    def test_or_that_the_api_server_refused_it_with_the_kinds_reason(self):
        refused = f.ChangeOutcome_Refused(f.ApplyRefusal(code=422, reason="Invalid", message="bad"))
        c = self.say(refused)
        self.assertEqual(
            (c.status, c.reason, c.message),
            (sdk.FALSE, "ChildRefused", "ConfigMap w-config was refused by the API server (422 Invalid): bad"),
        )
        self.assertEqual(c, fails("ChildReady", "ChildRefused", c.message))

    def test_a_withdrawal_waits_until_the_host_took_the_child_away(self):
        refused = f.ChangeOutcome_Refused(f.ApplyRefusal(code=422, reason="Invalid", message="bad"))
        self.assertIsNone(sdk.not_withdrawn("Route a", f.ChangeOutcome_Withdrawn()))
        self.assertEqual(
            sdk.not_withdrawn("Route a", refused), "Route a is still there: the API server refused its deletion (422 Invalid: bad)"
        )
        self.assertEqual(sdk.not_withdrawn("Route a", None), "Route a is still there: its deletion is not made yet")
        self.assertTrue(sdk.is_made(f.ChangeOutcome_Withdrawn()))
        self.assertFalse(sdk.is_made(f.ChangeOutcome_Held(f.Hold.OBSERVE)))
        self.assertFalse(sdk.is_made(None))

    def test_held_names_every_hold_of_the_contract(self):
        self.assertEqual(list(sdk.HELD), [sdk.wit_name(h) for h in f.Hold])


if __name__ == "__main__":
    unittest.main()
