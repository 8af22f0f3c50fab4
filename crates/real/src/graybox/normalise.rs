//! Boundary texts with their literals replaced by `?`, so that two runs of one request give the same texts (a
//! key, an amount or a timestamp differs between runs; the statement does not) and a schedule recorded once can
//! be compared with the statements of a replay.
//!
//! SQL: string literals (`'..'` with `''` escapes, `E'..'` with backslash escapes, `B'..'`, `X'..'`, `N'..'`,
//! dollar-quoted `$tag$..$tag$`) and numeric literals become `?`; `$1` parameters, identifiers (quoted or not),
//! keywords and case are kept; comments are dropped (drivers put changing tags in them); whitespace collapses;
//! then the names that carry no meaning (savepoints, prepared statements, thread ids) go too (`sql_names`).
//! Redis: the command name upper-cased, each argument `?` except option keywords (`NX`, `PX`, `WITHSCORES` ...).

/// Redis commands whose first argument names a sub-command (`CLIENT SETINFO`, `CONFIG GET`): kept.
const REDIS_CONTAINERS: [&str; 16] = [
    "ACL", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "DEBUG", "FUNCTION", "LATENCY", "MEMORY",
    "MODULE", "OBJECT", "PUBSUB", "SCRIPT", "SLOWLOG", "XGROUP", "XINFO",
];

/// Redis option keywords: kept (upper-cased) wherever they appear; every other argument is a value.
const REDIS_KEYWORDS: [&str; 52] = [
    "NX",
    "XX",
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "GET",
    "GT",
    "LT",
    "CH",
    "INCR",
    "WITHSCORES",
    "LIMIT",
    "COUNT",
    "MATCH",
    "TYPE",
    "BY",
    "ASC",
    "DESC",
    "ALPHA",
    "STORE",
    "REPLACE",
    "ABSTTL",
    "IDLETIME",
    "FREQ",
    "BLOCK",
    "STREAMS",
    "MAXLEN",
    "MINID",
    "NOMKSTREAM",
    "JUSTID",
    "IDLE",
    "RETRYCOUNT",
    "FORCE",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "WEIGHTS",
    "AGGREGATE",
    "SUM",
    "MIN",
    "MAX",
    "REV",
    "BYSCORE",
    "BYLEX",
    "WITHVALUES",
    "NOACK",
    "MKSTREAM",
    "IFEQ",
    "FIELDS",
];

/// `text` with its literals replaced by `?`, its comments dropped and its whitespace collapsed.
pub fn sql(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() {
            at = skip_while(&chars, at, char::is_whitespace);
            space(&mut out);
        } else if c == '-' && chars.get(at + 1) == Some(&'-') {
            at = skip_while(&chars, at, |c| c != '\n');
            space(&mut out);
        } else if c == '/' && chars.get(at + 1) == Some(&'*') {
            at = skip_block_comment(&chars, at);
            space(&mut out);
        } else if c == '\'' {
            at = skip_quoted(&chars, at, false);
            out.push('?');
        } else if c == '"' {
            let end = skip_quoted(&chars, at, false);
            out.extend(&chars[at..end]);
            at = end;
        } else if c == '$' {
            at = dollar(&chars, at, &mut out);
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(at + 1).is_some_and(char::is_ascii_digit))
        {
            at = skip_number(&chars, at);
            out.push('?');
        } else if is_identifier_start(c) {
            let end = skip_while(&chars, at, is_identifier_part);
            if end == at + 1 && chars.get(end) == Some(&'\'') && "EeBbXxNn".contains(c) {
                // A prefixed string literal: E'..' (backslash escapes), B'..', X'..', N'..'.
                at = skip_quoted(&chars, end, c == 'E' || c == 'e');
                out.push('?');
            } else {
                out.extend(&chars[at..end]);
                at = end;
            }
        } else {
            out.push(c);
            at += 1;
        }
    }
    super::sql_names::names(out.trim_end())
}

/// One space, never two and never leading.
fn space(out: &mut String) {
    if !out.is_empty() && !out.ends_with(' ') {
        out.push(' ');
    }
}

fn is_identifier_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_identifier_part(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

fn skip_while(chars: &[char], from: usize, keep: impl Fn(char) -> bool) -> usize {
    let mut at = from;
    while at < chars.len() && keep(chars[at]) {
        at += 1;
    }
    at
}

/// Past a literal or identifier quoted by `chars[from]`, the quote doubled inside it; with `backslash`, `\x`
/// escapes too. An unterminated one runs to the end.
fn skip_quoted(chars: &[char], from: usize, backslash: bool) -> usize {
    let quote = chars[from];
    let mut at = from + 1;
    while at < chars.len() {
        if backslash && chars[at] == '\\' {
            at += 2;
        } else if chars[at] == quote {
            if chars.get(at + 1) == Some(&quote) {
                at += 2;
            } else {
                return at + 1;
            }
        } else {
            at += 1;
        }
    }
    chars.len()
}

/// Past a `/* ... */` comment, nested ones included (PostgreSQL nests them).
fn skip_block_comment(chars: &[char], from: usize) -> usize {
    let mut depth = 0usize;
    let mut at = from;
    while at < chars.len() {
        if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
            depth += 1;
            at += 2;
        } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    chars.len()
}

/// Past a number: digits, a fraction, an exponent, and the letters of `0x1F` or `1_000`.
fn skip_number(chars: &[char], from: usize) -> usize {
    let mut at = skip_while(chars, from, |c| {
        c.is_ascii_alphanumeric() || c == '_' || c == '.'
    });
    let exponent = at > from && matches!(chars[at - 1], 'e' | 'E');
    if exponent && matches!(chars.get(at), Some('+' | '-')) {
        at = skip_while(chars, at + 1, |c| c.is_ascii_digit());
    }
    at
}

/// At a `$`: a `$1` parameter (kept), a dollar-quoted literal (`?`), or a lone `$` (kept).
fn dollar(chars: &[char], from: usize, out: &mut String) -> usize {
    if chars.get(from + 1).is_some_and(char::is_ascii_digit) {
        let end = skip_while(chars, from + 1, |c| c.is_ascii_digit());
        out.extend(&chars[from..end]);
        return end;
    }
    let tag_end = skip_while(chars, from + 1, |c| c.is_alphanumeric() || c == '_');
    if chars.get(tag_end) != Some(&'$') {
        out.push('$');
        return from + 1;
    }
    let tag = &chars[from..=tag_end];
    let mut at = tag_end + 1;
    while at + tag.len() <= chars.len() {
        if &chars[at..at + tag.len()] == tag {
            out.push('?');
            return at + tag.len();
        }
        at += 1;
    }
    out.push('?');
    chars.len()
}

/// A Redis command as a boundary text: `SET ? ? NX PX ?`.
pub fn redis(args: &[Vec<u8>]) -> String {
    let Some((name, rest)) = args.split_first() else {
        return String::new();
    };
    let name = String::from_utf8_lossy(name).to_ascii_uppercase();
    let mut words = vec![name.clone()];
    for (index, arg) in rest.iter().enumerate() {
        let upper = String::from_utf8_lossy(arg).to_ascii_uppercase();
        let sub_command = index == 0 && REDIS_CONTAINERS.contains(&name.as_str());
        if sub_command || REDIS_KEYWORDS.contains(&upper.as_str()) {
            words.push(upper);
        } else {
            words.push("?".to_string());
        }
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_number_literals_become_placeholders() {
        assert_eq!(
            sql("INSERT INTO keys (key, state) VALUES ('k-1', 'pending')"),
            "INSERT INTO keys (key, state) VALUES (?, ?)"
        );
        assert_eq!(sql("SELECT 1"), "SELECT ?");
        assert_eq!(
            sql("UPDATE t SET a = 1.5e-3, b = .5 WHERE id = 42"),
            "UPDATE t SET a = ?, b = ? WHERE id = ?"
        );
        assert_eq!(sql("SELECT 'it''s', 'x'"), "SELECT ?, ?");
        assert_eq!(sql(r"SELECT E'a\'b', e'c'"), "SELECT ?, ?");
        assert_eq!(sql("SELECT B'101', X'1F', N'n'"), "SELECT ?, ?, ?");
        assert_eq!(sql("SELECT $$a 'b' c$$, $q$x$$y$q$"), "SELECT ?, ?");
    }

    #[test]
    fn parameters_identifiers_keywords_and_case_are_kept() {
        assert_eq!(
            sql("select * from t1 where c2 = $1 and c$3 = $2"),
            "select * from t1 where c2 = $1 and c$3 = $2"
        );
        assert_eq!(
            sql(r#"SELECT "col 1", "a""b" FROM "T""#),
            r#"SELECT "col 1", "a""b" FROM "T""#
        );
        // A name that is a prefix letter is not a literal.
        assert_eq!(
            sql("SELECT e FROM x WHERE n = 'v'"),
            "SELECT e FROM x WHERE n = ?"
        );
    }

    #[test]
    fn comments_drop_and_whitespace_collapses() {
        assert_eq!(
            sql("  SELECT  a,\n\tb -- tail 'x'\nFROM /* c /* nested */ 1 */ t  "),
            "SELECT a, b FROM t"
        );
    }

    #[test]
    fn a_literal_changed_is_invisible_and_a_statement_changed_is_not() {
        assert_eq!(
            sql("SELECT * FROM k WHERE key = 'a'"),
            sql("SELECT * FROM k WHERE key = 'bcd'")
        );
        assert_ne!(
            sql("SELECT * FROM k WHERE key = 'a'"),
            sql("SELECT * FROM k WHERE id = 'a'")
        );
    }

    #[test]
    fn names_are_normalised_after_the_literals() {
        assert_eq!(
            sql(r#"SAVEPOINT "s140099895424704_x1" -- django"#),
            sql(r#"SAVEPOINT "s139912345678901_x2""#)
        );
        assert_eq!(
            sql("EXECUTE __asyncpg_stmt_12__ (1, 'a')"),
            "EXECUTE ? (?, ?)"
        );
    }

    #[test]
    fn redis_arguments_become_placeholders_but_options_stay() {
        let args = |words: &[&str]| {
            words
                .iter()
                .map(|w| w.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            redis(&args(&["set", "key:1", "v", "nx", "PX", "30000"])),
            "SET ? ? NX PX ?"
        );
        assert_eq!(redis(&args(&["GET", "k"])), "GET ?");
        assert_eq!(
            redis(&args(&["client", "setinfo", "LIB-NAME", "x"])),
            "CLIENT SETINFO ? ?"
        );
        assert_eq!(redis(&args(&["ZADD", "z", "1", "m"])), "ZADD ? ? ?");
        assert_eq!(redis(&[]), "");
    }
}
