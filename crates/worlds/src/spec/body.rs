//! An operation's request body: a TOML table (`body = { ... }`) or JSON text (`body-json = '...'`), either way a
//! JSON object, as a payment API takes. TOML has datetimes and JSON does not: serde would turn one into a private
//! marker object (`{"$__toml_private_datetime": ...}`), so a datetime is refused rather than fingerprinted.

use super::raw::RawOperation;
use crate::protocol;
use toml::Spanned;

/// The key toml gives a datetime deserialised where a table was expected.
const TOML_DATETIME_MARKER: &str = "$__toml_private_datetime";

/// A bound on the walk below, above what the TOML parser lets a file nest (toml_edit stops well before).
const DEPTH_MAX: usize = 256;

/// The body as written (its raw text) and as JSON; an error is (byte offset, field inside the operation, message).
pub fn operation_body(
    operation: &Spanned<RawOperation>,
) -> Result<(String, serde_json::Value), (usize, String, String)> {
    let at_operation = operation.span().start;
    let operation = operation.get_ref();
    match (&operation.body, &operation.body_json) {
        (Some(table), None) => {
            let at = table.span().start;
            // `body = 1979-05-27T07:32:00Z` arrives here as toml's private marker table.
            if table.get_ref().contains_key(TOML_DATETIME_MARKER) {
                return Err((
                    at,
                    "body".to_string(),
                    "must be a table ({ amount = 500 }), found a TOML datetime".to_string(),
                ));
            }
            if let Some(path) = datetime_path(&toml::Value::Table(table.get_ref().clone()), 0) {
                return Err((
                    at,
                    format!("body{path}"),
                    "a TOML datetime has no JSON form: write it as a string (\"1979-05-27T07:32:00Z\")"
                        .to_string(),
                ));
            }
            let value = serde_json::to_value(table.get_ref()).map_err(|error| {
                (
                    at,
                    "body".to_string(),
                    format!("cannot convert to JSON: {error}"),
                )
            })?;
            Ok((protocol::canonical_json(&value), value))
        }
        (None, Some(text)) => {
            let at = text.span().start;
            let value: serde_json::Value = serde_json::from_str(text.get_ref())
                .map_err(|error| (at, "body-json".to_string(), format!("is not JSON: {error}")))?;
            if !value.is_object() {
                return Err((
                    at,
                    "body-json".to_string(),
                    format!(
                        "must be a JSON object ('{{\"amount\": 500}}'), found {}",
                        json_kind(&value)
                    ),
                ));
            }
            Ok((text.get_ref().clone(), value))
        }
        (Some(table), Some(_)) => Err((
            table.span().start,
            "body".to_string(),
            "give either body (a table) or body-json (a string), not both".to_string(),
        )),
        (None, None) => Err((
            at_operation,
            "body".to_string(),
            "missing: give body (a table) or body-json (a string)".to_string(),
        )),
    }
}

/// The path (`.paid.at`, `.items[2]`) of the first datetime in `value`, if any.
fn datetime_path(value: &toml::Value, depth: usize) -> Option<String> {
    if depth > DEPTH_MAX {
        return None;
    }
    match value {
        toml::Value::Datetime(_) => Some(String::new()),
        toml::Value::Table(table) => table.iter().find_map(|(key, inner)| {
            datetime_path(inner, depth + 1).map(|rest| format!(".{key}{rest}"))
        }),
        toml::Value::Array(items) => items.iter().enumerate().find_map(|(index, inner)| {
            datetime_path(inner, depth + 1).map(|rest| format!("[{}]{rest}", index + 1))
        }),
        _ => None,
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
