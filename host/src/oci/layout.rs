//! The CNCF TAG Runtime layout of a wasm artifact, as the host pushes and
//! reads a guest module: a config (`application/vnd.wasm.config.v0+json`)
//! naming the component's imports and exports, so a puller checks the
//! contract before it downloads the component; the component's layer
//! (`application/wasm`); and what a guests directory keeps beside a module
//! (its golden lists and fixtures), each a layer titled by its name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};

use super::OciError;
use crate::runtime::sandbox;

pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const WASM_MEDIA_TYPE: &str = "application/wasm";
/// A file a module ships beside it (`reasons`, `aspects`,
/// `fixtures/<name>.yaml` and `.golden`), titled by that name.
pub const FILE_MEDIA_TYPE: &str = "application/vnd.reconciler.guest.file.v1";
/// The OCI annotation naming a layer's file.
pub const TITLE: &str = "org.opencontainers.image.title";
/// The manifest's annotation naming the kind the module serves: what a
/// verification policy's rule is looked up by, covered by the signature
/// over the manifest.
pub const KIND: &str = "dev.reconciler.guest.kind";

/// The artifact's config, as the TAG Runtime layout spells it.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// RFC 3339; from `SOURCE_DATE_EPOCH` when set, so that a rebuild of
    /// the same module pushes the same digest.
    pub created: String,
    pub architecture: String,
    pub os: String,
    pub layer_digests: Vec<String>,
    pub component: Option<ComponentNames>,
}

/// The names a component imports and exports at its top level.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ComponentNames {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

/// A guest module and the files a guests directory keeps beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packaged {
    pub wasm: Vec<u8>,
    /// By name relative to the module's stem (`reasons`, `aspects`,
    /// `fixtures/<name>.yaml` and `.golden`), sorted.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Packaged {
    /// The module at `path` (`<dir>/<stem>.wasm`) with what a guests
    /// directory keeps beside it: `<stem>.reasons`, `<stem>.aspects` and
    /// `<stem>.fixtures/*.yaml` with their goldens, those that exist.
    pub fn read(path: &Path) -> Result<Packaged, OciError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| OciError::Io { path, source }
        };
        let wasm = std::fs::read(path).map_err(io(path))?;
        let beside = |ext: &str| path.with_extension(ext);
        let mut files = Vec::new();
        for list in ["reasons", "aspects"] {
            match std::fs::read(beside(list)) {
                Ok(bytes) => files.push((list.to_owned(), bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&beside(list))(e)),
            }
        }
        let fixtures = beside("fixtures");
        if fixtures.is_dir() {
            for entry in std::fs::read_dir(&fixtures).map_err(io(&fixtures))? {
                let entry = entry.map_err(io(&fixtures))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if (name.ends_with(".yaml") || name.ends_with(".golden")) && entry.path().is_file()
                {
                    let bytes = std::fs::read(entry.path()).map_err(io(&entry.path()))?;
                    files.push((format!("fixtures/{name}"), bytes));
                }
            }
        }
        files.sort();
        Ok(Packaged { wasm, files })
    }

    /// The config of this module's artifact, its layers' digests `layers`.
    pub fn config(&self, created: String, layers: Vec<String>) -> Result<WasmConfig, OciError> {
        let names = |e| OciError::NotAComponent {
            detail: format!("{e}"),
        };
        Ok(WasmConfig {
            created,
            architecture: "wasm".into(),
            os: "wasip2".into(),
            layer_digests: layers,
            component: Some(ComponentNames {
                imports: sandbox::imports(&self.wasm).map_err(names)?,
                exports: sandbox::exports(&self.wasm).map_err(names)?,
            }),
        })
    }

    /// The artifact's layers, config and manifest (annotated with the
    /// `kind` the module serves), `created` its time.
    pub fn artifact(
        &self,
        created: String,
        kind: &str,
    ) -> Result<(Vec<ImageLayer>, Config, OciImageManifest), OciError> {
        let mut layers = vec![ImageLayer::new(
            self.wasm.clone(),
            WASM_MEDIA_TYPE.into(),
            None,
        )];
        for (name, bytes) in &self.files {
            let title = BTreeMap::from([(TITLE.to_owned(), name.clone())]);
            layers.push(ImageLayer::new(
                bytes.clone(),
                FILE_MEDIA_TYPE.into(),
                Some(title),
            ));
        }
        let digests = layers.iter().map(ImageLayer::sha256_digest).collect();
        let config =
            serde_json::to_vec(&self.config(created, digests)?).expect("a config serializes");
        let config = Config::new(config, CONFIG_MEDIA_TYPE.into(), None);
        let annotations = BTreeMap::from([(KIND.to_owned(), kind.to_owned())]);
        let manifest = OciImageManifest::build(&layers, &config, Some(annotations));
        Ok((layers, config, manifest))
    }

    /// Writes the module as `<dir>/<stem>.wasm` with its files beside it;
    /// each file whole (a temporary file renamed), the module last, so a
    /// host watching `dir` reads the module with what it ships. Returns
    /// the module's path.
    pub fn place(&self, dir: &Path, stem: &str) -> Result<PathBuf, OciError> {
        for (name, bytes) in &self.files {
            let path = match name.strip_prefix("fixtures/") {
                Some(fixture) => dir.join(format!("{stem}.fixtures")).join(fixture),
                None => dir.join(format!("{stem}.{name}")),
            };
            write_whole(&path, bytes)?;
        }
        let module = dir.join(format!("{stem}.wasm"));
        write_whole(&module, &self.wasm)?;
        Ok(module)
    }
}

/// The layers of `manifest`: the component's, and the files beside it
/// (by title). A file's title must be a name the module's stem takes
/// (`reasons`, `aspects`, `fixtures/<name>.yaml` or `.golden`): never a
/// path out of the directory it is placed in.
pub fn layers(manifest: &OciImageManifest) -> Result<Layers<'_>, String> {
    let mut wasm = None;
    let mut files = Vec::new();
    for layer in &manifest.layers {
        match layer.media_type.as_str() {
            WASM_MEDIA_TYPE if wasm.is_none() => wasm = Some(layer),
            WASM_MEDIA_TYPE => return Err("it has two application/wasm layers".into()),
            FILE_MEDIA_TYPE => {
                let title = layer
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(TITLE))
                    .ok_or("a file layer has no title")?;
                if !is_file_name(title) {
                    return Err(format!(
                        "a file layer is titled {title:?}: only reasons, aspects and \
                         fixtures/<name>.yaml or .golden are shipped beside a module"
                    ));
                }
                files.push((title.clone(), layer));
            }
            other => return Err(format!("a layer is {other}, which a guest module has not")),
        }
    }
    let wasm = wasm.ok_or("it has no application/wasm layer")?;
    Ok(Layers { wasm, files })
}

/// The layers of a guest module's artifact.
pub struct Layers<'a> {
    pub wasm: &'a OciDescriptor,
    pub files: Vec<(String, &'a OciDescriptor)>,
}

fn is_file_name(title: &str) -> bool {
    match title.strip_prefix("fixtures/") {
        Some(name) => {
            (name.ends_with(".yaml") || name.ends_with(".golden"))
                && !name.contains('/')
                && !name.starts_with('.')
                && !name.contains('\\')
        }
        None => title == "reasons" || title == "aspects",
    }
}

/// Writes `bytes` to `path` whole: a temporary file beside it, renamed.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), OciError> {
    let io = |source| OciError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&temporary, bytes).map_err(io)?;
    std::fs::rename(&temporary, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_layer_is_placed_only_where_a_guests_directory_reads_it() {
        for title in [
            "reasons",
            "aspects",
            "fixtures/ready.yaml",
            "fixtures/ready.golden",
        ] {
            assert!(is_file_name(title), "{title}");
        }
        for title in [
            "../evil.wasm",
            "fixtures/../../x.yaml",
            "fixtures/a/b.yaml",
            "fixtures/.hidden.yaml",
            "fixtures/notes.txt",
            "wasm",
            "/etc/passwd",
        ] {
            assert!(!is_file_name(title), "{title}");
        }
    }
}
