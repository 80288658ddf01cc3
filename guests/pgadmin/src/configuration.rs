//! ConfigurationValid: the spec parses, the image is allowed, the OAuth2 client Secret exists, every child name is free or the PgAdmin's, and the offered set resolves.

use reconciler_guest_sdk::configuration::{NotValid, owned, stalled};
use reconciler_guest_sdk::image::{ALLOWED_REPOSITORIES, choose};
use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::{Evaluation, ExposureKind, Facts, ReadError, read};
use serde_json::Value;

use crate::configdb::{self, ConfigDatabase};
use crate::exposure::kind_name;
use crate::registration;
use crate::registry::*;
use crate::render::child_name;
use crate::servers::{self, Offered};
use crate::spec::{self, PgAdminSpec};

/// The setting naming the pgAdmin image used when `spec.image` is not set.
pub const DEFAULT_IMAGE: &str = "defaultImage";

/// A valid configuration: what the pass renders from.
#[derive(Clone, Debug)]
pub struct Valid {
    pub spec: PgAdminSpec,
    pub image: String,
    /// The servers pgAdmin is given, and what is left out.
    pub offered: Offered,
    /// Whether the PgAdmin registers servers.
    pub registers: bool,
    /// The settings database, with `spec.configDatabase`.
    pub config_database: Option<ConfigDatabase>,
    /// ConfigurationValid's message when nothing is left out.
    pub message: String,
}

/// The image to run, or why it cannot be run (ImageNotAllowed, or
/// ConfigurationInvalid for a reference that does not parse or no image
/// at all); checked on its own too, so a refused hostname's message can
/// name a refused image as well.
pub fn image(parent: &Value, input: &Evaluation) -> Result<String, NotValid> {
    let spec_image = parent["spec"]["image"]
        .as_str()
        .filter(|i| !i.trim().is_empty());
    let allowed = input.setting_list(ALLOWED_REPOSITORIES);
    match choose(
        spec_image,
        input.setting(DEFAULT_IMAGE),
        DEFAULT_IMAGE,
        &allowed,
    ) {
        Ok(Some(image)) => Ok(image),
        Ok(None) => Err(stalled(
            CONFIGURATION_INVALID,
            "spec.image is not set and the operator has no default pgAdmin image (setting defaultImage)",
        )),
        Err(refusal) => Err(stalled(
            if refusal.reason() == IMAGE_NOT_ALLOWED {
                IMAGE_NOT_ALLOWED
            } else {
                CONFIGURATION_INVALID
            },
            refusal.message(),
        )),
    }
}

/// Decides ConfigurationValid (the hostname was checked before).
pub fn evaluate(
    parent: &Value,
    pgadmin: &Parent,
    input: &Evaluation,
    facts: &dyn Facts,
) -> Result<Valid, NotValid> {
    let spec = spec::parse(parent).map_err(|e| stalled(CONFIGURATION_INVALID, e.0))?;
    let image = image(parent, input)?;
    let ns = pgadmin.namespace;
    if let Some(name) = &spec.oauth2_secret {
        match facts.secret(ns, name) {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(stalled(
                    SECRET_NOT_FOUND,
                    format!(
                        "Secret {name} (spec.oauth2.clientSecretRef) does not exist in {ns}: pgAdmin cannot start without its OAuth2 client"
                    ),
                ));
            }
            Err(e) => {
                return Err(NotValid::Unread(read::failure(
                    &format!("Secret {name}"),
                    &e,
                )));
            }
        }
    }
    let name = child_name(pgadmin.name);
    owned(
        pgadmin,
        "PersistentVolumeClaim",
        &name,
        meta(facts.get(&pvc_kind(), ns, &name)),
    )?;
    owned(
        pgadmin,
        "Deployment",
        &name,
        meta(facts.workload(ns, &name)),
    )?;
    owned(
        pgadmin,
        "Service",
        &name,
        meta(facts.get(&service_kind(), ns, &name)),
    )?;
    if let Some(exposure) = &spec.exposure {
        match facts.exposure(exposure.kind, ns, &name) {
            // A kind not served or refused: ExposureReady says so.
            Err(ReadError::NotServed(_) | ReadError::Forbidden(_))
                if exposure.kind != ExposureKind::Ingress => {}
            read => owned(pgadmin, kind_name(exposure.kind), &name, meta(read))?,
        }
    }
    let offered = servers::resolve(&spec, ns, pgadmin.name, facts).map_err(NotValid::Unread)?;
    let registers = registration::wanted(&offered, &parent["status"]);
    if registers {
        let config = registration::config_map_name(pgadmin.name);
        owned(
            pgadmin,
            "ConfigMap",
            &config,
            meta(facts.config_map(ns, &config)),
        )?;
    }
    let config_database = match &spec.config_database {
        Some(cluster) => Some(configdb::evaluate(pgadmin, cluster, facts)?),
        None => None,
    };
    let login = match &spec.oauth2_secret {
        Some(secret) => format!("OAuth2 client Secret {secret}"),
        None => "pgAdmin's internal login".to_owned(),
    };
    let exposure = match &spec.exposure {
        Some(e) => format!(
            "{} {name} for {}",
            kind_name(e.kind),
            e.hostname.to_ascii_lowercase()
        ),
        None => "clusterIP".to_owned(),
    };
    let offering = if offered.requested {
        format!("; {} offered", plural(offered.servers.len(), "server"))
    } else {
        String::new()
    };
    Ok(Valid {
        message: format!("image {image}; {login}; exposure {exposure}{offering}"),
        spec,
        image,
        offered,
        registers,
        config_database,
    })
}

/// `n` `what`s.
pub fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The metadata of a read object of any fact type.
fn meta<T: HasMeta>(
    read: Result<Option<T>, ReadError>,
) -> Result<Option<reconciler_guest_sdk::ObjectMeta>, ReadError> {
    read.map(|o| o.map(HasMeta::into_meta))
}

trait HasMeta {
    fn into_meta(self) -> reconciler_guest_sdk::ObjectMeta;
}

impl HasMeta for reconciler_guest_sdk::WorkloadFact {
    fn into_meta(self) -> reconciler_guest_sdk::ObjectMeta {
        self.meta
    }
}

impl HasMeta for reconciler_guest_sdk::ConfigMapFact {
    fn into_meta(self) -> reconciler_guest_sdk::ObjectMeta {
        self.meta
    }
}

impl HasMeta for reconciler_guest_sdk::Object {
    fn into_meta(self) -> reconciler_guest_sdk::ObjectMeta {
        self.meta
    }
}

impl HasMeta for reconciler_guest_sdk::ExposureFact {
    fn into_meta(self) -> reconciler_guest_sdk::ObjectMeta {
        self.meta
    }
}
