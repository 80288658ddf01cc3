//! The GuestModule kind as the host serves it: its spec (which kind, the
//! OCI source, the promotion), and its conditions and reasons, a kind on
//! the kstatus profile like any other (seed 004), its status derived by the
//! conventions engine.

use reconciler_conventions::kind::{KindRef, KindSpec, Profile, ReasonEntry, StallRule};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::operator::hot_swap::promotion::Promotion;

pub const GROUP: &str = "reconciler.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "GuestModule";
pub const PLURAL: &str = "guestmodules";

/// The aspects, in the order Ready reads them.
pub const PULLED: &str = "Pulled";
pub const VERIFIED: &str = "Verified";
pub const COMPATIBLE: &str = "Compatible";
pub const SHADOWED: &str = "Shadowed";
pub const SERVING: &str = "Serving";
/// Advisory, negative polarity: the module served, failed its probation
/// and the one before it serves again.
pub const ROLLED_BACK: &str = "RolledBack";

/// The reasons the host gives a GuestModule's conditions.
pub const PULL_FAILED: &str = "PullFailed";
pub const NOT_A_MODULE: &str = "NotAModule";
pub const SIGNATURE_REFUSED: &str = "SignatureRefused";
pub const INCOMPATIBLE: &str = "Incompatible";
pub const AWAITING_API: &str = "AwaitingAPI";
pub const REGRESSION: &str = "Regression";
/// Shadowed True without a shadow run: nothing was compared.
pub const SHADOW_SKIPPED: &str = "ShadowSkipped";
pub const PROBATION_FAILED: &str = "ProbationFailed";
pub const PROMOTION_DENIED: &str = "PromotionDenied";
/// The host's reason (a gate holds what it would change): Serving False
/// while a candidate under manual promotion waits for its decision.
pub const AWAITING_APPROVAL: &str = "AwaitingApproval";

/// The owner of these reasons in the registry.
const OWNER: &str = "host";

/// The kind's reference.
pub fn kind_ref() -> KindRef {
    KindRef {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        kind: KIND.to_owned(),
    }
}

/// The GuestModule kind's spec: what the engine derives its status from
/// and what its CustomResourceDefinition is rendered from.
pub fn spec() -> KindSpec {
    let reason = |name: &str, meaning: &str| ReasonEntry {
        name: name.to_owned(),
        owner: OWNER.to_owned(),
        meaning: meaning.to_owned(),
    };
    let stall = |reason: &str, recheck_seconds: Option<u32>| StallRule {
        reason: reason.to_owned(),
        recheck_seconds,
    };
    KindSpec {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        kind: KIND.to_owned(),
        plural: PLURAL.to_owned(),
        namespaced: false,
        profile: Profile::Kstatus,
        aspects: [PULLED, VERIFIED, COMPATIBLE, SHADOWED, SERVING]
            .map(str::to_owned)
            .to_vec(),
        advisory: vec![ROLLED_BACK.to_owned()],
        negative_polarity: vec![ROLLED_BACK.to_owned()],
        reasons: vec![
            reason(
                PULL_FAILED,
                "Pulled=False: the registry could not be read (unreachable, refused the credentials, no such reference); retried every 30 s, the module serving before stays.",
            ),
            reason(
                NOT_A_MODULE,
                "Pulled=False: the artifact is not a guest module of a contract this host serves (its config or layers say so); only a new source helps.",
            ),
            reason(
                SIGNATURE_REFUSED,
                "Verified=False: the host's verification policy refuses the module's signatures (unsigned, signed by another key, or its kind not named by the policy, or published for another kind than spec.kind); checked again every 5 minutes.",
            ),
            reason(
                INCOMPATIBLE,
                "Compatible=False: the hot-swap gate refuses the module (it does not load, drops a frozen reason or aspect, fails a fixture it ships, or serves another kind than spec.kind); the message names the check.",
            ),
            reason(
                AWAITING_API,
                "Compatible=False: the module's kind, or a kind it reads, is not served by the cluster yet; it is served once its CustomResourceDefinition is installed.",
            ),
            reason(
                REGRESSION,
                "Shadowed=False: shadowed on the kind's live parents under promotion auto, the module would turn a parent from Ready True to False or fail where the serving module does not; held, the serving module stays.",
            ),
            reason(
                SHADOW_SKIPPED,
                "Shadowed=True: no shadow ran, so it holds nothing back: the promotion in force is direct (swapped in on probation), or no module served the kind to compare with; status.shadow records no review.",
            ),
            reason(
                PROMOTION_DENIED,
                "Serving=False: under promotion manual, a reviewer denied this candidate (status.approval names who); the serving module stays, and a new candidate (another digest) takes a new decision.",
            ),
            reason(
                PROBATION_FAILED,
                "Serving=False and RolledBack=True: the module served, failed above the rollback threshold in its first passes, and the module before it serves again.",
            ),
        ],
        quiet_reasons: vec![AWAITING_API.to_owned()],
        stalls: vec![
            stall(NOT_A_MODULE, None),
            stall(SIGNATURE_REFUSED, Some(300)),
            stall(INCOMPATIBLE, None),
            stall(REGRESSION, Some(600)),
            stall(PROBATION_FAILED, None),
            stall(PROMOTION_DENIED, None),
        ],
        spec_schema: Some(spec_schema().to_string()),
        printer_columns: vec![
            column("Serves", ".spec.kind", false),
            column("Digest", ".status.digest", true),
            column("Source", ".spec.source.oci", true),
        ],
        ..KindSpec::default()
    }
}

/// The kind's CustomResourceDefinition: rendered as every kind's is, with
/// `.status.replicas` a list keyed by replica name, so that each replica
/// applies its own entry under its own field manager and no other.
pub fn crd() -> Value {
    let mut crd = crate::crd::render(&spec());
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
        [REPLICAS] = json!({
        "type": "array",
        "description": "What each replica of the host serves or stages, each entry written by that replica.",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            "type": "object",
            "required": ["name", "state"],
            "properties": {
                "name": {"type": "string", "description": "The replica (its Pod's name)."},
                "state": {
                    "type": "string",
                    "enum": [STATE_SERVING, STATE_STAGED, STATE_FAILED, STATE_HELD],
                    "description": "Serving: it serves digest. Staged: pulled and verified here, served once this replica leads. Failed: it could not stage the source (message says why). Held: the leader refused or holds the module.",
                },
                "digest": {"type": "string"},
                "message": {"type": "string", "maxLength": 32768},
                "lastUpdateTime": {"type": "string", "format": "date-time"},
            },
        },
    });
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
        [APPROVAL] = json!({
        "type": "object",
        "description": "A reviewer's decision on one candidate under promotion manual; who may write it, and that it is written once, is deploy/guestmodules-admission.yaml's.",
        "required": ["digest", "decision", "decidedBy"],
        "properties": {
            "digest": {"type": "string", "description": "The candidate decided on: status.digest when it was decided."},
            "decision": {"type": "string", "enum": ["Approved", "Denied"]},
            "decidedBy": {
                "type": "object",
                "required": ["username"],
                "properties": {"username": {"type": "string"}},
            },
        },
    });
    crd
}

/// `.status.replicas`: one entry per replica, each its own writer's.
pub const REPLICAS: &str = "replicas";
/// `.status.shadow`: the review of the staged module's shadow run (the
/// host's, bounded to 20 parents, those that hold it first).
pub const SHADOW: &str = "shadow";
/// `.status.approval`: a reviewer's decision on one candidate, written by
/// the reviewer (deploy/guestmodules-admission.yaml says who may).
pub const APPROVAL: &str = "approval";

/// A reviewer's decision, as `.status.approval` records it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleApproval {
    /// The candidate decided on (the manifest's digest).
    pub digest: String,
    pub decision: ModuleDecision,
    pub decided_by: DecidedBy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum ModuleDecision {
    Approved,
    Denied,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct DecidedBy {
    pub username: String,
}

impl ModuleApproval {
    /// The decision `object`'s status records, if it reads as one.
    pub fn of(object: &Value) -> Option<ModuleApproval> {
        serde_json::from_value(object["status"][APPROVAL].clone()).ok()
    }
}
pub const STATE_SERVING: &str = "Serving";
pub const STATE_STAGED: &str = "Staged";
pub const STATE_FAILED: &str = "Failed";
pub const STATE_HELD: &str = "Held";

fn column(name: &str, json_path: &str, wide: bool) -> reconciler_conventions::kind::PrinterColumn {
    reconciler_conventions::kind::PrinterColumn {
        name: name.to_owned(),
        type_: "string".to_owned(),
        json_path: json_path.to_owned(),
        wide,
        description: None,
    }
}

/// The schema of `.spec`, as the CRD enforces it.
fn spec_schema() -> Value {
    json!({
        "type": "object",
        "required": ["kind", "source"],
        "properties": {
            "kind": {
                "type": "string",
                "minLength": 1,
                "description": "The kind the module serves (its guest's kind name, as the verification policy names it).",
            },
            "source": {
                "type": "object",
                "description": "Where the module comes from: exactly one of oci and configMap.",
                "properties": {
                    "oci": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The module's OCI reference: registry/repository@sha256:... or a tag, resolved once per generation to the digest everything after reads.",
                    },
                    "configMap": {
                        "type": "object",
                        "required": ["name"],
                        "description": "A ConfigMap in the host's own namespace holding the module (one binaryData key <guest>.wasm) and its fixtures (data keys *.yaml); read again while it serves, so replacing its data rolls the module out. It carries no signature: the verification policy must serve the kind unsigned.",
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                        },
                    },
                },
                "x-kubernetes-validations": [{
                    "rule": "has(self.oci) != has(self.configMap)",
                    "message": "give exactly one of oci and configMap",
                }],
            },
            "promotion": {
                "type": "string",
                "enum": ["direct", "auto", "manual"],
                "description": "How the module comes to serve once it passed the gate: direct (swapped in, on probation), auto (shadowed on every live parent first, held on a regression) or manual (shadowed as under auto, then swapped in once a reviewer approves its digest in status.approval). Default: the host's --promotion. Never less than the floor the operator sets for the kind (--promotion-floor): a weaker one is served as the floor, status.promotion says which is in force.",
            },
        },
    })
}

/// A GuestModule's spec, as the host reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestModuleSpec {
    pub kind: String,
    pub source: ModuleSource,
    pub promotion: Option<PromotionName>,
}

/// Where a module comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleSource {
    /// An OCI reference.
    Oci(String),
    /// The name of a ConfigMap in the host's namespace.
    ConfigMap(String),
}

/// The spec as written.
#[derive(Deserialize)]
struct Written {
    kind: String,
    source: WrittenSource,
    #[serde(default)]
    promotion: Option<PromotionName>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WrittenSource {
    #[serde(default)]
    oci: Option<String>,
    #[serde(default)]
    config_map: Option<WrittenConfigMap>,
}

#[derive(Deserialize)]
struct WrittenConfigMap {
    name: String,
}

/// A GuestModule's promotion, from the least review to the most: a floor
/// of `Auto` admits `Auto` and `Manual`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromotionName {
    Direct,
    Auto,
    Manual,
}

impl PromotionName {
    /// As a spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PromotionName::Direct => "direct",
            PromotionName::Auto => "auto",
            PromotionName::Manual => "manual",
        }
    }

    /// How the reloader takes a module offered under it: manual is checked
    /// and shadowed as auto (and held for its decision by the offer).
    pub fn promotion(self) -> Promotion {
        match self {
            PromotionName::Direct => Promotion::Direct,
            PromotionName::Auto | PromotionName::Manual => Promotion::Auto,
        }
    }
}

impl std::str::FromStr for PromotionName {
    type Err = String;

    fn from_str(s: &str) -> Result<PromotionName, String> {
        match s {
            "direct" => Ok(PromotionName::Direct),
            "auto" => Ok(PromotionName::Auto),
            "manual" => Ok(PromotionName::Manual),
            _ => Err(format!("{s:?} is no promotion: direct, auto or manual")),
        }
    }
}

/// The promotion a GuestModule is served under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InForce {
    pub promotion: PromotionName,
    /// What the spec (or the host's `--promotion`) asked for, when the
    /// floor of its kind raised it.
    pub raised_from: Option<PromotionName>,
}

impl GuestModuleSpec {
    /// Reads `.spec` of a GuestModule object.
    pub fn of(object: &Value) -> Result<GuestModuleSpec, String> {
        let written: Written =
            serde_json::from_value(object["spec"].clone()).map_err(|e| format!("spec: {e}"))?;
        let source = match (written.source.oci, written.source.config_map) {
            (Some(oci), None) => ModuleSource::Oci(oci),
            (None, Some(c)) => ModuleSource::ConfigMap(c.name),
            _ => return Err("spec.source: give exactly one of oci and configMap".to_owned()),
        };
        Ok(GuestModuleSpec {
            kind: written.kind,
            source,
            promotion: written.promotion,
        })
    }

    /// The promotion the module is served under: as its spec asks, else
    /// `default` (the host's `--promotion`), and never less review than
    /// `floor`, the operator's for its kind: a spec asks for more, never
    /// for less.
    pub fn in_force(&self, default: Promotion, floor: Option<PromotionName>) -> InForce {
        let asked = self.promotion.unwrap_or(match default {
            Promotion::Direct => PromotionName::Direct,
            Promotion::Auto | Promotion::Checked => PromotionName::Auto,
        });
        match floor {
            Some(floor) if floor > asked => InForce {
                promotion: floor,
                raised_from: Some(asked),
            },
            _ => InForce {
                promotion: asked,
                raised_from: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_is_one_the_host_can_serve_with_the_kstatus_conditions() {
        let spec = spec();
        spec.validate().expect("a valid kind spec");
        let types: Vec<&str> = spec.condition_types().collect();
        assert_eq!(
            types,
            [
                "Ready",
                "Reconciling",
                "Stalled",
                PULLED,
                VERIFIED,
                COMPATIBLE,
                SHADOWED,
                SERVING,
                ROLLED_BACK
            ]
        );
        assert!(spec.is_negative_polarity(ROLLED_BACK));
    }

    #[test]
    fn a_spec_reads_its_promotion_else_the_hosts() {
        use PromotionName::*;
        let served = |promotion| InForce {
            promotion,
            raised_from: None,
        };
        let object = json!({"spec": {"kind": "EvidenceAgent", "source": {"oci": "r/x:1"}}});
        let read = GuestModuleSpec::of(&object).unwrap();
        assert_eq!(read.in_force(Promotion::Auto, None), served(Auto));
        let object =
            json!({"spec": {"kind": "E", "source": {"oci": "r/x:1"}, "promotion": "direct"}});
        let read = GuestModuleSpec::of(&object).unwrap();
        assert_eq!(read.in_force(Promotion::Auto, None), served(Direct));
        assert_eq!(Direct.promotion(), Promotion::Direct);
        // Manual: checked and shadowed as under auto, whatever the host's.
        let object =
            json!({"spec": {"kind": "E", "source": {"oci": "r/x:1"}, "promotion": "manual"}});
        let read = GuestModuleSpec::of(&object).unwrap();
        assert_eq!(read.in_force(Promotion::Direct, None), served(Manual));
        assert_eq!(Manual.promotion(), Promotion::Auto);
        let missing = GuestModuleSpec::of(&json!({"spec": {"kind": "E"}})).unwrap_err();
        assert!(missing.contains("source"), "{missing}");
        for both_or_none in [
            json!({"oci": "r/x:1", "configMap": {"name": "m"}}),
            json!({}),
        ] {
            let error =
                GuestModuleSpec::of(&json!({"spec": {"kind": "E", "source": both_or_none}}))
                    .unwrap_err();
            assert_eq!(error, "spec.source: give exactly one of oci and configMap");
        }
        let object = json!({"spec": {"kind": "E", "source": {"configMap": {"name": "m"}}}});
        assert_eq!(
            GuestModuleSpec::of(&object).unwrap().source,
            ModuleSource::ConfigMap("m".into())
        );
    }

    /// The floor of its kind: a spec (or the host's default) asking for
    /// less review is raised to it, saying what it asked; more is kept.
    #[test]
    fn a_spec_asks_for_more_review_than_the_floor_never_less() {
        use PromotionName::*;
        let with = |promotion: Option<&str>| {
            let mut spec = json!({"kind": "E", "source": {"oci": "r/x:1"}});
            if let Some(p) = promotion {
                spec["promotion"] = json!(p);
            }
            GuestModuleSpec::of(&json!({ "spec": spec })).unwrap()
        };
        let raised = |from| InForce {
            promotion: Manual,
            raised_from: Some(from),
        };
        assert_eq!(
            with(Some("direct")).in_force(Promotion::Auto, Some(Manual)),
            raised(Direct)
        );
        assert_eq!(
            with(Some("auto")).in_force(Promotion::Auto, Some(Manual)),
            raised(Auto)
        );
        assert_eq!(
            with(None).in_force(Promotion::Direct, Some(Manual)),
            raised(Direct)
        );
        let kept = InForce {
            promotion: Manual,
            raised_from: None,
        };
        assert_eq!(
            with(Some("manual")).in_force(Promotion::Direct, Some(Auto)),
            kept
        );
        assert_eq!(
            with(Some("manual")).in_force(Promotion::Direct, Some(Manual)),
            kept
        );
        assert!(Direct < Auto && Auto < Manual);
        assert_eq!("manual".parse(), Ok(Manual));
        assert!("none".parse::<PromotionName>().is_err());
    }
}
