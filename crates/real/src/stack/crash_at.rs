//! `--crash-at STEP`: the process exits at a step boundary of a request's handler, as a crash would (no reply,
//! no destructor, the open transaction left to the database to roll back). A step is a store call: `N` is the
//! boundary after the request's N-th call; `CALL[:N]` the boundary after the N-th call named CALL (a name of
//! `handler::Call::name`, case-insensitive: `commit`, `kv-set`, `insert-effect`, ...). The first request that
//! reaches the step ends the process.

/// Where to crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrashAt {
    /// After the request's N-th store call (1-based).
    Call(usize),
    /// After the N-th call with this name (lower case).
    Named(String, usize),
}

/// The exit code of a crash at a failpoint (distinct from every command's 0, 1 and 2).
pub const CRASH_EXIT_CODE: i32 = 3;

/// The store call names a `CALL` may be.
pub const CALL_NAMES: [&str; 15] = [
    "begin",
    "commit",
    "rollback",
    "insert-if-absent",
    "get",
    "update",
    "delete",
    "scan",
    "insert-effect",
    "kv-set",
    "kv-get",
    "kv-del",
    "kv-expire",
    "provider-charge",
    "now",
];

impl CrashAt {
    pub fn parse(text: &str) -> Result<CrashAt, String> {
        let number = |n: &str| -> Result<usize, String> {
            match n.parse::<usize>() {
                Ok(0) | Err(_) => Err(format!("'{n}' is not a step number (1, 2, ...)")),
                Ok(n) => Ok(n),
            }
        };
        if text.chars().all(|c| c.is_ascii_digit()) && !text.is_empty() {
            return Ok(CrashAt::Call(number(text)?));
        }
        let (name, nth) = match text.split_once(':') {
            Some((name, nth)) => (name, number(nth)?),
            None => (text, 1),
        };
        let name = name.to_ascii_lowercase();
        if !CALL_NAMES.contains(&name.as_str()) {
            return Err(format!(
                "unknown step '{text}': expected N, or CALL[:N] with CALL one of {}",
                CALL_NAMES.join(", ")
            ));
        }
        Ok(CrashAt::Named(name, nth))
    }

    /// Whether the boundary after a call is the crash point, given the calls made so far in this request
    /// (`calls` includes the one just made, and `named` counts the calls with its name, it included).
    pub fn reached(&self, call_name: &str, calls: usize, named: usize) -> bool {
        match self {
            CrashAt::Call(n) => calls == *n,
            CrashAt::Named(name, n) => call_name.eq_ignore_ascii_case(name) && named == *n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_parse_and_bad_ones_name_the_choices() {
        assert_eq!(CrashAt::parse("4"), Ok(CrashAt::Call(4)));
        assert_eq!(
            CrashAt::parse("COMMIT:2"),
            Ok(CrashAt::Named("commit".into(), 2))
        );
        assert_eq!(
            CrashAt::parse("kv-set"),
            Ok(CrashAt::Named("kv-set".into(), 1))
        );
        assert!(CrashAt::parse("0").is_err());
        assert!(CrashAt::parse("commit:0").is_err());
        assert!(CrashAt::parse("explode")
            .unwrap_err()
            .contains("insert-effect"));
        let at = CrashAt::parse("commit:2").unwrap();
        assert!(!at.reached("COMMIT", 4, 1));
        assert!(at.reached("COMMIT", 8, 2));
        assert!(!at.reached("BEGIN", 8, 2));
    }
}
