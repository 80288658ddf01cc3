//! Contract 0.1.0, served by delegating to the current version: later
//! versions only add, so each 0.1 `facts` function is its current
//! namesake, and every value crosses as its same-shaped twin.

use crate::contract::v0_1::reconciler::guest0_1_0::{facts as v1, types as v1_types};

delegate_facts!(v1, v1_types:
    now, workload, secret, config_map, get, list, api_availability,
);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::contract::exports as v2_rec;
    use crate::contract::facts as v2;
    use crate::contract::v0_1::exports::reconciler::guest0_1_0::reconciler as v1_rec;
    use crate::facts::MemorySource;
    use crate::facts::known_kinds::{deployment_kind, pod_kind};

    /// Every 0.1 value the host hands a guest or takes from one converts
    /// losslessly: a round trip through the other version gives it back.
    fn round_trips<V1, V2>(value: V1)
    where
        V1: serde::Serialize + serde::de::DeserializeOwned,
        V2: serde::Serialize + serde::de::DeserializeOwned,
    {
        let before = serde_json::to_value(&value).unwrap();
        let there: V2 = convert(value);
        let back: V1 = convert(there);
        assert_eq!(serde_json::to_value(back).unwrap(), before);
    }

    #[test]
    fn the_kind_spec_and_verdict_convert_both_ways() {
        let spec = v1_rec::KindSpec {
            group: "g".into(),
            version: "v1".into(),
            kind: "K".into(),
            plural: "ks".into(),
            namespaced: true,
            profile: v1_rec::ConventionProfile::Kstatus,
            aspects: vec!["A".into()],
            advisory: vec!["B".into()],
            reasons: vec![v1_rec::ReasonEntry {
                name: "R".into(),
                owner: "k".into(),
                meaning: "m".into(),
            }],
            negative_polarity: vec!["B".into()],
            quiet_reasons: vec!["R".into()],
            stalls: vec![v1_rec::StallRule {
                reason: "R".into(),
                recheck_seconds: Some(120),
            }],
            reads: vec![v1_rec::ReadDecl {
                kind: v1_types::KindRef {
                    group: "apps".into(),
                    version: "v1".into(),
                    kind: "Deployment".into(),
                },
                optional: true,
            }],
            pause: Some(v1_rec::PauseAnnotation {
                key: "k".into(),
                value: "skip".into(),
            }),
            spec_schema: Some("{}".into()),
        };
        // A 0.1 kind spec reads in its parent's namespace only: the flag
        // 0.4.0 added is false, and nothing else changes.
        let before = serde_json::to_value(&spec).unwrap();
        let current = crate::contract::older_kind_spec(spec);
        assert!(current.reads.iter().all(|r| !r.cross_namespace));
        let back: v1_rec::KindSpec = convert(current);
        assert_eq!(serde_json::to_value(back).unwrap(), before);
        round_trips::<v1_rec::Verdict, v2_rec::Verdict>(v1_rec::Verdict {
            aspects: vec![v1_rec::Condition {
                type_: "A".into(),
                status: v1_types::ConditionStatus::Unknown,
                reason: "R".into(),
                message: "m".into(),
            }],
            advisory: vec![],
            stall: Some(v1_rec::Stall {
                reason: "R".into(),
                message: "m".into(),
            }),
            status_fields: "{\"a\":1}".into(),
            events: vec![v1_rec::KindEvent {
                type_: v1_rec::EventType::Warning,
                reason: "R".into(),
                message: "m".into(),
            }],
            requeue_after_seconds: Some(5),
        });
        round_trips::<v2_rec::Evaluation, v1_rec::Evaluation>(v2_rec::Evaluation {
            parent: v2_rec::Object {
                meta: crate::facts::meta::object_meta(&json!({"metadata": {
                    "name": "p", "namespace": "ns", "labels": {"a": "b"},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u", "controller": true}],
                    "creationTimestamp": "2026-01-01T00:00:00Z"}})),
                json: "{}".into(),
            },
            paused: true,
            settings: vec![("a".into(), "b".into())],
        });
    }

    #[test]
    fn every_workload_state_and_read_error_converts_both_ways() {
        use v1::WorkloadState as S;
        let text = || "t".to_owned();
        for state in [
            S::Ready,
            S::ReplicaFailure(text()),
            S::SecretNotFound(text()),
            S::SecretKeyMissing(text()),
            S::ConfigMapNotFound(text()),
            S::PodUnschedulable(text()),
            S::ImagePullFailed(text()),
            S::CrashLoopBackOff(text()),
            S::RolloutStuck(text()),
            S::RolloutInProgress(text()),
            S::PodNotReady(text()),
        ] {
            round_trips::<v1::WorkloadState, v2::WorkloadState>(state);
        }
        for error in [
            v1::ReadError::NotDeclared(text()),
            v1::ReadError::NotServed(text()),
            v1::ReadError::Forbidden(text()),
            v1::ReadError::Failed(text()),
        ] {
            round_trips::<v1::ReadError, v2::ReadError>(error);
        }
        for a in [
            v1::Availability::Available,
            v1::Availability::NotServed,
            v1::Availability::Forbidden,
        ] {
            round_trips::<v1::Availability, v2::Availability>(a);
        }
    }

    #[test]
    fn the_0_1_facts_serve_what_0_2_serves() {
        let mut source = MemorySource::new();
        source.insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "generation": 2},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {}},
            "status": {"observedGeneration": 1}}));
        source.insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "d-1", "namespace": "ns", "labels": {"app": "d"}},
            "status": {"phase": "Pending", "containerStatuses": [{"name": "c", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}]}}));
        let server = || {
            FactServer::new(
                Arc::new(source.clone()),
                [deployment_kind(), pod_kind()],
                jiff::Timestamp::UNIX_EPOCH,
            )
        };
        let (mut old, mut new) = (server(), server());
        let legacy = v1::Host::workload(&mut old, "ns".into(), "d".into());
        let current = v2::Host::workload(&mut new, "ns".into(), "d".into());
        assert_eq!(
            serde_json::to_value(&legacy).unwrap(),
            serde_json::to_value(&current).unwrap()
        );
        assert!(matches!(
            legacy,
            Ok(Some(v1::WorkloadFact {
                state: v1::WorkloadState::ImagePullFailed(_),
                ..
            }))
        ));
        assert_eq!(old.into_reads(), new.into_reads());
        let refused = v1::Host::config_map(&mut server(), "ns".into(), "c".into());
        assert!(matches!(refused, Err(v1::ReadError::NotDeclared(_))));
    }
}
