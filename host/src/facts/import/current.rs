//! The `facts` import of the current contract (0.6.0), served by the recording
//! reader ([`FactServer`]): each call checks the allow-list, reads through
//! the reader (which records the read) and answers in the contract's types.

use reconciler_conventions::kind::KindRef;
use serde_json::Value;

use crate::contract::facts::{
    self as wit, CertificateBundleFact, ConfigMapFact, EgressPolicyFact, ExposureFact,
    ExposureKind, JobFact, NetworkPolicyFact, NodePodCidrsFact, ReadError, SecretFact,
    WorkloadFact,
};
use crate::contract::types::{self as wit_types, Object, Timestamp};
use crate::facts::certificates::bundle;
use crate::facts::exposure::{exposure_fact, exposure_kind_ref};
use crate::facts::known_kinds::{
    cluster_role_kind, config_map_kind, network_policy_kind, node_kind, secret_kind,
};
use crate::facts::meta::{from_jiff, object_meta, object_meta_of};
use crate::facts::network_policy::{egress_policy_fact, network_policy_fact};
use crate::facts::nodes::{MAX_NODES, from_nodes, node_cidrs, too_many};
use crate::facts::{ApplyOutcome, Availability, Cached, ChangeState, FactServer, Hold, Selector};

/// The contract's `Object` of a cached object of `kind`: metadata, and its
/// JSON text as the guest is served it (only the fields its read declares,
/// where it declares them).
fn object_of(facts: &FactServer, kind: &KindRef, cached: &Cached) -> Object {
    // What is served keeps the metadata whole, projected or not.
    let json = facts.served_text(kind, cached);
    Object {
        meta: object_meta_of(&json),
        json,
    }
}

fn key_names(object: &Value, fields: &[&str]) -> Vec<String> {
    let mut keys: Vec<String> = fields
        .iter()
        .filter_map(|f| object[*f].as_object())
        .flat_map(|m| m.keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn to_model(kind: &wit_types::KindRef) -> KindRef {
    KindRef {
        group: kind.group.clone(),
        version: kind.version.clone(),
        kind: kind.kind.clone(),
    }
}

impl wit_types::Host for FactServer {}

impl wit::Host for FactServer {
    fn now(&mut self) -> Timestamp {
        from_jiff(self.clock())
    }

    fn workload(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<WorkloadFact>, ReadError> {
        self.read_workload(namespace, name)
    }

    fn secret(&mut self, namespace: String, name: String) -> Result<Option<SecretFact>, ReadError> {
        let kind = secret_kind();
        self.allow(&kind, "facts.secret")?;
        Ok(self.read_object(&kind, &namespace, &name)?.map(|s| {
            let s = s.value();
            SecretFact {
                meta: object_meta(&s),
                type_: s["type"].as_str().unwrap_or("Opaque").to_owned(),
                keys: key_names(&s, &["data", "stringData"]),
            }
        }))
    }

    fn config_map(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<ConfigMapFact>, ReadError> {
        let kind = config_map_kind();
        self.allow(&kind, "facts.config-map")?;
        Ok(self.read_object(&kind, &namespace, &name)?.map(|c| {
            let c = c.value();
            ConfigMapFact {
                meta: object_meta(&c),
                keys: key_names(&c, &["data", "binaryData"]),
            }
        }))
    }

    fn get(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
        name: String,
    ) -> Result<Option<Object>, ReadError> {
        let kind = to_model(&kind);
        refuse_secret_data(&kind)?;
        self.allow(&kind, "facts.get")?;
        Ok(self
            .read_object(&kind, &namespace, &name)?
            .map(|o| object_of(self, &kind, &o)))
    }

    fn list(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
        selector: Vec<(String, String)>,
    ) -> Result<Vec<Object>, ReadError> {
        let kind = to_model(&kind);
        refuse_secret_data(&kind)?;
        self.allow(&kind, "facts.list")?;
        let selector = Selector::from_pairs(selector.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Ok(self
            .read_list(&kind, &namespace, selector)?
            .iter()
            .map(|o| object_of(self, &kind, o))
            .collect())
    }

    fn api_availability(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
    ) -> wit::Availability {
        match self.read_availability(to_model(&kind), namespace) {
            Availability::Available => wit::Availability::Available,
            Availability::NotServed => wit::Availability::NotServed,
            Availability::Forbidden => wit::Availability::Forbidden,
        }
    }

    fn network_policies(&mut self, namespace: String) -> Result<Vec<NetworkPolicyFact>, ReadError> {
        let kind = network_policy_kind();
        self.allow(&kind, "facts.network-policies")?;
        let mut policies: Vec<NetworkPolicyFact> = self
            .read_list(&kind, &namespace, Selector::default())?
            .iter()
            .map(|p| network_policy_fact(&p.value()))
            .collect();
        policies.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        Ok(policies)
    }

    /// No error channel: an undeclared Node, a refused or unserved list all
    /// answer `forbidden`, the text saying which.
    fn node_pod_cidrs(&mut self) -> NodePodCidrsFact {
        let kind = node_kind();
        if self.allow(&kind, "facts.node-pod-cidrs").is_err() {
            return NodePodCidrsFact::Forbidden(
                "the guest did not declare core v1 Node in its kind-spec.reads, which facts.node-pod-cidrs needs".to_owned(),
            );
        }
        match self.read_list(&kind, "", Selector::default()) {
            Ok(nodes) if nodes.len() > MAX_NODES => too_many(nodes.len()),
            Ok(nodes) => from_nodes(nodes.iter().map(|n| node_cidrs(&n.value())).collect()),
            Err(ReadError::Forbidden(_)) => NodePodCidrsFact::Forbidden(
                "the host may not list nodes: grant list and watch on nodes (cluster-scoped)"
                    .to_owned(),
            ),
            Err(
                ReadError::NotServed(text) | ReadError::Failed(text) | ReadError::NotDeclared(text),
            ) => NodePodCidrsFact::Forbidden(text),
        }
    }

    fn exposure(
        &mut self,
        kind: ExposureKind,
        namespace: String,
        name: String,
    ) -> Result<Option<ExposureFact>, ReadError> {
        let api = exposure_kind_ref(kind);
        self.allow(&api, "facts.exposure")?;
        Ok(self
            .read_object(&api, &namespace, &name)?
            .map(|o| exposure_fact(kind, &o.value())))
    }

    fn cluster_role(&mut self, name: String) -> Result<Option<wit_types::ObjectMeta>, ReadError> {
        let kind = cluster_role_kind();
        self.allow(&kind, "facts.cluster-role")?;
        Ok(self
            .read_object(&kind, "", &name)?
            .map(|r| object_meta_of(&r.text())))
    }

    fn secret_certificates(
        &mut self,
        namespace: String,
        name: String,
        key: String,
    ) -> Result<Option<CertificateBundleFact>, ReadError> {
        let kind = secret_kind();
        self.allow(&kind, "facts.secret-certificates")?;
        Ok(self
            .read_object(&kind, &namespace, &name)?
            .map(|s| bundle(&s.value(), &key)))
    }

    /// Recorded as a read of the child: a change to it re-queues the parent.
    fn last_apply(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<wit::ApplyOutcome> {
        self.read_last_apply(to_model(&kind), namespace, name)
            .map(|o| match o {
                ApplyOutcome::Applied => wit::ApplyOutcome::Applied,
                ApplyOutcome::Refused {
                    code,
                    reason,
                    message,
                } => wit::ApplyOutcome::Refused(wit::ApplyRefusal {
                    code,
                    reason,
                    message,
                }),
            })
    }

    /// Since 0.5.0: what became of the change asked for a child, recorded
    /// as a read of the child and with its answer (the pass evaluates
    /// again when its changes answer otherwise).
    fn change_state(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<wit::ChangeOutcome> {
        self.read_change_state(to_model(&kind), namespace, name)
            .map(|state| match state {
                ChangeState::Made => wit::ChangeOutcome::Made,
                ChangeState::Held(hold) => wit::ChangeOutcome::Held(match hold {
                    Hold::Observe => wit::Hold::Observe,
                    Hold::AwaitingApproval => wit::Hold::AwaitingApproval,
                    Hold::Denied => wit::Hold::Denied,
                    Hold::PassFailed => wit::Hold::PassFailed,
                }),
                ChangeState::Refused {
                    code,
                    reason,
                    message,
                } => wit::ChangeOutcome::Refused(wit::ApplyRefusal {
                    code,
                    reason,
                    message,
                }),
                ChangeState::Withdrawn => wit::ChangeOutcome::Withdrawn,
            })
    }

    /// Since 0.3.0: when the host's last apply of a child was answered.
    fn last_apply_time(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<Timestamp> {
        self.read_last_apply_time(to_model(&kind), namespace, name)
            .map(from_jiff)
    }

    /// Since 0.3.0: what the parent controls of a kind it writes.
    fn children(&mut self, kind: wit_types::KindRef) -> Result<Vec<Object>, ReadError> {
        let kind = to_model(&kind);
        refuse_secret_data(&kind)?;
        Ok(self
            .read_children(&kind)?
            .iter()
            .map(|c| object_of(self, &kind, c))
            .collect())
    }

    /// Since 0.4.0: a Job with its conditions and its latest Pod failure.
    fn job(&mut self, namespace: String, name: String) -> Result<Option<JobFact>, ReadError> {
        self.read_job(namespace, name)
    }

    /// Since 0.4.0: the egress side of the namespace's NetworkPolicies.
    fn egress_policies(&mut self, namespace: String) -> Result<Vec<EgressPolicyFact>, ReadError> {
        let kind = network_policy_kind();
        self.allow(&kind, "facts.egress-policies")?;
        let mut policies: Vec<EgressPolicyFact> = self
            .read_list(&kind, &namespace, Selector::default())?
            .iter()
            .map(|p| egress_policy_fact(&p.value()))
            .collect();
        policies.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        Ok(policies)
    }
}

/// A Secret's data never reaches a guest: only `facts.secret` serves
/// Secrets, as key names.
fn refuse_secret_data(kind: &KindRef) -> Result<(), ReadError> {
    if *kind == secret_kind() {
        return Err(ReadError::Forbidden(
            "Secrets are served only as key names, through facts.secret".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::contract::facts::Host as _;
    use crate::facts::MemorySource;
    use crate::facts::ObjectSource;
    use crate::facts::known_kinds::{core_kind, deployment_kind, pod_kind};
    use serde_json::json;

    fn server(source: MemorySource, declared: Vec<KindRef>) -> FactServer {
        FactServer::new(Arc::new(source), declared, jiff::Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn a_guest_reads_only_its_parents_namespace() {
        let mut source = MemorySource::new();
        for ns in ["mine", "theirs"] {
            source.insert(json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "s", "namespace": ns}}));
        }
        let service = core_kind("", "Service");
        let kind = wit_types::KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "Service".into(),
        };
        let mut facts = server(source, vec![service])
            .for_parent(&json!({"metadata": {"name": "p", "namespace": "mine", "uid": "u"}}));
        assert!(
            facts
                .get(kind.clone(), "mine".into(), "s".into())
                .unwrap()
                .is_some()
        );
        match facts.get(kind.clone(), "theirs".into(), "s".into()) {
            Err(ReadError::Forbidden(m)) => assert!(
                m.contains("namespace \"theirs\"") && m.contains("parent's namespace \"mine\""),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        // Listing every namespace shows the parent's only.
        let all = facts.list(kind, String::new(), Vec::new()).unwrap();
        let namespaces: Vec<String> = all.iter().map(|o| o.meta.namespace.clone()).collect();
        assert_eq!(namespaces, ["mine"]);
    }

    #[test]
    fn a_kind_declared_cross_namespace_is_read_as_each_namespace_answers() {
        let mut source = MemorySource::new();
        for ns in ["mine", "theirs", "unwatched", "refused"] {
            for kind in ["Service", "ConfigMap"] {
                source.insert(json!({"apiVersion": "v1", "kind": kind,
                    "metadata": {"name": "s", "namespace": ns, "labels": {"app": "s"}}}));
            }
        }
        let (service, config_map) = (core_kind("", "Service"), core_kind("", "ConfigMap"));
        source.leave_out("unwatched");
        source.set_availability(
            service.clone(),
            "refused",
            crate::facts::Availability::Forbidden,
        );
        let wit = |kind: &str| wit_types::KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: kind.into(),
        };
        let mut facts = FactServer::new(
            Arc::new(source),
            vec![service.clone(), config_map],
            jiff::Timestamp::UNIX_EPOCH,
        )
        .with_optional(Arc::new([service.clone()].into()))
        .with_cross_namespace(Arc::new([service].into()))
        .for_parent(&json!({"metadata": {"name": "p", "namespace": "mine", "uid": "u"}}));
        let got = facts.get(wit("Service"), "theirs".into(), "s".into());
        assert_eq!(got.unwrap().unwrap().meta.namespace, "theirs");
        let listed = facts
            .list(
                wit("Service"),
                "theirs".into(),
                vec![("app".into(), "s".into())],
            )
            .unwrap();
        assert_eq!(listed.len(), 1);
        // Another kind stays in the parent's namespace.
        let other = facts.get(wit("ConfigMap"), "theirs".into(), "s".into());
        assert!(matches!(other, Err(ReadError::Forbidden(_))), "{other:?}");
        // A namespace the host does not watch, or where it may not read
        // the kind, is refused, naming that namespace and no other, and
        // the pass goes on: the guest's answer is its own.
        for ns in ["unwatched", "refused"] {
            match facts.list(wit("Service"), ns.into(), Vec::new()) {
                Err(ReadError::Forbidden(m)) => {
                    assert!(m.contains(&format!("{ns:?}")) && !m.contains("mine"), "{m}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(facts.take_failed_read(), None);
        // Listing every namespace still shows the parent's only.
        let all = facts
            .list(wit("Service"), String::new(), Vec::new())
            .unwrap();
        let namespaces: Vec<String> = all.iter().map(|o| o.meta.namespace.clone()).collect();
        assert_eq!(namespaces, ["mine"]);
        // Each read in the other namespace is recorded there: its change
        // passes the parent again.
        let reads: Vec<String> = facts.into_reads().iter().map(ToString::to_string).collect();
        assert_eq!(
            reads,
            [
                "Service theirs/s",
                "Service in \"\" matching {}",
                "Service in \"refused\" matching {}",
                "Service in \"theirs\" matching {app=s}",
            ]
        );
    }

    #[test]
    fn a_workload_read_twice_is_derived_once_and_recorded_once() {
        let mut source = MemorySource::new();
        source.insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {}},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}}));
        source.insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "d-1", "namespace": "ns", "labels": {"app": "d"}}}));
        let mut facts = server(source, vec![deployment_kind(), pod_kind()]);
        let first = facts.workload("ns".into(), "d".into()).unwrap().unwrap();
        let second = facts.workload("ns".into(), "d".into()).unwrap().unwrap();
        assert_eq!(format!("{first:?}"), format!("{second:?}"));
        assert_eq!(first.pods.len(), 1);
        let reads: Vec<String> = facts.into_reads().iter().map(ToString::to_string).collect();
        assert_eq!(reads, ["Deployment ns/d", "Pod in \"ns\" matching {app=d}"]);
    }

    #[test]
    fn a_later_pass_derives_the_same_facts_and_keeps_none_beside_the_objects() {
        let mut source = MemorySource::new();
        source.insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {}},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}}));
        source.insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "d-1", "namespace": "ns", "labels": {"app": "d"}}}));
        source.insert(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}));
        let service = core_kind("", "Service");
        let source = Arc::new(source);
        let declared = vec![deployment_kind(), pod_kind(), service.clone()];
        let wit_service = wit_types::KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "Service".into(),
        };
        let pass = || {
            let mut facts = FactServer::new(
                source.clone(),
                declared.clone(),
                jiff::Timestamp::UNIX_EPOCH,
            );
            let w = facts.workload("ns".into(), "d".into()).unwrap().unwrap();
            let s = facts
                .get(wit_service.clone(), "ns".into(), "s".into())
                .unwrap()
                .unwrap();
            (format!("{w:?}"), s.json, reads(facts))
        };
        let first = pass();
        let memoised =
            |kind: &KindRef, name: &str| source.get(kind, "ns", name).unwrap().unwrap().memoised();
        assert_eq!(
            (
                memoised(&deployment_kind(), "d"),
                memoised(&pod_kind(), "d-1"),
                memoised(&service, "s")
            ),
            (0, 0, 0),
            "a pass's facts are not kept beside the objects it read"
        );
        assert_eq!(
            pass(),
            first,
            "a later pass derives the same facts and records the same reads"
        );
        assert!(first.1.contains(r#""port":80"#));
    }

    #[test]
    fn an_undeclared_kind_and_secret_data_are_refused() {
        let mut facts = server(MemorySource::new(), vec![secret_kind()]);
        let kind = crate::contract::types::KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "Secret".into(),
        };
        assert!(matches!(
            facts.get(kind, "ns".into(), "s".into()),
            Err(ReadError::Forbidden(_))
        ));
        assert!(matches!(
            facts.config_map("ns".into(), "c".into()),
            Err(ReadError::NotDeclared(_))
        ));
        assert!(
            facts.into_reads().is_empty(),
            "a refused read is no dependency"
        );
    }

    fn reads(facts: FactServer) -> Vec<String> {
        facts.into_reads().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn an_availability_answer_is_recorded_as_a_read_of_the_kind() {
        let store = wit_types::KindRef {
            group: "barmancloud.cnpg.io".into(),
            version: "v1".into(),
            kind: "ObjectStore".into(),
        };
        let mut source = MemorySource::new();
        source.set_availability(to_model(&store), "ns", Availability::NotServed);
        let mut facts = server(source, vec![to_model(&store)]);
        assert!(matches!(
            facts.api_availability(store, "ns".into()),
            wit::Availability::NotServed
        ));
        assert_eq!(
            reads(facts),
            ["availability of ObjectStore in \"ns\""],
            "the answer changes when the kind is served again"
        );
    }

    #[test]
    fn network_policies_are_typed_sorted_and_recorded_as_a_list() {
        let mut source = MemorySource::new();
        for name in ["b", "a"] {
            source.insert(json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": name, "namespace": "ns"}, "spec": {"policyTypes": ["Egress"]}}));
        }
        source.insert(
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "c", "namespace": "other"}, "spec": {}}),
        );
        let mut facts = server(source, vec![network_policy_kind()]);
        let got = facts.network_policies("ns".into()).unwrap();
        let names: Vec<&str> = got.iter().map(|p| p.meta.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(!got[0].isolates_ingress);
        assert_eq!(reads(facts), ["NetworkPolicy in \"ns\" matching {}"]);
        let mut undeclared = server(MemorySource::new(), vec![]);
        assert!(matches!(
            undeclared.network_policies("ns".into()),
            Err(ReadError::NotDeclared(_))
        ));
    }

    #[test]
    fn node_pod_cidrs_answers_forbidden_when_undeclared_refused_or_not_served() {
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"podCIDR": "10.0.0.0/24"}});
        let mut source = MemorySource::new();
        source.insert(node);
        let mut facts = server(source.clone(), vec![node_kind()]);
        assert!(
            matches!(facts.node_pod_cidrs(), NodePodCidrsFact::Known(n) if n[0].pod_cidrs == ["10.0.0.0/24"])
        );
        assert_eq!(reads(facts), ["Node in \"\" matching {}"]);

        let mut undeclared = server(source.clone(), vec![]);
        assert!(
            matches!(undeclared.node_pod_cidrs(), NodePodCidrsFact::Forbidden(t) if t.contains("did not declare core v1 Node"))
        );
        assert!(reads(undeclared).is_empty());

        let mut refused = source.clone();
        refused.set_availability(node_kind(), "", Availability::Forbidden);
        let mut facts = server(refused, vec![node_kind()]);
        assert!(
            matches!(facts.node_pod_cidrs(), NodePodCidrsFact::Forbidden(t) if t.contains("list nodes"))
        );

        let mut gone = source;
        gone.set_availability(node_kind(), "", Availability::NotServed);
        let mut facts = server(gone, vec![node_kind()]);
        assert!(
            matches!(facts.node_pod_cidrs(), NodePodCidrsFact::Forbidden(t) if t.contains("not served"))
        );
    }

    #[test]
    fn exposure_reads_the_kind_it_names_where_available() {
        let route = exposure_kind_ref(ExposureKind::Route);
        let mut source = MemorySource::new();
        source.insert(
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "i", "namespace": "ns"},
            "spec": {"rules": [{"host": "a.example.com"}]},
            "status": {"loadBalancer": {"ingress": [{"hostname": "lb"}]}}}),
        );
        source.set_availability(route.clone(), "", Availability::NotServed);
        let ingress = exposure_kind_ref(ExposureKind::Ingress);
        let mut facts = server(source, vec![ingress, route]);
        let got = facts
            .exposure(ExposureKind::Ingress, "ns".into(), "i".into())
            .unwrap()
            .unwrap();
        assert!(matches!(got.admission, wit::Admission::Admitted));
        assert!(matches!(
            facts.exposure(ExposureKind::Route, "ns".into(), "r".into()),
            Err(ReadError::NotServed(_))
        ));
        assert!(matches!(
            facts.exposure(ExposureKind::HttpRoute, "ns".into(), "h".into()),
            Err(ReadError::NotDeclared(_))
        ));
        assert_eq!(reads(facts), ["Ingress ns/i", "Route ns/r"]);
    }

    /// Seed 000: an error ends in Ready=False (ReconcileError); only an
    /// optional kind not served or refused is the guest's to report.
    #[test]
    fn a_failed_read_fails_the_pass_unless_an_optional_kind_is_refused() {
        let route = exposure_kind_ref(ExposureKind::Route);
        let ingress = exposure_kind_ref(ExposureKind::Ingress);
        let mut source = MemorySource::new();
        source.set_availability(route.clone(), "", Availability::Forbidden);
        source.set_availability(ingress.clone(), "", Availability::Forbidden);
        let mut facts = server(source, vec![ingress, route.clone()])
            .with_optional(Arc::new(std::iter::once(route).collect()));
        assert!(matches!(
            facts.exposure(ExposureKind::Route, "ns".into(), "r".into()),
            Err(ReadError::Forbidden(_))
        ));
        assert!(facts.take_failed_read().is_none(), "the guest's reason");
        assert!(matches!(
            facts.exposure(ExposureKind::Ingress, "ns".into(), "i".into()),
            Err(ReadError::Forbidden(_))
        ));
        assert!(matches!(
            facts.take_failed_read(),
            Some(crate::facts::source::SourceError::Forbidden { .. })
        ));
    }

    #[test]
    fn cluster_roles_secret_certificates_and_last_applies() {
        use base64::Engine as _;
        let pem = crate::facts::certificates::tests::TWO;
        let mut source = MemorySource::new();
        source.insert(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "view", "labels": {"a": "b"}}, "rules": []}),
        );
        source.insert(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls", "namespace": "ns"},
            "data": {"tls.crt": base64::engine::general_purpose::STANDARD.encode(pem)}}));
        let deployment = deployment_kind();
        source.set_last_apply(
            deployment.clone(),
            "ns",
            "d",
            ApplyOutcome::Refused {
                code: 403,
                reason: "Forbidden".into(),
                message: "quota".into(),
            },
        );
        let mut facts = server(source, vec![cluster_role_kind(), secret_kind()]);
        let role = facts.cluster_role("view".into()).unwrap().unwrap();
        assert_eq!((role.name.as_str(), role.namespace.as_str()), ("view", ""));
        assert!(facts.cluster_role("edit".into()).unwrap().is_none());
        let bundle = facts
            .secret_certificates("ns".into(), "tls".into(), "tls.crt".into())
            .unwrap()
            .unwrap();
        assert!(bundle.has_key);
        assert_eq!(bundle.certificates.len(), 2);
        let kind = wit_types::KindRef {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
        };
        assert!(matches!(
            facts.last_apply(kind.clone(), "ns".into(), "d".into()),
            Some(wit::ApplyOutcome::Refused(r)) if r.code == 403 && r.reason == "Forbidden"
        ));
        assert!(facts.last_apply(kind, "ns".into(), "e".into()).is_none());
        assert_eq!(
            reads(facts),
            [
                "Secret ns/tls",
                "Deployment ns/d",
                "Deployment ns/e",
                "ClusterRole /edit",
                "ClusterRole /view"
            ]
        );
        let mut undeclared = server(MemorySource::new(), vec![]);
        assert!(matches!(
            undeclared.cluster_role("view".into()),
            Err(ReadError::NotDeclared(_))
        ));
        assert!(matches!(
            undeclared.secret_certificates("ns".into(), "tls".into(), "tls.crt".into()),
            Err(ReadError::NotDeclared(_))
        ));
    }

    /// A Deployment whose Pods are `pods`, read through `facts.workload`.
    fn workload_with(
        deployment: Value,
        pods: Vec<Value>,
    ) -> Result<Option<WorkloadFact>, ReadError> {
        let mut source = MemorySource::new();
        source.insert(deployment);
        for p in pods {
            source.insert(p);
        }
        let mut facts = server(source, vec![deployment_kind(), pod_kind()]);
        facts.workload("ns".into(), "d".into())
    }

    fn deployment(spec: Value, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "generation": 1},
            "spec": spec, "status": status})
    }

    fn pod(status: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "d-1", "namespace": "ns", "labels": {"app": "d"}},
            "spec": {"containers": [{"name": "a", "image": "i"}]}, "status": status})
    }

    /// Deployments and Pods are read as their built-in types: one of the
    /// wrong shape is no guess but a read error naming the object, the
    /// field and what is wrong with it (the API server validates these
    /// kinds, so only a fixture can hold one).
    #[test]
    fn a_malformed_deployment_or_pod_is_an_error_naming_the_field() {
        let spec = json!({"replicas": 1, "selector": {"matchLabels": {"app": "d"}}});
        let failed = |got: Result<Option<WorkloadFact>, ReadError>| match got {
            Err(ReadError::Failed(text)) => text,
            other => panic!("{other:?}"),
        };
        for (name, dep, pods, want) in [
            (
                "containerStatuses is a string",
                deployment(spec.clone(), json!({})),
                vec![pod(json!({"containerStatuses": "x"}))],
                "Pod ns/d-1 is malformed at status.containerStatuses: invalid type: string \"x\", expected a sequence",
            ),
            (
                "an array of nulls where statuses belong",
                deployment(spec.clone(), json!({})),
                vec![pod(json!({"containerStatuses": [null]}))],
                "Pod ns/d-1 is malformed at status.containerStatuses[0]: invalid type: null, expected ContainerStatus",
            ),
            (
                "a restart count beyond i32",
                deployment(spec.clone(), json!({})),
                vec![pod(
                    json!({"containerStatuses": [{"name": "a", "restartCount": 1u64 << 63}]}),
                )],
                "Pod ns/d-1 is malformed at status.containerStatuses[0].restartCount: invalid value: integer `9223372036854775808`, expected i32",
            ),
            (
                "replicas as 2^63",
                deployment(json!({"replicas": 1u64 << 63}), json!({})),
                vec![],
                "Deployment ns/d is malformed at spec.replicas: invalid value: integer `9223372036854775808`, expected i32",
            ),
            (
                "a count as a string (the negative one beside it is no error)",
                deployment(
                    spec.clone(),
                    json!({"readyReplicas": -1, "replicas": "two"}),
                ),
                vec![],
                "Deployment ns/d is malformed at status.replicas: invalid type: string \"two\", expected i32",
            ),
            (
                "two malformed fields: the path stops where both are",
                deployment(
                    spec.clone(),
                    json!({"replicas": "two", "readyReplicas": "one"}),
                ),
                vec![],
                "Deployment ns/d is malformed at status: invalid type: string",
            ),
            (
                "a container deep in the template",
                deployment(
                    json!({"template": {"spec": {"containers": [{"name": "a", "ports": {"containerPort": 80}}]}}}),
                    json!({}),
                ),
                vec![],
                "Deployment ns/d is malformed at spec.template.spec.containers[0].ports: invalid type: map",
            ),
        ] {
            let got = failed(workload_with(dep, pods));
            assert!(got.starts_with(want), "{name}: {got}");
        }
    }

    #[test]
    fn a_negative_count_reads_as_zero() {
        let got = workload_with(
            deployment(
                json!({"replicas": -3, "selector": {"matchLabels": {"app": "d"}}}),
                json!({"readyReplicas": -1, "replicas": i32::MIN}),
            ),
            vec![pod(
                json!({"containerStatuses": [{"name": "a", "restartCount": -5}]}),
            )],
        )
        .unwrap()
        .unwrap();
        assert_eq!((got.desired_replicas, got.ready_replicas), (0, 0));
        assert_eq!(got.pods[0].restart_count, 0);
    }
}
