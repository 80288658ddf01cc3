//! A test guest whose parent's `spec.behavior` picks how it misbehaves:
//! `loop` spins forever, `allocate` grows memory without bound, `panic`
//! panics, `bad-reason` returns an unregistered reason, `undeclared-read`
//! reads a kind it did not declare, `service-ip` says the `spec.clusterIP`
//! of the first Service of its namespace as it reads it (its
//! `variant-service-*` builds declare the read); anything else returns a
//! healthy verdict whose message is the parent's `spec.message`.
//!
//! The `variant-*` features build the variants the host's hot-swap tests
//! swap in (see Cargo.toml).

use reconciler_guest_sdk::verdict::{fails, ok};
use reconciler_guest_sdk::{
    ConventionProfile, Evaluation, Facts, Guest, KindRef, KindSpec, ReadDecl, Verdict,
    VerdictBuilder, spec,
};

pub struct Hostile;

fn service() -> KindRef {
    spec::kind_ref("", "v1", "Service")
}

/// The reads of the `variant-service-*` builds; none otherwise.
fn service_reads() -> Vec<ReadDecl> {
    let fields: &[&str] = if cfg!(feature = "variant-service-ports") {
        &["spec.ports"]
    } else if cfg!(feature = "variant-service-spec") {
        &["spec"]
    } else {
        return vec![];
    };
    vec![spec::with_fields(
        spec::reads(service()),
        fields.iter().copied(),
    )]
}

impl Guest for Hostile {
    fn describe() -> KindSpec {
        KindSpec {
            group: "testing.reconciler.dev".into(),
            version: "v1".into(),
            kind: "Hostile".into(),
            plural: "hostiles".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec!["Behaving".into()],
            advisory: vec![],
            reasons: if cfg!(feature = "variant-drop-reason") {
                vec![]
            } else {
                vec![spec::owned(
                    "hostile",
                    "Misbehaving",
                    "The guest did what it was told.",
                )]
            },
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![],
            reads: service_reads(),
            pause: None,
            spec_schema: None,
            printer_columns: vec![],
        }
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        let parent: serde_json::Value =
            serde_json::from_str(&input.parent.json).unwrap_or_default();
        let behavior = parent["spec"]["behavior"].as_str().unwrap_or("ok");
        if cfg!(feature = "variant-trap") {
            panic!("the trap variant traps");
        }
        let mut verdict = VerdictBuilder::new();
        match behavior {
            "loop" => spin(),
            "allocate" => allocate(),
            "panic" => panic!("told to panic"),
            "bad-reason" => {
                verdict.aspect(fails("Behaving", "NotInTheRegistry", ""));
            }
            "service-ip" => {
                let namespace = &input.parent.meta.namespace;
                let said = match facts.list(&service(), namespace, &[]) {
                    Ok(services) => services.first().map_or_else(
                        || "no Service".to_owned(),
                        |s| {
                            let s: serde_json::Value =
                                serde_json::from_str(&s.json).unwrap_or_default();
                            let ip = s["spec"]["clusterIP"].as_str().unwrap_or("absent");
                            format!("clusterIP {ip}")
                        },
                    ),
                    Err(e) => format!("{e:?}"),
                };
                verdict.aspect(ok("Behaving", said));
            }
            "undeclared-read" => {
                let read = facts.secret(&input.parent.meta.namespace, "anything");
                verdict.aspect(fails("Behaving", "Misbehaving", format!("{read:?}")));
            }
            _ => {
                let message = parent["spec"]["message"].as_str().unwrap_or_default();
                if cfg!(feature = "variant-message") {
                    verdict.aspect(ok("Behaving", format!("v2: {message}")));
                } else {
                    verdict.aspect(ok("Behaving", message));
                }
            }
        }
        verdict.build()
    }
}

#[allow(clippy::empty_loop)]
fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

fn allocate() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(vec![1u8; 1 << 20]);
        std::hint::black_box(&hoard);
    }
}

reconciler_guest_sdk::export_guest!(Hostile);
