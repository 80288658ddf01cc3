//! Guest modules through an OCI registry (issue 33), against
//! go-containerregistry's registry on loopback: `push` publishes a module
//! with the golden lists and fixtures beside it; `pull` pins a tag to its
//! digest, checks the contract from the artifact's config before it
//! downloads the component, keeps what it pulled by digest, and places a
//! module only once the host has loaded it. Under a verification policy,
//! a module is pulled only with the cosign signatures its kind's rule
//! asks for (signed by the real cosign), keyed or keyless (a certificate
//! chained to the policy's trust roots).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::{Client, Reference};
use reconciler_host_harness::cosign::{Authority, KeyPair, TransparencyLog};
use reconciler_host_harness::guests::guest_wasm;
use reconciler_host_harness::paths;
use reconciler_host_harness::registry::Registry;
use serde_json::json;

/// A scratch directory of this test.
fn scratch(name: &str) -> PathBuf {
    let dir = paths::target_tmpdir().join("registry-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// `reconciler-host <args>`, compiled modules cached in `dir`.
fn host(dir: &Path, args: &[&str]) -> Output {
    host_at(dir, None, args)
}

/// `reconciler-host <args>`, the artifacts it pushes dated `created`
/// (seconds since the epoch) when given: pushes of one module at two
/// dates are two digests.
fn host_at(dir: &Path, created: Option<u32>, args: &[&str]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_reconciler-host"));
    if let Some(created) = created {
        command.env("SOURCE_DATE_EPOCH", created.to_string());
    }
    command
        .env("NO_COLOR", "1")
        // Never the credentials of whoever runs the tests.
        .env("DOCKER_CONFIG", dir.join("no-docker-config"))
        .arg("--cache-dir")
        .arg(dir.join("compiled"))
        .args(args)
        .output()
        .expect("the host binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `push <module> <registry>/guests/writer:<tag>`, dated `created`: the
/// reference pinned to its digest.
fn push_tag(dir: &Path, module: &Path, address: &str, tag: &str, created: u32) -> String {
    let reference = format!("{address}/guests/writer:{tag}");
    let out = host_at(
        dir,
        Some(created),
        &[
            "push",
            module.to_str().unwrap(),
            &reference,
            "--insecure-registry",
            address,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// `pull <reference>` into `guests` as `name`, under the verification
/// policy `policy`.
fn pull_under(
    dir: &Path,
    reference: &str,
    guests: &Path,
    name: &str,
    policy: &Path,
    address: &str,
) -> Output {
    host(
        dir,
        &[
            "pull",
            reference,
            "--guests",
            guests.to_str().unwrap(),
            "--name",
            name,
            "--pulled-dir",
            dir.join("pulled").to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--insecure-registry",
            address,
        ],
    )
}

/// The writer test guest as a guests directory keeps it: `writer.wasm`,
/// its reasons golden list, and two of its fixtures with their goldens.
fn writer_in(dir: &Path) -> PathBuf {
    let module = dir.join("writer.wasm");
    std::fs::copy(guest_wasm("writer-guest"), &module).expect("the writer guest");
    let reasons = host(dir, &["reasons", module.to_str().unwrap()]);
    assert!(reasons.status.success(), "{}", text(&reasons.stderr));
    std::fs::write(dir.join("writer.reasons"), &reasons.stdout).unwrap();
    let fixtures = dir.join("writer.fixtures");
    std::fs::create_dir_all(&fixtures).unwrap();
    let source = paths::workspace().join("guests/testing/writer/fixtures");
    for name in [
        "gate-auto.yaml",
        "gate-auto.golden",
        "gate-observe.yaml",
        "gate-observe.golden",
    ] {
        std::fs::copy(source.join(name), fixtures.join(name)).unwrap();
    }
    module
}

/// A module pushed with what it ships is pulled by digest and placed
/// whole; its fixtures replay beside it. A tag moved later moves no pull
/// pinned before; with the registry gone, a pinned pull is served from the
/// local cache and a tag cannot be resolved.
#[test]
fn a_module_pushed_with_its_files_is_pulled_by_digest_and_placed_whole() {
    let registry = Registry::start();
    let address = registry.address.clone();
    let insecure = ["--insecure-registry", address.as_str()];
    let source = scratch("source");
    let module = writer_in(&source);
    let tag = format!("{address}/guests/writer:v1");

    let pushed = host(
        &source,
        &[&["push", module.to_str().unwrap(), &tag][..], &insecure].concat(),
    );
    assert!(pushed.status.success(), "{}", text(&pushed.stderr));
    let pinned = text(&pushed.stdout).trim().to_owned();
    assert!(
        pinned.starts_with(&format!("{address}/guests/writer@sha256:")),
        "{pinned}"
    );
    assert!(
        text(&pushed.stderr).contains("(kind Widget, 5 file(s) beside it)"),
        "{}",
        text(&pushed.stderr)
    );

    let guests = scratch("guests");
    let pulled_dir = scratch("pulled");
    let pull = |reference: &str, name: &str| {
        host(
            &source,
            &[
                &[
                    "pull",
                    reference,
                    "--guests",
                    guests.to_str().unwrap(),
                    "--name",
                    name,
                    "--pulled-dir",
                    pulled_dir.to_str().unwrap(),
                ][..],
                &insecure,
            ]
            .concat(),
        )
    };
    let out = pull(&tag, "writer");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        format!("{pinned} {}", guests.join("writer.wasm").display()),
        "the tag pinned to the digest pushed"
    );
    for file in [
        "writer.wasm",
        "writer.reasons",
        "writer.fixtures/gate-auto.yaml",
        "writer.fixtures/gate-auto.golden",
        "writer.fixtures/gate-observe.yaml",
        "writer.fixtures/gate-observe.golden",
    ] {
        assert_eq!(
            std::fs::read(guests.join(file)).unwrap(),
            std::fs::read(source.join(file)).unwrap(),
            "{file}"
        );
    }
    let replay = host(
        &source,
        &[
            "test",
            guests.join("writer.wasm").to_str().unwrap(),
            guests
                .join("writer.fixtures/gate-auto.yaml")
                .to_str()
                .unwrap(),
            guests
                .join("writer.fixtures/gate-observe.yaml")
                .to_str()
                .unwrap(),
        ],
    );
    assert!(replay.status.success(), "{}", text(&replay.stdout));

    // The tag moves to another module; the pinned digest does not.
    let other = source.join("kstatus.wasm");
    std::fs::copy(guest_wasm("kstatus-guest"), &other).unwrap();
    let moved = host(
        &source,
        &[&["push", other.to_str().unwrap(), &tag][..], &insecure].concat(),
    );
    assert!(moved.status.success(), "{}", text(&moved.stderr));
    assert_ne!(text(&moved.stdout).trim(), pinned);
    let again = pull(&pinned, "pinned");
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(
        std::fs::read(guests.join("pinned.wasm")).unwrap(),
        std::fs::read(&module).unwrap(),
        "a pinned pull is the module pushed"
    );
    assert!(
        text(&again.stderr).contains("from the local cache"),
        "{}",
        text(&again.stderr)
    );

    registry.stop();
    let cached = pull(&pinned, "cached");
    assert!(cached.status.success(), "{}", text(&cached.stderr));
    assert!(guests.join("cached.wasm").exists());
    let gone = pull(&tag, "gone");
    assert_eq!(gone.status.code(), Some(2));
    assert!(
        text(&gone.stderr).contains("resolving the tag"),
        "{}",
        text(&gone.stderr)
    );
    assert!(!guests.join("gone.wasm").exists());
}

/// An artifact whose config names another contract's imports is refused
/// from its config: the component it lists is never downloaded (its blob
/// is not even in the registry), and the module already in the guests
/// directory stays. An artifact that is no guest module is refused by
/// what it is.
#[tokio::test]
async fn an_artifact_of_another_contract_is_refused_from_its_config() {
    let registry = Registry::start();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.address.clone()]),
        ..ClientConfig::default()
    });
    let push = async |repository: &str, config_media_type: &str, config: serde_json::Value| {
        let reference: Reference = format!("{}/{repository}:v1", registry.address)
            .parse()
            .unwrap();
        let absent = ImageLayer::new(b"never uploaded".to_vec(), "application/wasm".into(), None);
        let config = Config::new(
            serde_json::to_vec(&config).unwrap(),
            config_media_type.into(),
            None,
        );
        let manifest = OciImageManifest::build(&[absent], &config, None);
        client
            .push_blob(&reference, config.data.clone(), &manifest.config.digest)
            .await
            .unwrap();
        client
            .push_manifest(&reference, &manifest.into())
            .await
            .unwrap();
        reference.to_string()
    };
    let future = push(
        "guests/future",
        "application/vnd.wasm.config.v0+json",
        json!({"created": "2026-12-03T00:00:00Z", "architecture": "wasm", "os": "wasip2",
               "layerDigests": [],
               "component": {"imports": ["reconciler:guest/facts@9.0.0"],
                             "exports": ["reconciler:guest/reconciler@9.0.0"]}}),
    )
    .await;
    let image = push(
        "images/app",
        "application/vnd.oci.image.config.v1+json",
        json!({"architecture": "amd64", "os": "linux"}),
    )
    .await;

    let dir = scratch("refused");
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests).unwrap();
    std::fs::write(guests.join("future.wasm"), b"the module serving now").unwrap();
    let pull = |reference: &str| {
        let pulled_dir = dir.join("pulled");
        let args = [
            "pull",
            reference,
            "--guests",
            guests.to_str().unwrap(),
            "--pulled-dir",
            pulled_dir.to_str().unwrap(),
            "--insecure-registry",
            registry.address.as_str(),
        ];
        host(&dir, &args)
    };
    let refused: BTreeMap<&str, String> = [("future", &future), ("image", &image)]
        .into_iter()
        .map(|(name, reference)| {
            let out = pull(reference);
            assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
            (name, text(&out.stderr))
        })
        .collect();
    assert!(
        refused["future"]
            .contains("cannot be served by this host (read from its config, nothing downloaded)")
            && refused["future"].contains("reconciler:guest/facts@9.0.0"),
        "{}",
        refused["future"]
    );
    assert!(
        refused["image"].contains(
            "is not a guest module: its config is application/vnd.oci.image.config.v1+json"
        ),
        "{}",
        refused["image"]
    );
    assert_eq!(
        std::fs::read(guests.join("future.wasm")).unwrap(),
        b"the module serving now",
        "the module already there stays"
    );
    assert_eq!(
        std::fs::read_dir(&guests).unwrap().count(),
        1,
        "nothing placed beside it"
    );
}

/// Who could break the policy: whoever may push to the registry. A
/// module signed by the key the policy names for its kind is pulled; one
/// unsigned, or signed by another key, is refused naming the policy and
/// what is missing, and nothing is placed; one under whose signature tag
/// another module's signatures were copied is refused saying they were
/// made for another digest; a kind the policy does not name is refused. A module re-annotated as another kind, to fall under a
/// laxer rule, passes that rule but is not placed: what it serves is read
/// from the module itself. With the registry gone, a module kept in the
/// cache is not served under the policy: its signatures cannot be read.
#[tokio::test]
async fn only_a_module_signed_as_its_kinds_rule_asks_is_pulled() {
    let registry = Registry::start();
    let address = registry.address.clone();
    let dir = scratch("signed");
    let module = writer_in(&dir);
    let release = KeyPair::generate(&dir, "release");
    let other = KeyPair::generate(&dir, "other");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        "kinds:\n  Widget:\n    allOf: [release.pub]\n  Gadget:\n    allowUnsigned: true\n",
    )
    .unwrap();
    let lacking = dir.join("lacking.yaml");
    std::fs::write(&lacking, "kinds:\n  Gadget: {allowUnsigned: true}\n").unwrap();

    let push = |tag: &str, created: u32| push_tag(&dir, &module, &address, tag, created);
    let signed = push("signed", 1);
    release.sign(&signed);
    let unsigned = push("unsigned", 2);
    let by_other = push("other", 3);
    other.sign(&by_other);
    // The signed module's signatures copied to the tag cosign would keep
    // another module's under.
    let copied = push("copied", 4);

    // The unsigned module's manifest, annotated as a Gadget, pushed as
    // someone with push rights would.
    let forged = forge_as_gadget(&address, &unsigned).await;
    // The signed module's signatures copied under the tag of `copied`.
    let Copied {
        signed_digest,
        copied_tag,
    } = copy_signatures(&address, &signed, &copied).await;

    let guests = scratch("signed-guests");
    let pull = |reference: &str, name: &str, policy: &Path| {
        pull_under(&dir, reference, &guests, name, policy, &address)
    };
    let out = pull(&signed, "signed", &policy);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(kind Widget, signed by release.pub)"),
        "{}",
        text(&out.stderr)
    );
    assert!(guests.join("signed.wasm").exists());

    let refused = |reference: &str, name: &str, policy: &Path| {
        let out = pull(reference, name, policy);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        assert!(
            !guests.join(format!("{name}.wasm")).exists(),
            "{name} is not placed"
        );
        text(&out.stderr)
    };
    let by_policy = format!("is refused by the verification policy {}", policy.display());
    let error = refused(&unsigned, "unsigned", &policy);
    assert!(
        error.contains(&format!(
            "{by_policy} for kind Widget: it carries no cosign signature (none under the tag sha256-<digest>.sig, none in a Sigstore bundle among its referrers)"
        )),
        "{error}"
    );
    let error = refused(&by_other, "other", &policy);
    assert!(
        error.contains(&format!(
            "{by_policy} for kind Widget: not signed by release.pub (of allOf; 1 signature(s) checked)"
        )),
        "{error}"
    );
    let error = refused(&copied, "copied", &policy);
    assert!(
        error.contains(&format!(
            "{by_policy} for kind Widget: the cosign signature(s) under its tag {copied_tag} were made for another digest ({signed_digest}), not its own: none signs it"
        )),
        "{error}"
    );
    let error = refused(&signed, "lacking", &lacking);
    assert!(
        error.contains(&format!(
            "is refused by the verification policy {}: the policy names no kind Widget",
            lacking.display()
        )),
        "{error}"
    );
    let error = refused(&forged.to_string(), "forged", &policy);
    assert!(
        error.contains("was published for kind Gadget but its module serves Widget: not placed"),
        "{error}"
    );

    registry.stop();
    let error = refused(&signed, "offline", &policy);
    assert!(
        error.contains(&format!(
            "{by_policy} for kind Widget: its signatures could not be read from the registry"
        )),
        "{error}"
    );
    assert_eq!(
        std::fs::read_dir(&guests)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("wasm".as_ref()))
            .count(),
        1,
        "only the signed module is placed"
    );
}

/// A client of the registry at `address`, plain HTTP to it.
fn registry_client(address: &str) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![address.to_owned()]),
        ..ClientConfig::default()
    })
}

/// The unsigned module's manifest, annotated as a Gadget, pushed as
/// someone with push rights would: the forged reference.
async fn forge_as_gadget(address: &str, unsigned: &str) -> Reference {
    let client = registry_client(address);
    let source: Reference = unsigned.parse().unwrap();
    let (mut manifest, _) = client
        .pull_image_manifest(&source, &oci_client::secrets::RegistryAuth::Anonymous)
        .await
        .unwrap();
    manifest
        .annotations
        .as_mut()
        .expect("the host annotates what it pushes")
        .insert("dev.reconciler.guest.kind".into(), "Gadget".into());
    let forged: Reference = format!("{address}/guests/writer:forged").parse().unwrap();
    client
        .push_manifest(&forged, &manifest.into())
        .await
        .unwrap();
    forged
}

/// What [`copy_signatures`] copied: the digest the signatures were made
/// for, and the tag they were copied to.
struct Copied {
    signed_digest: String,
    copied_tag: String,
}

/// The signatures of `signed` copied to the tag cosign would keep those of
/// `copied` under.
async fn copy_signatures(address: &str, signed: &str, copied: &str) -> Copied {
    let client = registry_client(address);
    let signature_tag = |pinned: &str| {
        let digest = pinned.rsplit_once('@').unwrap().1;
        let tag = format!("{}.sig", digest.replace(':', "-"));
        (
            digest.to_owned(),
            tag.clone(),
            format!("{address}/guests/writer:{tag}"),
        )
    };
    let (signed_digest, signed_tag, _) = signature_tag(signed);
    let (_, copied_tag, copied_signatures) = signature_tag(copied);
    let (signatures, _) = client
        .pull_image_manifest(
            &format!("{address}/guests/writer:{signed_tag}")
                .parse()
                .unwrap(),
            &oci_client::secrets::RegistryAuth::Anonymous,
        )
        .await
        .unwrap();
    client
        .push_manifest(&copied_signatures.parse().unwrap(), &signatures.into())
        .await
        .unwrap();
    Copied {
        signed_digest,
        copied_tag,
    }
}

/// Issue 49: a module of any size was pulled (every replica pulls, so
/// one near the Pod's memory limit takes every replica down). Who could
/// break it: whoever may push to the registry, through the OCI API (`push`
/// refuses a module past the bound), with the trusted key's signature. A
/// signed module of 70 MB is refused from its manifest, naming its size
/// and the 64 MiB bound, no blob of it asked of the registry, nothing
/// placed; one whose manifest gives the 70 MB component 1 MB (a registry
/// may lie) is cut off at that size; a signed module beside whose
/// signature a 70 MB blob poses as another is refused, the blob unread.
#[tokio::test]
async fn a_module_past_the_bound_is_refused_before_it_is_downloaded() {
    let registry = Registry::start();
    let address = registry.address.clone();
    let dir = scratch("too-large");
    let module = writer_in(&dir);
    let release = KeyPair::generate(&dir, "release");
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, "kinds:\n  Widget:\n    allOf: [release.pub]\n").unwrap();
    let source = push_tag(&dir, &module, &address, "source", 1);
    let large = registry
        .publish_grown(&source, "large", 70_000_000, None)
        .await;
    let lying = registry
        .publish_grown(&source, "lying", 70_000_000, Some(1_000_000))
        .await;
    release.sign(&large);
    release.sign(&lying);
    let guests = scratch("too-large-guests");
    let refused = |reference: &str, name: &str| {
        let out = pull_under(&dir, reference, &guests, name, &policy, &address);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        text(&out.stderr)
    };

    let (asked, blobs) = (registry.requests().len(), registry.blobs_read().len());
    let error = refused(&large, "large");
    assert!(
        error.contains(&format!(
            "{large} is too large to serve: its manifest gives its blobs 7000"
        )) && error.contains(
            "more than the 64 MiB (67108864 bytes) a guest module may be; nothing downloaded"
        ),
        "{error}"
    );
    let since = registry.requests()[asked..].to_vec();
    assert!(
        since.iter().any(|r| r.contains("/manifests/")),
        "its manifest was read: {since:?}"
    );
    assert_eq!(
        registry.blobs_read()[blobs..],
        [] as [String; 0],
        "no blob of it was asked for: {since:?}"
    );

    let error = refused(&lying, "lying");
    assert!(
        error.contains(&format!(
            "{lying} is too large to serve: the registry sends the component past the 1000000 bytes its manifest gives it; refused at that bound"
        )),
        "{error}"
    );

    // The module's own signature, and beside it under its signature tag a
    // layer of 70 MB (the large component's blob) posing as another.
    release.sign(&source);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![address.clone()]),
        ..ClientConfig::default()
    });
    let anonymous = oci_client::secrets::RegistryAuth::Anonymous;
    let (large_manifest, _) = client
        .pull_image_manifest(&large.parse().unwrap(), &anonymous)
        .await
        .unwrap();
    let mut posing = large_manifest
        .layers
        .iter()
        .find(|l| l.media_type == "application/wasm")
        .unwrap()
        .clone();
    posing.media_type = "application/vnd.dev.cosign.simplesigning.v1+json".into();
    posing.annotations = Some(
        [(
            "dev.cosignproject.cosign/signature".to_owned(),
            "AAAA".to_owned(),
        )]
        .into(),
    );
    let digest = source.rsplit_once('@').unwrap().1;
    let signature_tag: Reference =
        format!("{address}/guests/writer:{}.sig", digest.replace(':', "-"))
            .parse()
            .unwrap();
    let (mut signatures, _) = client
        .pull_image_manifest(&signature_tag, &anonymous)
        .await
        .unwrap();
    signatures.layers.push(posing.clone());
    client
        .push_manifest(&signature_tag, &signatures.into())
        .await
        .unwrap();
    let blobs = registry.blobs_read().len();
    let error = refused(&source, "source");
    assert!(
        error.contains(&format!(
            "for kind Widget: a signature stored for it is too large to read: {signature_tag}: its manifest gives a signature blob {} bytes, more than the 1024 KiB a signature may be; not downloaded",
            posing.size
        )),
        "{error}"
    );
    assert!(
        !registry.blobs_read()[blobs..].contains(&posing.digest),
        "the blob posing as a signature was not asked for"
    );
    assert_eq!(
        std::fs::read_dir(&guests).unwrap().count(),
        0,
        "nothing placed"
    );
}

/// Keyless identities, against a trust root given to the host: a module
/// signed (by the real cosign) with a certificate the trusted authority
/// issued to the identity the policy names is pulled, the identity named;
/// who holds push rights and a certificate from another authority, or one
/// the trusted authority issued to someone else, is refused naming the
/// identity missing and why the certificate was not taken.
#[test]
fn a_module_signed_as_the_identity_its_kinds_rule_names_is_pulled() {
    const ISSUER: &str = "https://token.actions.example";
    const RELEASE: &str = "release@ci.example";
    let registry = Registry::start();
    let address = registry.address.clone();
    let dir = scratch("keyless");
    let module = writer_in(&dir);
    let trusted = Authority::new(&dir, "trusted");
    let elsewhere = Authority::new(&dir, "elsewhere");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "trustRoots: trusted-root.pem\nkinds:\n  Widget:\n    allOf:\n    - issuer: {ISSUER}\n      subject: {RELEASE}\n"
        ),
    )
    .unwrap();
    let keys = KeyPair::generate(&dir, "ephemeral");
    let signed = push_tag(&dir, &module, &address, "keyless", 1);
    keys.sign_as(&signed, &trusted.certify(&keys, ISSUER, RELEASE, 1));
    let forged = push_tag(&dir, &module, &address, "forged", 2);
    keys.sign_as(&forged, &elsewhere.certify(&keys, ISSUER, RELEASE, 1));
    let someone = push_tag(&dir, &module, &address, "someone", 3);
    keys.sign_as(
        &someone,
        &trusted.certify(&keys, ISSUER, "someone@ci.example", 1),
    );

    let guests = scratch("keyless-guests");
    let pull =
        |reference: &str, name: &str| pull_under(&dir, reference, &guests, name, &policy, &address);
    let identity = format!("{RELEASE} (issuer {ISSUER})");
    let out = pull(&signed, "signed");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("(kind Widget, signed by {identity})")),
        "{}",
        text(&out.stderr)
    );
    let refused = |reference: &str, name: &str| {
        let out = pull(reference, name);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        assert!(!guests.join(format!("{name}.wasm")).exists());
        text(&out.stderr)
    };
    let missing = format!(
        "is refused by the verification policy {} for kind Widget: not signed by {identity} (of allOf; 1 signature(s) checked)",
        policy.display()
    );
    let error = refused(&forged, "forged");
    assert!(error.contains(&missing), "{error}");
    assert!(
        error.contains("a keyless signature not taken: its certificate")
            && error.contains("does not chain to the policy's trust roots"),
        "{error}"
    );
    let error = refused(&someone, "someone");
    assert!(error.contains(&missing), "{error}");
    assert!(!error.contains("not taken"), "{error}");
    assert!(guests.join("signed.wasm").exists());
}

/// Keyless as public Fulcio signs: a certificate valid ten minutes, long
/// expired when the host checks it, is taken because a transparency log
/// the policy gives attests the signature was made while it was valid
/// (its entry attached by the real cosign). The same certificate without
/// the entry, or with an entry from a log the policy does not give, is
/// refused, saying why.
#[test]
fn a_short_lived_certificate_is_taken_at_the_time_a_given_log_attests() {
    const ISSUER: &str = "https://token.actions.example";
    const RELEASE: &str = "release@ci.example";
    let registry = Registry::start();
    let address = registry.address.clone();
    let dir = scratch("logged");
    let module = writer_in(&dir);
    let trusted = Authority::new(&dir, "trusted");
    let (log, elsewhere) = (
        TransparencyLog::new(&dir, "rekor"),
        TransparencyLog::new(&dir, "elsewhere-log"),
    );
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "trustRoots: trusted-root.pem\ntransparencyLogs: rekor.pub\nkinds:\n  Widget:\n    allOf:\n    - issuer: {ISSUER}\n      subject: {RELEASE}\n"
        ),
    )
    .unwrap();
    let keys = KeyPair::generate(&dir, "ephemeral");
    let signed_at = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let certificate = trusted.certify_between(
        &keys,
        ISSUER,
        RELEASE,
        (
            signed_at - time::Duration::minutes(1),
            signed_at + time::Duration::minutes(9),
        ),
    );
    let logged = push_tag(&dir, &module, &address, "logged", 1);
    keys.sign_logged(&logged, &certificate, &log, signed_at.unix_timestamp());
    let unlogged = push_tag(&dir, &module, &address, "unlogged", 2);
    keys.sign_as(&unlogged, &certificate);
    let foreign = push_tag(&dir, &module, &address, "foreign", 3);
    keys.sign_logged(
        &foreign,
        &certificate,
        &elsewhere,
        signed_at.unix_timestamp(),
    );

    let guests = scratch("logged-guests");
    let pull =
        |reference: &str, name: &str| pull_under(&dir, reference, &guests, name, &policy, &address);
    let out = pull(&logged, "logged");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!(
            "(kind Widget, signed by {RELEASE} (issuer {ISSUER}))"
        )),
        "{}",
        text(&out.stderr)
    );
    for (reference, name, why) in [
        (&unlogged, "unlogged", "is not valid at"),
        (&foreign, "foreign", "not one the policy gives"),
    ] {
        let out = pull(reference, name);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        let error = text(&out.stderr);
        assert!(
            error.contains(&format!("not signed by {RELEASE} (issuer {ISSUER})"))
                && error.contains(why),
            "{name}: {error}"
        );
        assert!(!guests.join(format!("{name}.wasm")).exists());
    }
}

/// Cosign 3's default, Sigstore's bundle format: a DSSE envelope stored
/// among the module's referrers (here the tag schema: the loopback
/// registry has no referrers API), signed by the real cosign with
/// `--new-bundle-format`. Signed by the policy's key it is pulled; by
/// another key refused; as a keyless identity, its certificate in the
/// bundle, pulled under an identity rule.
#[test]
fn a_module_signed_in_the_bundle_format_is_pulled_as_its_rule_asks() {
    const ISSUER: &str = "https://token.actions.example";
    const RELEASE: &str = "release@ci.example";
    let registry = Registry::start();
    let address = registry.address.clone();
    let dir = scratch("bundled");
    let module = writer_in(&dir);
    let release = KeyPair::generate(&dir, "release");
    let other = KeyPair::generate(&dir, "other");
    let trusted = Authority::new(&dir, "trusted");
    let (keyed, keyless) = (dir.join("keyed.yaml"), dir.join("keyless.yaml"));
    std::fs::write(&keyed, "kinds:\n  Widget:\n    allOf: [release.pub]\n").unwrap();
    std::fs::write(
        &keyless,
        format!(
            "trustRoots: trusted-root.pem\nkinds:\n  Widget:\n    allOf:\n    - issuer: {ISSUER}\n      subject: {RELEASE}\n"
        ),
    )
    .unwrap();
    let signed = push_tag(&dir, &module, &address, "bundled", 1);
    release.sign_bundled(&signed);
    let by_other = push_tag(&dir, &module, &address, "bundled-other", 2);
    other.sign_bundled(&by_other);
    let identity = push_tag(&dir, &module, &address, "bundled-keyless", 3);
    other.sign_bundled_as(&identity, &trusted.certify(&other, ISSUER, RELEASE, 1));

    let guests = scratch("bundled-guests");
    let pull = |reference: &str, name: &str, policy: &Path| {
        pull_under(&dir, reference, &guests, name, policy, &address)
    };
    for (reference, name, policy, signer) in [
        (&signed, "signed", &keyed, "release.pub".to_owned()),
        (
            &identity,
            "identity",
            &keyless,
            format!("{RELEASE} (issuer {ISSUER})"),
        ),
    ] {
        let out = pull(reference, name, policy);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(&format!("(kind Widget, signed by {signer})")),
            "{name}: {}",
            text(&out.stderr)
        );
    }
    let out = pull(&by_other, "other", &keyed);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("not signed by release.pub (of allOf; 1 signature(s) checked)"),
        "{}",
        text(&out.stderr)
    );
    assert!(!guests.join("other.wasm").exists());
}

/// A private registry (HTTP Basic) is reached with the credentials of a
/// Docker config file, the one cosign reads too: push, the signatures and
/// pull. Without them, or with a wrong password, nothing is pushed or
/// placed, and no error prints the password.
#[test]
fn a_private_registry_is_reached_with_a_docker_configs_credentials() {
    use base64::Engine;
    let registry = Registry::private("ci", "s3cr3t-pw");
    let address = registry.address.clone();
    let dir = scratch("private");
    let module = writer_in(&dir);
    let release = KeyPair::generate(&dir, "release");
    let config = |password: &str| {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("ci:{password}"));
        json!({"auths": {address.as_str(): {"auth": auth}}}).to_string()
    };
    std::fs::write(dir.join("config.json"), config("s3cr3t-pw")).unwrap();
    std::fs::write(dir.join("wrong.json"), config("guessed-pw")).unwrap();
    std::fs::write(
        dir.join("policy.yaml"),
        "kinds:\n  Widget:\n    allOf: [release.pub]\n",
    )
    .unwrap();
    let tag = format!("{address}/guests/writer:v1");
    let with = |file: Option<&str>, args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend(["--insecure-registry".into(), address.clone()]);
        if let Some(file) = file {
            all.extend([
                "--registry-config".into(),
                dir.join(file).display().to_string(),
            ]);
        }
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        host(&dir, &all)
    };
    let push = ["push", module.to_str().unwrap(), tag.as_str()];
    let denied = with(None, &push);
    assert_eq!(denied.status.code(), Some(2), "{}", text(&denied.stderr));
    let pushed = with(Some("config.json"), &push);
    assert!(pushed.status.success(), "{}", text(&pushed.stderr));
    let pinned = text(&pushed.stdout).trim().to_owned();
    release.sign(&pinned);

    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests).unwrap();
    let pull = |name: &str| {
        [
            "pull",
            tag.as_str(),
            "--guests",
            guests.to_str().unwrap(),
            "--name",
            name,
            "--pulled-dir",
            dir.join("pulled").to_str().unwrap(),
            "--policy",
            dir.join("policy.yaml").to_str().unwrap(),
        ]
        .map(str::to_owned)
    };
    for (file, name) in [(None, "anonymous"), (Some("wrong.json"), "wrong")] {
        let pull = pull(name);
        let args: Vec<&str> = pull.iter().map(String::as_str).collect();
        let out = with(file, &args);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(stderr.contains("resolving the tag"), "{name}: {stderr}");
        let sent = match file {
            None => "(sent anonymously: no registry config file (--registry-config))".to_owned(),
            Some(file) => format!(
                "(sent as ci, the credentials {} gives {address})",
                dir.join(file).display()
            ),
        };
        assert!(stderr.contains(&sent), "{name}: {stderr}");
        assert!(!stderr.contains("guessed-pw"), "{name}: {stderr}");
        assert!(!guests.join(format!("{name}.wasm")).exists());
    }
    let pull = pull("private");
    let args: Vec<&str> = pull.iter().map(String::as_str).collect();
    let out = with(Some("config.json"), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(kind Widget, signed by release.pub)"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        text(&out.stdout).trim(),
        format!("{pinned} {}", guests.join("private.wasm").display())
    );
}
