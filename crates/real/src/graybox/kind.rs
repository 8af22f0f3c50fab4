//! What a boundary is to the checks, whatever its protocol: a step of the request (held, a decision point, a
//! crash point), a session setting, or housekeeping (what drivers, pools and ORMs send on their own: validation
//! and introspection queries, resets on release). Only request statements are steps: the others pass unheld,
//! so that a request whose first run after a restart introspects the catalogue, or whose pool validates a
//! connection at checkout, still has the same steps as in every other run. The protocol modules decide the
//! kind (`pg_classify`, `resp_classify`); refused messages are not boundaries at all (`Event::Unsupported`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a boundary is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A step of the request: held for a decision, a crash point.
    Request,
    /// Sets up the session (PostgreSQL `SET`, `RESET x`, `DEALLOCATE x`, a group that runs nothing).
    Session,
    /// Sent by the driver, pool or ORM rather than by the request's logic; never changes the data.
    Housekeeping(Chore),
}

/// Which kind of housekeeping, for the evidence ("3 introspection queries, 1 pool reset").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Chore {
    /// Catalogue and server queries: `pg_catalog`, `information_schema`, `version()`, `SHOW`.
    Introspection,
    /// A pool's liveness check: an empty query, `SELECT 1`.
    Validation,
    /// What a pool sends when a connection is given back: `DISCARD ALL`, `RESET ALL`, `CLOSE ALL` ...
    PoolReset,
    /// `ROLLBACK` with no transaction open (a pool returning a connection).
    PoolReturn,
    /// A transaction's brackets with no request statement between them: a bare `BEGIN` (PostgreSQL takes a
    /// transaction's snapshot and locks at its first statement, not at `BEGIN`, so holding or crashing at it is
    /// the same as at the statement after it), and the `COMMIT` or `ROLLBACK` of a transaction that ran only
    /// housekeeping (an ORM's introspection on its first connection).
    Transaction,
    /// `SELECT set_config(...)`.
    Config,
    /// Redis connection set-up and checks: `HELLO`, `AUTH`, `CLIENT SETNAME`, `SELECT`, `PING` ...
    Connection,
    /// Redis's script cache: `SCRIPT LOAD`, `SCRIPT EXISTS`.
    ScriptCache,
}

impl Kind {
    /// Passed without a decision: never held, never a crash point.
    pub fn passes(self) -> bool {
        self != Kind::Request
    }

    /// One boundary's kind from its statements': a request if any statement is one, else housekeeping if any
    /// is (the first such chore names it), else a session setting. No statement at all: a session setting.
    pub fn combine(kinds: impl IntoIterator<Item = Kind>) -> Kind {
        let mut combined = Kind::Session;
        for kind in kinds {
            match (combined, kind) {
                (_, Kind::Request) => return Kind::Request,
                (Kind::Session, Kind::Housekeeping(_)) => combined = kind,
                _ => {}
            }
        }
        combined
    }
}

impl Chore {
    /// Singular and plural, for counts in evidence.
    fn nouns(self) -> (&'static str, &'static str) {
        match self {
            Chore::Introspection => ("introspection query", "introspection queries"),
            Chore::Validation => ("validation query", "validation queries"),
            Chore::PoolReset => ("pool reset", "pool resets"),
            Chore::PoolReturn => (
                "ROLLBACK with no transaction",
                "ROLLBACKs with no transaction",
            ),
            Chore::Transaction => (
                "bare BEGIN or end of an empty transaction",
                "bare BEGINs or ends of empty transactions",
            ),
            Chore::Config => ("set_config call", "set_config calls"),
            Chore::Connection => ("connection command", "connection commands"),
            Chore::ScriptCache => ("script cache command", "script cache commands"),
        }
    }
}

fn counted(count: usize, (one, many): (&str, &str)) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// What passed without being a step, counted for the evidence. BTreeMaps: the summary's order is fixed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Passed {
    chores: BTreeMap<Chore, usize>,
    settings: usize,
    /// Request boundaries the store refused without running them (Redis `NOSCRIPT`): dropped from the steps.
    ran_nothing: usize,
}

impl Passed {
    /// A boundary that passed unheld.
    pub fn note(&mut self, kind: Kind) {
        match kind {
            Kind::Request => {}
            Kind::Session => self.settings += 1,
            Kind::Housekeeping(chore) => *self.chores.entry(chore).or_default() += 1,
        }
    }

    /// A request boundary whose answer says it ran nothing.
    pub fn note_ran_nothing(&mut self) {
        self.ran_nothing += 1;
    }

    pub fn add(&mut self, other: &Passed) {
        for (&chore, &count) in &other.chores {
            *self.chores.entry(chore).or_default() += count;
        }
        self.settings += other.settings;
        self.ran_nothing += other.ran_nothing;
    }

    /// "housekeeping passed unheld: 3 introspection queries, 1 pool reset; 2 session settings passed unheld";
    /// None when nothing passed.
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.chores.is_empty() {
            let chores: Vec<String> = self
                .chores
                .iter()
                .map(|(chore, &count)| counted(count, chore.nouns()))
                .collect();
            parts.push(format!("housekeeping passed unheld: {}", chores.join(", ")));
        }
        if self.settings > 0 {
            let settings = counted(self.settings, ("session setting", "session settings"));
            parts.push(format!("{settings} passed unheld"));
        }
        if self.ran_nothing > 0 {
            let refused = counted(self.ran_nothing, ("statement", "statements"));
            parts.push(format!(
                "{refused} the store refused unrun (NOSCRIPT) not counted as steps"
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boundary_is_a_request_if_any_statement_is_one() {
        let hk = Kind::Housekeeping(Chore::PoolReset);
        assert_eq!(Kind::combine([hk, Kind::Session]), hk);
        assert_eq!(Kind::combine([Kind::Session, hk]), hk);
        assert_eq!(
            Kind::combine([hk, Kind::Request, Kind::Session]),
            Kind::Request
        );
        assert_eq!(Kind::combine([Kind::Session]), Kind::Session);
        assert_eq!(Kind::combine([]), Kind::Session);
        assert!(!Kind::Request.passes() && Kind::Session.passes() && hk.passes());
    }

    #[test]
    fn the_summary_counts_each_chore_in_a_fixed_order() {
        let mut passed = Passed::default();
        assert_eq!(passed.summary(), None);
        for _ in 0..3 {
            passed.note(Kind::Housekeeping(Chore::Introspection));
        }
        passed.note(Kind::Housekeeping(Chore::PoolReset));
        passed.note(Kind::Request);
        let mut more = Passed::default();
        more.note(Kind::Session);
        more.note(Kind::Session);
        more.note_ran_nothing();
        passed.add(&more);
        assert_eq!(
            passed.summary().unwrap(),
            "housekeeping passed unheld: 3 introspection queries, 1 pool reset; 2 session settings passed \
             unheld; 1 statement the store refused unrun (NOSCRIPT) not counted as steps"
        );
    }
}
