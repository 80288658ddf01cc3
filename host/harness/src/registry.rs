//! An OCI registry on loopback: go-containerregistry's in-memory
//! distribution server, run by the Go program `tests/registry` (built once
//! per test binary), one per [`Registry::start`]. It exits when its stdin
//! closes: when the test drops it, or however the test binary ends.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use crate::go_programs;

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
        let mut child = Command::new(program())
            .args(args)
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
        }
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

impl Drop for Registry {
    fn drop(&mut self) {
        self.kill();
    }
}
