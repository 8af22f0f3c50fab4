//! Errors in model files, flags and traces: one line naming the file, line:column and the field.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub file: String,
    /// 1-based; 0 when the error is about the whole file.
    pub line: usize,
    pub column: usize,
    /// Dotted path of the field (`protocol.fencing`), empty when unknown.
    pub field: String,
    pub message: String,
}

impl SpecError {
    pub fn whole_file(file: &str, field: &str, message: &str) -> SpecError {
        SpecError {
            file: file.to_string(),
            line: 0,
            column: 0,
            field: field.to_string(),
            message: message.to_string(),
        }
    }

    /// An error at byte offset `offset` of `text`.
    pub fn at(file: &str, text: &str, offset: usize, field: &str, message: &str) -> SpecError {
        let (line, column) = line_column(text, offset);
        SpecError {
            file: file.to_string(),
            line,
            column,
            field: field.to_string(),
            message: message.to_string(),
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        // Messages from parsers may span lines; the contract is one line.
        let message = self
            .message
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        write!(f, ": {message}")
    }
}

impl std::error::Error for SpecError {}

/// 1-based line and column (in characters) of byte `offset`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    let column = text[line_start..offset].chars().count() + 1;
    (line, column)
}

/// The dotted field path at byte `offset`: the nearest `[table]` header above it, then the key on its line.
pub fn field_at(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |index| index + 1);
    let line_end = text[offset..]
        .find('\n')
        .map_or(text.len(), |index| offset + index);
    let line = text[line_start..line_end].trim();
    let key = line
        .split('=')
        .next()
        .filter(|_| line.contains('='))
        .map(|key| key.trim().trim_matches('"'));
    let header = text[..line_start].lines().rev().find_map(|line| {
        let line = line.trim();
        line.starts_with('[').then(|| {
            line.trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string()
        })
    });
    let header_here = line.starts_with('[').then(|| {
        line.trim_matches(|c| c == '[' || c == ']')
            .trim()
            .to_string()
    });
    match (header_here, header, key) {
        (Some(here), _, _) => here,
        (None, Some(table), Some(key)) => format!("{table}.{key}"),
        (None, None, Some(key)) => key.to_string(),
        (None, Some(table), None) => table,
        (None, None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_fields() {
        let text = "a = 1\n[protocol]\nfencing = true\n";
        let offset = text.find("true").unwrap();
        assert_eq!(line_column(text, offset), (3, 11));
        assert_eq!(field_at(text, offset), "protocol.fencing");
        assert_eq!(field_at(text, 0), "a");
    }
}
