//! Whether two answers of a service are the same answer. A replay of a stored response is often not the same
//! bytes: a `jsonb` column gives an object's keys back in its own order, a framework re-serialises with other
//! whitespace, a number is spelt `500.0` where it was `500`. Where both bodies are JSON they are compared as JSON
//! values (objects as maps, numbers by value); otherwise byte for byte. Every check that compares answers, black-
//! and gray-box, asks here, so that "the same object" means one thing everywhere.

use serde_json::Value;

/// How two bodies compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sameness {
    /// The same bytes.
    Bytes,
    /// Other bytes, the same JSON value (key order, whitespace or number spelling differ).
    Value,
    /// Different answers.
    Different,
}

impl Sameness {
    pub fn same(self) -> bool {
        self != Sameness::Different
    }

    /// A note for a pass whose bytes differed ("" otherwise).
    pub fn note(self) -> &'static str {
        match self {
            Sameness::Value => {
                "; the same JSON value in other bytes (key order, spacing or number spelling)"
            }
            _ => "",
        }
    }
}

/// Compare two bodies: bytes first, then (both parsing as JSON) as values.
pub fn compare(a: &str, b: &str) -> Sameness {
    if a == b {
        return Sameness::Bytes;
    }
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) if equal(&a, &b) => Sameness::Value,
        _ => Sameness::Different,
    }
}

/// Only a body that is a JSON document as a whole: a plain-text answer is compared by bytes (a body `500`
/// and `500.0` as text are different answers unless the service said they were JSON, which plain numbers
/// rarely are, so only objects and arrays count).
fn parse(body: &str) -> Option<Value> {
    let trimmed = body.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str(trimmed).ok()
}

/// JSON equality with numbers compared by value: integers exactly, a float against anything by its f64.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| equal(x, y)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_object_in_another_key_order_is_the_same_answer() {
        let stored = r#"{"payment_id":1,"amount":500,"currency":"RUB"}"#;
        let replay = r#"{"amount": 500, "currency": "RUB", "payment_id": 1}"#;
        assert_eq!(compare(stored, replay), Sameness::Value);
        assert_eq!(compare(stored, stored), Sameness::Bytes);
        assert!(compare(stored, replay).note().contains("key order"));
        assert_eq!(Sameness::Bytes.note(), "");
    }

    #[test]
    fn numbers_compare_by_value_and_everything_else_by_content() {
        assert_eq!(compare(r#"{"a":500}"#, r#"{"a":500.0}"#), Sameness::Value);
        assert_eq!(compare(r#"{"a":500}"#, r#"{"a":5e2}"#), Sameness::Value);
        assert_eq!(compare(r#"{"a":-1}"#, r#"{"a":-1.0}"#), Sameness::Value);
        let different = [
            (r#"{"a":500}"#, r#"{"a":501}"#),
            (r#"{"a":500}"#, r#"{"a":"500"}"#),
            (r#"{"a":1}"#, r#"{"a":1,"b":null}"#),
            (r#"[1,2]"#, r#"[2,1]"#),
            (r#"{"id":1}"#, r#"{"id":2}"#),
            ("ok", "OK"),
            ("500", "500.0"),
            (r#"{"a":1"#, r#"{"a":1 "#),
            (
                r#"{"big":18446744073709551615}"#,
                r#"{"big":18446744073709551614}"#,
            ),
        ];
        for (a, b) in different {
            assert_eq!(compare(a, b), Sameness::Different, "{a} vs {b}");
            assert!(!compare(a, b).same());
        }
        assert_eq!(
            compare("{\"n\": [1, {\"x\": true}]}\n", "{\"n\":[1,{\"x\":true}]}"),
            Sameness::Value
        );
    }
}
