//! A client that consumes the kstatus conventions: sigs.k8s.io/cli-utils'
//! `status.Compute` (what kpt, Config Sync and Flux's health checks read),
//! run by the Go program `tests/kstatus`, built once per test binary.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::go_programs;

/// What kstatus computed for an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Computed {
    /// InProgress, Failed, Current, Terminating, NotFound or Unknown.
    pub status: String,
    pub message: String,
}

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// `tests/kstatus`, built once per test binary.
fn program() -> &'static PathBuf {
    PROGRAM.get_or_init(|| go_programs::build("kstatus"))
}

/// What kstatus computes for `object` (as the API server returned it).
pub fn compute(object: &Value) -> Computed {
    let mut child = Command::new(program())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kstatus program starts");
    child
        .stdin
        .take()
        .expect("its stdin")
        .write_all(object.to_string().as_bytes())
        .expect("writing the object");
    let out = child.wait_with_output().expect("the kstatus program ends");
    assert!(
        out.status.success(),
        "kstatus failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).expect("UTF-8");
    let (status, message) = line
        .trim_end()
        .split_once('\t')
        .expect("`<status>\\t<message>`");
    Computed {
        status: status.to_owned(),
        message: message.to_owned(),
    }
}
