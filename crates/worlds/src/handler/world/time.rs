//! Time at rest, and the fairness `eventually-*` properties are judged under.
//!
//! The clock of a handler world moves on pauses and Retry-After waits, and also **at rest**: when no process,
//! client, delivery or worker can move (only faults are left), the step `Later` moves the clock to the next
//! instant something expires: a key-value TTL, or a lease the design declared (`HandlerWorld::expiries`: where
//! its leases are and when the one in a value runs out). A world is at rest, in the checker's sense, only once
//! nothing will expire any more, so `no-stuck-key` means "unfinished for ever", not "unfinished within the
//! clients' retry window": a crashed owner's claim whose lease will run out is not stuck; one with no lease is.
//!
//! **Fairness** (on by default, `HandlerWorld::fair`). `eventually-resolves` and `no-stuck-key` are judged on the
//! runs that satisfy two assumptions, the ones a production system lives by:
//! - *weak fairness of the clock*: time does not stand still while a client waits; a lease that will run out
//!   does run out before the client's patience does;
//! - *weak fairness of retries*: a client without a definite answer keeps asking, so that it cannot be
//!   starved by "in progress" answers (or timeouts) to attempts that all came before the owner's next step. A
//!   409 still counts as an attempt; a client whose attempts are used up (its last one told 409, or timed out)
//!   waits (the phase `Patient`) until the world is at rest and asks again after the clock moved to the next
//!   expiry, if any (at most `POLLS_MAX` times: a design still answering 409 then, with nothing left to
//!   expire, is stuck, and its counterexample shows the polls).
//!
//! Without fairness (`.fair(false)`, the older behaviour) a client gives up after its last attempt, so a design
//! without `retry_after_ms` fails `eventually-resolves` as soon as an early timeout lets a client spend its
//! attempts on 409s while the owner is still working. Faults stay unfair: they happen within their budgets, at
//! any point. Safety properties are unaffected: fairness only adds polls after a client would have given up.

pub use super::records::RecordsIn;
use super::{HandlerState, HandlerWorld, Phase};
use crate::handler::api::{Handler, Worker};
use crate::handler::sim::Committed;
use std::sync::Arc;

/// How many times a patient client asks again after its attempts ran out (each poll waits for rest and the
/// clock): a bound for designs that keep taking new leases without finishing (a livelock reads as given up).
pub const POLLS_MAX: u8 = 3;

/// When the lease in a record's value runs out, in the store's milliseconds (`None`: it holds no lease).
pub type ExpiryOf = Arc<dyn Fn(&str) -> Option<u64> + Send + Sync>;

/// A design's leases: where they are kept, and when each runs out.
#[derive(Clone)]
pub struct Expiries {
    pub place: RecordsIn,
    pub expiry_of: ExpiryOf,
}

impl std::fmt::Debug for Expiries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expiries in {:?}", self.place)
    }
}

impl Expiries {
    /// The leases in `store` that have not run out yet: (place as timelines name it, when it runs out).
    fn pending<'a>(&'a self, store: &'a Committed) -> Box<dyn Iterator<Item = (String, u64)> + 'a> {
        let now_ms = store.now_ms;
        let expiry_of = &self.expiry_of;
        match &self.place {
            RecordsIn::Table(table) => {
                Box::new(store.rows.iter().filter_map(move |((t, key), (value, _))| {
                    let at = (t == table).then(|| expiry_of(value)).flatten()?;
                    (at > now_ms).then(|| (format!("the lease in {t}[{key}]"), at))
                }))
            }
            RecordsIn::KeyValue => {
                Box::new(store.kv.iter().filter_map(move |(key, (value, _))| {
                    let at = expiry_of(value)?;
                    (at > now_ms).then(|| (format!("the lease in kv {key}"), at))
                }))
            }
        }
    }
}

/// TTLs of the key-value store that have not run out: (key as timelines name it, when it expires).
fn pending_ttls(store: &Committed) -> impl Iterator<Item = (String, u64)> + '_ {
    let now_ms = store.now_ms;
    (store.kv.iter()).filter_map(move |(key, (_, expiry))| {
        let at = (*expiry)?;
        (at > now_ms).then(|| (format!("the TTL of kv {key}"), at))
    })
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// The next instant something expires (a TTL, or a declared lease), if any is still ahead.
    pub(super) fn next_expiry_ms(&self, store: &Committed) -> Option<u64> {
        let now_ms = store.now_ms;
        let ttls = (store.kv.values()).filter_map(|(_, expiry)| expiry.filter(|at| *at > now_ms));
        let leases = self.expiries.as_ref().and_then(|expiries| {
            let expiry_of = &expiries.expiry_of;
            match &expiries.place {
                RecordsIn::Table(table) => (store.rows.iter())
                    .filter(|((t, _), _)| t == table)
                    .filter_map(|(_, (value, _))| expiry_of(value))
                    .filter(|at| *at > now_ms)
                    .min(),
                RecordsIn::KeyValue => (store.kv.values())
                    .filter_map(|(value, _)| expiry_of(value))
                    .filter(|at| *at > now_ms)
                    .min(),
            }
        });
        ttls.min().into_iter().chain(leases).min()
    }

    /// What runs out at `at_ms`, for the timeline: "the lease in keys[c1/k0]", "the TTL of kv k0".
    pub(super) fn expiring_at(&self, store: &Committed, at_ms: u64) -> Vec<String> {
        let leases = self.expiries.iter().flat_map(|e| e.pending(store));
        let mut names: Vec<String> = pending_ttls(store)
            .chain(leases)
            .filter(|(_, at)| *at == at_ms)
            .map(|(name, _)| name)
            .collect();
        names.sort();
        names
    }

    /// At rest (`moving`: some non-fault action is enabled; if so, nothing happens): whether time may pass.
    pub(super) fn later_enabled(&self, state: &HandlerState, moving: bool) -> bool {
        !moving
            && (state.clients.iter().any(|c| c.phase == Phase::Patient)
                || self.next_expiry_ms(&state.store).is_some())
    }

    /// Time passes at rest: the clock moves to the next expiry (if any), and every patient client asks again.
    pub(super) fn later(&self, state: &mut HandlerState) {
        if let Some(at_ms) = self.next_expiry_ms(&state.store) {
            state.store.now_ms = at_ms;
        }
        // Looked at first: `clients` is copied on write (`Shared`), and most rests have no patient client.
        if state.clients.iter().any(|c| c.phase == Phase::Patient) {
            for client in state.clients.iter_mut() {
                if client.phase == Phase::Patient {
                    client.phase = Phase::Ready {
                        after_conflict: false,
                    };
                }
            }
        }
    }

    /// Under fairness, whether a client with its attempts used up (told 409, or timed out) waits and asks again later rather
    /// than giving up (see the module docs): while it has polls left. (Judging "nothing can change any more"
    /// when the 409 arrives is unsound: a worker may have freed the key between the reply and its delivery.)
    pub(super) fn stays_patient(&self, state: &HandlerState, client: u8) -> bool {
        let attempts = state.clients[client as usize].attempts;
        self.fair && attempts < self.attempts_max.saturating_add(POLLS_MAX)
    }
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// The timeline's line for `Later`: from when to when, what runs out, who asks again.
    pub(super) fn describe_later(&self, before: &HandlerState) -> String {
        let store = &before.store;
        let mut text = match self.next_expiry_ms(store) {
            Some(at_ms) => format!(
                "time passes at rest: the clock moves from {} to {at_ms} ms ({} runs out)",
                store.now_ms,
                self.expiring_at(store, at_ms).join(", ")
            ),
            None => "time passes at rest (nothing left to expire)".to_string(),
        };
        let patient: Vec<String> = (before.clients.iter().enumerate())
            .filter(|(_, client)| client.phase == Phase::Patient)
            .map(|(n, _)| format!("C{}", n + 1))
            .collect();
        if !patient.is_empty() {
            text.push_str(&format!("; {} will ask again", patient.join(", ")));
        }
        text
    }
}
