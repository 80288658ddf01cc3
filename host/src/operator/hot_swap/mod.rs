//! The guest modules: loaded from the guests directory at start, and hot
//! swapped while the host runs. The directory is polled ([`guests_dir`]);
//! a new or changed module is checked by the gate ([`gate`]), shadowed on
//! the kind's parents first under `--promotion auto` ([`promotion`]), and
//! swapped in ([`reloader`]), or served as a new kind ([`serving`]); after a swap
//! it is on probation and rolled back above a failure rate
//! ([`crate::operator::kinds::probation`]). At start, each module is held
//! to its kind's golden lists shipped beside it ([`golden_lists`]). A kind's
//! module, as hot swap sees it, is its
//! [`crate::operator::kinds::served::ServedModule`].

pub mod gate;
pub mod golden_lists;
pub mod guests_dir;
pub mod offers;
pub mod promotion;
pub mod reloader;
pub(crate) mod resolution;
pub mod serving;
pub mod unserved;

use anyhow::Context;

use crate::operator::kinds::probation::short;
use crate::runtime::{Module, Runtime};
use gate::{Check, Refusal};
use golden_lists::Golden;
use guests_dir::{DirEvent, GuestFile, GuestsDir};

/// What the first scan of the guests directory served, and what it
/// refused.
pub struct FirstScan {
    /// The modules to serve, by file.
    pub modules: Vec<(GuestFile, Module)>,
    /// The files refused, each said once at WARN as at run time.
    pub refused: Vec<StartRefusal>,
    /// The guests served with no golden lists beside them.
    pub unchecked: Vec<String>,
}

/// A guest file the start refused: the others are served.
#[derive(Clone, Debug)]
pub struct StartRefusal {
    /// The file's name in the guests directory.
    pub file: String,
    /// The kind it claims, where it loaded far enough to say.
    pub kind: Option<String>,
    pub refusal: Refusal,
    /// `refused guest <stem> (digest <short>…) at start: <detail>`.
    pub line: String,
}

/// The first scan of the guests directory: every module, by file name,
/// each held to the golden lists beside it ([`golden_lists`]) unless
/// `allow_golden_drift` (development only) lets a refused one serve. A file
/// that cannot be read, does not load, fails its golden lists or claims a
/// kind another file serves is refused as at run time (one WARN line) and
/// the others are served; `strict` (`--strict-start`) fails the start on
/// the first instead. With nothing to serve the start fails, naming every
/// refusal.
pub fn load_dir(
    runtime: &Runtime,
    dir: &mut GuestsDir,
    allow_golden_drift: bool,
    strict: bool,
) -> anyhow::Result<FirstScan> {
    let events = dir
        .scan()
        .with_context(|| format!("reading the guests directory {}", dir.path().display()))?;
    let mut loaded = FirstScan {
        modules: Vec::new(),
        refused: Vec::new(),
        unchecked: Vec::new(),
    };
    for event in events {
        let file = match event {
            DirEvent::Changed(file) => file,
            DirEvent::Unreadable { file, error } => {
                let refusal = Refusal::new(
                    Check::Read,
                    format!(
                        "cannot read it inside the guests directory {}: {error}",
                        dir.path().display()
                    ),
                );
                let line = format!("refused guest file {file} at start: {}", refusal.detail);
                loaded.refuse(strict, file, None, refusal, line)?;
                continue;
            }
            DirEvent::Removed { .. } => continue,
        };
        let refused_line = |detail: &str| {
            format!(
                "refused guest {} (digest {}…) at start: {detail}",
                file.stem,
                short(&file.digest)
            )
        };
        let module = match runtime.load(&file.stem, &file.bytes) {
            Ok(module) => module,
            Err(e) => {
                let refusal = Refusal::from_load(&e);
                let line = refused_line(&refusal.detail);
                loaded.refuse(strict, file.file.clone(), None, refusal, line)?;
                continue;
            }
        };
        let kind = module.spec().kind_ref().to_string();
        let lists = held_to_golden(dir, &module, allow_golden_drift);
        let refusal = match &lists {
            Err(refusal) => Some(refusal.clone()),
            Ok(_) => loaded
                .modules
                .iter()
                .find(|(_, m)| m.spec().kind_ref() == module.spec().kind_ref())
                .map(|(_, other)| {
                    Refusal::new(
                        Check::Claimed,
                        format!(
                            "it claims kind {kind}, which guest {} serves already",
                            other.name()
                        ),
                    )
                }),
        };
        if let Some(refusal) = refusal {
            let line = refused_line(&refusal.detail);
            loaded.refuse(strict, file.file.clone(), Some(kind), refusal, line)?;
            continue;
        }
        if let Ok(Lists::Absent) = lists {
            loaded.unchecked.push(module.name().to_owned());
        }
        loaded.modules.push((file, module));
    }
    if loaded.modules.is_empty() {
        anyhow::ensure!(
            !loaded.refused.is_empty(),
            "no guest (*.wasm) in {}",
            dir.path().display()
        );
        let lines: Vec<&str> = loaded.refused.iter().map(|r| r.line.as_str()).collect();
        anyhow::bail!("no guest can be served: {}", lines.join("; "));
    }
    Ok(loaded)
}

impl FirstScan {
    /// One INFO line per module served, and one per module served
    /// without golden lists: what the operator's start says (`capture`
    /// and `shadow`, which run one of them, say nothing of the others).
    pub fn say_loaded(&self) {
        for (_, module) in &self.modules {
            let kind = module.spec().kind_ref();
            tracing::info!(guest = module.name(), kind = %kind, digest = module.digest(), "loaded guest");
        }
        for guest in &self.unchecked {
            tracing::info!(
                guest = %guest,
                "no golden list beside guest {guest} ({guest}.reasons, {guest}.aspects): its reasons and aspects are checked at hot swap only"
            );
        }
    }

    /// Refuses a file: the start fails when `strict`, else one WARN line
    /// (the words of a refusal at run time) and the others are served.
    fn refuse(
        &mut self,
        strict: bool,
        file: String,
        kind: Option<String>,
        refusal: Refusal,
        line: String,
    ) -> anyhow::Result<()> {
        if strict {
            anyhow::bail!("{line} (--strict-start)");
        }
        tracing::warn!(
            kind = kind.as_deref().unwrap_or_default(),
            check = refusal.check.as_str(),
            "{line}: not served"
        );
        self.refused.push(StartRefusal {
            file,
            kind,
            refusal,
            line,
        });
        Ok(())
    }
}

/// Whether golden lists were beside a module the start serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lists {
    /// Held to them (or let drift by `--allow-golden-drift`, said at WARN).
    Present,
    /// None: its reasons and aspects are checked at hot swap only.
    Absent,
}

/// The start's gate: `module` against its kind's golden lists. Refused
/// (naming what it dropped and the golden file) unless
/// `allow_golden_drift`, which serves it with one WARN line.
fn held_to_golden(
    dir: &GuestsDir,
    module: &Module,
    allow_golden_drift: bool,
) -> Result<Lists, Refusal> {
    let golden = Golden::read(dir, module.name()).map_err(|e| {
        Refusal::new(
            Check::Read,
            format!(
                "cannot read its golden lists ({0}.reasons, {0}.aspects) in {1}: {e}",
                module.name(),
                dir.path().display()
            ),
        )
    })?;
    if golden.is_empty() {
        return Ok(Lists::Absent);
    }
    let Err(refusal) = golden.check(module.spec()) else {
        return Ok(Lists::Present);
    };
    if allow_golden_drift {
        tracing::warn!(
            kind = %module.spec().kind_ref(),
            check = refusal.check.as_str(),
            "serving guest {} (digest {}…) although the gate refuses it: {}; --allow-golden-drift is for development only",
            module.name(),
            short(module.digest()),
            refusal.detail
        );
        return Ok(Lists::Present);
    }
    Err(Refusal::new(
        refusal.check,
        format!(
            "{} (in {}); reasons and aspects are frozen API, so ship the module that keeps them, or pass --allow-golden-drift in development",
            refusal.detail,
            dir.path().display()
        ),
    ))
}
