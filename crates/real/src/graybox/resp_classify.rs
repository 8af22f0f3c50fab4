//! Which Redis commands are steps of the request (`kind::Kind`), and the script cache's round trip: a client
//! that calls a script by `EVALSHA` gets `NOSCRIPT` when the server does not have it yet (the first run only:
//! scripts survive the service's restarts), then `SCRIPT LOAD`s it and sends it again (or falls back to
//! `EVAL`). The refused `EVALSHA` ran nothing and is dropped from the steps (`ran_nothing`); `SCRIPT LOAD` is
//! housekeeping; `EVAL` and `EVALSHA` of a script are one step (`same_step`), so the attempt that counts is the
//! one that ran, however it was sent.

use super::kind::{Chore, Kind};
use super::protocol::Protocol;

/// Commands that set up or check the connection, never the data.
const CONNECTION: [&str; 12] = [
    "HELLO",
    "AUTH",
    "CLIENT",
    "SELECT",
    "PING",
    "ECHO",
    "INFO",
    "COMMAND",
    "READONLY",
    "READWRITE",
    "QUIT",
    "RESET",
];

/// The kind of one command from its normalised text (`SCRIPT LOAD ?`: the sub-command is kept).
pub fn kind(text: &str) -> Kind {
    let mut words = text.split(' ');
    let name = words.next().unwrap_or("");
    if CONNECTION.contains(&name) {
        return Kind::Housekeeping(Chore::Connection);
    }
    if name == "SCRIPT" && matches!(words.next(), Some("LOAD" | "EXISTS")) {
        return Kind::Housekeeping(Chore::ScriptCache);
    }
    Kind::Request
}

/// A text with `EVALSHA` written as `EVAL` (the script's hash and its source are both a `?`).
fn by_eval(text: &str) -> String {
    for (sha, eval) in [("EVALSHA_RO ", "EVAL_RO "), ("EVALSHA ", "EVAL ")] {
        if let Some(rest) = text.strip_prefix(sha) {
            return format!("{eval}{rest}");
        }
    }
    text.to_string()
}

/// Redis for the controller.
pub struct Redis;

impl Protocol for Redis {
    fn ran_nothing(&self, error: &str) -> bool {
        error.starts_with("NOSCRIPT")
    }

    fn same_step(&self, recorded: &str, seen: &str) -> bool {
        by_eval(recorded) == by_eval(seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graybox::normalise::redis;

    fn text(words: &[&str]) -> String {
        redis(
            &words
                .iter()
                .map(|w| w.as_bytes().to_vec())
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn connection_and_script_cache_commands_are_housekeeping() {
        let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
        for (words, chore) in [
            (&["SCRIPT", "LOAD", "return 1"][..], Chore::ScriptCache),
            (&["script", "exists", sha], Chore::ScriptCache),
            (&["CLIENT", "SETNAME", "worker-1"], Chore::Connection),
            (
                &["CLIENT", "SETINFO", "LIB-NAME", "redis-py"],
                Chore::Connection,
            ),
            (&["SELECT", "0"], Chore::Connection),
            (&["PING"], Chore::Connection),
            (&["HELLO", "3"], Chore::Connection),
            (&["AUTH", "secret"], Chore::Connection),
            (&["INFO", "server"], Chore::Connection),
            (&["COMMAND", "DOCS"], Chore::Connection),
        ] {
            assert_eq!(kind(&text(words)), Kind::Housekeeping(chore), "{words:?}");
        }
        // What changes data or runs a script is a step.
        for words in [
            &["SCRIPT", "FLUSH"][..],
            &["EVALSHA", sha, "1", "k"],
            &["SET", "k", "v", "NX"],
        ] {
            assert_eq!(kind(&text(words)), Kind::Request, "{words:?}");
        }
    }

    #[test]
    fn a_script_by_hash_or_by_source_is_one_step_and_noscript_ran_nothing() {
        let redis = Redis;
        let by_hash = text(&[
            "EVALSHA",
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
            "1",
            "k",
            "v",
        ]);
        let by_source = text(&[
            "EVAL",
            "return redis.call('SET', KEYS[1], ARGV[1])",
            "1",
            "k",
            "v",
        ]);
        assert!(redis.same_step(&by_hash, &by_source));
        assert!(redis.same_step(&by_hash, &by_hash));
        // Another command, or the same script with another number of arguments, is another step.
        assert!(!redis.same_step(&by_hash, &text(&["SET", "k", "v", "x", "y"])));
        assert!(!redis.same_step(&by_hash, &text(&["EVAL", "s", "1", "k"])));
        assert!(redis.ran_nothing("NOSCRIPT No matching script. Please use EVAL."));
        assert!(!redis.ran_nothing("ERR Error running script"));
        assert!(!pg_is_refused());
    }

    fn pg_is_refused() -> bool {
        crate::graybox::protocol::of(crate::graybox::gate::Wire::Postgres).ran_nothing("NOSCRIPT")
    }
}
