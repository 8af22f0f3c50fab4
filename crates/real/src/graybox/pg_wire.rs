//! PostgreSQL's frontend/backend protocol (version 3), as much as a gate needs: cutting the byte streams into
//! messages, grouping what the service sends into boundaries, and matching what the store answers to them.
//!
//! Frontend ([`Front`]): the first message is untyped (SSLRequest and GSSENCRequest are answered `N` by the gate,
//! a CancelRequest is forwarded as is, then the StartupMessage); authentication passes untouched until the
//! store's first ReadyForQuery. After it, messages accumulate until a `Query`, `Sync` or `Flush` ends the group:
//! one boundary. Its text is the SQL of its `Query`, or of the statements its `Execute`s run, found through the
//! portal -> statement -> text maps of the connection (a `Bind` names a statement parsed maybe many groups ago).
//! Backend ([`Answers`]): a Query or Sync group is answered at its ReadyForQuery; a Flush group when each of its
//! messages got its response, or at an ErrorResponse (after which the store skips everything until a Sync).

use super::bounds::{GROUP_MESSAGES_MAX, GROUP_TEXT_BYTES_MAX, STATEMENT_TEXT_BYTES_MAX};
use super::kind::Kind;
use super::normalise;
use super::pg_classify::Classifier;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The largest message either side may send (a bigger one closes the connection as unsupported).
pub const MESSAGE_BYTES_MAX: usize = 64 << 20;
/// The largest group of messages the service may send before a `Sync`, `Flush` or `Query`.
pub const GROUP_BYTES_MAX: usize = 64 << 20;

/// The most prepared statements (and, separately, portals) one connection may keep: their texts are held here.
pub const STATEMENTS_MAX: usize = 10_000;

const SSL_REQUEST: u32 = 80877103;
const GSSENC_REQUEST: u32 = 80877104;
const CANCEL_REQUEST: u32 = 80877102;

/// What the gate told the service when its TLS request was refused and it then went away.
/// What a client that insists on TLS is told: the gates speak plain TCP on loopback, and how to turn TLS off
/// differs by driver (lib/pq and pgjdbc default to requiring or trying it; the service's DATABASE_URL already
/// says sslmode=disable, so a driver that still asks builds its settings elsewhere).
pub const TLS_REQUIRED: &str = "TLS required: the client asked for TLS and closed when the gate (plain TCP on \
     loopback) refused it; turn TLS off in the service's driver: sslmode=disable in its URL or PGSSLMODE (libpq, \
     psycopg, lib/pq, pgx), sslmode=disable or ssl=false for pgjdbc, ssl: false for node-pg and asyncpg";

/// The length of the first complete untyped (startup-phase) message at the start of `buf`.
pub fn cut_startup(buf: &[u8]) -> Result<Option<usize>, String> {
    let Some(head) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if !(8..=MESSAGE_BYTES_MAX).contains(&len) {
        return Err(format!("startup message of {len} bytes"));
    }
    Ok((buf.len() >= len).then_some(len))
}

/// The type and total length (type byte included) of the first complete typed message at the start of `buf`.
pub fn cut_message(buf: &[u8]) -> Result<Option<(u8, usize)>, String> {
    let Some(head) = buf.get(..5) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if !(4..=MESSAGE_BYTES_MAX).contains(&len) {
        return Err(format!("message '{}' of {len} bytes", head[0] as char));
    }
    Ok((buf.len() > len).then_some((head[0], len + 1)))
}

/// A null-terminated string at `at` in `body`, and where the next field starts.
pub(super) fn cstring(body: &[u8], at: usize) -> Option<(String, usize)> {
    let rest = body.get(at..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    Some((
        String::from_utf8_lossy(&rest[..end]).into_owned(),
        at + end + 1,
    ))
}

/// Field `what` of message `message`, a null-terminated string at `at`. Err: the message is malformed, by name
/// (an empty text in its place would make two different statements one boundary).
fn field(body: &[u8], at: usize, message: &str, what: &str) -> Result<(String, usize), String> {
    cstring(body, at).ok_or_else(|| format!("{message} message without a null-terminated {what}"))
}

/// Whether a Describe or Close names a statement (`S`) or a portal (`P`). Err: neither, by name.
fn target(body: &[u8], message: &str) -> Result<bool, String> {
    match body.first() {
        Some(b'S') => Ok(true),
        Some(b'P') => Ok(false),
        Some(other) => Err(format!("{message} of type '{}'", other.escape_ascii())),
        None => Err(format!("{message} message without its type")),
    }
}

/// How a forwarded group is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupEnd {
    /// At ReadyForQuery (a `Query` or a `Sync` ended the group).
    Ready,
    /// When this many responses arrived, or an ErrorResponse (a `Flush` ended it).
    Responses(u32),
}

/// One boundary: the messages of a group, as they came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub bytes: Vec<u8>,
    pub text: String,
    pub kind: Kind,
    /// A transaction is open on the connection once the group ran (as its statements say).
    pub in_transaction: bool,
    pub end: GroupEnd,
}

/// What one message from the service makes the gate do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrontStep {
    /// Forward these bytes as they are (startup, authentication, a cancel request).
    Raw(Vec<u8>),
    /// Answer the service with these bytes, forward nothing (`N` to SSLRequest).
    Reply(Vec<u8>),
    /// The message joined the pending group.
    Pending,
    /// The group is complete.
    Group(Group),
    /// Terminate: forward these bytes and close.
    Last(Vec<u8>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the StartupMessage.
    Startup,
    /// After it: forwarded untouched until the store's first ReadyForQuery.
    Session,
    /// A CancelRequest connection: everything forwarded.
    Cancel,
}

/// The frontend side of one connection.
#[derive(Debug)]
pub struct Front {
    phase: Phase,
    tls_refused: bool,
    /// Prepared statement name ("" the unnamed one) -> its normalised text. Shared (`Arc`): portals and every
    /// Execute of a group refer to it, and a few wire bytes must not cost a whole text each.
    statements: BTreeMap<String, Arc<str>>,
    /// The size of the texts in `statements`, against `STATEMENT_TEXT_BYTES_MAX`.
    statement_bytes: usize,
    /// Portal name -> the normalised text of the statement it was bound to.
    portals: BTreeMap<String, Arc<str>>,
    pending: Vec<u8>,
    /// Texts of the pending group's Executes (or Parses, for a group that executes nothing).
    executed: Vec<Arc<str>>,
    parsed: Vec<Arc<str>>,
    /// The size of the texts in `executed` and `parsed`, against `GROUP_TEXT_BYTES_MAX`.
    group_text_bytes: usize,
    kinds: Vec<&'static str>,
    responses: u32,
    /// The connection's transaction state, for what its statements are (`pg_classify`).
    classifier: Classifier,
}

impl Default for Front {
    fn default() -> Self {
        Front {
            phase: Phase::Startup,
            tls_refused: false,
            statements: BTreeMap::new(),
            statement_bytes: 0,
            portals: BTreeMap::new(),
            pending: Vec::new(),
            executed: Vec::new(),
            parsed: Vec::new(),
            group_text_bytes: 0,
            kinds: Vec::new(),
            responses: 0,
            classifier: Classifier::default(),
        }
    }
}

impl Front {
    /// Cut the next message from `buf`: its length and what to do (None: more bytes are needed). `ready`: the
    /// store's first ReadyForQuery was seen. Err: unsupported, by name.
    pub fn cut(&mut self, buf: &[u8], ready: bool) -> Result<Option<(usize, FrontStep)>, String> {
        if self.phase == Phase::Startup {
            let Some(len) = cut_startup(buf)? else {
                return Ok(None);
            };
            return Ok(Some((len, self.startup(&buf[..len])?)));
        }
        if self.phase == Phase::Cancel || !ready {
            if buf.is_empty() {
                return Ok(None);
            }
            return Ok(Some((buf.len(), FrontStep::Raw(buf.to_vec()))));
        }
        let Some((tag, len)) = cut_message(buf)? else {
            return Ok(None);
        };
        Ok(Some((len, self.message(tag, &buf[..len])?)))
    }

    /// Whether the StartupMessage was seen (a cancel request's connection never starts).
    pub fn started(&self) -> bool {
        self.phase == Phase::Session
    }

    /// The bytes of the group not complete yet (they are buffered here, not in the connection).
    pub fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    /// What to report when the service closed: a refused TLS request followed by nothing is a TLS requirement.
    pub fn at_close(&self) -> Option<String> {
        (self.phase == Phase::Startup && self.tls_refused).then(|| TLS_REQUIRED.to_string())
    }

    fn startup(&mut self, msg: &[u8]) -> Result<FrontStep, String> {
        let code = u32::from_be_bytes([msg[4], msg[5], msg[6], msg[7]]);
        match code {
            SSL_REQUEST | GSSENC_REQUEST => {
                self.tls_refused |= code == SSL_REQUEST;
                Ok(FrontStep::Reply(b"N".to_vec()))
            }
            CANCEL_REQUEST => {
                self.phase = Phase::Cancel;
                Ok(FrontStep::Raw(msg.to_vec()))
            }
            _ if code >> 16 == 3 => {
                if let Some(value) = startup_parameter(msg, "replication") {
                    if !matches!(value.as_str(), "false" | "off" | "no" | "0") {
                        return Err(format!("replication connection (replication={value})"));
                    }
                }
                self.phase = Phase::Session;
                Ok(FrontStep::Raw(msg.to_vec()))
            }
            _ => Err(format!("startup request code {code}")),
        }
    }

    fn message(&mut self, tag: u8, msg: &[u8]) -> Result<FrontStep, String> {
        if self.pending.len() + msg.len() > GROUP_BYTES_MAX {
            return Err(format!("a group of more than {GROUP_BYTES_MAX} bytes"));
        }
        if self.kinds.len() >= GROUP_MESSAGES_MAX {
            return Err(format!(
                "a group of more than {GROUP_MESSAGES_MAX} messages before a Sync"
            ));
        }
        let body = &msg[5..];
        match tag {
            b'X' => return Ok(FrontStep::Last(msg.to_vec())),
            b'P' => self.parse(body)?,
            b'B' => self.bind(body)?,
            b'D' => self.describe(body)?,
            b'E' => self.execute(body)?,
            b'C' => self.close(body)?,
            b'S' => self.kinds.push("Sync"),
            b'H' => self.kinds.push("Flush"),
            b'Q' => {}
            b'd' => return Err("COPY FROM STDIN data (CopyData)".into()),
            b'c' => return Err("COPY FROM STDIN end (CopyDone)".into()),
            b'f' => return Err("COPY FROM STDIN failure (CopyFail)".into()),
            b'F' => return Err("FunctionCall".into()),
            b'p' => return Err("password message after authentication".into()),
            other => return Err(format!("frontend message type '{}'", other.escape_ascii())),
        }
        self.pending.extend_from_slice(msg);
        match tag {
            b'Q' => {
                let (query, _) = field(body, 0, "Query", "query string")?;
                self.run_text(normalise::sql(&query).into(), true)?;
                Ok(FrontStep::Group(self.finish(GroupEnd::Ready, true)))
            }
            b'S' => Ok(FrontStep::Group(self.finish(GroupEnd::Ready, false))),
            b'H' => {
                let end = GroupEnd::Responses(self.responses);
                Ok(FrontStep::Group(self.finish(end, false)))
            }
            _ => Ok(FrontStep::Pending),
        }
    }

    /// A text the pending group runs (`executed`) or only parses. Err: the group's texts are over their bound.
    fn run_text(&mut self, text: Arc<str>, executed: bool) -> Result<(), String> {
        self.group_text_bytes += text.len();
        if self.group_text_bytes > GROUP_TEXT_BYTES_MAX {
            return Err(format!(
                "statement texts over {} MiB in one group before a Sync",
                GROUP_TEXT_BYTES_MAX >> 20
            ));
        }
        if executed {
            self.executed.push(text);
        } else {
            self.parsed.push(text);
        }
        Ok(())
    }

    fn parse(&mut self, body: &[u8]) -> Result<(), String> {
        let (name, at) = field(body, 0, "Parse", "statement name")?;
        if self.statements.len() >= STATEMENTS_MAX && !self.statements.contains_key(&name) {
            return Err(format!(
                "more than {STATEMENTS_MAX} prepared statements on one connection"
            ));
        }
        let (query, _) = field(body, at, "Parse", "query string")?;
        let text: Arc<str> = normalise::sql(&query).into();
        let replaced = self.statements.get(&name).map_or(0, |old| old.len());
        let bytes = self.statement_bytes - replaced + text.len();
        if bytes > STATEMENT_TEXT_BYTES_MAX {
            return Err(format!(
                "prepared statement texts over {} MiB on one connection",
                STATEMENT_TEXT_BYTES_MAX >> 20
            ));
        }
        self.run_text(Arc::clone(&text), false)?;
        self.statement_bytes = bytes;
        self.statements.insert(name, text);
        self.kinds.push("Parse");
        self.responses += 1;
        Ok(())
    }

    fn bind(&mut self, body: &[u8]) -> Result<(), String> {
        let (portal, at) = field(body, 0, "Bind", "portal name")?;
        if self.portals.len() >= STATEMENTS_MAX && !self.portals.contains_key(&portal) {
            return Err(format!(
                "more than {STATEMENTS_MAX} portals on one connection"
            ));
        }
        let (statement, _) = field(body, at, "Bind", "statement name")?;
        let text = self
            .statements
            .get(&statement)
            .cloned()
            .unwrap_or_else(|| unknown("statement", &statement));
        self.portals.insert(portal, text);
        self.kinds.push("Bind");
        self.responses += 1;
        Ok(())
    }

    fn describe(&mut self, body: &[u8]) -> Result<(), String> {
        // A statement gets ParameterDescription then RowDescription or NoData; a portal the latter only.
        self.responses += if target(body, "Describe")? { 2 } else { 1 };
        self.kinds.push("Describe");
        Ok(())
    }

    fn execute(&mut self, body: &[u8]) -> Result<(), String> {
        let (portal, _) = field(body, 0, "Execute", "portal name")?;
        let text = self
            .portals
            .get(&portal)
            .cloned()
            .unwrap_or_else(|| unknown("portal", &portal));
        self.run_text(text, true)?;
        self.kinds.push("Execute");
        self.responses += 1;
        Ok(())
    }

    fn close(&mut self, body: &[u8]) -> Result<(), String> {
        let statement = target(body, "Close")?;
        let (name, _) = field(body, 1, "Close", "name")?;
        if statement {
            if let Some(text) = self.statements.remove(&name) {
                self.statement_bytes -= text.len();
            }
        } else {
            self.portals.remove(&name);
        }
        self.kinds.push("Close");
        self.responses += 1;
        Ok(())
    }

    /// The pending group as a boundary; a group that runs nothing (Parse/Describe/Close only) is a session one,
    /// one that runs statements is what they are.
    fn finish(&mut self, end: GroupEnd, query: bool) -> Group {
        let runs = query || !self.executed.is_empty();
        let text = if runs {
            self.executed.join("; ")
        } else if !self.parsed.is_empty() {
            self.parsed.join("; ")
        } else {
            self.kinds.join("; ")
        };
        let kind = if runs {
            self.classifier.classify(&text)
        } else {
            Kind::Session
        };
        let group = Group {
            bytes: std::mem::take(&mut self.pending),
            text,
            kind,
            in_transaction: self.classifier.in_transaction(),
            end,
        };
        self.executed.clear();
        self.parsed.clear();
        self.group_text_bytes = 0;
        self.kinds.clear();
        self.responses = 0;
        group
    }

    /// The text a statement name resolves to (test and diagnostics).
    pub fn statement_text(&self, name: &str) -> Option<&str> {
        self.statements.get(name).map(|text| &**text)
    }
}

/// The text of a statement or portal the gate never saw parsed. Without its name: names differ between runs
/// (`S_3`, `__asyncpg_stmt_12__`) and texts are compared across runs.
fn unknown(what: &str, _name: &str) -> Arc<str> {
    format!("<unknown {what}>").into()
}

/// The value of a StartupMessage parameter.
fn startup_parameter(msg: &[u8], key: &str) -> Option<String> {
    let mut at = 8;
    while let Some((name, next)) = cstring(msg, at) {
        if name.is_empty() {
            return None;
        }
        let (value, after) = cstring(msg, next)?;
        if name == key {
            return Some(value);
        }
        at = after;
    }
    None
}

pub use super::pg_answers::{Answered, Answers};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn message(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    pub(crate) fn cstrings(parts: &[&str]) -> Vec<u8> {
        parts.iter().flat_map(|p| p.bytes().chain([0])).collect()
    }

    fn startup(params: &[&str]) -> Vec<u8> {
        let mut body = 196608u32.to_be_bytes().to_vec();
        body.extend(cstrings(params));
        body.push(0);
        let mut out = (body.len() as u32 + 4).to_be_bytes().to_vec();
        out.extend(body);
        out
    }

    fn parse(name: &str, sql: &str) -> Vec<u8> {
        let mut body = cstrings(&[name, sql]);
        body.extend([0, 0]);
        message(b'P', &body)
    }

    fn bind(portal: &str, statement: &str) -> Vec<u8> {
        let mut body = cstrings(&[portal, statement]);
        body.extend([0, 0, 0, 0, 0, 0]);
        message(b'B', &body)
    }

    fn execute(portal: &str) -> Vec<u8> {
        let mut body = cstrings(&[portal]);
        body.extend([0, 0, 0, 0]);
        message(b'E', &body)
    }

    /// Feed `bytes` in pieces of `chunk` bytes, as reads would deliver them; the steps that came out.
    fn feed(front: &mut Front, bytes: &[u8], chunk: usize, ready: bool) -> Vec<FrontStep> {
        let mut buf = Vec::new();
        let mut steps = Vec::new();
        for piece in bytes.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some((len, step)) = front.cut(&buf, ready).unwrap() {
                buf.drain(..len);
                steps.push(step);
            }
        }
        assert!(buf.is_empty(), "bytes left over");
        steps
    }

    fn groups(steps: Vec<FrontStep>) -> Vec<(String, bool, GroupEnd)> {
        steps
            .into_iter()
            .filter_map(|s| match s {
                FrontStep::Group(g) => Some((g.text, g.kind.passes(), g.end)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn ssl_request_is_answered_n_and_startup_forwarded() {
        let mut front = Front::default();
        let mut bytes = vec![0, 0, 0, 8];
        bytes.extend(SSL_REQUEST.to_be_bytes());
        bytes.extend(startup(&["user", "postgres"]));
        let steps = feed(&mut front, &bytes, 3, false);
        assert_eq!(steps[0], FrontStep::Reply(b"N".to_vec()));
        assert!(matches!(&steps[1], FrontStep::Raw(b) if b.len() == bytes.len() - 8));
        assert_eq!(front.at_close(), None);
    }

    #[test]
    fn tls_refused_then_closed_is_tls_required() {
        let mut front = Front::default();
        let mut bytes = vec![0, 0, 0, 8];
        bytes.extend(SSL_REQUEST.to_be_bytes());
        feed(&mut front, &bytes, 100, false);
        assert_eq!(front.at_close().as_deref(), Some(TLS_REQUIRED));
    }

    #[test]
    fn a_replication_startup_is_unsupported() {
        let msg = startup(&["user", "postgres", "replication", "database"]);
        let error = Front::default().cut(&msg, false).unwrap_err();
        assert_eq!(error, "replication connection (replication=database)");
        let msg = startup(&["user", "postgres", "replication", "false"]);
        assert!(Front::default().cut(&msg, false).is_ok());
    }

    #[test]
    fn a_named_statement_bound_groups_later_keeps_its_text() {
        let mut front = Front::default();
        feed(&mut front, &startup(&["user", "u"]), 100, false);
        let mut bytes = parse("s1", "SELECT v FROM t WHERE id = $1 AND n = 5");
        bytes.extend(message(b'D', b"Ss1\0"));
        bytes.extend(message(b'S', b""));
        bytes.extend(bind("", "s1"));
        bytes.extend(execute(""));
        bytes.extend(message(b'S', b""));
        bytes.extend(bind("", "s1"));
        bytes.extend(execute(""));
        bytes.extend(message(b'H', b""));
        let text = "SELECT v FROM t WHERE id = $1 AND n = ?".to_string();
        for chunk in [1, 7, 1000] {
            let mut front = Front::default();
            feed(&mut front, &startup(&["user", "u"]), 100, false);
            assert_eq!(
                groups(feed(&mut front, &bytes, chunk, true)),
                [
                    (text.clone(), true, GroupEnd::Ready),
                    (text.clone(), false, GroupEnd::Ready),
                    (text.clone(), false, GroupEnd::Responses(2)),
                ]
            );
        }
        // Closed, the statement's text is forgotten.
        let mut closing = parse("s2", "SELECT 1");
        closing.extend(message(b'C', b"Ss2\0"));
        closing.extend(message(b'S', b""));
        feed(&mut front, &closing, 100, true);
        assert_eq!(front.statement_text("s2"), None);
    }

    #[test]
    fn set_and_empty_queries_are_session_and_copy_data_is_unsupported() {
        let mut front = Front::default();
        feed(&mut front, &startup(&["user", "u"]), 100, false);
        let mut bytes = message(b'Q', b"SET search_path = 'x'\0");
        bytes.extend(message(b'Q', b"\0"));
        bytes.extend(message(b'Q', b"INSERT INTO t VALUES (1)\0"));
        let found = groups(feed(&mut front, &bytes, 4, true));
        let sessions: Vec<bool> = found.iter().map(|g| g.1).collect();
        assert_eq!(sessions, [true, true, false]);
        assert_eq!(
            front.cut(&message(b'd', b"1\n"), true).unwrap_err(),
            "COPY FROM STDIN data (CopyData)"
        );
        assert!(front.cut(&message(b'F', b""), true).is_err());
    }

    #[test]
    fn prepared_statements_are_bounded_per_connection() {
        let mut front = Front::default();
        feed(&mut front, &startup(&["user", "u"]), 100, false);
        for index in 0..STATEMENTS_MAX {
            let name = format!("s{index}");
            assert!(front.cut(&parse(&name, "SELECT 1"), true).is_ok());
        }
        // Parsed again under a name it holds: fine; a new name: refused.
        assert!(front.cut(&parse("s0", "SELECT 2"), true).is_ok());
        let error = front.cut(&parse("one_more", "SELECT 1"), true).unwrap_err();
        assert_eq!(
            error,
            format!("more than {STATEMENTS_MAX} prepared statements on one connection")
        );
    }

    fn started() -> Front {
        let mut front = Front::default();
        feed(&mut front, &startup(&["user", "u"]), 100, false);
        front
    }

    /// A statement text of exactly `bytes` once normalised (no literals, one identifier).
    fn text_of(bytes: usize) -> String {
        let text = format!("SELECT {}", "a".repeat(bytes - 7));
        assert_eq!(normalise::sql(&text).len(), bytes);
        text
    }

    #[test]
    fn prepared_statement_texts_are_bounded_in_size_per_connection() {
        let mut front = started();
        let mib = text_of(1 << 20);
        let sync = message(b'S', b"");
        for index in 0..STATEMENT_TEXT_BYTES_MAX >> 20 {
            assert!(front.cut(&parse(&format!("s{index}"), &mib), true).is_ok());
            assert!(front.cut(&sync, true).is_ok());
        }
        // At the bound: parsed again under a name it holds costs nothing more; a new text is refused by name.
        assert!(front.cut(&parse("s0", &mib), true).is_ok());
        let error = front.cut(&parse("one_more", "SELECT 1"), true).unwrap_err();
        assert_eq!(
            error,
            "prepared statement texts over 16 MiB on one connection"
        );
        // Closed, a statement gives its room back.
        assert!(front.cut(&message(b'C', b"Ss3\0"), true).is_ok());
        assert!(front.cut(&parse("one_more", "SELECT 1"), true).is_ok());
    }

    #[test]
    fn the_texts_of_one_group_are_bounded_though_executes_are_small() {
        // A statement of 64 KiB executed again and again before a Sync: a few bytes each on the wire.
        let mut front = started();
        let mut bytes = parse("s", &text_of(64 << 10));
        bytes.extend(message(b'S', b""));
        bytes.extend(bind("", "s"));
        feed(&mut front, &bytes, 1 << 20, true);
        let runs = GROUP_TEXT_BYTES_MAX / (64 << 10);
        for _ in 0..runs {
            assert!(front.cut(&execute(""), true).is_ok());
        }
        let error = front.cut(&execute(""), true).unwrap_err();
        assert_eq!(
            error,
            "statement texts over 16 MiB in one group before a Sync"
        );
        // Just under, the group ends as one boundary whose text repeats the statement.
        let mut front = started();
        feed(&mut front, &bytes, 1 << 20, true);
        for _ in 0..runs {
            front.cut(&execute(""), true).unwrap();
        }
        let Some((_, FrontStep::Group(group))) = front.cut(&message(b'S', b""), true).unwrap()
        else {
            panic!("no group at the Sync");
        };
        assert_eq!(group.text.len(), GROUP_TEXT_BYTES_MAX + 2 * (runs - 1));
    }

    #[test]
    fn the_messages_of_one_group_are_bounded() {
        let mut front = started();
        let describe = message(b'D', b"P\0");
        for _ in 0..GROUP_MESSAGES_MAX {
            assert_eq!(
                front.cut(&describe, true).unwrap().unwrap().1,
                FrontStep::Pending
            );
        }
        assert_eq!(
            front.cut(&describe, true).unwrap_err(),
            format!("a group of more than {GROUP_MESSAGES_MAX} messages before a Sync")
        );
    }

    #[test]
    fn malformed_fields_are_refused_by_message_never_read_as_empty() {
        let mut front = started();
        assert_eq!(
            front.cut(&message(b'Q', b"SELECT 1"), true).unwrap_err(),
            "Query message without a null-terminated query string"
        );
        assert_eq!(
            front
                .cut(&message(b'P', b"s1\0SELECT 1"), true)
                .unwrap_err(),
            "Parse message without a null-terminated query string"
        );
        assert_eq!(
            front.cut(&message(b'B', b"\0s1"), true).unwrap_err(),
            "Bind message without a null-terminated statement name"
        );
        assert_eq!(
            front.cut(&message(b'E', b""), true).unwrap_err(),
            "Execute message without a null-terminated portal name"
        );
        assert_eq!(
            front.cut(&message(b'D', b"X\0"), true).unwrap_err(),
            "Describe of type 'X'"
        );
        assert_eq!(
            front.cut(&message(b'C', b""), true).unwrap_err(),
            "Close message without its type"
        );
    }

    #[test]
    fn oversized_messages_are_refused_before_they_are_buffered() {
        let mut head = vec![b'Q'];
        head.extend(((MESSAGE_BYTES_MAX + 1) as u32).to_be_bytes());
        assert!(cut_message(&head).is_err());
        assert_eq!(cut_message(&head[..3]), Ok(None));
    }
}
