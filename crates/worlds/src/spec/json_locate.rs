//! Where a value sits in a JSON text, so that an error found after parsing (an unknown property name, a step
//! that diverges) can still name its line and column. serde_json keeps no spans; this is a small scanner that
//! walks the text along a path of object keys and array indices. It trusts the text to be JSON (it is called
//! only on text serde_json has already parsed) and gives up (None) on anything it does not expect.

/// One step of a path into a JSON value.
#[derive(Clone, Copy, Debug)]
pub enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// The byte offset where the value at `path` starts.
pub fn offset(text: &str, path: &[Seg]) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    for seg in path {
        at = match *seg {
            Seg::Key(key) => member(text, at, key)?,
            Seg::Index(index) => element(bytes, at, index)?,
        };
    }
    Some(at)
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// The offset just past the string starting at `at` (which must be `"`).
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The offset just past the value starting at `at`.
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let end = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .map_or(bytes.len(), |length| at + length);
            Some(end)
        }
    }
}

/// The offset of the value of `key` in the object starting at `at`.
fn member(text: &str, at: usize, key: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let mut i = skip_space(bytes, at + 1);
    while bytes.get(i) == Some(&b'"') {
        let end = skip_string(bytes, i)?;
        let name: String = serde_json::from_str(&text[i..end]).ok()?;
        i = skip_space(bytes, end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        let value = skip_space(bytes, i + 1);
        if name == key {
            return Some(value);
        }
        i = skip_space(bytes, skip_value(bytes, value)?);
        if bytes.get(i) == Some(&b',') {
            i = skip_space(bytes, i + 1);
        }
    }
    None
}

/// The offset of element `index` of the array starting at `at`.
fn element(bytes: &[u8], at: usize, index: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    let mut i = skip_space(bytes, at + 1);
    for _ in 0..index {
        if matches!(bytes.get(i), None | Some(b']')) {
            return None;
        }
        i = skip_space(bytes, skip_value(bytes, i)?);
        if bytes.get(i) != Some(&b',') {
            return None;
        }
        i = skip_space(bytes, i + 1);
    }
    (!matches!(bytes.get(i), None | Some(b']'))).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::{offset, Seg};

    #[test]
    fn finds_keys_and_elements_past_nested_values_and_escaped_strings() {
        let text = r#"{ "a": {"x": [1, "]}"]}, "b\"": 2, "steps": [ {"k": 1}, {"k": 2} ] }"#;
        let at = |path: &[Seg]| offset(text, path).map(|offset| &text[offset..offset + 8]);
        assert_eq!(at(&[Seg::Key("steps")]), Some("[ {\"k\": "));
        assert_eq!(at(&[Seg::Key("steps"), Seg::Index(1)]), Some("{\"k\": 2}"));
        assert_eq!(at(&[Seg::Key("b\"")]), Some("2, \"step"));
        assert_eq!(offset(text, &[Seg::Key("steps"), Seg::Index(2)]), None);
        assert_eq!(offset(text, &[Seg::Key("missing")]), None);
        assert_eq!(offset(text, &[Seg::Key("a"), Seg::Index(0)]), None);
    }
}
