//! Staging a GuestModule's source on this replica: pulled by digest from
//! its OCI registry (or read from a ConfigMap in the host's namespace),
//! checked against the host's verification policy, and made ready for the
//! gate, nothing compiled or served yet.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use super::kind::{GuestModuleSpec, ModuleSource};
use crate::oci::policy::Rule;
use crate::oci::signatures::Unverified;
use crate::oci::{ModuleCache, OciError, Policy, Remote};
use crate::operator::hot_swap::gate::ShippedFixture;
use crate::operator::hot_swap::guests_dir::GuestFile;
use crate::operator::hot_swap::offers::offer_file;
use crate::runtime::artifacts::digest;

/// What a replica pulls and verifies with.
#[derive(Clone)]
pub struct Puller {
    pub remote: Arc<Remote>,
    pub cache: Arc<ModuleCache>,
    /// The host's verification policy: a GuestModule's source is served
    /// only as it says, whoever may edit GuestModules.
    pub policy: Arc<Policy>,
    /// The ConfigMaps of the host's own namespace, where a `configMap`
    /// source is read (`None`: no client yet).
    pub config_maps: Option<Api<ConfigMap>>,
}

/// A module pulled and verified on this replica.
#[derive(Clone, Debug)]
pub(crate) struct Staged {
    /// The reference pinned to its manifest's digest.
    pub pinned: String,
    /// The manifest's digest (`sha256:...`).
    pub digest: String,
    /// The keys that signed it, of those the policy names for its kind.
    pub signers: Vec<String>,

    /// The module as the gate takes it: the component and the fixtures
    /// it ships.
    pub file: GuestFile,
}

/// Why a source was not staged, by the condition it makes False.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unstaged {
    /// The registry could not be read: worth retrying.
    Unreachable(String),
    /// The reference or the artifact is not a guest module this host can
    /// serve.
    NotAModule(String),
    /// The verification policy refuses it.
    Refused(String),
}

impl Puller {
    /// Pulls the source `spec` names for the GuestModule `name`, checks it
    /// against the policy (and that it was published for `spec.kind`).
    pub(crate) async fn stage(
        &self,
        name: &str,
        spec: &GuestModuleSpec,
    ) -> Result<Staged, Unstaged> {
        let oci = match &spec.source {
            ModuleSource::Oci(oci) => oci,
            ModuleSource::ConfigMap(config_map) => {
                return self.read_config_map(name, spec, config_map).await;
            }
        };
        let pulled = self
            .remote
            .pull(oci, &self.cache, Some(&self.policy))
            .await
            .map_err(unstaged)?;
        let pinned = pulled.pinned.to_string();
        if pulled.kind.as_deref() != Some(spec.kind.as_str()) {
            return Err(Unstaged::Refused(format!(
                "{pinned} was published for kind {}, not {} as spec.kind says",
                pulled.kind.as_deref().unwrap_or("(none)"),
                spec.kind
            )));
        }
        let manifest = pulled.pinned.digest().unwrap_or_default().to_owned();
        let files = &pulled.module.files;
        let fixtures = files
            .iter()
            .filter_map(|(file, bytes)| {
                let name = file.strip_prefix("fixtures/")?;
                let shipped = ShippedFixture {
                    name: name.to_owned(),
                    text: String::from_utf8_lossy(bytes).into_owned(),
                    golden: None,
                };
                let golden = files
                    .iter()
                    .find(|(f, _)| *f == format!("fixtures/{}", shipped.golden_name()))
                    .map(|(_, b)| String::from_utf8_lossy(b).into_owned());
                name.ends_with(".yaml")
                    .then_some(ShippedFixture { golden, ..shipped })
            })
            .collect();
        let wasm = pulled.module.wasm;
        Ok(Staged {
            pinned,
            digest: manifest,
            signers: pulled.signers,
            file: GuestFile {
                file: offer_file(name),
                stem: name.to_owned(),
                digest: digest(&wasm),
                bytes: wasm,
                fixtures,
            },
        })
    }
}

impl Puller {
    /// Reads the module and its fixtures from the ConfigMap `config_map`
    /// of the host's namespace: one binaryData key `<guest>.wasm`, the
    /// data keys `*.yaml` its fixtures, `*.golden` their golden files. A
    /// ConfigMap carries no signature:
    /// served only for a kind the policy serves unsigned.
    async fn read_config_map(
        &self,
        name: &str,
        spec: &GuestModuleSpec,
        config_map: &str,
    ) -> Result<Staged, Unstaged> {
        let policy = self.policy.path().display();
        match self.policy.rule(&spec.kind) {
            Some(Rule::Unsigned) => {}
            Some(Rule::Keys { .. }) => {
                return Err(Unstaged::Refused(format!(
                    "ConfigMap {config_map} is refused by the verification policy {policy} for kind {}: it asks for signers, and a ConfigMap carries no signature (publish the module to an OCI registry, signed)",
                    spec.kind
                )));
            }
            None => {
                return Err(Unstaged::Refused(format!(
                    "ConfigMap {config_map} is refused by the verification policy {policy}: the policy names no kind {}",
                    spec.kind
                )));
            }
        }
        let Some(api) = &self.config_maps else {
            return Err(Unstaged::Unreachable(
                "the host has no client to read ConfigMaps with yet".into(),
            ));
        };
        let namespace = api.namespace().unwrap_or_default().to_owned();
        let where_ = format!("ConfigMap {namespace}/{config_map}");
        let read = api
            .get_opt(config_map)
            .await
            .map_err(|e| Unstaged::Unreachable(format!("reading {where_}: {e}")))?
            .ok_or_else(|| Unstaged::Unreachable(format!("{where_} does not exist")))?;
        let mut modules = read
            .binary_data
            .unwrap_or_default()
            .into_iter()
            .filter(|(key, _)| key.ends_with(".wasm"));
        let (Some((key, wasm)), None) = (modules.next(), modules.next()) else {
            return Err(Unstaged::NotAModule(format!(
                "{where_} must hold exactly one binaryData key <guest>.wasm"
            )));
        };
        let data = read.data.unwrap_or_default();
        let fixtures = data
            .iter()
            .filter(|(key, _)| key.ends_with(".yaml"))
            .map(|(key, text)| {
                let shipped = ShippedFixture {
                    name: key.clone(),
                    text: text.clone(),
                    golden: None,
                };
                let golden = data.get(&shipped.golden_name()).cloned();
                ShippedFixture { golden, ..shipped }
            })
            .collect();
        let wasm = wasm.0;
        let digest = digest(&wasm);
        Ok(Staged {
            pinned: format!("{where_} ({key}, sha256:{digest})"),
            digest: format!("sha256:{digest}"),
            signers: Vec::new(),
            file: GuestFile {
                file: offer_file(name),
                stem: name.to_owned(),
                digest,
                bytes: wasm,
                fixtures,
            },
        })
    }
}

fn unstaged(e: OciError) -> Unstaged {
    let text = e.to_string();
    match e {
        OciError::Registry { .. } | OciError::Io { .. } => Unstaged::Unreachable(text),
        OciError::Unverified { source, .. } if matches!(*source, Unverified::Unreadable { .. }) => {
            Unstaged::Unreachable(text)
        }
        OciError::Unverified { .. } | OciError::NotInPolicy { .. } => Unstaged::Refused(text),
        OciError::Reference { .. }
        | OciError::PushByDigest { .. }
        | OciError::NotAModule { .. }
        | OciError::TooLarge { .. }
        | OciError::Contract { .. }
        | OciError::NotAComponent { .. } => Unstaged::NotAModule(text),
    }
}
