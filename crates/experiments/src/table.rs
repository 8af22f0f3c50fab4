//! CSV tables from serde rows. A row is a `#[derive(Serialize)]` struct: its field names are the
//! header, so a column cannot be named in one place and formatted in another. The committed files
//! show numbers with a fixed count of decimals; the `dp*` functions are those formats, used as
//! `#[serde(serialize_with = "table::dp3")]`. [`Markdown`] is the one writer of the Markdown
//! tables the READMEs show (claims, summaries), so every table escapes and aligns the same way.

use std::fmt::{Display, Write as _};

use serde::{Serialize, Serializer};

/// The CSV text of `rows`: a header from the first row's field names, then one line per row,
/// `\n`-terminated, fields quoted only when they must be.
pub fn csv_text<R: Serialize>(rows: &[R]) -> Result<String, String> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    for row in rows {
        writer.serialize(row).map_err(|e| e.to_string())?;
    }
    let bytes = writer.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

fn fixed<S: Serializer>(value: f64, decimals: usize, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("{value:.decimals$}"))
}

/// No decimals.
pub fn dp0<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    fixed(*value, 0, serializer)
}

/// One decimal.
pub fn dp1<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    fixed(*value, 1, serializer)
}

/// Three decimals.
pub fn dp3<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    fixed(*value, 3, serializer)
}

/// Four decimals.
pub fn dp4<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    fixed(*value, 4, serializer)
}

/// Five decimals.
pub fn dp5<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    fixed(*value, 5, serializer)
}

/// No decimals, or an empty field for none.
pub fn dp0_or_empty<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => fixed(*value, 0, serializer),
        None => serializer.serialize_str(""),
    }
}

/// As `Display` writes it (`0.05`, `10`), where serde's float format would write `10.0`.
pub fn display<T: Display, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// How a Markdown column is aligned: text as Markdown's default, numbers to the right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Text,
    Number,
}

/// A Markdown table built row by row: `| a | b |` lines under a header and an alignment line.
/// Cells are escaped (no line break, no bare `|`), so a statement or a label cannot break a row.
#[derive(Clone, Debug)]
pub struct Markdown {
    text: String,
    columns: usize,
}

impl Markdown {
    /// A table with these column titles and alignments.
    pub fn new<H: Display>(header: impl IntoIterator<Item = (H, Align)>) -> Markdown {
        let (mut titles, mut rule) = (String::from("|"), String::from("|"));
        let mut columns = 0;
        for (title, align) in header {
            let _ = write!(titles, " {} |", escape(&title.to_string()));
            rule += match align {
                Align::Text => "---|",
                Align::Number => "---:|",
            };
            columns += 1;
        }
        Markdown {
            text: format!("{titles}\n{rule}\n"),
            columns,
        }
    }

    /// Appends a row; it has one cell per column.
    pub fn row(&mut self, cells: impl IntoIterator<Item = impl Display>) {
        let mut count = 0;
        self.text.push('|');
        for cell in cells {
            let _ = write!(self.text, " {} |", escape(&cell.to_string()));
            count += 1;
        }
        self.text.push('\n');
        debug_assert_eq!(
            count, self.columns,
            "a row of {count} cells in a {}-column table",
            self.columns
        );
    }

    /// The table's text, `\n`-terminated.
    pub fn finish(self) -> String {
        self.text
    }
}

/// A Markdown cell: no line breaks, no unescaped column separator.
fn escape(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        name: &'static str,
        #[serde(serialize_with = "dp3")]
        mean_ms: f64,
        #[serde(serialize_with = "display")]
        ratio: f64,
        #[serde(serialize_with = "dp0_or_empty")]
        recovery_ms: Option<f64>,
        count: u64,
        flag: bool,
    }

    #[test]
    fn header_from_fields_and_fixed_decimals() {
        let rows = [
            Row {
                name: "a-b",
                mean_ms: 1.23456,
                ratio: 10.0,
                recovery_ms: None,
                count: 7,
                flag: true,
            },
            Row {
                name: "with, comma",
                mean_ms: 2.0,
                ratio: 0.05,
                recovery_ms: Some(1499.6),
                count: 0,
                flag: false,
            },
        ];
        assert_eq!(
            csv_text(&rows).unwrap(),
            "name,mean_ms,ratio,recovery_ms,count,flag\n\
             a-b,1.235,10,,7,true\n\
             \"with, comma\",2.000,0.05,1500,0,false\n"
        );
        assert_eq!(csv_text::<Row>(&[]).unwrap(), "");
    }

    #[test]
    fn markdown_rows_are_escaped_and_aligned() {
        let mut table = Markdown::new([("name", Align::Text), ("calls", Align::Number)]);
        table.row(["a | b", "1"]);
        table.row(["two\nlines".to_string(), format!("{:.1}", 2.0)]);
        assert_eq!(
            table.finish(),
            "| name | calls |\n|---|---:|\n| a \\| b | 1 |\n| two lines | 2.0 |\n"
        );
    }
}
