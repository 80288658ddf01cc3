//! Certificate facts: the PEM `CERTIFICATE` blocks under a Secret's key, as SHA-256 and PEM size, never the data (pure, table-tested).
//!
//! The operator's cache never holds a Secret's data: at admission
//! ([`summarize`], called by the cache's `slim`) every key's certificates
//! are summarised under the host-private field [`SUMMARY_FIELD`], then the
//! values are blanked; a certificate's PEM text (public) stays in the
//! summary, for CA bundles the host mirrors ([`pem_blocks`]). [`bundle`] derives the same fact from that summary as
//! from a full Secret (a fixture's), so both paths agree.
//!
//! PEM is scanned here rather than by a PEM crate: the fact needs each
//! block's size as written (header and footer included), which the parsers
//! in the dependency tree (`pem`, rustls-pki-types) do not report.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::meta::object_meta;
use crate::contract::facts::{CertificateBundleFact, CertificateFact};

/// Where a slimmed Secret keeps its certificates' summary:
/// `{key: [{sha256, pemBytes}]}`, only keys holding a certificate.
pub(crate) const SUMMARY_FIELD: &str = "__reconcilerCertificates";

const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
const END: &[u8] = b"-----END CERTIFICATE-----";

/// The `CERTIFICATE` blocks of a PEM text whose base64 body decodes, in
/// order: the SHA-256 of the DER (lowercase hex) and the block's size from
/// its header to the end of its footer. Other blocks and garbage yield
/// nothing.
pub fn certificates(pem: &[u8]) -> Vec<CertificateFact> {
    blocks(pem).into_iter().map(|(fact, _)| fact).collect()
}

/// [`certificates`], each with its PEM text (header to footer).
fn blocks(pem: &[u8]) -> Vec<(CertificateFact, String)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(start) = find(&pem[at..], BEGIN).map(|i| at + i) {
        let body_start = start + BEGIN.len();
        let Some(end) = find(&pem[body_start..], END).map(|i| body_start + i) else {
            break;
        };
        let body: Vec<u8> = pem[body_start..end]
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        at = end + END.len();
        if let Ok(der) = STANDARD.decode(&body)
            && !der.is_empty()
        {
            found.push((
                CertificateFact {
                    sha256: hex(&Sha256::digest(&der)),
                    pem_bytes: u32::try_from(at - start).unwrap_or(u32::MAX),
                },
                String::from_utf8_lossy(&pem[start..at]).into_owned(),
            ));
        }
    }
    found
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes under `key` of a full Secret: `data` base64-decoded (nothing
/// when it does not decode), or `stringData` as written.
fn value_of(secret: &Value, key: &str) -> Option<Vec<u8>> {
    if let Some(v) = secret["data"][key].as_str() {
        return Some(STANDARD.decode(v.trim()).unwrap_or_default());
    }
    secret["stringData"][key]
        .as_str()
        .map(|v| v.as_bytes().to_vec())
}

fn has_key(secret: &Value, key: &str) -> bool {
    ["data", "stringData"]
        .iter()
        .any(|f| secret[*f].as_object().is_some_and(|m| m.contains_key(key)))
}

/// The summary of a full Secret's certificates, for [`SUMMARY_FIELD`].
pub(crate) fn summarize(secret: &Value) -> Value {
    let mut summary = Map::new();
    let keys = ["data", "stringData"]
        .iter()
        .filter_map(|f| secret[*f].as_object())
        .flat_map(|m| m.keys());
    for key in keys {
        let certs = value_of(secret, key)
            .map(|v| blocks(&v))
            .unwrap_or_default();
        if !certs.is_empty() {
            let certs = certs
                .iter()
                .map(|(c, pem)| json!({"sha256": c.sha256, "pemBytes": c.pem_bytes, "pem": pem}))
                .collect();
            summary.insert(key.clone(), Value::Array(certs));
        }
    }
    Value::Object(summary)
}

/// The PEM text of each certificate under `key` of a Secret (from its
/// summary when the cache slimmed it), with its SHA-256: what a CA bundle
/// mirrored from it holds. Certificates are public; nothing else under the
/// key is ever kept.
pub(crate) fn pem_blocks(secret: &Value, key: &str) -> Vec<(String, String)> {
    match secret.get(SUMMARY_FIELD) {
        Some(summary) => summary[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some((
                    c["sha256"].as_str()?.to_owned(),
                    c["pem"].as_str()?.to_owned(),
                ))
            })
            .collect(),
        None => value_of(secret, key)
            .map(|v| blocks(&v))
            .unwrap_or_default()
            .into_iter()
            .map(|(c, pem)| (c.sha256, pem))
            .collect(),
    }
}

/// The certificates under `key` of a Secret: from its summary when the
/// cache slimmed it, else from its data. Never an error: `data`/`stringData`
/// that is not an object holds no key; a value that is not a string (or
/// not base64) is a key without certificates; a summary entry of the wrong
/// shape reads its hash as "" and its size as 0.
pub fn bundle(secret: &Value, key: &str) -> CertificateBundleFact {
    let certificates = match secret.get(SUMMARY_FIELD) {
        Some(summary) => summary[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| CertificateFact {
                sha256: c["sha256"].as_str().unwrap_or_default().to_owned(),
                pem_bytes: c["pemBytes"]
                    .as_u64()
                    .and_then(|b| u32::try_from(b).ok())
                    .unwrap_or_default(),
            })
            .collect(),
        None => value_of(secret, key)
            .map(|v| certificates(&v))
            .unwrap_or_default(),
    };
    CertificateBundleFact {
        meta: object_meta(secret),
        has_key: has_key(secret, key),
        certificates,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Two blocks with bodies that decode (not real certificates: the host
    /// counts blocks whose base64 decodes, it does not parse X.509).
    pub(crate) const TWO: &str = "-----BEGIN CERTIFICATE-----\nAQID\nBAU=\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\r\nBgcI\r\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nAQID\n-----END PRIVATE KEY-----\n";
    const BAD: &str = "-----BEGIN CERTIFICATE-----\n%%%not base64%%%\n-----END CERTIFICATE-----\n";

    fn sha(der: &[u8]) -> String {
        hex(&Sha256::digest(der))
    }

    #[test]
    fn certificates_table() {
        let first = (sha(&[1, 2, 3, 4, 5]), 63);
        let second = (sha(&[6, 7, 8]), 60);
        let chain_around_key = format!("{KEY}{}", TWO);
        for (name, text, want) in [
            ("two blocks", TWO, vec![first.clone(), second.clone()]),
            ("a private key is no certificate", KEY, vec![]),
            ("garbage", "hello", vec![]),
            ("a body that does not decode", BAD, vec![]),
            (
                "a key before the chain",
                chain_around_key.as_str(),
                vec![first.clone(), second],
            ),
            (
                "an unterminated block ends the scan",
                "-----BEGIN CERTIFICATE-----\nAQID\n",
                vec![],
            ),
            ("empty", "", vec![]),
        ] {
            let got: Vec<(String, u32)> = certificates(text.as_bytes())
                .into_iter()
                .map(|c| (c.sha256, c.pem_bytes))
                .collect();
            assert_eq!(got, want, "{name}");
        }
        assert_eq!(
            first.0,
            "74f81fe167d99b4cb41d6d0ccda82278caee9f3e2f25d5e5a3936ff3dcec60d0"
        );
    }

    fn secret(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
               "metadata": {"name": "tls", "namespace": "ns"}, "data": data})
    }

    #[test]
    fn a_bundle_reads_data_and_string_data() {
        let s = secret(
            json!({"tls.crt": STANDARD.encode(TWO), "tls.key": STANDARD.encode(KEY), "junk": "!!"}),
        );
        let crt = bundle(&s, "tls.crt");
        assert!(crt.has_key);
        assert_eq!(crt.certificates.len(), 2);
        assert_eq!(crt.meta.name, "tls");
        let key = bundle(&s, "tls.key");
        assert!(key.has_key && key.certificates.is_empty());
        let junk = bundle(&s, "junk");
        assert!(junk.has_key && junk.certificates.is_empty());
        let absent = bundle(&s, "ca.crt");
        assert!(!absent.has_key && absent.certificates.is_empty());
        let plain = json!({"metadata": {"name": "p"}, "stringData": {"ca.crt": TWO}});
        assert_eq!(bundle(&plain, "ca.crt").certificates.len(), 2);
    }

    #[test]
    fn the_summary_gives_the_same_bundle_as_the_data() {
        let s = secret(json!({"tls.crt": STANDARD.encode(TWO), "tls.key": STANDARD.encode(KEY)}));
        let summary = summarize(&s);
        assert_eq!(summary.as_object().unwrap().len(), 1, "{summary}");
        let mut slimmed = s.clone();
        slimmed[SUMMARY_FIELD] = summary;
        slimmed["data"] = json!({"tls.crt": "", "tls.key": ""});
        for key in ["tls.crt", "tls.key", "ca.crt"] {
            let (full, slim) = (bundle(&s, key), bundle(&slimmed, key));
            assert_eq!(
                serde_json::to_value(full).unwrap(),
                serde_json::to_value(slim).unwrap(),
                "{key}"
            );
            assert_eq!(pem_blocks(&s, key), pem_blocks(&slimmed, key), "{key}");
        }
        let blocks = pem_blocks(&slimmed, "tls.crt");
        assert_eq!(blocks.len(), 2);
        assert!(
            TWO.contains(&blocks[0].1) && blocks[0].1.starts_with("-----BEGIN CERTIFICATE-----")
        );
        assert!(
            !serde_json::to_string(&slimmed)
                .unwrap()
                .contains("PRIVATE KEY")
        );
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let one = STANDARD.encode(TWO);
        for (name, secret, key, has_key, count) in [
            (
                "data as a string",
                json!({"data": one}),
                "tls.crt",
                false,
                0,
            ),
            ("data as a list", json!({"data": [one]}), "0", false, 0),
            (
                "a value that is a number",
                json!({"data": {"k": 5}}),
                "k",
                true,
                0,
            ),
            (
                "a value that is null",
                json!({"data": {"k": null}, "stringData": {"k": TWO}}),
                "k",
                true,
                2,
            ),
            (
                "base64 with padding in the middle",
                json!({"data": {"k": "AQ==AQ=="}}),
                "k",
                true,
                0,
            ),
            (
                "stringData of multibyte text",
                json!({"stringData": {"k": format!("é{TWO}🦀")}}),
                "k",
                true,
                2,
            ),
            ("not an object at all", json!("secret"), "k", false, 0),
        ] {
            let got = bundle(&secret, key);
            assert_eq!(
                (got.has_key, got.certificates.len()),
                (has_key, count),
                "{name}"
            );
            let _ = summarize(&secret);
        }
        let slimmed = json!({"data": {"k": ""}, SUMMARY_FIELD: {"k": [null, {"sha256": 1, "pemBytes": 1u64 << 40}, {"sha256": "ab", "pemBytes": -1}], "j": "x"}});
        let got: Vec<(String, u32)> = bundle(&slimmed, "k")
            .certificates
            .into_iter()
            .map(|c| (c.sha256, c.pem_bytes))
            .collect();
        assert_eq!(got, [("".into(), 0), ("".into(), 0), ("ab".into(), 0)]);
        assert!(bundle(&slimmed, "j").certificates.is_empty());
        let odd = json!({SUMMARY_FIELD: "not a summary"});
        assert!(bundle(&odd, "k").certificates.is_empty());
    }
}
