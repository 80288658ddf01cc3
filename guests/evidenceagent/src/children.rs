//! The objects the operator renders for an agent, under their generated names.

/// The key the service CA writes the CA bundle under.
pub const CA_BUNDLE_KEY: &str = "service-ca.crt";
/// The keys of an issued serving certificate Secret.
pub const TLS_KEYS: [&str; 2] = ["tls.crt", "tls.key"];
/// The longest Service name (a DNS-1035 label).
const MAX_SERVICE_NAME: usize = 63;

/// The generated names of an agent's children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Children {
    /// The agent's Deployment, and the Service in front of it.
    pub workload: String,
    /// The serving certificate Secret: the operator's, or the service CA's.
    pub serving_secret: String,
    /// The ConfigMap the service CA injects its CA bundle into (service-ca
    /// only).
    pub ca_bundle: String,
}

impl Children {
    pub fn of(agent: &str) -> Self {
        Children {
            workload: format!("{agent}-evidence-agent"),
            serving_secret: format!("{agent}-serving-cert"),
            ca_bundle: format!("{agent}-service-ca"),
        }
    }

    /// The names the serving certificate is for: the Service's, short and
    /// fully qualified (in the default cluster domain).
    pub fn dns_names(&self, namespace: &str) -> Vec<String> {
        let service = &self.workload;
        vec![
            service.clone(),
            format!("{service}.{namespace}"),
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ]
    }

    /// Why the Service cannot have its generated name, if it cannot: a
    /// Service name is a DNS-1035 label, and the agent's name is not
    /// checked against it by the schema.
    pub fn service_name_problem(&self, agent: &str) -> Option<String> {
        let name = &self.workload;
        let valid = name.len() <= MAX_SERVICE_NAME
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        let longest = MAX_SERVICE_NAME - (name.len() - agent.len());
        (!valid).then(|| {
            format!(
                "metadata.name {agent} gives the Service {name}, which is not a DNS-1035 label (at most {MAX_SERVICE_NAME} lowercase letters, digits and '-', starting with a letter): name the agent with at most {longest} such characters"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_derived_from_the_agent() {
        let c = Children::of("a");
        assert_eq!(c.workload, "a-evidence-agent");
        assert_eq!(c.serving_secret, "a-serving-cert");
        assert_eq!(c.ca_bundle, "a-service-ca");
        assert_eq!(
            c.dns_names("team-a"),
            [
                "a-evidence-agent",
                "a-evidence-agent.team-a",
                "a-evidence-agent.team-a.svc",
                "a-evidence-agent.team-a.svc.cluster.local"
            ]
        );
    }

    #[test]
    fn the_service_name_must_be_a_dns_1035_label() {
        assert_eq!(Children::of("a").service_name_problem("a"), None);
        let longest = "a".repeat(48);
        assert_eq!(Children::of(&longest).service_name_problem(&longest), None);
        for agent in ["a".repeat(49), "a.b".into(), "1a".into()] {
            let problem = Children::of(&agent).service_name_problem(&agent);
            assert!(
                problem.as_deref().is_some_and(|p| p.contains("at most 48")),
                "{agent}: {problem:?}"
            );
        }
    }
}
