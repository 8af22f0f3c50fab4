//! The gates: one loopback listener per store (PostgreSQL, Redis) that the service connects to instead of the
//! store. Each connection is forwarded to the real store, message by message; what the service sends is cut into
//! boundaries (PostgreSQL: the messages up to a `Query`, a `Sync` or a `Flush`; Redis: one command, or a
//! `MULTI ... EXEC` block gated at its `EXEC`). In `Mode::Hold` each boundary waits for the controller's
//! `Decision`; in `Mode::Pass` it runs at once. Either way the controller hears of it (`Event`).
//!
//! At most one boundary per connection is held at a time: the next one on the same connection is announced only
//! after the one before it was released (the order within a connection is the service's, never ours).
//!
//! API contract (the controller is written against it; keep the names):
//! - `Gates::start(postgres_upstream, redis_upstream)`: listeners on 127.0.0.1:0 (loopback only; the caller
//!   checked the upstreams are loopback).
//! - `Gates::set_mode`, `Gates::decide`, `Gates::next_event`, `Gates::close_all`.
//! - `Gates::backend_pid`, `Gates::backend_pids`: the PostgreSQL backend serving each open connection, from
//!   the store's BackendKeyData. Known before the connection's first boundary is announced (the store sends it
//!   before its first ReadyForQuery, which the gate forwards only after noting it), so the controller can ask
//!   the store about a boundary's backend as soon as it hears of the boundary.
//!
//! Events of one connection come in order: `Opened`, then each boundary's `Boundary` before its `Answered`, then
//! at most one `Unsupported` or `UpstreamFailed`, then `Closed`. Ids start at 1. The mode starts as `Pass`.

use super::background::Background;
use super::bounds::{Budget, Charge, CONNECTIONS_MAX, EVENTS_MAX};
use super::kind::Kind;
use super::link;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};

/// Which store's protocol a gate speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    Postgres,
    Redis,
}

/// A connection the service opened through a gate, numbered in the order the gates accepted them (both gates
/// share one sequence).
pub type ConnectionId = u64;
/// A boundary, numbered in the order the gates saw them (both gates share one sequence).
pub type BoundaryId = u64;

/// One step boundary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boundary {
    pub id: BoundaryId,
    pub connection: ConnectionId,
    pub wire: Wire,
    /// Normalised: literals replaced by `?` (`INSERT INTO keys (key, state) VALUES (?, ?)`, `SET ? ? NX PX ?`);
    /// several statements of one boundary joined by `; `; meaningless names `?` too (`SAVEPOINT ?`).
    pub text: String,
    /// A step of the request, or a session setting or housekeeping (those pass without a decision).
    pub kind: Kind,
    /// A transaction is open on its connection once it ran, as its statements say (PostgreSQL; false for
    /// Redis): what tells a statement's work durable (autocommit, `COMMIT`) from work a crash rolls back.
    pub in_transaction: bool,
}

impl Boundary {
    /// Passed without a decision (a session setting or housekeeping): what the former `session` field said.
    pub fn session(&self) -> bool {
        self.kind.passes()
    }
}

/// What the gates tell the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Opened {
        connection: ConnectionId,
        wire: Wire,
    },
    /// `held`: it waits for `Gates::decide` (hold mode, a request statement); otherwise it was forwarded.
    Boundary { boundary: Boundary, held: bool },
    /// The store's whole answer to a forwarded boundary arrived (PostgreSQL: up to `ReadyForQuery`; Redis: the
    /// command's reply, or `EXEC`'s). Delivered to the service unless the decision was `Withhold`. Not sent when
    /// the connection closes first (the service was killed, `close_all`): wait for it before killing, to know a
    /// withheld statement ran.
    Answered {
        id: BoundaryId,
        /// The store's error, if it answered one (PostgreSQL `ErrorResponse`'s message, Redis `-ERR ...`, the
        /// first error among `EXEC`'s replies; `pg_answers::SKIPPED` for a Flush group the store skipped).
        error: Option<String>,
    },
    /// The service (or the store) closed the connection.
    Closed { connection: ConnectionId },
    /// A message the gate does not understand (TLS required, COPY, replication, SUBSCRIBE, MONITOR ...), by
    /// name; the connection was closed, never passed through silently. TLS required: a connection closed after its
    /// TLS request was refused, with no new connection starting up within `link::TLS_FALLBACK_WAIT` (pgx falls
    /// back to a new connection without TLS).
    Unsupported {
        connection: ConnectionId,
        wire: Wire,
        what: String,
    },
    /// The real store could not be reached or broke the connection.
    UpstreamFailed {
        connection: ConnectionId,
        wire: Wire,
        error: String,
    },
}

/// Whether held boundaries wait for a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Hold,
}

/// What to do with a held boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Forward it; its answer goes back to the service.
    Release,
    /// Forward it and let it run; its answer is kept from the service (the controller then kills the service:
    /// for a `COMMIT` this is the lost acknowledgement).
    Withhold,
}

/// Both gates and the one event stream.
pub struct Gates {
    shared: Arc<Shared>,
    events: mpsc::Receiver<Event>,
    postgres: Option<SocketAddr>,
    redis: Option<SocketAddr>,
    listeners: Vec<tokio::task::JoinHandle<()>>,
}

/// What every connection of both gates shares.
pub(crate) struct Shared {
    connections: AtomicU64,
    boundaries: AtomicU64,
    hold: AtomicBool,
    held: Mutex<BTreeMap<BoundaryId, Held>>,
    /// Bounded (`EVENTS_MAX`): a connection waits for room rather than drop an event or grow without end.
    events: mpsc::Sender<Event>,
    /// What the connections buffer from their services, all together.
    budget: Arc<Budget>,
    /// Bumped by `close_all`: every connection open at that moment ends.
    epoch: watch::Sender<u64>,
    /// PostgreSQL StartupMessages seen so far: a connection whose TLS request was refused and that then closed
    /// is a TLS requirement only if no new startup follows (pgx, on `sslmode=prefer`, reconnects without TLS).
    startups: watch::Sender<u64>,
    /// Each open PostgreSQL connection's backend process id (dropped when the connection ends).
    backends: Mutex<BTreeMap<ConnectionId, i32>>,
    /// How many things of the probe's own are in flight through the service (a schedule, a request, a
    /// restart, a count): while none is, a request statement belongs to no request (`super::background`).
    busy: AtomicU64,
    /// Whether idle request statements teach background connections (`Gates::learn_background`; off for a
    /// caller that drives the gates itself and never says when it is busy).
    learning: AtomicBool,
    background: Mutex<Background>,
}

struct Held {
    connection: ConnectionId,
    decision: oneshot::Sender<Decision>,
}

impl Shared {
    pub(crate) async fn emit(&self, event: Event) {
        // The receiver is gone only when the Gates are dropped: nobody to tell.
        let _ = self.events.send(event).await;
    }

    /// A new connection's part of the budget of buffered bytes.
    pub(crate) fn budget(&self) -> Charge {
        self.budget.charge()
    }

    pub(crate) fn next_boundary(&self) -> BoundaryId {
        self.boundaries.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub(crate) fn holding(&self) -> bool {
        self.hold.load(Ordering::SeqCst)
    }

    /// Register a held boundary: the receiver gets its decision, or an error when it is dropped.
    pub(crate) fn hold(
        &self,
        id: BoundaryId,
        connection: ConnectionId,
    ) -> oneshot::Receiver<Decision> {
        let (decision, receiver) = oneshot::channel();
        self.held.lock().expect("held lock").insert(
            id,
            Held {
                connection,
                decision,
            },
        );
        receiver
    }

    /// A PostgreSQL connection sent its StartupMessage.
    pub(crate) fn note_startup(&self) {
        self.startups.send_modify(|startups| *startups += 1);
    }

    /// How many StartupMessages the PostgreSQL gate has seen.
    pub(crate) fn startups(&self) -> u64 {
        *self.startups.borrow()
    }

    /// Whether more than `seen` StartupMessages arrive within `wait` (at once if they already have).
    pub(crate) async fn startup_after(&self, seen: u64, wait: Duration) -> bool {
        let mut startups = self.startups.subscribe();
        let later = startups.wait_for(|&startups| startups > seen);
        let came = matches!(tokio::time::timeout(wait, later).await, Ok(Ok(_)));
        came
    }

    /// The store named the backend serving `connection`.
    pub(crate) fn note_backend(&self, connection: ConnectionId, pid: i32) {
        self.backends
            .lock()
            .expect("backends lock")
            .insert(connection, pid);
    }

    /// A connection ended: what it held can no longer be decided, and its backend is no longer its own.
    /// Whether `connection` carries no request, learning it from this boundary: a request statement sent while
    /// the probe is idle. A true answer is counted (the boundary passes unheld).
    pub(crate) fn background(&self, connection: ConnectionId, kind: Kind) -> bool {
        let mut background = self.background.lock().expect("background lock");
        let idle = self.busy.load(Ordering::SeqCst) == 0;
        if kind == Kind::Request && idle && self.learning.load(Ordering::SeqCst) {
            background.learn(connection);
        }
        let known = background.contains(connection);
        if known && kind == Kind::Request && self.holding() {
            background.passed += 1;
        }
        known
    }

    pub(crate) fn forget_connection(&self, connection: ConnectionId) {
        self.background
            .lock()
            .expect("background lock")
            .forget(connection);
        self.held
            .lock()
            .expect("held lock")
            .retain(|_, held| held.connection != connection);
        self.backends
            .lock()
            .expect("backends lock")
            .remove(&connection);
    }
}

impl Gates {
    /// Listen on 127.0.0.1:0 for each store given; forward to it.
    pub async fn start(
        postgres_upstream: Option<SocketAddr>,
        redis_upstream: Option<SocketAddr>,
    ) -> std::io::Result<Gates> {
        let (events, receiver) = mpsc::channel(EVENTS_MAX);
        let shared = Arc::new(Shared {
            connections: AtomicU64::new(0),
            boundaries: AtomicU64::new(0),
            hold: AtomicBool::new(false),
            held: Mutex::new(BTreeMap::new()),
            events,
            budget: Arc::new(Budget::default()),
            epoch: watch::Sender::new(0),
            startups: watch::Sender::new(0),
            backends: Mutex::new(BTreeMap::new()),
            busy: AtomicU64::new(0),
            learning: AtomicBool::new(false),
            background: Mutex::new(Background::default()),
        });
        let mut gates = Gates {
            shared,
            events: receiver,
            postgres: None,
            redis: None,
            listeners: Vec::new(),
        };
        if let Some(upstream) = postgres_upstream {
            gates.postgres = Some(gates.listen(Wire::Postgres, upstream).await?);
        }
        if let Some(upstream) = redis_upstream {
            gates.redis = Some(gates.listen(Wire::Redis, upstream).await?);
        }
        Ok(gates)
    }

    async fn listen(&mut self, wire: Wire, upstream: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?;
        let shared = Arc::clone(&self.shared);
        self.listeners
            .push(tokio::spawn(accept(shared, wire, listener, upstream)));
        Ok(address)
    }

    /// Where the service should connect for PostgreSQL (None: no PostgreSQL gate).
    pub fn postgres_address(&self) -> Option<SocketAddr> {
        self.postgres
    }

    /// Where the service should connect for Redis (None: no Redis gate).
    pub fn redis_address(&self) -> Option<SocketAddr> {
        self.redis
    }

    /// Applies to boundaries announced after the call.
    pub fn set_mode(&self, mode: Mode) {
        self.shared.hold.store(mode == Mode::Hold, Ordering::SeqCst);
    }

    /// The probe has something of its own in flight through the service until the guard is dropped: request
    /// statements meanwhile may be a request's, and teach nothing about background connections.
    pub fn busy(&self) -> Busy {
        self.shared.busy.fetch_add(1, Ordering::SeqCst);
        Busy {
            shared: Arc::clone(&self.shared),
        }
    }

    /// From now on, a request statement sent while nothing is `busy` marks its connection as carrying no
    /// request (`super::background`). Off until called.
    pub fn learn_background(&self) {
        self.shared.learning.store(true, Ordering::SeqCst);
    }

    /// Statements of connections that carry no request passed unheld since the last call (and the count reset).
    pub fn take_background_passed(&self) -> usize {
        std::mem::take(
            &mut self
                .shared
                .background
                .lock()
                .expect("background lock")
                .passed,
        )
    }

    /// How many boundaries both gates have seen so far, held or not: a count that moved while this did not
    /// means the service reached the store some other way.
    pub fn boundaries_seen(&self) -> u64 {
        self.shared.boundaries.load(Ordering::SeqCst)
    }

    /// Decide a held boundary. False when it is not held (its connection closed, or already decided).
    pub fn decide(&self, id: BoundaryId, decision: Decision) -> bool {
        let held = self.shared.held.lock().expect("held lock").remove(&id);
        held.is_some_and(|held| held.decision.send(decision).is_ok())
    }

    /// The PostgreSQL backend process id serving an open connection (None: not a PostgreSQL connection, not
    /// started up yet, or closed).
    pub fn backend_pid(&self, connection: ConnectionId) -> Option<i32> {
        self.shared
            .backends
            .lock()
            .expect("backends lock")
            .get(&connection)
            .copied()
    }

    /// The backend process ids of every open PostgreSQL connection, in connection order.
    pub fn backend_pids(&self) -> Vec<i32> {
        let backends = self.shared.backends.lock().expect("backends lock");
        backends.values().copied().collect()
    }

    /// The next event, or None when none came within `timeout`.
    pub async fn next_event(&mut self, timeout: Duration) -> Option<Event> {
        tokio::time::timeout(timeout, self.events.recv())
            .await
            .ok()
            .flatten()
    }

    /// Close every connection (both sides) and drop what is held: after the service was killed, so the store
    /// rolls back what its open transactions did.
    pub fn close_all(&self) {
        self.shared.held.lock().expect("held lock").clear();
        self.shared.epoch.send_modify(|epoch| *epoch += 1);
    }
}

impl Drop for Gates {
    fn drop(&mut self) {
        for listener in &self.listeners {
            listener.abort();
        }
        self.close_all();
    }
}

/// See `Gates::busy`.
pub struct Busy {
    shared: Arc<Shared>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.shared.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One open connection of a gate, counted until its task ends.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A connection over `CONNECTIONS_MAX`: announced as any other, refused by name, closed.
async fn refuse(shared: &Shared, wire: Wire, connection: ConnectionId) {
    shared.emit(Event::Opened { connection, wire }).await;
    let what = format!("more than {CONNECTIONS_MAX} simultaneous connections on the {wire:?} gate");
    shared
        .emit(Event::Unsupported {
            connection,
            wire,
            what,
        })
        .await;
    shared.emit(Event::Closed { connection }).await;
}

/// One gate's accept loop: each connection gets the next id and its own task.
async fn accept(shared: Arc<Shared>, wire: Wire, listener: TcpListener, upstream: SocketAddr) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let service = match listener.accept().await {
            Ok((service, _)) => service,
            Err(_) => {
                // Out of descriptors, say: wait a little instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let connection = shared.connections.fetch_add(1, Ordering::SeqCst) + 1;
        if open.load(Ordering::SeqCst) >= CONNECTIONS_MAX {
            drop(service);
            refuse(&shared, wire, connection).await;
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let counted = Open(Arc::clone(&open));
        let shutdown = shared.epoch.subscribe();
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            link::run(shared, wire, connection, service, upstream, shutdown).await;
            drop(counted);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// SSLRequest: length 8, code 80877103.
    const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

    /// A StartupMessage for protocol 3.0 with user=postgres.
    fn startup() -> Vec<u8> {
        let mut body = 196608u32.to_be_bytes().to_vec();
        body.extend(b"user\0postgres\0\0");
        let mut out = (body.len() as u32 + 4).to_be_bytes().to_vec();
        out.extend(body);
        out
    }

    /// A PostgreSQL gate over a store that the kernel's backlog accepts and that never answers (the gate
    /// forwards a startup to it only); the listener is returned so that it lives as long as the test.
    async fn gates_over_a_silent_store() -> (TcpListener, Gates) {
        let store = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .await
            .unwrap();
        let gates = Gates::start(Some(store.local_addr().unwrap()), None)
            .await
            .unwrap();
        (store, gates)
    }

    /// Ask for TLS, get the gate's `N`, close (as pgx on `sslmode=prefer`, or any client on `require`).
    async fn refused_tls(gate: SocketAddr) {
        let mut client = TcpStream::connect(gate).await.unwrap();
        client.write_all(&SSL_REQUEST).await.unwrap();
        let mut answer = [0u8; 1];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"N");
    }

    /// The events up to the first connection's `Closed`.
    async fn until_first_closed(gates: &mut Gates) -> Vec<Event> {
        let mut seen = Vec::new();
        loop {
            let event = gates
                .next_event(Duration::from_secs(30))
                .await
                .expect("an event");
            let last = event == Event::Closed { connection: 1 };
            seen.push(event);
            if last {
                return seen;
            }
        }
    }

    fn unsupported(events: &[Event]) -> Vec<&str> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Unsupported { what, .. } => Some(what.as_str()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_tls_request_followed_by_a_plain_reconnect_is_no_tls_requirement() {
        let (_store, mut gates) = gates_over_a_silent_store().await;
        let gate = gates.postgres_address().unwrap();
        refused_tls(gate).await;
        let mut again = TcpStream::connect(gate).await.unwrap();
        again.write_all(&startup()).await.unwrap();
        let events = until_first_closed(&mut gates).await;
        assert_eq!(unsupported(&events), Vec::<&str>::new(), "{events:?}");
        drop(again);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_event_channel_makes_senders_wait_and_loses_nothing() {
        let (_store, mut gates) = gates_over_a_silent_store().await;
        let shared = Arc::clone(&gates.shared);
        // Just under the bound: every event is taken at once.
        for connection in 0..EVENTS_MAX as u64 {
            shared.emit(Event::Closed { connection }).await;
        }
        // One more waits for room instead of being dropped.
        let last = EVENTS_MAX as u64;
        let waiting =
            tokio::spawn(async move { shared.emit(Event::Closed { connection: last }).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished());
        for connection in 0..=last {
            let event = gates.next_event(Duration::from_secs(30)).await;
            assert_eq!(event, Some(Event::Closed { connection }));
        }
        waiting.await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_over_the_cap_are_refused_by_name() {
        let (_store, mut gates) = gates_over_a_silent_store().await;
        let gate = gates.postgres_address().unwrap();
        let mut clients = Vec::new();
        for _ in 0..CONNECTIONS_MAX {
            clients.push(TcpStream::connect(gate).await.unwrap());
        }
        // Just at the cap: every connection is served, none refused.
        let mut opened = 0;
        while opened < CONNECTIONS_MAX {
            let event = gates.next_event(Duration::from_secs(30)).await.unwrap();
            assert!(matches!(event, Event::Opened { .. }), "{event:?}");
            opened += 1;
        }
        let _over = TcpStream::connect(gate).await.unwrap();
        let over = CONNECTIONS_MAX as u64 + 1;
        let mut events = Vec::new();
        for _ in 0..3 {
            events.push(gates.next_event(Duration::from_secs(30)).await.unwrap());
        }
        let what =
            format!("more than {CONNECTIONS_MAX} simultaneous connections on the Postgres gate");
        assert_eq!(
            events,
            [
                Event::Opened {
                    connection: over,
                    wire: Wire::Postgres
                },
                Event::Unsupported {
                    connection: over,
                    wire: Wire::Postgres,
                    what
                },
                Event::Closed { connection: over },
            ]
        );
        drop(clients);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_tls_request_with_no_reconnect_is_a_tls_requirement() {
        let (_store, mut gates) = gates_over_a_silent_store().await;
        refused_tls(gates.postgres_address().unwrap()).await;
        let events = until_first_closed(&mut gates).await;
        assert_eq!(
            unsupported(&events),
            [crate::graybox::pg_wire::TLS_REQUIRED]
        );
    }
}
