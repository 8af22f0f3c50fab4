//! One state of the world. Ordered collections only, so hashing and iteration are deterministic.

use super::budget::Budgets;
use super::config::Faults;
use super::sorted_map::{copy_items, SortedMap};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

/// A logical operation: the `op`-th operation of client `client` (both 0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OpRef {
    pub client: u8,
    pub op: u8,
}

/// A key as the store indexes it: `scope` is the client under per-client scope, 0 under global scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Key {
    pub scope: u8,
    pub value: u8,
}

/// A request on the wire. `from` is ghost data (the server only sees client, key and body).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Request {
    pub from: OpRef,
    pub attempt: u8,
    pub key: Key,
    pub body: u8,
    /// Queue worlds: 0 for the message the producer first published, n for the n-th republished copy that the
    /// broker accepted as a new message (a copy has no delivery loop of its own: its `attempt` is 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copy: u8,
}

fn is_zero(value: &u8) -> bool {
    *value == 0
}

/// A payment's id: the operation it belongs to and its execution number within it (1 for the operation's
/// first committed payment). Not a position in the payments table: two operations committing in either order
/// give their payments the same ids, so commits of different operations do not order each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Payment {
    pub op: OpRef,
    pub execution: u8,
}

impl std::fmt::Display for Payment {
    /// "C1.op1 #2": the second payment of client 1's first operation.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "C{}.op{} #{}",
            self.op.client + 1,
            self.op.op + 1,
            self.execution
        )
    }
}

/// A response on the wire. `payload` is the payment it reports, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Response {
    pub to: OpRef,
    pub attempt: u8,
    pub code: u16,
    pub payload: Option<Payment>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Message {
    Request(Request),
    Response(Response),
}

/// How one operation ended, from the client's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpOutcome {
    Pending,
    Succeeded {
        payload: Option<Payment>,
    },
    /// A definite failure (a 4xx other than 409/429): retrying cannot help, and the client knows it.
    Failed {
        code: u16,
    },
    /// Attempts exhausted with the outcome unknown.
    GaveUp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClientPhase {
    /// About to send the next attempt of the current operation. `after_conflict`: the last answer was a 409.
    Ready { after_conflict: bool },
    /// An attempt is out; waiting for its response or a timeout.
    Waiting,
    /// Every operation ended.
    Done,
}

impl ClientPhase {
    /// The phase as one byte, for the packing and the symmetry signatures; `from_tag` inverts it.
    #[inline(always)]
    pub(crate) fn tag(self) -> u8 {
        match self {
            ClientPhase::Ready {
                after_conflict: false,
            } => 0,
            ClientPhase::Ready {
                after_conflict: true,
            } => 1,
            ClientPhase::Waiting => 2,
            ClientPhase::Done => 3,
        }
    }

    #[inline(always)]
    pub(crate) fn from_tag(tag: u8) -> ClientPhase {
        match tag {
            0 | 1 => ClientPhase::Ready {
                after_conflict: tag == 1,
            },
            2 => ClientPhase::Waiting,
            _ => ClientPhase::Done,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientState {
    /// Index of the current operation.
    pub op: u8,
    /// Attempts sent for the current operation (the attempt number of the last one).
    pub attempts: u8,
    /// Attempts charged against `max-attempts`: a 409 that carries Retry-After (the server has a lease) is a
    /// "come back later", not a failed attempt, and is refunded.
    pub charged: u8,
    pub phase: ClientPhase,
    pub outcomes: SmallVec<[OpOutcome; 4]>,
    /// Queue worlds: republished copies of this producer's events that the broker accepted.
    pub copies: u8,
}

/// Where a server process is in the handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobStep {
    /// unique-index: `BEGIN IMMEDIATE; INSERT OR IGNORE; SELECT; COMMIT` as one atomic step, then decide.
    /// select-then-insert: the `SELECT` and the decision.
    Claim,
    /// select-then-insert only: the `INSERT` after a `SELECT` found nothing (or an expired lease).
    Insert,
    /// Call the external provider (when the operation has one).
    Provider,
    /// Inside the effect transaction: the payment row is written but not committed.
    Effect,
    /// Commit the payment and the completion together (subject to fencing).
    Commit,
    /// Separate key store only: write "completed" to the key store after the database commit.
    CompleteKv { payload: Option<Payment> },
    /// Send the response.
    Respond { code: u16, payload: Option<Payment> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Job {
    pub request: Request,
    pub step: JobStep,
    /// The claim this job holds (a store-issued token), once it claimed or took over the key.
    pub token: Option<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proc {
    Idle,
    Busy(Job),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordStatus {
    InProgress { token: u8, lease_expired: bool },
    Completed { code: u16, payload: Option<Payment> },
}

/// A row of the idempotency table. `body` and `op` are ghost columns (what the checker knows, not the server).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    pub fingerprint: u8,
    pub body: u8,
    pub op: OpRef,
    pub status: RecordStatus,
}

/// Durable, committed state. Open transactions live in the processes and die with them.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct Store {
    pub records: SortedMap<Key, Record, 4>,
    /// The payments table as the ghost ledger of effects counts it: per operation, how many payments it
    /// committed (payment `execution` of `op` exists for 1..=count). A multiset, not a list in commit order.
    pub payments: SortedMap<OpRef, u8, 4>,
    /// Fencing tokens, one sequence per key: the version column of the key's row, the last token issued for it.
    /// It outlives the row: a key deleted (on error, by its TTL) keeps its version here as a tombstone, so the
    /// next claim of the key gets a later token than any claim before it and a stale owner stays fenced. Per
    /// key, not global, so that claims of different keys do not order each other.
    pub versions: SortedMap<Key, u8, 4>,
    /// Charges made at the external provider, with the operation and the key they were made for.
    pub provider_charges: SmallVec<[(OpRef, Key); 2]>,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub clients: SmallVec<[ClientState; 4]>,
    /// In-flight messages as a multiset: any may be delivered next, dropped or duplicated.
    pub network: SortedMap<Message, u8, 8>,
    pub procs: SmallVec<[Proc; 4]>,
    pub store: Store,
    /// Ghost ledger of responses: the first success payload sent for each operation.
    pub first_success: SortedMap<OpRef, Option<Payment>, 4>,
    /// Remaining fault budgets, indexed by `Fault`.
    pub budgets: Budgets<{ Faults::KINDS }>,
}

// Clones below copy the inline vectors with `from_slice` (a memcpy for `Copy` items) instead of the derived
// element-by-element clone: exploration clones a state once per transition, and this was a tenth of its time.

impl Clone for ClientState {
    #[inline]
    fn clone(&self) -> Self {
        ClientState {
            outcomes: SmallVec::from_slice(&self.outcomes),
            ..*self
        }
    }

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        self.op = source.op;
        self.attempts = source.attempts;
        self.charged = source.charged;
        self.phase = source.phase;
        self.copies = source.copies;
        copy_items(&mut self.outcomes, &source.outcomes);
    }
}

impl Clone for Store {
    #[inline]
    fn clone(&self) -> Self {
        Store {
            records: self.records.clone(),
            payments: self.payments.clone(),
            versions: self.versions.clone(),
            provider_charges: SmallVec::from_slice(&self.provider_charges),
        }
    }

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        self.records.clone_from(&source.records);
        self.payments.clone_from(&source.payments);
        self.versions.clone_from(&source.versions);
        copy_items(&mut self.provider_charges, &source.provider_charges);
    }
}

impl Clone for State {
    #[inline]
    fn clone(&self) -> Self {
        State {
            clients: self.clients.iter().cloned().collect(),
            network: self.network.clone(),
            procs: SmallVec::from_slice(&self.procs),
            store: self.store.clone(),
            first_success: self.first_success.clone(),
            budgets: self.budgets,
        }
    }

    /// Reuses this state's buffers: no allocation and no drop (the explorer's scratch state).
    #[inline]
    fn clone_from(&mut self, source: &Self) {
        if self.clients.len() == source.clients.len() {
            for (to, from) in self.clients.iter_mut().zip(&source.clients) {
                to.clone_from(from);
            }
        } else {
            self.clients.clone_from(&source.clients);
        }
        self.network.clone_from(&source.network);
        copy_items(&mut self.procs, &source.procs);
        self.store.clone_from(&source.store);
        self.first_success.clone_from(&source.first_success);
        self.budgets = source.budgets;
    }
}

impl State {
    pub fn charges_of(&self, op: OpRef) -> usize {
        self.store
            .provider_charges
            .iter()
            .filter(|(owner, _)| *owner == op)
            .count()
    }

    /// Payments committed, all operations together (the real payments table's row count).
    pub fn effects(&self) -> usize {
        self.store
            .payments
            .iter()
            .map(|(_, count)| *count as usize)
            .sum()
    }

    pub fn effects_of(&self, op: OpRef) -> usize {
        self.store
            .payments
            .get(&op)
            .map_or(0, |count| *count as usize)
    }

    /// Whether some live process holds claim `token` on `key` (and has not committed yet). Tokens are per key:
    /// a job holding the same number on another key is another claim.
    pub fn owner_alive(&self, key: Key, token: u8) -> bool {
        self.procs.iter().any(|proc| match proc {
            Proc::Busy(job) => {
                job.token == Some(token)
                    && job.request.key == key
                    && !matches!(job.step, JobStep::Respond { .. })
            }
            Proc::Idle => false,
        })
    }
}
