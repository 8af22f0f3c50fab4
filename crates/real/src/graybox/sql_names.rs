//! Names in normalised SQL that carry no meaning, replaced by `?` as literals are: savepoint names (ORMs name
//! them after the thread: `SAVEPOINT "s140099895424704_x1"`), prepared statement names in `PREPARE`, `EXECUTE`
//! and `DEALLOCATE` (`__asyncpg_stmt_12__`, `S_3`, `stmtcache_...`), cursor names, and long digit runs inside
//! any identifier (thread ids, pointers). Two runs of one request name them differently; the steps are the same.
//!
//! Also the token scanner the PostgreSQL classifier reads statements with: the input is already normalised
//! (`normalise::sql`: no string literals, no comments), so a token is a word, a quoted identifier, a value
//! (`?`, `$1`) or one punctuation character (`::` as one).

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Word,
    Quoted,
    Value,
    Punct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Token<'a> {
    pub text: &'a str,
    pub class: Class,
    /// Byte offsets in the scanned text.
    pub start: usize,
    pub end: usize,
}

impl Token<'_> {
    /// A word equal to `keyword`, ignoring case.
    pub fn is(&self, keyword: &str) -> bool {
        self.class == Class::Word && self.text.eq_ignore_ascii_case(keyword)
    }

    pub fn punct(&self, text: &str) -> bool {
        self.class == Class::Punct && self.text == text
    }

    /// A word or a quoted identifier.
    pub fn is_name(&self) -> bool {
        matches!(self.class, Class::Word | Class::Quoted)
    }

    /// The identifier it names: a word lower-cased (PostgreSQL folds them), a quoted one as written.
    pub fn name(&self) -> String {
        match self.class {
            Class::Quoted => {
                let inner = self.text.strip_prefix('"').unwrap_or(self.text);
                inner
                    .strip_suffix('"')
                    .unwrap_or(inner)
                    .replace("\"\"", "\"")
            }
            _ => self.text.to_ascii_lowercase(),
        }
    }
}

/// The tokens of a normalised SQL text.
pub(super) fn tokens(text: &str) -> Vec<Token<'_>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let offset = |i: usize| chars.get(i).map_or(text.len(), |&(at, _)| at);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        let (class, end) = if c.is_whitespace() {
            i += 1;
            continue;
        } else if c.is_alphabetic() || c == '_' {
            (
                Class::Word,
                scan(&chars, i + 1, |c| {
                    c.is_alphanumeric() || c == '_' || c == '$'
                }),
            )
        } else if c == '"' {
            (Class::Quoted, quoted(&chars, i))
        } else if c == '?' {
            (Class::Value, i + 1)
        } else if c == '$' && chars.get(i + 1).is_some_and(|&(_, d)| d.is_ascii_digit()) {
            (Class::Value, scan(&chars, i + 1, |c| c.is_ascii_digit()))
        } else if c == ':' && chars.get(i + 1).is_some_and(|&(_, d)| d == ':') {
            (Class::Punct, i + 2)
        } else {
            (Class::Punct, i + 1)
        };
        let (start, stop) = (offset(i), offset(end));
        out.push(Token {
            text: &text[start..stop],
            class,
            start,
            end: stop,
        });
        i = end;
    }
    out
}

fn scan(chars: &[(usize, char)], from: usize, keep: impl Fn(char) -> bool) -> usize {
    let mut at = from;
    while at < chars.len() && keep(chars[at].1) {
        at += 1;
    }
    at
}

/// Past a quoted identifier (`""` inside it is a quote); an unterminated one runs to the end.
fn quoted(chars: &[(usize, char)], from: usize) -> usize {
    let mut at = from + 1;
    while at < chars.len() {
        if chars[at].1 == '"' {
            if chars.get(at + 1).is_some_and(|&(_, c)| c == '"') {
                at += 2;
                continue;
            }
            return at + 1;
        }
        at += 1;
    }
    chars.len()
}

/// The statements of a token list: the index ranges between `;`s (empty ones included).
pub(super) fn statements(tokens: &[Token]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (at, token) in tokens.iter().enumerate() {
        if token.punct(";") {
            out.push(start..at);
            start = at + 1;
        }
    }
    out.push(start..tokens.len());
    out
}

/// Digit runs this long inside an identifier are ids of a thread or a process, never names.
const ID_DIGITS_MIN: usize = 12;

/// `text` (normalised SQL) with meaningless names replaced by `?`.
pub fn names(text: &str) -> String {
    let tokens = tokens(text);
    let mut named = vec![false; tokens.len()];
    for range in statements(&tokens) {
        if let Some(at) = name_position(&tokens[range.clone()]) {
            named[range.start + at] = true;
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (token, named) in tokens.iter().zip(named) {
        out.push_str(&text[copied..token.start]);
        if named {
            out.push('?');
        } else if token.is_name() {
            out.push_str(&without_ids(token.text));
        } else {
            out.push_str(token.text);
        }
        copied = token.end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Where the name a statement declares or uses sits (savepoint, prepared statement, cursor), if it has one.
fn name_position(st: &[Token]) -> Option<usize> {
    let word = |i: usize, keyword: &str| st.get(i).is_some_and(|t| t.is(keyword));
    let first = st.first()?;
    let at = if first.is("SAVEPOINT") || first.is("EXECUTE") || first.is("DECLARE") {
        1
    } else if first.is("RELEASE") {
        1 + usize::from(word(1, "SAVEPOINT"))
    } else if first.is("ROLLBACK") || first.is("ABORT") {
        let to = 1 + usize::from(word(1, "WORK") || word(1, "TRANSACTION"));
        if !word(to, "TO") {
            return None;
        }
        to + 1 + usize::from(word(to + 1, "SAVEPOINT"))
    } else if first.is("PREPARE") && !word(1, "TRANSACTION") {
        1
    } else if first.is("DEALLOCATE") || first.is("CLOSE") {
        let at = 1 + usize::from(first.is("DEALLOCATE") && word(1, "PREPARE"));
        if word(at, "ALL") {
            return None;
        }
        at
    } else if (first.is("FETCH") || first.is("MOVE")) && st.len() >= 2 {
        let before = &st[st.len() - 2];
        if !(before.is("FROM") || before.is("IN")) {
            return None;
        }
        st.len() - 1
    } else {
        return None;
    };
    st.get(at).filter(|t| t.is_name()).map(|_| at)
}

/// An identifier with each run of `ID_DIGITS_MIN` or more digits replaced by `?`.
fn without_ids(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if digits.len() >= ID_DIGITS_MIN {
            out.push('?');
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for c in name.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn savepoint_names_become_placeholders_in_every_form() {
        let thread = r#""s140099895424704_x1""#;
        for (sql, expected) in [
            (format!("SAVEPOINT {thread}"), "SAVEPOINT ?"),
            (format!("RELEASE SAVEPOINT {thread}"), "RELEASE SAVEPOINT ?"),
            ("RELEASE sp_1".to_string(), "RELEASE ?"),
            (
                format!("ROLLBACK TO SAVEPOINT {thread}"),
                "ROLLBACK TO SAVEPOINT ?",
            ),
            ("rollback to s2".to_string(), "rollback to ?"),
            (
                "ROLLBACK WORK TO SAVEPOINT a".to_string(),
                "ROLLBACK WORK TO SAVEPOINT ?",
            ),
        ] {
            assert_eq!(names(&sql), expected, "{sql}");
        }
        // Another thread's savepoint is the same step; a plain ROLLBACK keeps its words.
        assert_eq!(
            names(r#"SAVEPOINT "s140099895424704_x1""#),
            names(r#"SAVEPOINT "s139876543210987_x7""#)
        );
        assert_eq!(names("ROLLBACK"), "ROLLBACK");
        assert_eq!(names("ROLLBACK TRANSACTION"), "ROLLBACK TRANSACTION");
    }

    #[test]
    fn prepared_statement_and_cursor_names_become_placeholders() {
        for (sql, expected) in [
            (
                "PREPARE __asyncpg_stmt_12__ AS SELECT $1",
                "PREPARE ? AS SELECT $1",
            ),
            ("EXECUTE S_3 (?, ?)", "EXECUTE ? (?, ?)"),
            ("EXECUTE a1", "EXECUTE ?"),
            (r#"DEALLOCATE "stmtcache_9f8e7d""#, "DEALLOCATE ?"),
            ("DEALLOCATE PREPARE lrupsc_1_12", "DEALLOCATE PREPARE ?"),
            ("DEALLOCATE ALL", "DEALLOCATE ALL"),
            (
                r#"DECLARE "c_7f3a_1" CURSOR FOR SELECT ?"#,
                "DECLARE ? CURSOR FOR SELECT ?",
            ),
            ("FETCH FORWARD ? FROM c1", "FETCH FORWARD ? FROM ?"),
            ("CLOSE c1; CLOSE ALL", "CLOSE ?; CLOSE ALL"),
            ("PREPARE TRANSACTION ?", "PREPARE TRANSACTION ?"),
        ] {
            assert_eq!(names(sql), expected, "{sql}");
        }
    }

    #[test]
    fn thread_ids_inside_identifiers_go_and_table_names_stay() {
        assert_eq!(
            names("CREATE TEMP TABLE tmp_140099895424704 (a int)"),
            "CREATE TEMP TABLE tmp_? (a int)"
        );
        // A date or a partition number is a name, not an id: kept; so is every ordinary table name.
        assert_eq!(
            names("INSERT INTO events_20240101 SELECT * FROM payments"),
            "INSERT INTO events_20240101 SELECT * FROM payments"
        );
        assert_ne!(names("SELECT a FROM t1"), names("SELECT a FROM t2"));
    }

    #[test]
    fn tokens_keep_quoted_names_parameters_and_casts_whole() {
        let found: Vec<(&str, Class)> = tokens(r#"SELECT "a""b", $12::int FROM é"#)
            .iter()
            .map(|t| (t.text, t.class))
            .collect();
        assert_eq!(
            found,
            [
                ("SELECT", Class::Word),
                (r#""a""b""#, Class::Quoted),
                (",", Class::Punct),
                ("$12", Class::Value),
                ("::", Class::Punct),
                ("int", Class::Word),
                ("FROM", Class::Word),
                ("é", Class::Word),
            ]
        );
        assert_eq!(tokens(r#""a""b""#)[0].name(), r#"a"b"#);
        assert_eq!(statements(&tokens("A; B;")), [0..1, 2..3, 4..4]);
    }
}
