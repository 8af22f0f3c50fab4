//! Body fingerprints: SHA-256 of the JSON body serialised with keys sorted at every depth.

use super::FingerprintPolicy;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A body fingerprint. `Fingerprint::NONE` is what every body gets under [`FingerprintPolicy::None`], so that
/// comparing two fingerprints never reports a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    pub const NONE: Fingerprint = Fingerprint([0; 32]);

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// The body serialised as compact JSON with object keys sorted at every depth. Numbers and strings are written by
/// serde_json, so `500` and `500.0` stay different (they are different bodies to a JSON consumer too).
pub fn canonical_json(body: &Value) -> String {
    let mut out = String::new();
    write_canonical(body, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            // serde_json's Map is a BTreeMap unless the preserve_order feature is on; sort explicitly so the
            // result does not depend on a feature flag some other crate may turn on.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The fingerprint of a request body under `policy`. `raw` is the body's bytes as sent; `parsed` its JSON value.
pub fn fingerprint(policy: FingerprintPolicy, raw: &[u8], parsed: &Value) -> Fingerprint {
    match policy {
        FingerprintPolicy::Normalized => sha256(canonical_json(parsed).as_bytes()),
        FingerprintPolicy::Raw => sha256(raw),
        FingerprintPolicy::None => Fingerprint::NONE,
    }
}

fn sha256(bytes: &[u8]) -> Fingerprint {
    Fingerprint(Sha256::digest(bytes).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_normalized_fingerprint() {
        let a =
            json!({"amount": 500, "currency": "RUB", "meta": {"b": 1, "a": [ {"y": 1, "x": 2} ]}});
        let b: Value = serde_json::from_str(
            r#"{"meta": {"a": [ {"x": 2, "y": 1} ], "b": 1}, "currency": "RUB", "amount": 500}"#,
        )
        .unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        let fa = fingerprint(FingerprintPolicy::Normalized, b"", &a);
        let fb = fingerprint(FingerprintPolicy::Normalized, b"", &b);
        assert_eq!(fa, fb);
        let changed =
            json!({"amount": 501, "currency": "RUB", "meta": {"b": 1, "a": [ {"y": 1, "x": 2} ]}});
        assert_ne!(
            fa,
            fingerprint(FingerprintPolicy::Normalized, b"", &changed)
        );
    }

    #[test]
    fn canonical_form_is_sorted_and_compact() {
        let v = json!({"b": [1, {"d": null, "c": "x"}], "a": true});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":true,"b":[1,{"c":"x","d":null}]}"#
        );
    }

    #[test]
    fn raw_fingerprint_sees_key_order_and_none_sees_nothing() {
        let v = json!({});
        let raw_a = fingerprint(FingerprintPolicy::Raw, br#"{"a":1,"b":2}"#, &v);
        let raw_b = fingerprint(FingerprintPolicy::Raw, br#"{"b":2,"a":1}"#, &v);
        assert_ne!(raw_a, raw_b);
        assert_eq!(
            fingerprint(FingerprintPolicy::None, b"x", &v),
            Fingerprint::NONE
        );
    }
}
