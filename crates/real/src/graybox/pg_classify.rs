//! Which PostgreSQL boundaries are steps of the request (`kind::Kind`), from their normalised texts and the
//! transaction state of their connection. Conservative where it matters: a statement is housekeeping only when
//! it cannot change data (a constant or introspection `SELECT`, a catalogue query, a pool's reset, a `ROLLBACK`
//! with nothing open); anything not recognised is a request statement, held and crashed at as before.

use super::kind::{Chore, Kind};
use super::protocol::Protocol;
use super::sql_names::{statements, tokens, Class, Token};

/// One connection's classifier: whether a transaction is open, as its own statements say (`BEGIN` ...
/// `COMMIT`/`ROLLBACK`), so that a `ROLLBACK` with nothing open is told apart from one that undoes work, and
/// whether a request statement ran in it (the end of a transaction that ran none is no step either).
#[derive(Debug, Default)]
pub struct Classifier {
    open: bool,
    worked: bool,
}

/// Functions a statement with no table may call and still be housekeeping, and what they are.
const FUNCTIONS: [(&str, Chore); 14] = [
    ("version", Chore::Introspection),
    ("current_schema", Chore::Introspection),
    ("current_schemas", Chore::Introspection),
    ("current_database", Chore::Introspection),
    ("current_setting", Chore::Introspection),
    ("current_user", Chore::Introspection),
    ("session_user", Chore::Introspection),
    ("current_role", Chore::Introspection),
    ("current_catalog", Chore::Introspection),
    ("pg_backend_pid", Chore::Introspection),
    ("pg_is_in_recovery", Chore::Introspection),
    ("inet_server_addr", Chore::Introspection),
    ("set_config", Chore::Config),
    ("pg_advisory_unlock_all", Chore::PoolReset),
];

/// Words that make a query more than a read of the catalogue (a write, a lock, a sequence, a signal).
const NOT_READ_ONLY: [&str; 10] = [
    "insert", "update", "delete", "merge", "into", "truncate", "lock", "share", "nextval", "setval",
];
/// Prefixes of functions with effects.
const EFFECT_PREFIXES: [&str; 9] = [
    "pg_advisory",
    "pg_terminate",
    "pg_cancel",
    "pg_notify",
    "pg_create",
    "pg_drop",
    "pg_reload",
    "pg_switch",
    "lo_",
];

impl Classifier {
    /// The kind of one boundary (its statements' texts joined by `; `), following the transactions it opens
    /// and closes. No statement at all (an empty query): a validation query.
    pub fn classify(&mut self, text: &str) -> Kind {
        let tokens = tokens(text);
        let kinds: Vec<Kind> = statements(&tokens)
            .into_iter()
            .filter(|range| !range.is_empty())
            .map(|range| {
                let kind = self.statement(&tokens[range]);
                self.worked |= self.open && kind == Kind::Request;
                kind
            })
            .collect();
        if kinds.is_empty() {
            return Kind::Housekeeping(Chore::Validation);
        }
        Kind::combine(kinds)
    }

    fn statement(&mut self, st: &[Token]) -> Kind {
        let word = |i: usize, keyword: &str| st.get(i).is_some_and(|t| t.is(keyword));
        let chore = Kind::Housekeeping;
        let first = &st[0];
        if first.is("SET") || first.is("RESET") || first.is("DEALLOCATE") {
            let all = word(1, "ALL") || (word(1, "PREPARE") && word(2, "ALL"));
            let reset = all && !first.is("SET");
            return if reset {
                chore(Chore::PoolReset)
            } else {
                Kind::Session
            };
        }
        if first.is("DISCARD") || first.is("UNLISTEN") || (first.is("CLOSE") && word(1, "ALL")) {
            return chore(Chore::PoolReset);
        }
        if first.is("SHOW") {
            return chore(Chore::Introspection);
        }
        if first.is("SELECT") || first.is("WITH") {
            return select(st);
        }
        if first.is("BEGIN") || first.is("START") {
            self.open = true;
            self.worked = false;
            return chore(Chore::Transaction);
        }
        let commit = first.is("COMMIT")
            || first.is("END")
            || (first.is("PREPARE") && word(1, "TRANSACTION"));
        let rollback = (first.is("ROLLBACK") || first.is("ABORT"))
            && !st.iter().any(|t| t.is("TO") || t.is("PREPARED"));
        if commit || rollback {
            let (open, worked) = (self.open, self.worked);
            self.open = false;
            self.worked = false;
            return match (open, worked) {
                (false, _) if rollback => chore(Chore::PoolReturn),
                (true, false) => chore(Chore::Transaction),
                _ => Kind::Request,
            };
        }
        Kind::Request
    }

    /// Whether a transaction is open on the connection after what it classified last.
    pub fn in_transaction(&self) -> bool {
        self.open
    }
}

/// A `SELECT` or `WITH`: housekeeping when it reads no table (constants, introspection functions) or reads
/// only the catalogue.
fn select(st: &[Token]) -> Kind {
    if let Some(chore) = tableless(st) {
        return Kind::Housekeeping(chore);
    }
    if reads_only_catalogue(st) {
        return Kind::Housekeeping(Chore::Introspection);
    }
    Kind::Request
}

/// A `SELECT` of constants (a validation query) or of the functions in `FUNCTIONS`, with no `FROM`.
fn tableless(st: &[Token]) -> Option<Chore> {
    if !st[0].is("SELECT") {
        return None;
    }
    let mut chore = Chore::Validation;
    let mut at = 1;
    while let Some(token) = st.get(at) {
        let next = st.get(at + 1);
        at += 1;
        match token.class {
            Class::Value => {}
            Class::Punct if [",", "(", ")"].contains(&token.text) => {}
            // A cast or an alias: the type or alias name that follows is no column.
            Class::Punct if token.text == "::" => at += 1,
            Class::Word if token.is("AS") => at += 1,
            Class::Word if ["TRUE", "FALSE", "NULL"].iter().any(|k| token.is(k)) => {}
            Class::Word if token.is("pg_catalog") && next.is_some_and(|t| t.punct(".")) => at += 1,
            Class::Word => {
                let name = token.name();
                let (_, found) = FUNCTIONS.iter().find(|(f, _)| *f == name)?;
                chore = *found;
            }
            _ => return None,
        }
    }
    Some(chore)
}

/// A read-only `SELECT`/`WITH` whose every relation (after `FROM`, `JOIN` and the commas of a `FROM` list) is
/// in `pg_catalog` or `information_schema`, a `pg_` catalogue, or one of its own `WITH` names; at least one.
fn reads_only_catalogue(st: &[Token]) -> bool {
    let effect = st.iter().any(|t| {
        let name = t.name();
        t.class == Class::Word
            && (NOT_READ_ONLY.contains(&name.as_str())
                || EFFECT_PREFIXES.iter().any(|p| name.starts_with(p)))
    });
    if effect {
        return false;
    }
    let own = with_names(st);
    let mut relations = 0;
    for (at, token) in st.iter().enumerate() {
        if !(token.is("FROM") || token.is("JOIN")) {
            continue;
        }
        match catalogue_list(st, at + 1, &own) {
            Some(count) => relations += count,
            None => return false,
        }
    }
    relations > 0
}

/// The relations of one `FROM` list starting at `at`, if all are catalogue ones (a parenthesised subquery is
/// skipped: its own `FROM`s are checked where they stand).
fn catalogue_list(st: &[Token], mut at: usize, own: &[String]) -> Option<usize> {
    let mut count = 0;
    loop {
        if st.get(at).is_some_and(|t| t.is("LATERAL") || t.is("ONLY")) {
            at += 1;
        }
        if st.get(at)?.punct("(") {
            at = past_parenthesis(st, at);
        } else {
            let (parts, next) = qualified(st, at)?;
            at = next;
            let function = st.get(at).is_some_and(|t| t.punct("("));
            if !(catalogue(&parts) || (!function && own.contains(parts.last()?))) {
                return None;
            }
            if function {
                at = past_parenthesis(st, at);
            }
            count += 1;
        }
        at = past_alias(st, at);
        if !st.get(at).is_some_and(|t| t.punct(",")) {
            return Some(count);
        }
        at += 1;
    }
}

/// A possibly qualified name at `at` (`pg_catalog.pg_type`): its parts and where it ends.
fn qualified(st: &[Token], mut at: usize) -> Option<(Vec<String>, usize)> {
    let mut parts = Vec::new();
    loop {
        let token = st.get(at).filter(|t| t.is_name())?;
        parts.push(token.name());
        at += 1;
        if !st.get(at).is_some_and(|t| t.punct(".")) {
            return Some((parts, at));
        }
        at += 1;
    }
}

/// `pg_catalog.x`, `information_schema.x`, or an unqualified `pg_` name (the catalogues and their views).
fn catalogue(parts: &[String]) -> bool {
    match parts {
        [name] => name.starts_with("pg_"),
        [.., schema, _] => schema == "pg_catalog" || schema == "information_schema",
        [] => false,
    }
}

/// Words that follow a relation and are no alias of it.
const CLAUSES: [&str; 22] = [
    "WHERE",
    "JOIN",
    "LEFT",
    "RIGHT",
    "INNER",
    "OUTER",
    "FULL",
    "CROSS",
    "NATURAL",
    "ON",
    "USING",
    "GROUP",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "HAVING",
    "WINDOW",
    "FETCH",
    "FOR",
];

/// Past an optional `[AS] alias [(columns)]` after a relation.
fn past_alias(st: &[Token], mut at: usize) -> usize {
    let explicit = st.get(at).is_some_and(|t| t.is("AS"));
    at += usize::from(explicit);
    let alias = st
        .get(at)
        .is_some_and(|t| t.is_name() && (explicit || !CLAUSES.iter().any(|c| t.is(c))));
    if alias {
        at += 1;
        if st.get(at).is_some_and(|t| t.punct("(")) {
            at = past_parenthesis(st, at);
        }
    }
    at
}

/// Past the parenthesis opened at `at` (to the end if it never closes).
fn past_parenthesis(st: &[Token], from: usize) -> usize {
    let mut depth = 0usize;
    for (at, token) in st.iter().enumerate().skip(from) {
        if token.punct("(") {
            depth += 1;
        } else if token.punct(")") {
            depth -= 1;
            if depth == 0 {
                return at + 1;
            }
        }
    }
    st.len()
}

/// The names a `WITH` statement defines (`name [(columns)] AS [NOT] [MATERIALIZED] (`).
fn with_names(st: &[Token]) -> Vec<String> {
    if !st[0].is("WITH") {
        return Vec::new();
    }
    let mut names = Vec::new();
    for at in 1..st.len() {
        let body = st[at + 1..]
            .iter()
            .find(|t| !(t.is("NOT") || t.is("MATERIALIZED")))
            .is_some_and(|t| t.punct("("));
        if !(st[at].is("AS") && body) {
            continue;
        }
        let mut name_at = at - 1;
        if st[name_at].punct(")") {
            // Back over the column list to the name before it.
            let mut depth = 0usize;
            while name_at > 0 {
                depth = if st[name_at].punct(")") {
                    depth + 1
                } else {
                    depth
                };
                if st[name_at].punct("(") {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                name_at -= 1;
            }
            name_at = name_at.saturating_sub(1);
        }
        if st[name_at].is_name() {
            names.push(st[name_at].name());
        }
    }
    names
}

/// PostgreSQL for the controller: no answer says a statement ran nothing; steps are equal texts.
pub struct Postgres;

impl Protocol for Postgres {
    fn ran_nothing(&self, _error: &str) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graybox::normalise::sql;

    fn kind(text: &str) -> Kind {
        Classifier::default().classify(&sql(text))
    }

    const INTROSPECTION: Kind = Kind::Housekeeping(Chore::Introspection);

    #[test]
    fn catalogue_and_server_queries_are_introspection() {
        for text in [
            "SELECT version()",
            "select pg_catalog.version()",
            "select current_schema()",
            "SHOW standard_conforming_strings",
            "show transaction isolation level",
            "SELECT t.oid, typarray FROM pg_type t WHERE typname = 'hstore'",
            "SELECT t.oid, typarray FROM pg_type t JOIN pg_namespace ns ON typnamespace = ns.oid WHERE typname = 'hstore'",
            "SELECT c.relname FROM pg_catalog.pg_class c, pg_catalog.pg_namespace n WHERE n.oid = c.relnamespace",
            "select table_name from information_schema.tables where table_schema = 'public'",
            "SELECT * FROM (SELECT oid FROM pg_type) AS t",
            "WITH RECURSIVE tree(oid, depth) AS (SELECT oid, 0 FROM pg_catalog.pg_type WHERE oid = $1) SELECT * FROM tree",
        ] {
            assert_eq!(kind(text), INTROSPECTION, "{text}");
        }
    }

    #[test]
    fn a_query_touching_any_other_table_or_writing_is_a_request_statement() {
        for text in [
            "SELECT status FROM idempotency_keys WHERE key = 'k'",
            "SELECT t.oid FROM pg_type t JOIN payments p ON p.id = t.oid",
            "SELECT c.relname FROM pg_class c, payments p",
            "SELECT * FROM (SELECT oid FROM pg_type) AS t, payments",
            "WITH x AS (INSERT INTO payments (amount) VALUES (1) RETURNING id) SELECT * FROM x",
            "WITH tree AS (SELECT oid FROM pg_type) SELECT * FROM tree, payments",
            "SELECT oid FROM pg_type FOR SHARE",
            "SELECT nextval('payments_id_seq')",
            "SELECT pg_advisory_lock(42)",
            "SELECT now()",
            "SELECT id FROM public.pg_lookalike",
            "SELECT count(*) FROM payments",
            "SELECT 1 FROM payments",
        ] {
            assert_eq!(kind(text), Kind::Request, "{text}");
        }
    }

    #[test]
    fn constant_selects_and_empty_queries_are_validation() {
        let validation = Kind::Housekeeping(Chore::Validation);
        for text in [
            "SELECT 1",
            "select 1 as ok",
            "SELECT TRUE",
            "SELECT 1::int",
            "",
            ";",
        ] {
            assert_eq!(kind(text), validation, "{text:?}");
        }
        assert_eq!(
            kind("SELECT set_config('search_path', 'app', false)"),
            Kind::Housekeeping(Chore::Config)
        );
    }

    #[test]
    fn pool_resets_are_housekeeping_and_settings_are_session() {
        let reset = Kind::Housekeeping(Chore::PoolReset);
        for text in [
            "SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;",
            "DISCARD ALL",
            "RESET ALL",
            "DEALLOCATE ALL",
        ] {
            assert_eq!(kind(text), reset, "{text}");
        }
        for text in [
            "SET statement_timeout = 5",
            "RESET search_path",
            "DEALLOCATE S_3",
        ] {
            assert_eq!(kind(text), Kind::Session, "{text}");
        }
    }

    #[test]
    fn rollback_is_housekeeping_only_with_no_transaction_open_on_its_connection() {
        let mut connection = Classifier::default();
        assert_eq!(
            connection.classify("ROLLBACK"),
            Kind::Housekeeping(Chore::PoolReturn)
        );
        assert_eq!(connection.classify("BEGIN"), TRANSACTION);
        assert_eq!(
            connection.classify("INSERT INTO t VALUES (?)"),
            Kind::Request
        );
        assert_eq!(
            connection.classify("ROLLBACK TO SAVEPOINT ?"),
            Kind::Request
        );
        assert_eq!(connection.classify("rollback"), Kind::Request);
        assert_eq!(
            connection.classify("ROLLBACK"),
            Kind::Housekeeping(Chore::PoolReturn)
        );
        // A transaction opened and closed in one boundary leaves nothing open.
        assert_eq!(
            connection.classify("BEGIN; INSERT INTO t VALUES (?); COMMIT"),
            Kind::Request
        );
        assert_eq!(
            connection.classify("ABORT"),
            Kind::Housekeeping(Chore::PoolReturn)
        );
        // Each connection has its own state.
        let mut other = Classifier::default();
        connection.classify("START TRANSACTION");
        assert_eq!(
            other.classify("ROLLBACK"),
            Kind::Housekeeping(Chore::PoolReturn)
        );
        assert_eq!(connection.classify("ROLLBACK"), TRANSACTION);
    }

    const TRANSACTION: Kind = Kind::Housekeeping(Chore::Transaction);

    #[test]
    fn a_transaction_that_ran_only_housekeeping_is_no_step_and_one_that_worked_is() {
        // SQLAlchemy's first connection: BEGIN, introspection, ROLLBACK.
        let mut orm = Classifier::default();
        assert_eq!(orm.classify("BEGIN"), TRANSACTION);
        assert!(orm.in_transaction());
        assert_eq!(orm.classify("select pg_catalog.version()"), INTROSPECTION);
        assert_eq!(
            orm.classify("show standard_conforming_strings"),
            INTROSPECTION
        );
        assert_eq!(orm.classify("ROLLBACK"), TRANSACTION);
        assert!(!orm.in_transaction());
        // The request's own transaction: its end is a step (it commits or undoes work).
        assert_eq!(
            orm.classify("BEGIN ISOLATION LEVEL SERIALIZABLE"),
            TRANSACTION
        );
        assert_eq!(
            orm.classify("SELECT ?"),
            Kind::Housekeeping(Chore::Validation)
        );
        assert_eq!(
            orm.classify("UPDATE t SET a = ? WHERE k = ?"),
            Kind::Request
        );
        assert!(orm.in_transaction());
        assert_eq!(orm.classify("COMMIT"), Kind::Request);
        assert_eq!(orm.classify("START TRANSACTION READ WRITE"), TRANSACTION);
        assert_eq!(orm.classify("SELECT a FROM t WHERE k = ?"), Kind::Request);
        assert_eq!(orm.classify("ROLLBACK"), Kind::Request);
        // An empty transaction committed: no step; and autocommit statements are steps as ever.
        assert_eq!(orm.classify("BEGIN"), TRANSACTION);
        assert_eq!(orm.classify("END"), TRANSACTION);
        assert_eq!(orm.classify("INSERT INTO t VALUES (?)"), Kind::Request);
        assert!(!orm.in_transaction());
    }

    #[test]
    fn a_request_statement_among_housekeeping_makes_the_boundary_a_step() {
        assert_eq!(
            kind("SELECT 1; INSERT INTO payments (amount) VALUES (1)"),
            Kind::Request
        );
        assert_eq!(kind("SET a = 1; SHOW a"), INTROSPECTION);
    }
}
