//! The objects the operator renders for an agent, under their generated names.

/// The key the service CA writes the CA bundle under.
pub const CA_BUNDLE_KEY: &str = "service-ca.crt";
/// The keys of an issued serving certificate Secret.
pub const TLS_KEYS: [&str; 2] = ["tls.crt", "tls.key"];
/// The annotation the service CA sets on the serving Secret: when the
/// certificate expires (RFC 3339).
pub const EXPIRY_ANNOTATION: &str = "service.beta.openshift.io/expiry";

/// The generated names of an agent's children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Children {
    /// The agent's Deployment, and the Service in front of it (annotated
    /// `service.beta.openshift.io/serving-cert-secret-name`).
    pub workload: String,
    /// The serving certificate Secret the service CA issues for the Service.
    pub serving_secret: String,
    /// The ConfigMap the service CA injects its CA bundle into
    /// (`service.beta.openshift.io/inject-cabundle: "true"`).
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
    }
}
