//! Whether an ingress rule's `ports` (JSON `NetworkPolicyPort`s) admit
//! traffic to one port a Pod serves.

use serde_json::Value;

/// A port a Pod's container serves: its protocol, number and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedPort<'a> {
    /// TCP, UDP or SCTP.
    pub protocol: &'a str,
    pub number: u16,
    /// The container port's name (`http`); empty when it has none.
    pub name: &'a str,
}

/// A field of an object, `null` read as absent.
fn field<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object.get(name).filter(|v| !v.is_null())
}

/// Whether one `NetworkPolicyPort` admits traffic to `served`:
/// the protocol (TCP when left out) must be the served one; no `port`
/// admits every port of the protocol; a number admits that port, or the
/// range up to `endPort`; a name admits the container port of that name.
/// A number written as a string (`"8080"`) reads as the number.
///
/// An entry that cannot be read admits: callers that look for what a
/// policy lets through fail closed.
pub fn port_admits(entry: &Value, served: &ServedPort<'_>) -> bool {
    if !entry.is_object() {
        return true;
    }
    let protocol = match field(entry, "protocol") {
        None => "TCP",
        Some(p) => match p.as_str() {
            Some(p) => p,
            None => return true,
        },
    };
    if protocol != served.protocol {
        return false;
    }
    let Some(port) = field(entry, "port") else {
        return true;
    };
    let number = match port {
        Value::Number(n) => n.as_i64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse::<i64>().ok()
        }
        Value::String(name) => return name == served.name && !served.name.is_empty(),
        _ => return true,
    };
    let Some(first) = number else {
        return true;
    };
    let served_number = i64::from(served.number);
    match field(entry, "endPort") {
        None => first == served_number,
        Some(end) => match end.as_i64() {
            Some(last) => (first..=last).contains(&served_number),
            None => true,
        },
    }
}

/// Whether a rule's `ports` admit traffic to `served`: an empty list
/// admits every port; otherwise any entry that admits it (see
/// [`port_admits`]).
pub fn ports_admit(ports: &[Value], served: &ServedPort<'_>) -> bool {
    ports.is_empty() || ports.iter().any(|p| port_admits(p, served))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const CONSOLE: ServedPort<'static> = ServedPort {
        protocol: "TCP",
        number: 8080,
        name: "http",
    };

    #[test]
    fn kubernetes_port_semantics() {
        let admits = |entry: Value| port_admits(&entry, &CONSOLE);
        assert!(admits(json!({})));
        assert!(admits(json!({"protocol": "TCP"})));
        assert!(!admits(json!({"protocol": "UDP"})));
        assert!(!admits(json!({"protocol": "UDP", "port": 8080})));
        assert!(admits(json!({"port": 8080})));
        assert!(admits(json!({"port": "8080"})));
        assert!(!admits(json!({"port": 8443})));
        assert!(admits(json!({"port": "http"})));
        assert!(!admits(json!({"port": "https"})));
        assert!(admits(json!({"port": 8000, "endPort": 8080})));
        assert!(admits(json!({"port": 8080, "endPort": 9000})));
        assert!(!admits(json!({"port": 8081, "endPort": 9000})));
        assert!(!admits(json!({"port": 7000, "endPort": 8079})));
        assert!(admits(json!({"port": 8080, "endPort": null})));
        // Unreadable entries admit (fail closed).
        assert!(admits(json!("8080")));
        assert!(admits(json!({"port": 8443, "endPort": "x"})));
        assert!(admits(json!({"port": [1]})));
        assert!(admits(json!({"protocol": 6})));
    }

    #[test]
    fn a_named_port_needs_a_served_name() {
        let unnamed = ServedPort {
            name: "",
            ..CONSOLE
        };
        assert!(!port_admits(&json!({"port": ""}), &unnamed));
        assert!(!port_admits(&json!({"port": "http"}), &unnamed));
    }

    #[test]
    fn lists() {
        assert!(ports_admit(&[], &CONSOLE));
        assert!(ports_admit(
            &[json!({"port": 5432}), json!({"port": "http"})],
            &CONSOLE
        ));
        assert!(!ports_admit(
            &[json!({"port": 5432}), json!({"port": 8443})],
            &CONSOLE
        ));
    }

    proptest! {
        #[test]
        fn a_range_admits_exactly_its_ports(first in 1i64..=65535, len in 0i64..200, served in 1u16..=65535) {
            let last = first + len;
            let port = ServedPort { number: served, ..CONSOLE };
            let entry = json!({"port": first, "endPort": last});
            prop_assert_eq!(port_admits(&entry, &port), (first..=last).contains(&i64::from(served)));
            let single = json!({"port": first});
            prop_assert_eq!(port_admits(&single, &port), first == i64::from(served));
        }

        #[test]
        fn a_list_admits_when_one_entry_does(ports in prop::collection::vec(1i64..20, 1..4), served in 1u16..20) {
            let port = ServedPort { number: served, ..CONSOLE };
            let entries: Vec<Value> = ports.iter().map(|p| json!({"port": p})).collect();
            prop_assert_eq!(
                ports_admit(&entries, &port),
                entries.iter().any(|e| port_admits(e, &port))
            );
        }
    }
}
