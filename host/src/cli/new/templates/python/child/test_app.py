"""The guest's logic under unittest, with the SDK's mock facts: no host, no cluster, no component built."""

import json
import unittest

import reconciler_sdk as sdk
from reconciler_sdk.mock import MockFacts, evaluation
from wit_world.exports.reconciler import Change_Apply

from app import CHILD_READY, CHILD_REFUSED, GREETING_MISSING, child_kind, child_name, describe, reconcile

# The host's reasons an aspect about a change may carry (sdk.change_aspect's).
HOST_REASONS = {sdk.AS_EXPECTED, sdk.RECONCILING} | {reason for reason, _ in sdk.HELD.values()}


def parent(spec):
    return {
        "apiVersion": "{{group}}/{{version}}",
        "kind": "{{Kind}}",
        "metadata": {"name": "hello", "namespace": "default", "uid": "u1", "generation": 1},
        "spec": spec,
    }


def in_state(state):
    """Facts where the change asked for the child is in `state` (`facts.change_state`)."""
    return MockFacts(0).with_change_state(child_kind(), "default", child_name("hello"), state)


class {{Kind}}(unittest.TestCase):
    def reconcile(self, spec, facts=None):
        """One pass over `spec` (`(verdict, changes)`), its verdict held to the contract."""
        verdict, changes = reconcile(evaluation(parent(spec)), (MockFacts(0) if facts is None else facts).facts())
        self.keeps_contract(verdict)
        return verdict, changes

    def keeps_contract(self, verdict):
        """What the host checks of this guest's verdicts: every aspect once in declared order up to the first that
        is not True, each reason registered (the kind's or the host's) with a message, a declared stall."""
        kind = describe()
        types = [c.type for c in verdict.aspects]
        self.assertEqual(types, [a for a in kind.aspects if a in types])
        deciding = next((i + 1 for i, c in enumerate(verdict.aspects) if c.status != sdk.TRUE), len(kind.aspects))
        self.assertEqual(types[:deciding], kind.aspects[:deciding])
        registered = HOST_REASONS | {e.name for e in kind.reasons}
        for c in verdict.aspects:
            self.assertIn(c.reason, registered)
            self.assertNotEqual(c.message, "", c.type)
        if verdict.stall is not None:
            self.assertIn(verdict.stall.reason, [s.reason for s in kind.stalls])

    def test_a_greeting_asks_for_the_child_and_is_ready_once_it_is_made(self):
        # The host has not acted on the change yet.
        asked, changes = self.reconcile({"greeting": "hi"}, in_state(None))
        self.assertEqual(len(changes), 1, changes)
        self.assertIsInstance(changes[0], Change_Apply)
        applied = changes[0].value
        self.assertEqual((applied.kind, applied.name), (child_kind(), child_name("hello")))
        body = json.loads(applied.body)
        self.assertEqual(body["kind"], "{{Child}}")
        self.assertIn('"hi"', applied.body)
        # Not made yet: ChildReady says it is asked for, not that it is there.
        self.assertEqual(asked.aspects[1].status, sdk.UNKNOWN)

        made, _ = self.reconcile({"greeting": "hi"}, in_state("made"))
        self.assertEqual(made.aspects[1].type, CHILD_READY)
        self.assertEqual(made.aspects[1].status, sdk.TRUE)

    def test_a_child_held_or_refused_is_not_ready_and_says_why(self):
        held = self.reconcile({"greeting": "hi"}, in_state(("held", "awaiting-approval")))[0].aspects[1]
        self.assertEqual((held.status, held.reason), (sdk.FALSE, "AwaitingApproval"))
        refused = ("refused", (422, "Invalid", "bad"))
        c = self.reconcile({"greeting": "hi"}, in_state(refused))[0].aspects[1]
        self.assertEqual((c.status, c.reason), (sdk.FALSE, CHILD_REFUSED))
        self.assertIn("was refused by the API server (422 Invalid): bad", c.message)

    def test_a_child_another_object_controls_is_not_taken_over(self):
        theirs = MockFacts(0).with_object(
            child_kind(),
            {
                "metadata": {
                    "name": child_name("hello"),
                    "namespace": "default",
                    "uid": "c1",
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "someone-else", "controller": True}
                    ],
                },
            },
        )
        verdict, changes = self.reconcile({"greeting": "hi"}, theirs)
        self.assertEqual(changes, [])
        self.assertEqual(verdict.aspects[1].reason, "ResourceNotOwned")

    def test_no_greeting_stalls_and_asks_for_nothing(self):
        verdict, changes = self.reconcile({})
        self.assertEqual(changes, [])
        self.assertEqual(verdict.aspects[0].reason, GREETING_MISSING)
        self.assertEqual(verdict.stall.reason, GREETING_MISSING)

    def test_a_greeting_that_is_not_text_is_named(self):
        verdict, changes = self.reconcile({"greeting": 5})
        self.assertEqual(changes, [])
        self.assertEqual(verdict.aspects[0].reason, "ConfigurationInvalid")
        self.assertEqual(verdict.aspects[0].message, "spec.greeting must be a string, not 5")
