//! The house's layout, as a newcomer relies on it: no import cycle between
//! the folders of `host/src` (a folder's files may use a folder below or
//! beside it, never one that uses them back), no file over 600 lines of
//! code and no function over 120 (comments, blank lines and in-file tests
//! aside); no two `pub` types of one name; and every answer of the API
//! server decoded bounded, in one place.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines of code a file of `host/src` holds.
const MAX_LINES: usize = 600;

/// The most lines of code a function of `host/src` holds: a screen. (Clippy's
/// `too_many_lines`, in the workspace's lints with clippy.toml's threshold,
/// holds every function of the host's crates to the same, tests and benches
/// too, by its own count.)
const MAX_FUNCTION_LINES: usize = 120;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, and every folder.
fn walk(dir: &Path, files: &mut Vec<PathBuf>, folders: &mut BTreeSet<String>) {
    folders.insert(folder_name(dir));
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("host/src is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, files, folders);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// A folder as `a/b` under `host/src` (`.` for `host/src` itself).
fn folder_name(dir: &Path) -> String {
    let relative = dir.strip_prefix(src()).expect("under host/src");
    if relative.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        relative.to_string_lossy().replace('\\', "/")
    }
}

/// The code of a file: its in-file tests (a `#[cfg(test)]` module) and its
/// comments left out.
fn code(text: &str) -> Vec<&str> {
    let end = text.find("\n#[cfg(test)]\nmod ").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|line| match line.find("//") {
            // A `//` inside a string (a URL) is rare in paths: the line
            // before it is still read.
            Some(i) => &line[..i],
            None => line,
        })
        .filter(|line| !line.trim().is_empty())
        .collect()
}

/// The module paths a line names after `crate::`, use-groups expanded:
/// `use crate::a::{b::C, d}` names `a::b::C` and `a::d`.
fn crate_paths(line: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let (found, used) = tree(rest, Vec::new());
        paths.extend(found);
        rest = &rest[used..];
    }
    paths
}

/// Parses a use-tree at the start of `text` under `prefix`; the paths and
/// how many bytes it read.
fn tree(text: &str, mut prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut at = 0;
    loop {
        let ident: String = text[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        at += ident.len();
        if !ident.is_empty() {
            prefix.push(ident);
        }
        if text[at..].starts_with("::{") {
            at += 3;
            let mut paths = Vec::new();
            loop {
                let skipped = text[at..].len() - text[at..].trim_start().len();
                at += skipped;
                if text[at..].starts_with('}') || text[at..].is_empty() {
                    return (paths, (at + 1).min(text.len()));
                }
                let (inner, used) = tree(&text[at..], prefix.clone());
                paths.extend(inner);
                at += used;
                let skipped = text[at..].len() - text[at..].trim_start().len();
                at += skipped;
                if text[at..].starts_with(',') {
                    at += 1;
                }
            }
        }
        if text[at..].starts_with("::") {
            at += 2;
            continue;
        }
        return (vec![prefix], at);
    }
}

/// The folder a module path lands in: the deepest folder it names.
fn folder_of(path: &[String], folders: &BTreeSet<String>) -> String {
    let mut folder = ".".to_owned();
    for segment in path {
        let deeper = if folder == "." {
            segment.clone()
        } else {
            format!("{folder}/{segment}")
        };
        if !folders.contains(&deeper) {
            break;
        }
        folder = deeper;
    }
    folder
}

/// Folder -> folder it uses -> one file and path that uses it.
type Edges = BTreeMap<String, BTreeMap<String, String>>;

fn edges(files: &[PathBuf], folders: &BTreeSet<String>) -> Edges {
    let mut edges = Edges::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("a source file");
        let from = folder_name(file.parent().expect("a folder"));
        // Use-groups span lines: the code is read as one line.
        let joined = code(&text).join(" ");
        for path in crate_paths(&joined) {
            let to = folder_of(&path, folders);
            if to != from {
                let relative = file.strip_prefix(src()).expect("under host/src");
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert(format!(
                        "{} uses crate::{}",
                        relative.display(),
                        path.join("::")
                    ));
            }
        }
    }
    edges
}

/// The folders from which `from` is reached again, if any: a cycle.
fn cycle_from(from: &str, edges: &Edges) -> Option<Vec<String>> {
    let mut stack = vec![(from.to_owned(), vec![from.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((at, trail)) = stack.pop() {
        for next in edges.get(&at).into_iter().flat_map(BTreeMap::keys) {
            if next == from {
                let mut cycle = trail.clone();
                cycle.push(from.to_owned());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut trail = trail.clone();
                trail.push(next.clone());
                stack.push((next.clone(), trail));
            }
        }
    }
    None
}

#[test]
fn no_folder_of_host_src_uses_one_that_uses_it_back() {
    let (mut files, mut folders) = (Vec::new(), BTreeSet::new());
    walk(&src(), &mut files, &mut folders);
    let edges = edges(&files, &folders);
    let cycles: Vec<String> = folders
        .iter()
        .filter_map(|f| cycle_from(f, &edges))
        .map(|cycle| {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("  {} -> {}: {}", w[0], w[1], edges[&w[0]][&w[1]]))
                .collect();
            format!("{}\n{}", cycle.join(" -> "), steps.join("\n"))
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles between folders of host/src:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn no_file_of_host_src_is_over_600_lines_of_code() {
    let (mut files, mut folders) = (Vec::new(), BTreeSet::new());
    walk(&src(), &mut files, &mut folders);
    let over: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).expect("a source file");
            let lines = code(&text).len();
            (lines > MAX_LINES).then(|| {
                let relative = file.strip_prefix(src()).expect("under host/src");
                format!("{}: {lines} lines of code", relative.display())
            })
        })
        .collect();
    assert!(
        over.is_empty(),
        "files over {MAX_LINES} lines of code (split them by concept):\n{}",
        over.join("\n")
    );
}

/// The functions of a file's code ([`code`]) and how many lines each
/// holds: from its `fn` line to the `}` at the same indentation.
fn functions(code: &[&str]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (start, line) in code.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(name) = function_name(trimmed) else {
            continue;
        };
        if trimmed.trim_end().ends_with(';') || trimmed.trim_end().ends_with('}') {
            continue; // a declaration without a body, or a body on one line
        }
        let close = format!("{}}}", &line[..line.len() - trimmed.len()]);
        if let Some(end) = code[start..].iter().position(|l| l.trim_end() == close) {
            found.push((name.to_owned(), end + 1));
        }
    }
    found
}

/// The name of the function a trimmed line starts, if it starts one.
fn function_name(trimmed: &str) -> Option<&str> {
    let mut rest = trimmed;
    if let Some(after) = rest.strip_prefix("pub") {
        rest = match after.strip_prefix('(') {
            Some(scoped) => scoped.split_once(')')?.1,
            None => after,
        }
        .trim_start();
    }
    for qualifier in ["async ", "const ", "unsafe "] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest);
    }
    let name = rest.strip_prefix("fn ")?;
    let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&name[..end])
}

#[test]
fn no_function_of_host_src_is_over_120_lines_of_code() {
    let (mut files, mut folders) = (Vec::new(), BTreeSet::new());
    walk(&src(), &mut files, &mut folders);
    let mut over = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file");
        let relative = file.strip_prefix(src()).expect("under host/src");
        for (name, lines) in functions(&code(&text)) {
            if lines > MAX_FUNCTION_LINES {
                over.push(format!(
                    "{}: {name}, {lines} lines of code",
                    relative.display()
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines of code (split them by stage or variant):\n{}",
        over.join("\n")
    );
}

/// The name of the type a trimmed line declares with any `pub`
/// visibility (`pub`, `pub(crate)`, `pub(super)`, `pub(in …)`): a struct,
/// an enum, a trait or a type alias.
fn public_type_name(trimmed: &str) -> Option<&str> {
    let after = trimmed.strip_prefix("pub")?;
    let rest = match after.strip_prefix('(') {
        Some(scoped) => scoped.split_once(')')?.1,
        None => after,
    };
    let rest = rest.strip_prefix(' ')?;
    let name = ["struct ", "enum ", "trait ", "type "]
        .iter()
        .find_map(|item| rest.strip_prefix(item))?;
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    (end > 0).then(|| &name[..end])
}

/// One word, one meaning: no two types of `host/src` that any `pub` makes
/// nameable beyond their file share a name (issue 52, item 4).
#[test]
fn no_two_types_of_host_src_share_a_name() {
    let (mut files, mut folders) = (Vec::new(), BTreeSet::new());
    walk(&src(), &mut files, &mut folders);
    let mut declared: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file");
        let relative = file.strip_prefix(src()).expect("under host/src");
        for line in code(&text) {
            if let Some(name) = public_type_name(line.trim_start()) {
                declared
                    .entry(name.to_owned())
                    .or_default()
                    .insert(relative.display().to_string());
            }
        }
    }
    let shared: Vec<String> = declared
        .iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(name, files)| {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            format!("{name}: {}", files.join(", "))
        })
        .collect();
    assert!(
        shared.is_empty(),
        "types declared pub in more than one file of host/src (name each for what it is):\n{}",
        shared.join("\n")
    );
}

#[test]
fn the_type_check_reads_every_pub_and_every_kind_of_type() {
    let names: Vec<Option<&str>> = [
        "pub struct Slots {",
        "pub(crate) struct Slot<'a>(&'a Slots);",
        "pub(super) enum Settled {",
        "pub(in crate::a) trait Effects: Send {",
        "pub type Slot = u16;",
        "pub struct Unit;",
        "struct Private {",
        "pub fn step() -> Step {",
        "pub use settle::Settled;",
        "pub structure: String,",
        "pub r#type: String,",
    ]
    .into_iter()
    .map(public_type_name)
    .collect();
    assert_eq!(
        names,
        [
            Some("Slots"),
            Some("Slot"),
            Some("Settled"),
            Some("Effects"),
            Some("Slot"),
            Some("Unit"),
            None,
            None,
            None,
            None,
            None,
        ]
    );
}

/// What makes kube decode an answer whole, with serde_json's recursion
/// limit: an `Api` of a kind whose objects a user shapes (a custom
/// resource's free-form fields nest as deep as they like), typed metadata,
/// or a Lease outside the bounded decoding.
const UNBOUNDED: [&str; 11] = [
    "Api::all_with(",
    "Api::namespaced_with(",
    "Api::default_namespaced_with(",
    "Api<DynamicObject>",
    "Api::<DynamicObject>",
    "Api<PartialObjectMeta",
    "Api<Lease>",
    "list_metadata(",
    "watch_metadata(",
    "get_metadata(",
    "metadata_watcher(",
];

/// Every list, watch and write answer of the host goes through the one
/// bounded decoding (`operator/cluster/decode.rs`, issue 49): elsewhere in
/// `host/src` no code makes an `Api` that decodes whole. (The typed `Api`s
/// of built-in kinds other than Leases remain: their schema bounds them.)
#[test]
fn every_answer_is_decoded_bounded() {
    let (mut files, mut folders) = (Vec::new(), BTreeSet::new());
    walk(&src(), &mut files, &mut folders);
    let decode = src().join("operator/cluster/decode.rs");
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != decode) {
        let text = std::fs::read_to_string(file).expect("a source file");
        for line in code(&text) {
            if let Some(what) = UNBOUNDED.iter().find(|u| line.contains(*u)) {
                let relative = file.strip_prefix(src()).expect("under host/src");
                found.push(format!(
                    "{}: {what} in `{}`",
                    relative.display(),
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "answers decoded whole (use operator::cluster::decode's api, metadata_api or leases):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_function_check_counts_from_fn_to_its_closing_brace() {
    let text = "impl A {\n    pub(crate) async fn long(&self) {\n        if x {\n        }\n    }\n    fn short() -> u8 { 1 }\n    fn decl();\n}\nfn free() {\n    a();\n}\n";
    assert_eq!(
        functions(&code(text)),
        vec![("long".to_owned(), 4), ("free".to_owned(), 3)]
    );
}

#[test]
fn the_check_reads_use_groups_and_finds_a_cycle() {
    let paths =
        crate_paths("use crate::operator::{kinds::Registry, write::{owned, plans::Planner}};");
    assert_eq!(
        paths,
        vec![
            vec!["operator", "kinds", "Registry"],
            vec!["operator", "write", "owned"],
            vec!["operator", "write", "plans", "Planner"],
        ]
    );
    let folders: BTreeSet<String> = [".", "a", "a/b", "c"]
        .iter()
        .map(|f| (*f).to_owned())
        .collect();
    assert_eq!(
        folder_of(&["a".into(), "b".into(), "X".into()], &folders),
        "a/b"
    );
    let mut edges = Edges::new();
    edges
        .entry("a".into())
        .or_default()
        .insert("c".into(), "x".into());
    assert_eq!(cycle_from("a", &edges), None);
    edges
        .entry("c".into())
        .or_default()
        .insert("a/b".into(), "y".into());
    edges
        .entry("a/b".into())
        .or_default()
        .insert("a".into(), "z".into());
    assert_eq!(
        cycle_from("a", &edges),
        Some(vec!["a".into(), "c".into(), "a/b".into(), "a".into()])
    );
}
