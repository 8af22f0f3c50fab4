//! Where a field sits in a model file's text, for errors found after deserialisation (the world builder's, the
//! checks across tables), which serde's spans do not reach. toml_edit (already behind `toml`) keeps a span for
//! every key and value, whether written as `[table]`, inline or dotted.

use toml_edit::{ImDocument, Item};

/// Byte offset of dotted `field`'s value (`faults.republishes`); when the field is not written, of the nearest
/// enclosing table that is; `None` when neither is (or the text is not TOML).
pub fn field_offset(text: &str, field: &str) -> Option<usize> {
    let document = ImDocument::parse(text).ok()?;
    let mut item = document.as_item();
    let mut found = None;
    for part in field.split('.') {
        match item.get(part) {
            Some(inner) => {
                item = inner;
                found = span_start(item).or(found);
            }
            None => break,
        }
    }
    found
}

/// A table given by a `[header]` has the header's span; a value its own; an array of tables its first header.
fn span_start(item: &Item) -> Option<usize> {
    match item {
        Item::ArrayOfTables(array) => array.get(0).and_then(|table| table.span()),
        _ => item.span(),
    }
    .map(|span| span.start)
}

/// The fields a table cannot do without, and what each is, for "missing field" errors.
pub fn required_fields(table: &str) -> &'static str {
    match table {
        "" => "a model file needs description = \"...\", a [clients] table and an [expect] table",
        "clients" => "[clients] needs count = 1..8 and at least one [[clients.operations]] (body or body-json)",
        _ => "every other field has a default",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_tables_and_inline_tables_are_found() {
        let text = "a = 1\n[faults]\ncrashes = 1\nrepublishes = 2\n[clients]\nx = { y = 3 }\n";
        assert_eq!(field_offset(text, "faults.republishes"), text.find("2\n"));
        assert_eq!(field_offset(text, "faults.pauses"), text.find("[faults]"));
        assert_eq!(field_offset(text, "clients.x.y"), text.find("3 }"));
        assert_eq!(field_offset(text, "expect"), None);
        assert_eq!(field_offset("a = ", "a"), None);
    }
}
