//! The contract versions the host serves, and which one a component
//! implements, told from its exports.

use std::fmt;

/// A version of `reconciler:guest` the host serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContractVersion {
    /// `reconciler:guest@0.1.0`, the released first contract.
    V0_1,
    /// `reconciler:guest@0.2.0`, the released second contract.
    V0_2,
    /// `reconciler:guest@0.3.0`, the released third contract.
    V0_3,
    /// `reconciler:guest@0.4.0`, the released fourth contract.
    V0_4,
    /// `reconciler:guest@0.5.0`, the released fifth contract.
    V0_5,
    /// `reconciler:guest@0.6.0`, the current one.
    V0_6,
}

impl ContractVersion {
    /// Every version the host serves, oldest first.
    pub(crate) const SERVED: [ContractVersion; 6] = [
        ContractVersion::V0_1,
        ContractVersion::V0_2,
        ContractVersion::V0_3,
        ContractVersion::V0_4,
        ContractVersion::V0_5,
        ContractVersion::V0_6,
    ];

    /// The version, as the WIT package spells it (`0.2.0`).
    pub fn as_str(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1.0",
            ContractVersion::V0_2 => "0.2.0",
            ContractVersion::V0_3 => "0.3.0",
            ContractVersion::V0_4 => "0.4.0",
            ContractVersion::V0_5 => "0.5.0",
            ContractVersion::V0_6 => "0.6.0",
        }
    }

    /// The interface a component of this version exports.
    pub fn export(self) -> String {
        format!("reconciler:guest/reconciler@{}", self.as_str())
    }
}

impl fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The served version whose `reconciler` interface the component exports
/// (the newest, should it export several); else why it is refused, naming
/// what it exports and what the host serves.
pub(crate) fn detect<'a>(
    exports: impl IntoIterator<Item = &'a str>,
) -> Result<ContractVersion, String> {
    let exports: Vec<&str> = exports.into_iter().collect();
    if let Some(v) = ContractVersion::SERVED
        .iter()
        .rev()
        .find(|v| exports.contains(&v.export().as_str()))
    {
        return Ok(*v);
    }
    let exported = if exports.is_empty() {
        "nothing".to_owned()
    } else {
        exports.join(", ")
    };
    Err(format!(
        "it exports {exported}; this host serves {}",
        served()
    ))
}

/// The `reconciler` interfaces the host serves, for messages.
pub fn served() -> String {
    let served: Vec<String> = ContractVersion::SERVED.iter().map(|v| v.export()).collect();
    served.join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_served_version_is_told_from_its_export() {
        let detected = detect(["reconciler:guest/reconciler@0.1.0"]);
        assert_eq!(detected, Ok(ContractVersion::V0_1));
        let detected = detect(["wasi:cli/run@0.2.0", "reconciler:guest/reconciler@0.2.0"]);
        assert_eq!(detected, Ok(ContractVersion::V0_2));
        let detected = detect(["reconciler:guest/reconciler@0.3.0"]);
        assert_eq!(detected, Ok(ContractVersion::V0_3));
        let detected = detect(["reconciler:guest/reconciler@0.4.0"]);
        assert_eq!(detected, Ok(ContractVersion::V0_4));
        let detected = detect(["reconciler:guest/reconciler@0.5.0"]);
        assert_eq!(detected, Ok(ContractVersion::V0_5));
        let detected = detect(["reconciler:guest/reconciler@0.6.0"]);
        assert_eq!(detected, Ok(ContractVersion::V0_6));
        let both = [
            "reconciler:guest/reconciler@0.1.0",
            "reconciler:guest/reconciler@0.2.0",
        ];
        assert_eq!(detect(both), Ok(ContractVersion::V0_2), "the newest wins");
    }

    #[test]
    fn another_version_is_refused_naming_what_it_exports_and_what_is_served() {
        assert_eq!(
            detect(["reconciler:guest/reconciler@0.7.0"]),
            Err("it exports reconciler:guest/reconciler@0.7.0; this host serves reconciler:guest/reconciler@0.1.0 and reconciler:guest/reconciler@0.2.0 and reconciler:guest/reconciler@0.3.0 and reconciler:guest/reconciler@0.4.0 and reconciler:guest/reconciler@0.5.0 and reconciler:guest/reconciler@0.6.0".to_owned())
        );
        assert!(detect([]).unwrap_err().starts_with("it exports nothing;"));
    }
}
