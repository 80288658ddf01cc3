//! The JavaScript and Python SDKs restate the host's reasons and constants
//! by hand (issue 52, item 4): each value they restate, read from their
//! source as text, is the Rust item it restates, word for word, and each
//! list has the same entries in the same order, none missing, none more.
//!
//! The reader is strict: a constant it cannot find (once, at the top level)
//! or parse as a plain literal fails the test, naming the file and the
//! constant; and a top-level literal constant the test does not compare
//! fails it too, so that neither a rename nor a new constant passes
//! unchecked.

use std::fmt;
use std::path::Path;

use reconciler_conventions::{engine, kind, message};
use reconciler_guest_sdk::mock::workload_in;
use reconciler_guest_sdk::{Hold, WorkloadState};

// ---- the sources and what they define ---------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Lang {
    /// `export const NAME = value;` or `const NAME = value;`
    Js,
    /// `export const NAME: type;` (a literal type restates a value)
    Dts,
    /// `NAME = value`
    Py,
}

/// A file of the workspace, read as text.
struct Source {
    file: &'static str,
    lang: Lang,
    text: String,
}

fn workspace_file(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"))
}

impl Source {
    fn read(file: &'static str, lang: Lang) -> Source {
        Source {
            file,
            lang,
            text: workspace_file(file),
        }
    }

    /// Every top-level definition of an upper-case name: the name and the
    /// byte offset of its value (its type, in a declaration file).
    fn definitions(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut offset = 0;
        for line in self.text.split_inclusive('\n') {
            if let Some((name, at)) = self.definition(line) {
                out.push((name, offset + at));
            }
            offset += line.len();
        }
        out
    }

    fn definition(&self, line: &str) -> Option<(String, usize)> {
        let (rest, separator) = match self.lang {
            Lang::Js => (
                line.strip_prefix("export ")
                    .unwrap_or(line)
                    .strip_prefix("const ")?,
                " = ",
            ),
            Lang::Dts => (line.strip_prefix("export const ")?, ": "),
            Lang::Py => (line, " = "),
        };
        let end = rest
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_uppercase()) {
            return None;
        }
        rest[end..].strip_prefix(separator)?;
        let at = line.len() - rest.len() + end + separator.len();
        Some((name.to_owned(), at))
    }

    /// Whether the value (or type) at `at` is a literal this reader parses:
    /// what restates a value, rather than computing or naming one.
    fn is_literal(&self, at: usize) -> bool {
        let rest = &self.text[at..];
        let rest = rest.strip_prefix("Object.freeze(").unwrap_or(rest);
        let (rest, opening) = match self.lang {
            Lang::Dts => (rest.strip_prefix("readonly ").unwrap_or(rest), "'\"[{-"),
            Lang::Js => (rest, "'\"[{-"),
            Lang::Py => (rest, "'\"[{(-"),
        };
        rest.starts_with(|c: char| c.is_ascii_digit() || opening.contains(c))
    }
}

// ---- a strict reader of literals --------------------------------------------

/// A literal as the SDKs write it.
#[derive(Clone, Debug, PartialEq)]
enum Lit {
    Str(String),
    Num(i64),
    /// `[...]`, or a Python tuple `(...)`.
    List(Vec<Lit>),
    /// `{key: value, ...}`, keys in the file's order.
    Map(Vec<(String, Lit)>),
    /// A name such as `r.Gate.MODE` (Python's enum values).
    Name(String),
}

impl fmt::Display for Lit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lit::Str(s) => write!(f, "{s:?}"),
            Lit::Num(n) => write!(f, "{n}"),
            Lit::Name(n) => f.write_str(n),
            Lit::List(items) => {
                let items: Vec<String> = items.iter().map(ToString::to_string).collect();
                write!(f, "[{}]", items.join(", "))
            }
            Lit::Map(entries) => {
                let entries: Vec<String> =
                    entries.iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
                write!(f, "{{{}}}", entries.join(", "))
            }
        }
    }
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    lang: Lang,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        let line = self.text[..self.pos].matches('\n').count() + 1;
        let near: String = self.rest().chars().take(40).collect();
        Err(format!("line {line}: {what}, at {near:?}"))
    }

    /// Whitespace and line comments.
    fn skip(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            let comment = match self.lang {
                Lang::Js | Lang::Dts => "//",
                Lang::Py => "#",
            };
            if !self.rest().starts_with(comment) {
                return;
            }
            self.pos += self.rest().find('\n').unwrap_or(self.rest().len());
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Lit, String> {
        self.skip();
        if self.lang == Lang::Js && self.eat("Object.freeze(") {
            let inner = self.value()?;
            return if self.eat(")") {
                Ok(inner)
            } else {
                self.fail("Object.freeze( not closed")
            };
        }
        if self.lang == Lang::Dts && self.eat("readonly ") {
            return self.value();
        }
        match self.rest().chars().next() {
            Some(q @ ('\'' | '"')) => self.string(q).map(Lit::Str),
            Some(c) if c.is_ascii_digit() || c == '-' => self.number(),
            Some('[') => self.list(']'),
            Some('(') if self.lang == Lang::Py => self.list(')'),
            Some('{') => self.map(),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let name = self.name();
                if self.rest().starts_with('(') {
                    return self.fail("a call, not a literal");
                }
                Ok(Lit::Name(name))
            }
            _ => self.fail("not a literal"),
        }
    }

    fn name(&mut self) -> String {
        let rest = self.rest();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        self.pos += end;
        rest[..end].to_owned()
    }

    fn string(&mut self, quote: char) -> Result<String, String> {
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\n' => break,
                '\\' => match chars.next() {
                    Some((_, e @ ('\\' | '\'' | '"'))) => out.push(e),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    _ => {
                        self.pos += i;
                        return self.fail("an escape this reader does not know");
                    }
                },
                c => out.push(c),
            }
        }
        self.fail("a string not closed on its line")
    }

    fn number(&mut self) -> Result<Lit, String> {
        let rest = self.rest();
        let digits = usize::from(rest.starts_with('-'));
        let end = rest[digits..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(rest.len(), |e| e + digits);
        match rest[..end].parse() {
            Ok(n) => {
                self.pos += end;
                Ok(Lit::Num(n))
            }
            Err(e) => self.fail(&format!("not a number ({e})")),
        }
    }

    fn list(&mut self, close: char) -> Result<Lit, String> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(&close.to_string()) {
                return Ok(Lit::List(items));
            }
            items.push(self.value()?);
            if !self.eat(",") && !self.rest().trim_start().starts_with(close) {
                return self.fail(&format!("neither ',' nor '{close}'"));
            }
        }
    }

    fn map(&mut self) -> Result<Lit, String> {
        self.pos += 1;
        let mut entries: Vec<(String, Lit)> = Vec::new();
        loop {
            if self.eat("}") {
                return Ok(Lit::Map(entries));
            }
            self.skip();
            let key = match self.rest().chars().next() {
                Some(q @ ('\'' | '"')) => self.string(q)?,
                Some(c) if c.is_ascii_alphabetic() || c == '_' => self.name(),
                _ => return self.fail("not a key"),
            };
            if entries.iter().any(|(k, _)| *k == key) {
                return self.fail(&format!("the key {key:?} twice"));
            }
            if !self.eat(":") {
                return self.fail("no ':' after a key");
            }
            entries.push((key, self.value()?));
            if !self.eat(",") && !self.rest().trim_start().starts_with('}') {
                return self.fail("neither ',' nor '}'");
            }
        }
    }

    /// What may follow a definition's value: `;` in JavaScript, the end of
    /// the line (or a comment) in Python.
    fn end(&mut self) -> Result<(), String> {
        match self.lang {
            Lang::Js | Lang::Dts => {
                if self.eat(";") {
                    Ok(())
                } else {
                    self.fail("no ';' after the value")
                }
            }
            Lang::Py => {
                let line = self.rest().split('\n').next().unwrap_or("").trim();
                if line.is_empty() || line.starts_with('#') {
                    Ok(())
                } else {
                    self.fail("more after the value")
                }
            }
        }
    }
}

// ---- the comparison ------------------------------------------------------------

/// What one source disagrees with, every mismatch at once.
struct Check<'a> {
    source: &'a Source,
    checked: Vec<String>,
    errors: Vec<String>,
}

impl<'a> Check<'a> {
    fn new(source: &'a Source) -> Check<'a> {
        Check {
            source,
            checked: Vec::new(),
            errors: Vec::new(),
        }
    }

    fn error(&mut self, what: String) {
        self.errors.push(format!("{}: {what}", self.source.file));
    }

    /// The literal `name` is defined as, once and at the top level.
    fn get(&mut self, name: &str) -> Option<Lit> {
        self.checked.push(name.to_owned());
        let found: Vec<usize> = self
            .source
            .definitions()
            .into_iter()
            .filter(|(n, _)| n == name)
            .map(|(_, at)| at)
            .collect();
        let at = match found.as_slice() {
            [at] => *at,
            [] => {
                self.error(format!(
                    "{name} is not defined at the top level (renamed or removed?): \
                     this test compares it with the host's"
                ));
                return None;
            }
            _ => {
                self.error(format!("{name} is defined {} times", found.len()));
                return None;
            }
        };
        let mut parser = Parser {
            text: &self.source.text,
            pos: at,
            lang: self.source.lang,
        };
        match parser.value().and_then(|v| parser.end().map(|()| v)) {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(format!("{name} cannot be read as a literal: {e}"));
                None
            }
        }
    }

    /// `name` is `expected`, the value of the Rust item `rust`.
    fn same(&mut self, name: &str, rust: &str, expected: Lit) {
        if let Some(found) = self.get(name) {
            self.compare(name, rust, &found, &expected);
        }
    }

    fn compare(&mut self, path: &str, rust: &str, found: &Lit, expected: &Lit) {
        match (found, expected) {
            (Lit::List(f), Lit::List(e)) if f != e => {
                let missing: Vec<String> = e
                    .iter()
                    .filter(|x| !f.contains(x))
                    .map(ToString::to_string)
                    .collect();
                let extra: Vec<String> = f
                    .iter()
                    .filter(|x| !e.contains(x))
                    .map(ToString::to_string)
                    .collect();
                let how = if missing.is_empty() && extra.is_empty() {
                    "the same entries, in another order or repeated".to_owned()
                } else {
                    format!(
                        "missing [{}], extra [{}]",
                        missing.join(", "),
                        extra.join(", ")
                    )
                };
                self.error(format!(
                    "{path}, against {rust}: {how}\n    SDK:  {found}\n    host: {expected}"
                ));
            }
            (Lit::Map(f), Lit::Map(e)) => {
                let keys = |m: &[(String, Lit)]| {
                    Lit::List(m.iter().map(|(k, _)| Lit::Str(k.clone())).collect())
                };
                self.compare(&format!("{path}'s keys"), rust, &keys(f), &keys(e));
                for (k, fv) in f {
                    if let Some((_, ev)) = e.iter().find(|(ek, _)| ek == k) {
                        self.compare(&format!("{path}[{k:?}]"), rust, fv, ev);
                    }
                }
            }
            (f, e) if f != e => self.error(format!("{path} is {f}; {rust} is {e}")),
            _ => {}
        }
    }

    /// Fails on every mismatch found, and on every top-level literal the
    /// test did not compare.
    /// Each of `names` is the host's ([`host_value`]).
    fn same_as_hosts(&mut self, names: &[&str]) {
        for name in names {
            let (rust, expected) = host_value(name);
            self.same(name, rust, expected);
        }
    }

    fn finish(mut self) {
        for (name, at) in self.source.definitions() {
            if self.source.is_literal(at) && !self.checked.contains(&name) {
                self.error(format!(
                    "{name} restates a value this test does not compare with the host's: \
                     add it to host/tests/sdk_parity.rs"
                ));
            }
        }
        assert!(
            self.errors.is_empty(),
            "the SDK disagrees with the host:\n{}",
            self.errors.join("\n")
        );
    }
}

fn s(text: &str) -> Lit {
    Lit::Str(text.to_owned())
}

fn strings<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Lit {
    Lit::List(items.into_iter().map(|x| s(x.as_ref())).collect())
}

fn num(n: impl TryInto<i64, Error: fmt::Debug>) -> Lit {
    Lit::Num(n.try_into().expect("a small number"))
}

// ---- the host's values -----------------------------------------------------------

/// The cases of the WIT block `header` (`enum gate {`) of wit/reconciler.wit,
/// the contract the host's bindings are generated from.
fn wit_cases(header: &str) -> Vec<String> {
    let wit = workspace_file("wit/reconciler.wit");
    let blocks: Vec<_> = wit.match_indices(header).collect();
    assert_eq!(blocks.len(), 1, "wit/reconciler.wit: `{header}` once");
    wit[blocks[0].0 + header.len()..]
        .lines()
        .map(str::trim)
        .take_while(|l| *l != "}")
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .map(|l| {
            let l = l.trim_end_matches(',');
            l.split_once('(').map_or(l, |(case, _)| case).to_owned()
        })
        .collect()
}

/// The contract version the host serves as current: the newest of the
/// `reconciler` interfaces it serves.
fn current_contract() -> String {
    let served = reconciler_host::contract::version::served();
    let newest = served.rsplit(" and ").next().unwrap_or_default();
    let (_, version) = newest
        .rsplit_once('@')
        .unwrap_or_else(|| panic!("served() names no version: {served:?}"));
    version.to_owned()
}

fn host_reasons() -> Lit {
    strings(kind::HOST_REASONS.iter().map(|(name, _)| *name))
}

fn common_reasons() -> Lit {
    Lit::Map(
        reconciler_guest_sdk::spec::COMMON_REASONS
            .iter()
            .map(|(name, meaning)| ((*name).to_owned(), s(meaning)))
            .collect(),
    )
}

/// The gates a parent may set by default (the host's `ParentGates::ALL`), in
/// the order of the contract's `gate` enum.
fn parent_gates() -> Lit {
    let all = serde_json::to_value(kind::ParentGates::ALL).expect("ParentGates serializes");
    let cases = wit_cases("enum gate {");
    let mut fields: Vec<&String> = all.as_object().expect("a struct").keys().collect();
    fields.sort();
    let mut sorted: Vec<&String> = cases.iter().collect();
    sorted.sort();
    assert_eq!(
        fields, sorted,
        "ParentGates' fields are the WIT's gate cases"
    );
    strings(cases.iter().filter(|c| all[c.as_str()] == true))
}

/// Each non-ready case of the WIT's `workload-state`, with the reason the
/// Rust SDK's `workload::from_state` copies for it.
fn workload_state_reasons() -> Lit {
    let m = String::new;
    let states = [
        ("replica-failure", WorkloadState::ReplicaFailure(m())),
        ("rollout-stuck", WorkloadState::RolloutStuck(m())),
        ("secret-not-found", WorkloadState::SecretNotFound(m())),
        ("secret-key-missing", WorkloadState::SecretKeyMissing(m())),
        (
            "config-map-not-found",
            WorkloadState::ConfigMapNotFound(m()),
        ),
        ("pod-unschedulable", WorkloadState::PodUnschedulable(m())),
        ("image-pull-failed", WorkloadState::ImagePullFailed(m())),
        ("crash-loop-back-off", WorkloadState::CrashLoopBackOff(m())),
        ("rollout-in-progress", WorkloadState::RolloutInProgress(m())),
        ("pod-not-ready", WorkloadState::PodNotReady(m())),
    ];
    let mut cases = wit_cases("variant workload-state {");
    cases.retain(|c| c != "ready");
    let mut tags: Vec<&str> = states.iter().map(|(tag, _)| *tag).collect();
    tags.sort_unstable();
    cases.sort();
    assert_eq!(tags, cases, "this test's workload states are the WIT's");
    Lit::Map(
        states
            .into_iter()
            .map(|(tag, state)| {
                let w = workload_in("ns", "d", state);
                let c = reconciler_guest_sdk::workload::from_state("WorkloadReady", "d", &w);
                (tag.to_owned(), s(&c.reason))
            })
            .collect(),
    )
}

/// Each case of the WIT's `hold`, with the reason and the words of the Rust
/// SDK's `change::held` for it (`{what} is not made: {why}`).
fn held() -> Lit {
    let holds = [
        ("observe", Hold::Observe),
        ("awaiting-approval", Hold::AwaitingApproval),
        ("denied", Hold::Denied),
        ("pass-failed", Hold::PassFailed),
    ];
    let tags: Vec<&str> = holds.iter().map(|(tag, _)| *tag).collect();
    assert_eq!(
        tags,
        wit_cases("enum hold {"),
        "this test's holds are the WIT's"
    );
    Lit::Map(
        holds
            .into_iter()
            .map(|(tag, hold)| {
                let c = reconciler_guest_sdk::change::held("T", "X", hold);
                let why = c
                    .message
                    .strip_prefix("X is not made: ")
                    .unwrap_or_else(|| panic!("change::held's message: {:?}", c.message));
                assert!(
                    kind::HOST_REASONS.iter().any(|(r, _)| *r == c.reason),
                    "{} is a host reason",
                    c.reason
                );
                (tag.to_owned(), Lit::List(vec![s(&c.reason), s(why)]))
            })
            .collect(),
    )
}

/// The host's value of what an SDK restates as `name`, and the Rust item
/// holding it.
fn host_value(name: &str) -> (&'static str, Lit) {
    use reconciler_guest_sdk as sdk;
    match name {
        "AS_EXPECTED" => (
            "reconciler_conventions::engine::AS_EXPECTED",
            s(engine::AS_EXPECTED),
        ),
        "RECONCILING" => (
            "reconciler_conventions::engine::RECONCILING_REASON",
            s(engine::RECONCILING_REASON),
        ),
        "RETRY_SECONDS" => (
            "reconciler_guest_sdk::read::RETRY_SECONDS",
            num(sdk::read::RETRY_SECONDS),
        ),
        "CONFIGURATION_INVALID" => (
            "reconciler_guest_sdk::configuration::CONFIGURATION_INVALID",
            s(sdk::configuration::CONFIGURATION_INVALID),
        ),
        "RESOURCE_NOT_OWNED" => (
            "reconciler_guest_sdk::ownership::RESOURCE_NOT_OWNED",
            s(sdk::ownership::RESOURCE_NOT_OWNED),
        ),
        "COMMON" => (
            "reconciler_conventions::kind::COMMON_OWNER",
            s(kind::COMMON_OWNER),
        ),
        "HOST_REASONS" => ("reconciler_conventions::kind::HOST_REASONS", host_reasons()),
        "COMMON_REASONS" => (
            "reconciler_guest_sdk::spec::COMMON_REASONS",
            common_reasons(),
        ),
        "MAX_MESSAGE_BYTES" => (
            "reconciler_conventions::message::MAX_MESSAGE_BYTES",
            num(message::MAX_MESSAGE_BYTES),
        ),
        "TRUNCATION_MARKER" => (
            "reconciler_conventions::message::TRUNCATION_MARKER",
            s(message::TRUNCATION_MARKER),
        ),
        "WORKLOAD_REASONS" => (
            "reconciler_guest_sdk::workload::REASONS",
            strings(sdk::workload::REASONS),
        ),
        "WORKLOAD_STATE_REASONS" => (
            "reconciler_guest_sdk::workload::from_state",
            workload_state_reasons(),
        ),
        "ALLOWED_REPOSITORIES" => (
            "reconciler_guest_sdk::image::ALLOWED_REPOSITORIES",
            s(sdk::image::ALLOWED_REPOSITORIES),
        ),
        "ADOPT_ANNOTATION" => (
            "reconciler_guest_sdk::ownership::ADOPT_ANNOTATION",
            s(sdk::ownership::ADOPT_ANNOTATION),
        ),
        "HELD" => ("reconciler_guest_sdk::change::held", held()),
        "RESERVED_STATUS_FIELDS" => (
            "reconciler_conventions::engine::RESERVED_STATUS_FIELDS",
            strings(engine::RESERVED_STATUS_FIELDS),
        ),
        "PARENT_GATES" => (
            "reconciler_conventions::kind::ParentGates::ALL",
            parent_gates(),
        ),
        other => panic!("{other}: no host value to compare it with; add it to host_value"),
    }
}

// ---- the tests -----------------------------------------------------------------------

#[test]
fn the_javascript_sdks_constants_are_the_hosts() {
    let js = Source::read("guests/js/sdk/index.js", Lang::Js);
    let mut c = Check::new(&js);
    c.same_as_hosts(&[
        "AS_EXPECTED",
        "RECONCILING",
        "RETRY_SECONDS",
        "CONFIGURATION_INVALID",
        "RESOURCE_NOT_OWNED",
        "COMMON",
        "HOST_REASONS",
        "COMMON_REASONS",
        "MAX_MESSAGE_BYTES",
        "TRUNCATION_MARKER",
        "WORKLOAD_REASONS",
        "WORKLOAD_STATE_REASONS",
        "ALLOWED_REPOSITORIES",
        "ADOPT_ANNOTATION",
        "HELD",
        "RESERVED_STATUS_FIELDS",
        "PARENT_GATES",
    ]);
    c.finish();
}

#[test]
fn the_javascript_sdks_declared_literal_types_are_the_hosts() {
    let dts = Source::read("guests/js/sdk/index.d.ts", Lang::Dts);
    let mut c = Check::new(&dts);
    c.same_as_hosts(&[
        "AS_EXPECTED",
        "RECONCILING",
        "RETRY_SECONDS",
        "CONFIGURATION_INVALID",
        "RESOURCE_NOT_OWNED",
        "COMMON",
        "MAX_MESSAGE_BYTES",
        "ALLOWED_REPOSITORIES",
        "PARENT_GATES",
    ]);
    c.finish();
}

#[test]
fn the_python_sdks_constants_are_the_hosts() {
    let py = Source::read("guests/py/sdk/reconciler_sdk/__init__.py", Lang::Py);
    let mut c = Check::new(&py);
    c.same_as_hosts(&[
        "AS_EXPECTED",
        "RECONCILING",
        "RETRY_SECONDS",
        "CONFIGURATION_INVALID",
        "COMMON",
        "COMMON_REASONS",
        "RESOURCE_NOT_OWNED",
        "ADOPT_ANNOTATION",
        "HELD",
    ]);
    // `(r.Gate.MODE, ...)`: componentize-py's names of the WIT's cases.
    if let Some(gates) = c.get("PARENT_GATES") {
        let as_wit = match &gates {
            Lit::List(items) => Lit::List(
                items
                    .iter()
                    .map(|g| match g {
                        Lit::Name(n) if n.starts_with("r.Gate.") => {
                            s(&n["r.Gate.".len()..].to_lowercase().replace('_', "-"))
                        }
                        other => Lit::Name(other.to_string()),
                    })
                    .collect(),
            ),
            other => other.clone(),
        };
        c.compare(
            "PARENT_GATES",
            "reconciler_conventions::kind::ParentGates::ALL",
            &as_wit,
            &parent_gates(),
        );
    }
    c.finish();
}

/// The contract version the SDKs and the JavaScript scaffold name
/// (`reconciler:guest/facts@0.6.0`) is the one the host serves as current.
#[test]
fn the_sdks_name_the_current_contract() {
    let current = current_contract();
    let wit = workspace_file("wit/reconciler.wit");
    assert!(
        wit.lines()
            .any(|l| l == format!("package reconciler:guest@{current};")),
        "wit/reconciler.wit is reconciler:guest@{current}"
    );
    let mut errors = Vec::new();
    let mut named = 0;
    for file in [
        "guests/js/sdk/index.js",
        "guests/js/sdk/index.d.ts",
        "guests/js/sdk/mock.js",
        "guests/js/sdk/mock.d.ts",
        "guests/py/sdk/reconciler_sdk/__init__.py",
        "guests/py/sdk/reconciler_sdk/mock.py",
        // What `reconciler-host new --lang js` writes.
        "host/src/cli/new/templates/js/src/main.js",
    ] {
        let text = workspace_file(file);
        for (at, _) in text.match_indices("reconciler:guest/") {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || ":/@.-_".contains(c)))
                .unwrap_or(rest.len());
            let id = rest[..end].trim_end_matches('.');
            // An interface named without a version (`reconciler:guest/types`)
            // restates none.
            let Some((_, version)) = id.split_once('@') else {
                continue;
            };
            named += 1;
            if version != current {
                errors.push(format!(
                    "{file}: {id} is not of reconciler:guest@{current}, the host's current contract"
                ));
            }
        }
    }
    assert!(named > 0, "the SDKs name no reconciler:guest interface");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
