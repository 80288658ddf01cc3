//! The supported profile: which Barman Cloud ObjectStores the agent reads, and the Secret keys they reference, each with the variable the agent reads it from.

use serde_json::Value;

/// Where the ObjectStore keeps backups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// AWS S3 or an S3-compatible store (`endpointURL`).
    S3,
    /// Azure Blob Storage.
    Azure,
    /// Google Cloud Storage.
    Google,
}

impl Provider {
    fn credentials_field(self) -> &'static str {
        match self {
            Provider::S3 => "s3Credentials",
            Provider::Azure => "azureCredentials",
            Provider::Google => "googleCredentials",
        }
    }
}

/// A Secret key the ObjectStore references (a `{name, key}` selector).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretRef {
    /// Where the selector is, e.g. `spec.configuration.s3Credentials.accessKeyId`.
    pub field: String,
    pub name: String,
    pub key: String,
    /// The environment variable the agent reads it from.
    pub env: &'static str,
}

/// An ObjectStore within the supported profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    pub provider: Provider,
    pub destination: String,
    /// An S3-compatible store's `endpointURL`.
    pub endpoint: Option<String>,
    /// Every Secret key the agent needs, in the order of the ObjectStore's fields.
    pub secrets: Vec<SecretRef>,
}

/// Why an ObjectStore is outside the supported profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    DestinationInvalid(String),
    Unsupported(String),
    RegionRequired(String),
    /// A selector that is not `{name, key}` (what the ObjectStore's CRD
    /// should have refused).
    Malformed(String),
}

const CONFIGURATION: &str = "spec.configuration";
/// The environment variable the agent reads `endpointCA` from.
const ENDPOINT_CA_ENV: &str = "EVIDENCE_AGENT_ENDPOINT_CA";

/// Checks the ObjectStore `name` (its whole object as JSON) against the profile.
pub fn check(name: &str, object: &Value) -> Result<Store, Problem> {
    let configuration = &object["spec"]["configuration"];
    let destination = configuration["destinationPath"]
        .as_str()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            Problem::DestinationInvalid(format!(
                "ObjectStore {name} has no {CONFIGURATION}.destinationPath"
            ))
        })?;
    let (provider, host) = locate(name, destination)?;
    let field = provider.credentials_field();
    let credentials = &configuration[field];
    if credentials.is_null() {
        let others: Vec<&str> = [Provider::S3, Provider::Azure, Provider::Google]
            .iter()
            .map(|p| p.credentials_field())
            .filter(|f| !configuration[*f].is_null())
            .collect();
        return Err(if others.is_empty() {
            Problem::Unsupported(format!(
                "ObjectStore {name} gives no {field}: the agent does not use ambient credentials, it needs keys in a Secret"
            ))
        } else {
            Problem::DestinationInvalid(format!(
                "ObjectStore {name}: destinationPath {destination} needs {field}, but the ObjectStore gives {}",
                others.join(" and ")
            ))
        });
    }
    let mut secrets = Vec::new();
    let endpoint = match provider {
        Provider::S3 => s3(name, configuration, credentials, &mut secrets)?,
        Provider::Azure => {
            azure(name, destination, host, credentials, &mut secrets)?;
            None
        }
        Provider::Google => {
            google(name, credentials, &mut secrets)?;
            None
        }
    };
    if let Some(ca) = selector(configuration, CONFIGURATION, "endpointCA", ENDPOINT_CA_ENV)? {
        secrets.push(ca);
    }
    Ok(Store {
        provider,
        destination: destination.to_owned(),
        endpoint,
        secrets,
    })
}

/// The provider a destination is in, and its host for Azure.
fn locate<'a>(name: &str, destination: &'a str) -> Result<(Provider, &'a str), Problem> {
    let invalid = |why: &str| {
        Problem::DestinationInvalid(format!(
            "ObjectStore {name}: destinationPath {destination} {why}"
        ))
    };
    let (scheme, rest) = destination
        .split_once("://")
        .ok_or_else(|| invalid("is not a URL (s3://, gs:// or https://)"))?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    match scheme {
        "s3" if is_bucket(authority, false) => Ok((Provider::S3, authority)),
        "gs" if is_bucket(authority, true) => Ok((Provider::Google, authority)),
        "s3" | "gs" => Err(invalid(&format!(
            "names no valid bucket ({authority:?}: 3 to 63 lowercase letters, digits, '.' and '-')"
        ))),
        "https" | "http" if !authority.is_empty() => {
            let container = path.split('/').next().unwrap_or_default();
            if container.is_empty() {
                Err(invalid(
                    "names no container (https://<account>.blob.core.windows.net/<container>/<path>)",
                ))
            } else {
                Ok((Provider::Azure, authority))
            }
        }
        _ => Err(invalid(&format!(
            "has scheme {scheme}://, not s3://, gs:// or https://"
        ))),
    }
}

/// An S3 or GCS bucket name (GCS also allows '_').
fn is_bucket(name: &str, underscores: bool) -> bool {
    let inner = |c: char| {
        c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || c == '.'
            || c == '-'
            || (underscores && c == '_')
    };
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&name.len())
        && name.chars().all(inner)
        && edge(name.chars().next())
        && edge(name.chars().last())
}

/// The S3 credentials' Secret keys, and the `endpointURL` when set.
fn s3(
    name: &str,
    configuration: &Value,
    credentials: &Value,
    secrets: &mut Vec<SecretRef>,
) -> Result<Option<String>, Problem> {
    let at = format!("{CONFIGURATION}.s3Credentials");
    if credentials["inheritFromIAMRole"].as_bool() == Some(true) {
        return Err(Problem::Unsupported(format!(
            "ObjectStore {name} inherits an IAM role ({at}.inheritFromIAMRole): the role belongs to the Cluster's Pods, the agent needs accessKeyId and secretAccessKey in a Secret"
        )));
    }
    let key_id = selector(credentials, &at, "accessKeyId", "AWS_ACCESS_KEY_ID")?;
    let secret = selector(credentials, &at, "secretAccessKey", "AWS_SECRET_ACCESS_KEY")?;
    let (Some(key_id), Some(secret)) = (key_id, secret) else {
        return Err(Problem::Unsupported(format!(
            "ObjectStore {name} gives no {at}.accessKeyId and secretAccessKey: the agent reads the bucket with static keys only"
        )));
    };
    let endpoint = configuration["endpointURL"]
        .as_str()
        .filter(|e| !e.is_empty());
    let host = match endpoint {
        Some(url) => Some(endpoint_host(url).ok_or_else(|| {
            Problem::DestinationInvalid(format!(
                "ObjectStore {name}: endpointURL {url} is not an http:// or https:// URL with a host"
            ))
        })?),
        None => None,
    };
    let region = selector(credentials, &at, "region", "AWS_REGION")?;
    let aws = host.is_none_or(|host| host == "amazonaws.com" || host.ends_with(".amazonaws.com"));
    if aws && region.is_none() {
        return Err(Problem::RegionRequired(format!(
            "ObjectStore {name} stores in AWS S3 without {at}.region: set it to a Secret key holding the bucket's region"
        )));
    }
    secrets.extend(
        [
            Some(key_id),
            Some(secret),
            selector(credentials, &at, "sessionToken", "AWS_SESSION_TOKEN")?,
            region,
        ]
        .into_iter()
        .flatten(),
    );
    Ok(endpoint.map(str::to_owned))
}

/// The host of an http(s) endpoint URL, without port.
fn endpoint_host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    (!host.is_empty() && !host.contains(char::is_whitespace)).then_some(host)
}

fn azure(
    name: &str,
    destination: &str,
    host: &str,
    credentials: &Value,
    secrets: &mut Vec<SecretRef>,
) -> Result<(), Problem> {
    let at = format!("{CONFIGURATION}.azureCredentials");
    let account = host
        .strip_suffix(".blob.core.windows.net")
        .unwrap_or_default();
    if !destination.starts_with("https://") || account.is_empty() || account.contains('.') {
        return Err(Problem::Unsupported(format!(
            "ObjectStore {name} stores in {host}: the agent supports Azure Blob Storage at https://<account>.blob.core.windows.net only (not Azurite, sovereign clouds or custom domains)"
        )));
    }
    for ambient in ["inheritFromAzureAD", "useDefaultAzureCredentials"] {
        if credentials[ambient].as_bool() == Some(true) {
            return Err(Problem::Unsupported(format!(
                "ObjectStore {name} uses {at}.{ambient}: that identity belongs to the Cluster's Pods, the agent needs a connectionString, or a storageAccount with a storageKey or storageSasToken, in a Secret"
            )));
        }
    }
    if let Some(connection) = selector(
        credentials,
        &at,
        "connectionString",
        "AZURE_STORAGE_CONNECTION_STRING",
    )? {
        secrets.push(connection);
        return Ok(());
    }
    let account = selector(credentials, &at, "storageAccount", "AZURE_STORAGE_ACCOUNT")?;
    let key = match selector(credentials, &at, "storageKey", "AZURE_STORAGE_KEY")? {
        Some(key) => Some(key),
        None => selector(
            credentials,
            &at,
            "storageSasToken",
            "AZURE_STORAGE_SAS_TOKEN",
        )?,
    };
    match (account, key) {
        (Some(account), Some(key)) => {
            secrets.extend([account, key]);
            Ok(())
        }
        _ => Err(Problem::Unsupported(format!(
            "ObjectStore {name} gives no {at}.connectionString, nor a storageAccount with a storageKey or storageSasToken"
        ))),
    }
}

fn google(name: &str, credentials: &Value, secrets: &mut Vec<SecretRef>) -> Result<(), Problem> {
    let at = format!("{CONFIGURATION}.googleCredentials");
    match selector(
        credentials,
        &at,
        "applicationCredentials",
        "GOOGLE_APPLICATION_CREDENTIALS_JSON",
    )? {
        Some(application) => {
            secrets.push(application);
            Ok(())
        }
        None => Err(Problem::Unsupported(format!(
            "ObjectStore {name} gives no {at}.applicationCredentials{}: the agent needs a service account key in a Secret",
            if credentials["gkeEnvironment"].as_bool() == Some(true) {
                " (gkeEnvironment is the Cluster's Pods' workload identity)"
            } else {
                ""
            }
        ))),
    }
}

/// The selector `parent.field`, if set, read by the agent from `env`.
fn selector(
    parent: &Value,
    at: &str,
    field: &str,
    env: &'static str,
) -> Result<Option<SecretRef>, Problem> {
    let value = &parent[field];
    if value.is_null() {
        return Ok(None);
    }
    let text = |k: &str| {
        value[k]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    match (text("name"), text("key")) {
        (Some(name), Some(key)) => Ok(Some(SecretRef {
            field: format!("{at}.{field}"),
            name,
            key,
            env,
        })),
        _ => Err(Problem::Malformed(format!(
            "{at}.{field} must name a Secret and a key ({{name, key}})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store(configuration: Value) -> Result<Store, Problem> {
        check(
            "backups",
            &json!({"spec": {"configuration": configuration}}),
        )
    }

    fn sel(name: &str, key: &str) -> Value {
        json!({"name": name, "key": key})
    }

    #[test]
    fn aws_with_keys_and_region_is_supported() {
        let s = store(json!({
            "destinationPath": "s3://evidence/pg",
            "s3Credentials": {"accessKeyId": sel("aws", "ID"), "secretAccessKey": sel("aws", "KEY"), "region": sel("aws", "REGION")},
        }))
        .unwrap();
        assert_eq!(s.provider, Provider::S3);
        assert_eq!(s.endpoint, None);
        let fields: Vec<_> = s.secrets.iter().map(|r| (r.key.as_str(), r.env)).collect();
        assert_eq!(
            fields,
            [
                ("ID", "AWS_ACCESS_KEY_ID"),
                ("KEY", "AWS_SECRET_ACCESS_KEY"),
                ("REGION", "AWS_REGION")
            ]
        );
    }

    #[test]
    fn s3_compatible_needs_no_region_but_aws_endpoint_does() {
        let keys = json!({"accessKeyId": sel("m", "a"), "secretAccessKey": sel("m", "b")});
        let minio = store(json!({"destinationPath": "s3://evidence", "endpointURL": "https://minio.minio:9000", "s3Credentials": keys})).unwrap();
        assert_eq!(minio.endpoint.as_deref(), Some("https://minio.minio:9000"));
        let aws = store(
            json!({"destinationPath": "s3://evidence", "endpointURL": "https://s3.eu-west-3.amazonaws.com", "s3Credentials": keys}),
        );
        assert!(matches!(aws, Err(Problem::RegionRequired(_))));
        let bad = store(
            json!({"destinationPath": "s3://evidence", "endpointURL": "minio:9000", "s3Credentials": keys}),
        );
        assert!(matches!(bad, Err(Problem::DestinationInvalid(m)) if m.contains("endpointURL")));
    }

    #[test]
    fn destinations_are_checked_per_provider() {
        let keys = json!({"accessKeyId": sel("m", "a"), "secretAccessKey": sel("m", "b"), "region": sel("m", "r")});
        for bad in [
            "",
            "evidence/pg",
            "file:///backups",
            "s3://",
            "s3://Evidence_Bucket/x",
            "gs://a",
            "https://acct.blob.core.windows.net/",
        ] {
            let r = store(json!({"destinationPath": bad, "s3Credentials": keys}));
            assert!(
                matches!(r, Err(Problem::DestinationInvalid(_))),
                "{bad}: {r:?}"
            );
        }
    }

    #[test]
    fn credentials_of_another_provider_are_a_destination_mismatch() {
        let r = store(
            json!({"destinationPath": "gs://evidence", "s3Credentials": {"inheritFromIAMRole": true}}),
        );
        assert!(
            matches!(r, Err(Problem::DestinationInvalid(m)) if m.contains("googleCredentials") && m.contains("s3Credentials"))
        );
    }

    #[test]
    fn ambient_credentials_are_unsupported() {
        let cases = [
            json!({"destinationPath": "s3://evidence", "s3Credentials": {"inheritFromIAMRole": true}}),
            json!({"destinationPath": "s3://evidence"}),
            json!({"destinationPath": "https://acct.blob.core.windows.net/c", "azureCredentials": {"inheritFromAzureAD": true}}),
            json!({"destinationPath": "https://acct.blob.core.windows.net/c", "azureCredentials": {"useDefaultAzureCredentials": true}}),
            json!({"destinationPath": "gs://evidence", "googleCredentials": {"gkeEnvironment": true}}),
        ];
        for c in cases {
            assert!(
                matches!(store(c.clone()), Err(Problem::Unsupported(_))),
                "{c}"
            );
        }
    }

    #[test]
    fn azure_outside_the_public_blob_endpoint_is_unsupported() {
        let creds = json!({"connectionString": sel("az", "cs")});
        let azurite = store(
            json!({"destinationPath": "http://azurite:10000/devstoreaccount1/c", "azureCredentials": creds}),
        );
        assert!(matches!(azurite, Err(Problem::Unsupported(m)) if m.contains("azurite")));
        let ok = store(json!({"destinationPath": "https://acct.blob.core.windows.net/c/pg", "azureCredentials": {"storageAccount": sel("az", "acct"), "storageSasToken": sel("az", "sas")}})).unwrap();
        assert_eq!(ok.provider, Provider::Azure);
        assert_eq!(ok.secrets.len(), 2);
    }

    #[test]
    fn google_and_endpoint_ca_secrets_are_collected() {
        let s = store(json!({"destinationPath": "gs://evidence_1/pg", "endpointCA": sel("ca", "ca.crt"), "googleCredentials": {"applicationCredentials": sel("gcs", "key.json")}})).unwrap();
        let fields: Vec<_> = s
            .secrets
            .iter()
            .map(|r| (r.field.as_str(), r.env))
            .collect();
        assert_eq!(
            fields,
            [
                (
                    "spec.configuration.googleCredentials.applicationCredentials",
                    "GOOGLE_APPLICATION_CREDENTIALS_JSON"
                ),
                (
                    "spec.configuration.endpointCA",
                    "EVIDENCE_AGENT_ENDPOINT_CA"
                )
            ]
        );
    }

    #[test]
    fn a_selector_without_a_key_is_malformed() {
        let r = store(
            json!({"destinationPath": "gs://evidence", "googleCredentials": {"applicationCredentials": {"name": "gcs"}}}),
        );
        assert!(matches!(r, Err(Problem::Malformed(m)) if m.contains("applicationCredentials")));
    }
}
