//! The guest files the start refused, and why, until they are served or removed: what `/readyz` lists.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Guest files not served, by file name, each with its refusal's line.
#[derive(Debug, Default)]
pub struct Unserved(Mutex<BTreeMap<String, String>>);

impl Unserved {
    /// `file` is not served: `line` says why.
    pub fn refused(&self, file: &str, line: String) {
        self.0
            .lock()
            .expect("unserved lock")
            .insert(file.to_owned(), line);
    }

    /// `file` is served now, or gone.
    pub fn settled(&self, file: &str) {
        self.0.lock().expect("unserved lock").remove(file);
    }

    /// `not served: <line>`, one per file, by file name.
    pub fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .expect("unserved lock")
            .values()
            .map(|line| format!("not served: {line}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_listed_until_it_is_served() {
        let unserved = Unserved::default();
        unserved.refused("b.wasm", "refused guest b at start: empty".into());
        unserved.refused("a.wasm", "refused guest a at start: not a component".into());
        assert_eq!(
            unserved.lines(),
            [
                "not served: refused guest a at start: not a component",
                "not served: refused guest b at start: empty"
            ]
        );
        unserved.settled("a.wasm");
        assert_eq!(unserved.lines().len(), 1);
    }
}
