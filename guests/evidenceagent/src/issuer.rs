//! Who issues the agent's serving certificate: the operator's own CA (the default) or the OpenShift service CA, as the setting `servingCertificate` says.

/// The setting choosing the issuer.
pub const SETTING: &str = "servingCertificate";
/// The annotation the host sets on a Secret it issued: when the
/// certificate expires (RFC 3339).
pub const OPERATOR_EXPIRY_ANNOTATION: &str = "reconciler.dev/certificate-expiry";
/// The annotation the service CA sets on a Secret it issued.
pub const SERVICE_CA_EXPIRY_ANNOTATION: &str = "service.beta.openshift.io/expiry";
/// The annotation naming the Service the service CA issued a Secret for.
pub const SERVICE_CA_ORIGIN_ANNOTATION: &str = "service.beta.openshift.io/originating-service-name";

/// Who signs the serving certificate in Secret `<name>-serving-cert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Issuer {
    /// The operator's own CA, through the host (`setting: operator`).
    Operator,
    /// The OpenShift service CA, asked by annotations on the Service and
    /// the CA bundle ConfigMap (`setting: service-ca`).
    ServiceCa,
}

impl Issuer {
    /// The issuer the setting names; unset or blank is the operator. Any
    /// other value is refused with the sentence saying so.
    pub fn from_setting(value: Option<&str>) -> Result<Self, String> {
        match value.map(str::trim) {
            None | Some("") | Some("operator") => Ok(Issuer::Operator),
            Some("service-ca") => Ok(Issuer::ServiceCa),
            Some(other) => Err(format!(
                "the operator setting {SETTING} is {other:?}: it is operator (the default) or service-ca"
            )),
        }
    }

    /// The setting's value for this issuer.
    pub fn value(self) -> &'static str {
        match self {
            Issuer::Operator => "operator",
            Issuer::ServiceCa => "service-ca",
        }
    }

    /// Who it is, as a message names it.
    pub fn who(self) -> &'static str {
        match self {
            Issuer::Operator => "the operator",
            Issuer::ServiceCa => "the OpenShift service CA",
        }
    }

    /// The annotation of an issued Secret that holds its expiry.
    pub fn expiry_annotation(self) -> &'static str {
        match self {
            Issuer::Operator => OPERATOR_EXPIRY_ANNOTATION,
            Issuer::ServiceCa => SERVICE_CA_EXPIRY_ANNOTATION,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_defaults_to_the_operator_and_refuses_anything_else() {
        assert_eq!(Issuer::from_setting(None), Ok(Issuer::Operator));
        assert_eq!(Issuer::from_setting(Some(" ")), Ok(Issuer::Operator));
        assert_eq!(Issuer::from_setting(Some("operator")), Ok(Issuer::Operator));
        assert_eq!(
            Issuer::from_setting(Some(" service-ca ")),
            Ok(Issuer::ServiceCa)
        );
        let refused = Issuer::from_setting(Some("cert-manager")).unwrap_err();
        assert_eq!(
            refused,
            "the operator setting servingCertificate is \"cert-manager\": it is operator (the default) or service-ca"
        );
    }

    #[test]
    fn each_issuer_names_itself_and_its_expiry_annotation() {
        for issuer in [Issuer::Operator, Issuer::ServiceCa] {
            assert_eq!(Issuer::from_setting(Some(issuer.value())), Ok(issuer));
        }
        assert_eq!(
            Issuer::Operator.expiry_annotation(),
            "reconciler.dev/certificate-expiry"
        );
        assert_eq!(Issuer::ServiceCa.who(), "the OpenShift service CA");
    }
}
