//! An OCI registry on loopback: go-containerregistry's in-memory
//! distribution server, run by the Go program `tests/registry` (built once
//! per test binary), one per [`Registry::start`]. It exits when its stdin
//! closes: when the test drops it, or however the test binary ends. Each
//! keeps an access log, the requests it was asked ([`Registry::requests`]);
//! [`Registry::publish_grown`] publishes a module as anyone with push rights
//! can, past the bound `reconciler-host push` keeps.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use reconciler_host::runtime::artifacts::digest;

use crate::{go_programs, paths};

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// `tests/registry`, built once per test binary.
fn program() -> &'static PathBuf {
    PROGRAM.get_or_init(|| go_programs::build("registry"))
}

/// A registry serving on loopback, over plain HTTP.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:<port>`: what references start with, and what
    /// `--insecure-registry` names.
    pub address: String,
    /// Where it appends each request as it arrives.
    access_log: PathBuf,
}

impl Registry {
    /// Starts one and waits until it listens.
    pub fn start() -> Registry {
        Registry::spawn(&[])
    }

    /// Starts one that answers only requests carrying `user` and
    /// `password` (HTTP Basic), as a private registry does.
    pub fn private(user: &str, password: &str) -> Registry {
        Registry::spawn(&["-basic-auth", &format!("{user}:{password}")])
    }

    fn spawn(args: &[&str]) -> Registry {
        static STARTED: AtomicU32 = AtomicU32::new(0);
        let access_log = paths::target_tmpdir().join("registry").join(format!(
            "access-{}-{}.log",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&access_log);
        let mut child = Command::new(program())
            .args(args)
            .arg("-access-log")
            .arg(&access_log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the registry starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("the registry prints its address");
        Registry {
            child,
            address: line.trim().to_owned(),
            access_log,
        }
    }

    /// The requests it was asked so far, in order, as `METHOD /path`
    /// (`GET /v2/<repository>/blobs/<digest>`): each is logged as it
    /// arrives, so every request a client has had an answer to is here.
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.access_log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The blobs it was asked for (a `GET` of `/v2/.../blobs/<digest>`),
    /// by digest, in order.
    pub fn blobs_read(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter_map(|r| r.strip_prefix("GET /v2/"))
            .filter_map(|path| Some(path.split_once("/blobs/")?.1.to_owned()))
            .collect()
    }

    /// Publishes again, as anyone with push rights can through the OCI API
    /// (not `reconciler-host push`, which refuses a module past its bound),
    /// the module pinned as `source` under `tag` of its repository: its
    /// component grown to at least `bytes` by a custom section (a component
    /// the host still loads and serves), the manifest giving the
    /// component's size as `declared` if given (a registry may lie), else
    /// as it is. Returns the reference pinned to the new manifest's digest.
    pub async fn publish_grown(
        &self,
        source: &str,
        tag: &str,
        bytes: usize,
        declared: Option<i64>,
    ) -> String {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::HttpsExcept(vec![self.address.clone()]),
            ..ClientConfig::default()
        });
        let anonymous = RegistryAuth::Anonymous;
        let source: Reference = source.parse().expect("a pinned reference");
        let target = Reference::with_tag(
            source.registry().to_owned(),
            source.repository().to_owned(),
            tag.to_owned(),
        );
        let (mut manifest, _) = client
            .pull_image_manifest(&source, &anonymous)
            .await
            .expect("the source's manifest");
        let layer = manifest
            .layers
            .iter_mut()
            .find(|l| l.media_type == "application/wasm")
            .expect("a component layer");
        let mut wasm = Vec::new();
        client
            .pull_blob(&source, &*layer, &mut wasm)
            .await
            .expect("the component");
        let grown = grown(wasm, bytes);
        let pushed = async |bytes: Vec<u8>| {
            let digest = format!("sha256:{}", digest(&bytes));
            client
                .push_blob(&target, bytes, &digest)
                .await
                .expect("a blob pushed");
            digest
        };
        let size = i64::try_from(grown.len()).expect("a size");
        let old = std::mem::replace(&mut layer.digest, pushed(grown).await);
        layer.size = declared.unwrap_or(size);
        let new = layer.digest.clone();
        // The config lists the layers' digests.
        let mut config = Vec::new();
        client
            .pull_blob(&source, &manifest.config, &mut config)
            .await
            .expect("the config");
        let mut config: serde_json::Value = serde_json::from_slice(&config).expect("JSON");
        for d in config["layerDigests"].as_array_mut().into_iter().flatten() {
            if *d == old.as_str() {
                *d = new.clone().into();
            }
        }
        let config = serde_json::to_vec(&config).expect("JSON");
        manifest.config.size = i64::try_from(config.len()).expect("a size");
        manifest.config.digest = pushed(config).await;
        client
            .push_manifest(&target, &manifest.into())
            .await
            .expect("the manifest pushed");
        let digest = client
            .fetch_manifest_digest(&target, &anonymous)
            .await
            .expect("its digest");
        format!("{}/{}@{digest}", self.address, source.repository())
    }

    /// Stops it now (its contents are gone with it).
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `component` with a custom section appended (allowed anywhere in a
/// component, ignored by what runs it), at least `bytes` long in all.
fn grown(mut component: Vec<u8>, bytes: usize) -> Vec<u8> {
    let name = b"padding";
    let padding = bytes.saturating_sub(component.len());
    let mut section = leb128(name.len());
    section.extend_from_slice(name);
    section.resize(section.len() + padding, 0);
    component.push(0);
    component.extend(leb128(section.len()));
    component.extend(section);
    component
}

/// `n` as an unsigned LEB128.
fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.kill();
    }
}
