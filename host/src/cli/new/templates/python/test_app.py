"""The guest's logic under unittest, with the SDK's mock facts: no host, no cluster, no component built."""

import unittest

import reconciler_sdk as sdk
from reconciler_sdk.mock import MockFacts, evaluation

from app import CONFIGURATION_VALID, GREETING_MISSING, reconcile


def parent(spec):
    return {
        "apiVersion": "{{group}}/{{version}}",
        "kind": "{{Kind}}",
        "metadata": {"name": "hello", "namespace": "default", "generation": 1},
        "spec": spec,
    }


def verdict_of(spec):
    """One pass over `spec`'s verdict."""
    verdict, _ = reconcile(evaluation(parent(spec)), MockFacts("2026-01-01T00:00:00Z").facts())
    return verdict


class {{Kind}}(unittest.TestCase):
    def test_a_greeting_is_valid(self):
        (c,) = verdict_of({"greeting": "hi"}).aspects
        self.assertEqual(c.type, CONFIGURATION_VALID)
        self.assertEqual(c.status, sdk.TRUE)
        self.assertEqual(c.message, 'Says "hi"')

    def test_a_greeting_that_is_not_text_is_named(self):
        verdict = verdict_of({"greeting": 5})
        self.assertEqual(verdict.aspects[0].reason, "ConfigurationInvalid")
        self.assertIn("spec.greeting", verdict.aspects[0].message)

    def test_no_greeting_stalls(self):
        verdict = verdict_of({})
        self.assertEqual(verdict.aspects[0].reason, GREETING_MISSING)
        self.assertEqual(verdict.stall.reason, GREETING_MISSING)
