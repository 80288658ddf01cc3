//! Exposure facts: a Route, Ingress or HTTPRoute, its host names and how its controller answered it (pure, table-tested).

use reconciler_conventions::kind::KindRef;
use serde_json::Value;

use super::meta::object_meta;
use crate::contract::facts::{Admission, ExposureFact, ExposureKind};

/// The API of an exposure kind.
pub fn exposure_kind_ref(kind: ExposureKind) -> KindRef {
    let (group, kind) = match kind {
        ExposureKind::Route => ("route.openshift.io", "Route"),
        ExposureKind::Ingress => ("networking.k8s.io", "Ingress"),
        ExposureKind::HttpRoute => ("gateway.networking.k8s.io", "HTTPRoute"),
    };
    KindRef {
        group: group.to_owned(),
        version: "v1".to_owned(),
        kind: kind.to_owned(),
    }
}

/// The exposure fact of an object of `kind`:
/// - Route: admitted when an `status.ingress[]` has Admitted=True, refused
///   when one has Admitted=False and none True; host names: `spec.host`.
/// - Ingress: admitted when `status.loadBalancer.ingress` has an address;
///   host names: `spec.rules[].host`.
/// - HTTPRoute: admitted when a `status.parents[]` has Accepted=True,
///   refused when one has Accepted=False and none True; host names:
///   `spec.hostnames`.
///
/// Anything else is pending. These kinds come from CRDs whose schemas may
/// be permissive, so a field of the wrong type reads as absent, never as an
/// error: a `status.ingress`/`parents` or `conditions` that is not a list
/// (or holds nulls), a condition `status` that is not the string "True" or
/// "False" (`true` is no answer), `loadBalancer.ingress` that is not a
/// non-empty list all leave the exposure pending; a host name that is not a
/// string is left out; a refusal's reason or message that is not a string
/// reads as "".
pub fn exposure_fact(kind: ExposureKind, object: &Value) -> ExposureFact {
    let spec = &object["spec"];
    let status = &object["status"];
    let (hostnames, admission) = match kind {
        ExposureKind::Route => (
            spec["host"]
                .as_str()
                .filter(|h| !h.is_empty())
                .map(|h| vec![h.to_owned()])
                .unwrap_or_default(),
            answered(&status["ingress"], "Admitted"),
        ),
        ExposureKind::Ingress => {
            let addressed = status["loadBalancer"]["ingress"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
            (
                items(&spec["rules"])
                    .filter_map(|r| r["host"].as_str().map(str::to_owned))
                    .collect(),
                if addressed {
                    Admission::Admitted
                } else {
                    Admission::Pending
                },
            )
        }
        ExposureKind::HttpRoute => (
            items(&spec["hostnames"])
                .filter_map(|h| h.as_str().map(str::to_owned))
                .collect(),
            answered(&status["parents"], "Accepted"),
        ),
    };
    ExposureFact {
        meta: object_meta(object),
        kind,
        hostnames,
        admission,
    }
}

fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list.as_array().into_iter().flatten()
}

/// Admitted when any answer has `condition` True; refused (the first
/// False's reason and message) when one has it False and none True.
fn answered(answers: &Value, condition: &str) -> Admission {
    let conditions: Vec<&Value> = items(answers)
        .flat_map(|a| items(&a["conditions"]))
        .filter(|c| c["type"] == condition)
        .collect();
    if conditions.iter().any(|c| c["status"] == "True") {
        return Admission::Admitted;
    }
    match conditions.iter().find(|c| c["status"] == "False") {
        Some(c) => {
            let text = |f: &str| c[f].as_str().unwrap_or_default().to_owned();
            let (reason, message) = (text("reason"), text("message"));
            Admission::Refused(match (reason.is_empty(), message.is_empty()) {
                (false, false) => format!("{reason}: {message}"),
                (false, true) => reason,
                (true, _) => message,
            })
        }
        None => Admission::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn admission(a: &Admission) -> String {
        match a {
            Admission::Admitted => "admitted".to_owned(),
            Admission::Refused(t) => format!("refused {t}"),
            Admission::Pending => "pending".to_owned(),
        }
    }

    fn cond(type_: &str, status: &str) -> Value {
        json!({"type": type_, "status": status, "reason": "HostAlreadyClaimed", "message": "taken"})
    }

    #[test]
    fn admission_table() {
        let route = |ingress: Value| json!({"spec": {"host": "a.example.com"}, "status": {"ingress": ingress}});
        let http = |parents: Value| json!({"spec": {"hostnames": ["a.example.com"]}, "status": {"parents": parents}});
        let ingress = |lb: Value| json!({"spec": {"rules": [{"host": "a.example.com"}, {}]}, "status": {"loadBalancer": lb}});
        for (name, kind, object, want) in [
            (
                "route, no status",
                ExposureKind::Route,
                json!({"spec": {"host": "a"}}),
                "pending",
            ),
            (
                "route admitted",
                ExposureKind::Route,
                route(json!([{"conditions": [cond("Admitted", "True")]}])),
                "admitted",
            ),
            (
                "route refused",
                ExposureKind::Route,
                route(json!([{"conditions": [cond("Admitted", "False")]}])),
                "refused HostAlreadyClaimed: taken",
            ),
            (
                "route admitted by one router, refused by another",
                ExposureKind::Route,
                route(
                    json!([{"conditions": [cond("Admitted", "False")]}, {"conditions": [cond("Admitted", "True")]}]),
                ),
                "admitted",
            ),
            (
                "route unknown",
                ExposureKind::Route,
                route(json!([{"conditions": [cond("Admitted", "Unknown")]}])),
                "pending",
            ),
            (
                "ingress without address",
                ExposureKind::Ingress,
                ingress(json!({})),
                "pending",
            ),
            (
                "ingress with empty list",
                ExposureKind::Ingress,
                ingress(json!({"ingress": []})),
                "pending",
            ),
            (
                "ingress with address",
                ExposureKind::Ingress,
                ingress(json!({"ingress": [{"ip": "192.0.2.1"}]})),
                "admitted",
            ),
            (
                "httproute, no parents",
                ExposureKind::HttpRoute,
                http(json!([])),
                "pending",
            ),
            (
                "httproute accepted",
                ExposureKind::HttpRoute,
                http(
                    json!([{"conditions": [cond("ResolvedRefs", "False"), cond("Accepted", "True")]}]),
                ),
                "admitted",
            ),
            (
                "httproute refused",
                ExposureKind::HttpRoute,
                http(
                    json!([{"conditions": [{"type": "Accepted", "status": "False", "reason": "NotAllowedByListeners", "message": ""}]}]),
                ),
                "refused NotAllowedByListeners",
            ),
            (
                "httproute: another condition False is no refusal",
                ExposureKind::HttpRoute,
                http(json!([{"conditions": [cond("ResolvedRefs", "False")]}])),
                "pending",
            ),
        ] {
            let got = exposure_fact(kind, &object);
            assert_eq!(admission(&got.admission), want, "{name}");
            assert_eq!(got.kind, kind);
        }
    }

    #[test]
    fn hostnames_as_written() {
        let route = exposure_fact(
            ExposureKind::Route,
            &json!({"spec": {"host": "r.example.com"}}),
        );
        assert_eq!(route.hostnames, ["r.example.com"]);
        let bare = exposure_fact(ExposureKind::Route, &json!({"spec": {}}));
        assert!(bare.hostnames.is_empty());
        let ingress = exposure_fact(
            ExposureKind::Ingress,
            &json!({"spec": {"rules": [{"host": "a.example.com"}, {"http": {}}, {"host": "b.example.com"}]}}),
        );
        assert_eq!(ingress.hostnames, ["a.example.com", "b.example.com"]);
        let http = exposure_fact(
            ExposureKind::HttpRoute,
            &json!({"metadata": {"name": "h", "namespace": "ns"}, "spec": {"hostnames": ["*.example.com"]}}),
        );
        assert_eq!(http.hostnames, ["*.example.com"]);
        assert_eq!(http.meta.name, "h");
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let route = |status: Value| json!({"spec": {"host": "a"}, "status": status});
        let http = |status: Value| json!({"spec": {"hostnames": ["a"]}, "status": status});
        for (name, kind, object, want) in [
            (
                "route conditions as an object",
                ExposureKind::Route,
                route(json!({"ingress": [{"conditions": {"type": "Admitted", "status": "True"}}]})),
                "pending",
            ),
            (
                "route ingress as a string",
                ExposureKind::Route,
                route(json!({"ingress": "yes"})),
                "pending",
            ),
            (
                "route status as a list",
                ExposureKind::Route,
                route(json!([1, 2])),
                "pending",
            ),
            (
                "route ingress of nulls",
                ExposureKind::Route,
                route(json!({"ingress": [null, {"conditions": [null, 3]}]})),
                "pending",
            ),
            (
                "a boolean status is no answer",
                ExposureKind::Route,
                route(json!({"ingress": [{"conditions": [{"type": "Admitted", "status": true}]}]})),
                "pending",
            ),
            (
                "a refusal whose reason and message are not strings",
                ExposureKind::Route,
                route(
                    json!({"ingress": [{"conditions": [{"type": "Admitted", "status": "False", "reason": 1, "message": {}}]}]}),
                ),
                "refused ",
            ),
            (
                "httproute parents as an object",
                ExposureKind::HttpRoute,
                http(json!({"parents": {"conditions": [{"type": "Accepted", "status": "True"}]}})),
                "pending",
            ),
            (
                "ingress loadBalancer.ingress as an object",
                ExposureKind::Ingress,
                json!({"status": {"loadBalancer": {"ingress": {"ip": "192.0.2.1"}}}}),
                "pending",
            ),
            (
                "ingress status as a string",
                ExposureKind::Ingress,
                json!({"status": "ok"}),
                "pending",
            ),
            (
                "not an object at all",
                ExposureKind::Route,
                json!("route"),
                "pending",
            ),
        ] {
            let got = exposure_fact(kind, &object);
            assert_eq!(admission(&got.admission), want, "{name}");
        }
        for (kind, object) in [
            (ExposureKind::Route, json!({"spec": {"host": 5}})),
            (ExposureKind::Route, json!({"spec": "a.example.com"})),
            (
                ExposureKind::Ingress,
                json!({"spec": {"rules": [null, 3, {"host": 4}]}}),
            ),
            (
                ExposureKind::Ingress,
                json!({"spec": {"rules": {"host": "a"}}}),
            ),
            (
                ExposureKind::HttpRoute,
                json!({"spec": {"hostnames": "a.example.com"}}),
            ),
        ] {
            assert!(
                exposure_fact(kind, &object).hostnames.is_empty(),
                "{object}"
            );
        }
        let mixed = exposure_fact(
            ExposureKind::HttpRoute,
            &json!({"spec": {"hostnames": [null, "a.example.com", 1, ["b"]]}}),
        );
        assert_eq!(mixed.hostnames, ["a.example.com"]);
    }
}
