//! One connection through a gate: the service's side and the store's side, forwarded by two loops in one task.
//! The service's loop cuts what it sends into units (the protocol modules decide which are boundaries), holds a
//! boundary until its decision, and forwards it; the store's loop cuts replies, matches them in order to what was
//! forwarded (so every boundary gets its `Answered`), and delivers them unless a withheld boundary's answer
//! began, after which nothing more reaches the service on this connection.

use super::bounds::{Charge, BUFFERED_BYTES_MAX};
use super::gate::{Boundary, BoundaryId, ConnectionId, Decision, Event, Shared, Wire};
use super::kind::Kind;
use super::{pg_wire, resp};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};

/// How long the gate waits for the real store to accept a connection.
pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// One read from a socket.
const READ_BYTES: usize = 64 << 10;
/// How long a connection whose TLS request was refused and that then closed waits for a new StartupMessage on
/// the gate before it is reported as requiring TLS. pgx on `sslmode=prefer` (its default) closes after the `N`
/// and connects again without TLS at once; libpq and pgjdbc go on on the same connection; `sslmode=require`
/// gives up, and is reported this long after it closed.
pub const TLS_FALLBACK_WAIT: Duration = Duration::from_secs(5);
/// What a connection may send on while one of its boundaries is held, before the gate stops reading it.
const HELD_READ_BYTES_MAX: usize = 1 << 20;

/// What a forwarded unit waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Pg(pg_wire::GroupEnd),
    Reply,
}

/// A unit cut from what the service sent.
enum Unit {
    /// Forward as is; nothing is matched to it (PostgreSQL's startup and authentication).
    Raw(Vec<u8>),
    /// Answer the service directly, forward nothing (`N` to an SSLRequest).
    Reply(Vec<u8>),
    /// Forward; its answer is matched, but it is no boundary (`MULTI`, a queued command).
    Quiet(Vec<u8>, Expect),
    Boundary {
        bytes: Vec<u8>,
        text: String,
        kind: Kind,
        in_transaction: bool,
        expect: Expect,
    },
    /// Forward, then close (PostgreSQL's Terminate).
    Last(Vec<u8>),
}

/// Who waits for an answer, and whether that answer is kept from the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tag {
    boundary: Option<BoundaryId>,
    withheld: bool,
}

/// Why a connection ended.
enum End {
    /// The service closed (with what was unsupported about the way it did, if anything).
    ServiceClosed(Option<String>),
    StoreClosed,
    Unsupported(String),
    UpstreamFailed(String),
    /// `close_all`, or the held boundary's decision was dropped.
    Shutdown,
}

/// The service's side: the protocol's frontend state.
enum Cutter {
    Pg(pg_wire::Front),
    Redis(resp::Front),
}

impl Cutter {
    fn cut(&mut self, buf: &[u8], ready: bool) -> Result<Option<(usize, Option<Unit>)>, String> {
        match self {
            Cutter::Pg(front) => Ok(front
                .cut(buf, ready)?
                .map(|(len, step)| (len, pg_unit(step)))),
            Cutter::Redis(front) => {
                let Some((args, len)) = resp::cut_command(buf)? else {
                    return Ok(None);
                };
                let bytes = buf[..len].to_vec();
                if args.is_empty() {
                    return Ok(Some((len, Some(Unit::Raw(bytes)))));
                }
                let unit = match front
                    .command(&args)
                    .map_err(|what| format!("Redis {what}"))?
                {
                    resp::Command::Quiet => Unit::Quiet(bytes, Expect::Reply),
                    resp::Command::Boundary { text, kind } => Unit::Boundary {
                        bytes,
                        text,
                        kind,
                        in_transaction: false,
                        expect: Expect::Reply,
                    },
                };
                Ok(Some((len, Some(unit))))
            }
        }
    }

    /// What the frontend state buffers itself (a PostgreSQL group not complete yet).
    fn pending_bytes(&self) -> usize {
        match self {
            Cutter::Pg(front) => front.pending_bytes(),
            Cutter::Redis(_) => 0,
        }
    }

    fn at_close(&self) -> Option<String> {
        match self {
            Cutter::Pg(front) => front.at_close(),
            Cutter::Redis(_) => None,
        }
    }

    fn started(&self) -> bool {
        match self {
            Cutter::Pg(front) => front.started(),
            Cutter::Redis(_) => false,
        }
    }
}

fn pg_unit(step: pg_wire::FrontStep) -> Option<Unit> {
    match step {
        pg_wire::FrontStep::Raw(bytes) => Some(Unit::Raw(bytes)),
        pg_wire::FrontStep::Reply(bytes) => Some(Unit::Reply(bytes)),
        pg_wire::FrontStep::Pending => None,
        pg_wire::FrontStep::Group(group) => Some(Unit::Boundary {
            bytes: group.bytes,
            text: group.text,
            kind: group.kind,
            in_transaction: group.in_transaction,
            expect: Expect::Pg(group.end),
        }),
        pg_wire::FrontStep::Last(bytes) => Some(Unit::Last(bytes)),
    }
}

/// The store's side: what was forwarded and waits for its answer.
enum Tracker {
    Pg(pg_wire::Answers<Tag>),
    Redis(resp::Answers<Tag>),
}

/// One message from the store: its length, what it answered, whether it reaches the service.
type StoreMessage = (usize, Vec<(Tag, Option<String>)>, bool);

struct Link {
    tracker: Tracker,
    /// A withheld boundary's answer began: nothing more is delivered.
    muted: bool,
}

impl Link {
    /// The PostgreSQL backend's process id, once the store sent it.
    fn backend(&self) -> Option<i32> {
        match &self.tracker {
            Tracker::Pg(answers) => answers.backend(),
            Tracker::Redis(_) => None,
        }
    }

    fn ready(&self) -> bool {
        match &self.tracker {
            Tracker::Pg(answers) => answers.ready(),
            Tracker::Redis(_) => true,
        }
    }

    fn expect(&mut self, tag: Tag, expect: Expect) -> Result<Vec<(Tag, Option<String>)>, String> {
        match (&mut self.tracker, expect) {
            (Tracker::Pg(answers), Expect::Pg(end)) => Ok(answers
                .expect(tag, end)?
                .into_iter()
                .map(|a| (a.tag, a.error))
                .collect()),
            (Tracker::Redis(answers), _) => {
                answers.expect(tag)?;
                Ok(Vec::new())
            }
            (Tracker::Pg(_), Expect::Reply) => {
                unreachable!("a PostgreSQL unit always says how it ends")
            }
        }
    }

    fn on_store(&mut self, buf: &[u8]) -> Result<Option<StoreMessage>, String> {
        let head_withheld = match &self.tracker {
            Tracker::Pg(answers) => answers.head().is_some_and(|t| t.withheld),
            Tracker::Redis(answers) => answers.head().is_some_and(|t| t.withheld),
        };
        let (len, done) = match &mut self.tracker {
            Tracker::Pg(answers) => {
                let Some((kind, len)) = pg_wire::cut_message(buf)? else {
                    return Ok(None);
                };
                let done = answers.on_message(kind, &buf[5..len])?;
                (len, done.into_iter().map(|a| (a.tag, a.error)).collect())
            }
            Tracker::Redis(answers) => {
                let Some(len) = resp::cut_frame(buf)? else {
                    return Ok(None);
                };
                (len, answers.on_frame(&buf[..len])?.into_iter().collect())
            }
        };
        self.muted |= head_withheld;
        Ok(Some((len, done, !self.muted)))
    }
}

/// Serve one accepted connection until either side closes, it breaks, or `close_all`; then say why.
pub(crate) async fn run(
    shared: Arc<Shared>,
    wire: Wire,
    connection: ConnectionId,
    service: TcpStream,
    upstream: SocketAddr,
    mut shutdown: watch::Receiver<u64>,
) {
    shared.emit(Event::Opened { connection, wire }).await;
    let end = tokio::select! {
        end = serve(&shared, wire, connection, service, upstream) => end,
        _ = shutdown.changed() => End::Shutdown,
    };
    shared.forget_connection(connection);
    match end {
        End::ServiceClosed(Some(what)) | End::Unsupported(what) => {
            shared
                .emit(Event::Unsupported {
                    connection,
                    wire,
                    what,
                })
                .await
        }
        End::UpstreamFailed(error) => {
            shared
                .emit(Event::UpstreamFailed {
                    connection,
                    wire,
                    error,
                })
                .await
        }
        End::ServiceClosed(None) | End::StoreClosed | End::Shutdown => {}
    }
    shared.emit(Event::Closed { connection }).await;
}

async fn serve(
    shared: &Shared,
    wire: Wire,
    connection: ConnectionId,
    service: TcpStream,
    upstream: SocketAddr,
) -> End {
    let store = match tokio::time::timeout(UPSTREAM_CONNECT_TIMEOUT, TcpStream::connect(upstream))
        .await
    {
        Ok(Ok(store)) => store,
        Ok(Err(error)) => return End::UpstreamFailed(format!("connect to {upstream}: {error}")),
        Err(_) => {
            return End::UpstreamFailed(format!(
                "connect to {upstream}: no answer in {UPSTREAM_CONNECT_TIMEOUT:?}"
            ))
        }
    };
    let _ = store.set_nodelay(true);
    let _ = service.set_nodelay(true);
    let (service_read, service_write) = service.into_split();
    let (store_read, store_write) = store.into_split();
    let service_write = tokio::sync::Mutex::new(service_write);
    let (cutter, tracker) = match wire {
        Wire::Postgres => (
            Cutter::Pg(pg_wire::Front::default()),
            Tracker::Pg(pg_wire::Answers::default()),
        ),
        Wire::Redis => (
            Cutter::Redis(resp::Front::default()),
            Tracker::Redis(resp::Answers::default()),
        ),
    };
    let link = Mutex::new(Link {
        tracker,
        muted: false,
    });
    let front = Front {
        shared,
        wire,
        connection,
        link: &link,
        service_write: &service_write,
    };
    tokio::select! {
        end = front.run(cutter, service_read, store_write) => end,
        end = back(shared, connection, &link, store_read, &service_write) => end,
    }
}

/// The service's side of one connection.
struct Front<'a> {
    shared: &'a Shared,
    wire: Wire,
    connection: ConnectionId,
    link: &'a Mutex<Link>,
    service_write: &'a tokio::sync::Mutex<OwnedWriteHalf>,
}

/// What the service sent and was not cut yet, and the socket it comes from.
struct Incoming {
    read: OwnedReadHalf,
    buf: Vec<u8>,
    chunk: Vec<u8>,
    /// What this connection buffers (`buf` and `group`), in the budget of all connections.
    charge: Charge,
    /// The bytes of a group the frontend state holds.
    group: usize,
}

impl Incoming {
    /// Read more. Err: the service closed (`ServiceClosed(None)`), or all connections buffer too much.
    async fn more(&mut self) -> Result<(), End> {
        // What was cut since the last read is no longer held here: given back before waiting (only shrinks).
        let held = self.buf.len() + self.group;
        self.charge
            .set(held, BUFFERED_BYTES_MAX)
            .map_err(End::Unsupported)?;
        match self.read.read(&mut self.chunk).await {
            Ok(0) | Err(_) => Err(End::ServiceClosed(None)),
            Ok(n) => {
                self.buf.extend_from_slice(&self.chunk[..n]);
                let bytes = self.buf.len() + self.group;
                self.charge
                    .set(bytes, BUFFERED_BYTES_MAX)
                    .map_err(End::Unsupported)
            }
        }
    }
}

impl Front<'_> {
    async fn run(
        &self,
        mut cutter: Cutter,
        service: OwnedReadHalf,
        mut store: OwnedWriteHalf,
    ) -> End {
        let mut incoming = Incoming {
            read: service,
            buf: Vec::new(),
            chunk: vec![0u8; READ_BYTES],
            charge: self.shared.budget(),
            group: 0,
        };
        // The gate's startup count when this connection's TLS request was refused.
        let mut refused_at = None;
        let mut started = false;
        loop {
            let mut used = 0;
            loop {
                let ready = self.link.lock().expect("link lock").ready();
                let (len, unit) = match cutter.cut(&incoming.buf[used..], ready) {
                    Ok(Some(step)) => step,
                    Ok(None) => break,
                    Err(what) => return End::Unsupported(what),
                };
                used += len;
                if matches!(unit, Some(Unit::Reply(_))) {
                    refused_at = Some(self.shared.startups());
                }
                if !started && cutter.started() {
                    started = true;
                    self.shared.note_startup();
                }
                if let Some(unit) = unit {
                    if let Err(end) = self.unit(unit, &mut store, &mut incoming).await {
                        return end;
                    }
                }
            }
            incoming.buf.drain(..used);
            incoming.group = cutter.pending_bytes();
            match incoming.more().await {
                Ok(()) => {}
                Err(End::ServiceClosed(None)) => return self.closed(&cutter, refused_at).await,
                Err(end) => return end,
            }
        }
    }

    /// Why the service closed: a refused TLS request, then nothing, is a TLS requirement unless a new startup
    /// follows on the gate (the client fell back to a connection without TLS).
    async fn closed(&self, cutter: &Cutter, refused_at: Option<u64>) -> End {
        let what = cutter.at_close();
        if let (Some(_), Some(seen)) = (&what, refused_at) {
            if self.shared.startup_after(seen, TLS_FALLBACK_WAIT).await {
                return End::ServiceClosed(None);
            }
        }
        End::ServiceClosed(what)
    }

    /// Forward one unit (after its decision, for a held boundary). Err: the connection ends.
    async fn unit(
        &self,
        unit: Unit,
        store: &mut OwnedWriteHalf,
        incoming: &mut Incoming,
    ) -> Result<(), End> {
        let bytes = match unit {
            Unit::Raw(bytes) => bytes,
            Unit::Reply(bytes) => {
                let written = self.service_write.lock().await.write_all(&bytes).await;
                return written.map_err(|_| End::ServiceClosed(None));
            }
            Unit::Quiet(bytes, expect) => {
                self.expect(
                    Tag {
                        boundary: None,
                        withheld: false,
                    },
                    expect,
                )
                .await?;
                bytes
            }
            Unit::Boundary {
                bytes,
                text,
                kind,
                in_transaction,
                expect,
            } => {
                let (id, decision) = self.gate((text, kind, in_transaction), incoming).await?;
                let withheld = decision == Decision::Withhold;
                self.expect(
                    Tag {
                        boundary: Some(id),
                        withheld,
                    },
                    expect,
                )
                .await?;
                bytes
            }
            Unit::Last(bytes) => {
                let _ = store.write_all(&bytes).await;
                return Err(End::ServiceClosed(None));
            }
        };
        store
            .write_all(&bytes)
            .await
            .map_err(|error| End::UpstreamFailed(format!("write: {error}")))
    }

    /// Announce a boundary; in hold mode wait for its decision. Err: the service closed meanwhile, or the
    /// decision was dropped (`close_all`).
    async fn gate(
        &self,
        (text, kind, in_transaction): (String, Kind, bool),
        incoming: &mut Incoming,
    ) -> Result<(BoundaryId, Decision), End> {
        let id = self.shared.next_boundary();
        let boundary = Boundary {
            id,
            connection: self.connection,
            wire: self.wire,
            text,
            kind,
            in_transaction,
        };
        // Learnt (and counted) whatever the mode: a heartbeat between schedules teaches it.
        let background = self.shared.background(self.connection, kind);
        if kind.passes() || background || !self.shared.holding() {
            self.shared
                .emit(Event::Boundary {
                    boundary,
                    held: false,
                })
                .await;
            return Ok((id, Decision::Release));
        }
        // Registered before it is announced, so a decision taken on the event always finds it.
        let decision = self.shared.hold(id, self.connection);
        self.shared
            .emit(Event::Boundary {
                boundary,
                held: true,
            })
            .await;
        let decision = wait(decision, incoming).await?;
        Ok((id, decision))
    }

    /// Err: the connection waits for too many answers already.
    async fn expect(&self, tag: Tag, expect: Expect) -> Result<(), End> {
        let done = self.link.lock().expect("link lock").expect(tag, expect);
        for (tag, error) in done.map_err(End::Unsupported)? {
            answered(self.shared, tag, error).await;
        }
        Ok(())
    }
}

/// Wait for a held boundary's decision, reading on meanwhile: a service killed while its statement is held
/// closes its connection at once (up to `HELD_READ_BYTES_MAX` of what it pipelined is kept).
async fn wait(
    mut decision: oneshot::Receiver<Decision>,
    incoming: &mut Incoming,
) -> Result<Decision, End> {
    while incoming.buf.len() < HELD_READ_BYTES_MAX {
        tokio::select! {
            decided = &mut decision => return decided.map_err(|_| End::Shutdown),
            more = incoming.more() => more?,
        }
    }
    decision.await.map_err(|_| End::Shutdown)
}

async fn answered(shared: &Shared, tag: Tag, error: Option<String>) {
    if let Some(id) = tag.boundary {
        shared.emit(Event::Answered { id, error }).await;
    }
}

/// The store's side of one connection: cut, match, deliver (unless muted).
async fn back(
    shared: &Shared,
    connection: ConnectionId,
    link: &Mutex<Link>,
    mut store: OwnedReadHalf,
    service: &tokio::sync::Mutex<OwnedWriteHalf>,
) -> End {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; READ_BYTES];
    let mut backend_noted = false;
    loop {
        let mut used = 0;
        let mut out = Vec::new();
        // Announced once the link's lock is released (announcing may wait for the controller).
        let mut done_all = Vec::new();
        {
            let mut link = link.lock().expect("link lock");
            loop {
                match link.on_store(&buf[used..]) {
                    Ok(None) => break,
                    Ok(Some((len, done, deliver))) => {
                        if deliver {
                            out.extend_from_slice(&buf[used..used + len]);
                        }
                        used += len;
                        done_all.extend(done);
                    }
                    Err(what) => return End::Unsupported(what),
                }
            }
            // Noted before the ReadyForQuery that follows it reaches the service (`out` is written below),
            // so before the service can send its first boundary.
            if let (false, Some(pid)) = (backend_noted, link.backend()) {
                shared.note_backend(connection, pid);
                backend_noted = true;
            }
        }
        for (tag, error) in done_all {
            answered(shared, tag, error).await;
        }
        buf.drain(..used);
        if !out.is_empty() && service.lock().await.write_all(&out).await.is_err() {
            return End::ServiceClosed(None);
        }
        match store.read(&mut chunk).await {
            Ok(0) => return End::StoreClosed,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(error) => return End::UpstreamFailed(format!("read: {error}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(boundary: BoundaryId, withheld: bool) -> Tag {
        Tag {
            boundary: Some(boundary),
            withheld,
        }
    }

    #[test]
    fn a_withheld_answer_and_everything_after_it_are_kept_from_the_service() {
        let mut link = Link {
            tracker: Tracker::Redis(resp::Answers::default()),
            muted: false,
        };
        link.expect(tag(1, false), Expect::Reply).unwrap();
        link.expect(tag(2, true), Expect::Reply).unwrap();
        link.expect(tag(3, false), Expect::Reply).unwrap();
        let delivered = |link: &mut Link, frame: &[u8]| {
            let (len, done, deliver) = link.on_store(frame).unwrap().unwrap();
            assert_eq!(len, frame.len());
            (done, deliver)
        };
        assert_eq!(
            delivered(&mut link, b"+OK\r\n"),
            (vec![(tag(1, false), None)], true)
        );
        assert_eq!(
            delivered(&mut link, b":1\r\n"),
            (vec![(tag(2, true), None)], false)
        );
        // Answered, but muted for good: the service never sees what follows the withheld answer.
        assert_eq!(
            delivered(&mut link, b"$1\r\nx\r\n"),
            (vec![(tag(3, false), None)], false)
        );
    }

    #[test]
    fn nothing_is_muted_without_a_withheld_boundary() {
        let mut link = Link {
            tracker: Tracker::Pg(pg_wire::Answers::default()),
            muted: false,
        };
        // Authentication and the first ReadyForQuery pass; then a Query group is answered at its ReadyForQuery.
        assert!(link.on_store(b"R\0\0\0\x08\0\0\0\0").unwrap().unwrap().2);
        assert!(link.on_store(b"Z\0\0\0\x05I").unwrap().unwrap().2);
        assert!(link.ready());
        link.expect(tag(1, false), Expect::Pg(pg_wire::GroupEnd::Ready))
            .unwrap();
        let (_, done, deliver) = link.on_store(b"Z\0\0\0\x05I").unwrap().unwrap();
        assert_eq!((done, deliver), (vec![(tag(1, false), None)], true));
        assert_eq!(link.on_store(b"Z\0\0"), Ok(None));
    }
}
