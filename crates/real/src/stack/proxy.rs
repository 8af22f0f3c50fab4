//! A fault-injecting HTTP proxy on loopback, seeded: in front of one upstream, it forwards each request (one per
//! connection) or does one fault to it: drop the response after the upstream processed the request, send the
//! request twice, delay it, or reset the client's connection without forwarding. Each fault fires with an
//! integer-ratio probability and within an optional budget; the faults of the 1st, 2nd, ... request are a
//! function of the seed alone (`plan_actions`), and every request's fate is recorded, so a run can be explained
//! and replayed.
//!
//! Bounded on every side: a request must arrive within `REQUEST_TIMEOUT` and the upstream answer within
//! `UPSTREAM_TIMEOUT`; at most `CONNECTIONS_MAX` clients are served at once (the rest wait in the backlog); the
//! record keeps `RECORD_EVENTS_MAX` events, the first `RECORD_BODIES_MAX` with a sample of the upstream's body
//! (`BODY_SAMPLE_BYTES`), and counts every action whatever it keeps.

use super::http::{
    read_request, request_header, with_connection_close, write_then_read_bytes, HttpError,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// To receive a whole request (head and body) from a client.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// For the upstream to take a request and answer it to the end.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);
/// To hand a response to the client.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Clients served at once (each holds two descriptors: its own connection and the upstream's).
pub const CONNECTIONS_MAX: usize = 256;
/// Events the record keeps (the rest are counted by `Proxy::action_counts`).
pub const RECORD_EVENTS_MAX: usize = 100_000;
/// Events whose upstream body the record keeps a sample of.
pub const RECORD_BODIES_MAX: usize = 1_000;
/// The most of an upstream body kept in one event (a payment's answer is a few hundred bytes).
pub const BODY_SAMPLE_BYTES: usize = 64 << 10;

/// `num/den`: a probability as an integer ratio.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Ratio {
    pub num: u32,
    pub den: u32,
}

impl Ratio {
    pub const NEVER: Ratio = Ratio { num: 0, den: 1 };
    pub const ALWAYS: Ratio = Ratio { num: 1, den: 1 };

    /// `N/D` with `0 <= N <= D`, `D >= 1`.
    pub fn parse(text: &str) -> Result<Ratio, String> {
        let (num, den) = text
            .split_once('/')
            .ok_or_else(|| format!("'{text}': expected N/D, e.g. 1/10"))?;
        let num: u32 = num
            .trim()
            .parse()
            .map_err(|_| format!("'{text}': N is not a number"))?;
        let den: u32 = den
            .trim()
            .parse()
            .map_err(|_| format!("'{text}': D is not a number"))?;
        if den == 0 || num > den {
            return Err(format!("'{text}': need 0 <= N <= D and D >= 1"));
        }
        Ok(Ratio { num, den })
    }
}

/// One kind of fault: how often, and at most how many times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Fault {
    pub ratio: Ratio,
    /// At most this many (None: no bound).
    pub budget: Option<u32>,
}

impl Fault {
    pub const OFF: Fault = Fault {
        ratio: Ratio::NEVER,
        budget: None,
    };

    /// `N/D` or `N/D:BUDGET` (at most BUDGET times).
    pub fn parse(text: &str) -> Result<Fault, String> {
        let (ratio, budget) = match text.split_once(':') {
            Some((ratio, budget)) => {
                let budget: u32 = budget
                    .trim()
                    .parse()
                    .map_err(|_| format!("'{text}': the budget after ':' is not a number"))?;
                (ratio, Some(budget))
            }
            None => (text, None),
        };
        Ok(Fault {
            ratio: Ratio::parse(ratio)?,
            budget,
        })
    }

    /// The first `count` requests (probability 1, budget `count`).
    pub const fn first(count: u32) -> Fault {
        Fault {
            ratio: Ratio::ALWAYS,
            budget: Some(count),
        }
    }
}

/// The proxy's faults and seed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FaultPlan {
    pub seed: u64,
    pub reset: Fault,
    pub drop_response: Fault,
    pub duplicate: Fault,
    pub delay: Fault,
    pub delay_ms: u64,
}

impl FaultPlan {
    /// No faults: a plain forwarder.
    pub fn none(seed: u64) -> FaultPlan {
        FaultPlan {
            seed,
            reset: Fault::OFF,
            drop_response: Fault::OFF,
            duplicate: Fault::OFF,
            delay: Fault::OFF,
            delay_ms: 0,
        }
    }

    /// Whether any fault can fire (a ratio above 0 with budget left): otherwise a proxy would only forward.
    pub fn injects_any(&self) -> bool {
        [self.reset, self.drop_response, self.duplicate, self.delay]
            .iter()
            .any(|fault| fault.ratio.num > 0 && fault.budget != Some(0))
    }
}

/// What the proxy does to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Forward,
    /// Close the client's connection at once, the request not forwarded.
    Reset,
    /// Forward, read the whole response (the upstream processed it), then close the client's connection.
    DropResponse,
    /// Forward twice; the client gets the first response.
    Duplicate,
    /// Wait `delay_ms`, then forward.
    Delay,
}

/// Draws the actions in request order: one generator, four draws per request whatever fires (so a budget
/// running out does not shift the later draws), the first fault that fires and has budget left wins.
pub struct Planner {
    plan: FaultPlan,
    rng: ChaCha8Rng,
    used: [u32; 4],
}

impl Planner {
    pub fn new(plan: FaultPlan) -> Planner {
        Planner {
            rng: ChaCha8Rng::seed_from_u64(plan.seed),
            plan,
            used: [0; 4],
        }
    }

    pub fn next_action(&mut self) -> Action {
        let kinds = [
            (self.plan.reset, Action::Reset),
            (self.plan.drop_response, Action::DropResponse),
            (self.plan.duplicate, Action::Duplicate),
            (self.plan.delay, Action::Delay),
        ];
        let mut chosen = Action::Forward;
        for (slot, (fault, action)) in kinds.into_iter().enumerate() {
            let fires = self.rng.random_range(0..fault.ratio.den) < fault.ratio.num;
            let budget_left = fault.budget.is_none_or(|budget| self.used[slot] < budget);
            if fires && budget_left && chosen == Action::Forward {
                self.used[slot] += 1;
                chosen = action;
            }
        }
        chosen
    }
}

/// The actions for the first `count` requests under `plan` (what a run will do, before it runs).
pub fn plan_actions(plan: &FaultPlan, count: usize) -> Vec<Action> {
    let mut planner = Planner::new(plan.clone());
    (0..count).map(|_| planner.next_action()).collect()
}

/// What happened to one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProxyEvent {
    /// 0-based, in arrival order.
    pub index: u64,
    pub action: Action,
    /// The request's idempotency key, if it had one.
    pub key: Option<String>,
    /// The upstream's statuses (two for a duplicate, none for a reset or an upstream that did not answer).
    pub upstream_statuses: Vec<u16>,
    /// The first upstream response's body (what a dropped response said), at most `BODY_SAMPLE_BYTES` of it,
    /// for the first `RECORD_BODIES_MAX` events.
    pub upstream_body: Option<String>,
    /// Whether the client got a response.
    pub delivered: bool,
    /// Still being handled when the record was taken (the proxy was stopping): what it did so far.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_flight: bool,
}

/// What the proxy has done: the events kept, the ones in progress, and every action counted.
#[derive(Default)]
struct Record {
    events: Vec<ProxyEvent>,
    in_flight: BTreeMap<u64, ProxyEvent>,
    counts: BTreeMap<String, u64>,
    /// Events finished but not kept (beyond `RECORD_EVENTS_MAX`).
    not_kept: u64,
}

struct Shared {
    upstream: SocketAddr,
    key_header: String,
    delay: Duration,
    planner: Mutex<(u64, Planner)>,
    record: Mutex<Record>,
}

impl Shared {
    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().expect("the record's lock")
    }
}

/// An action's name as the record writes it (`drop-response`).
pub fn action_name(action: Action) -> String {
    serde_json::to_value(action)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{action:?}"))
}

/// A running proxy; stops when dropped.
pub struct Proxy {
    pub address: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listen on a free loopback port in front of `upstream` (a loopback address).
    pub async fn start(
        upstream: SocketAddr,
        plan: FaultPlan,
        key_header: &str,
    ) -> std::io::Result<Proxy> {
        let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
        Proxy::start_on(any_port, upstream, plan, key_header).await
    }

    /// Listen on `listen` (a loopback address; port 0: a free one) in front of `upstream` (loopback too).
    pub async fn start_on(
        listen: SocketAddr,
        upstream: SocketAddr,
        plan: FaultPlan,
        key_header: &str,
    ) -> std::io::Result<Proxy> {
        assert!(
            upstream.ip().is_loopback() && listen.ip().is_loopback(),
            "the proxy listens and forwards on loopback only"
        );
        let listener = TcpListener::bind(listen).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            key_header: key_header.to_string(),
            delay: Duration::from_millis(plan.delay_ms),
            planner: Mutex::new((0, Planner::new(plan))),
            record: Mutex::new(Record::default()),
        });
        let accepting = shared.clone();
        let task = tokio::spawn(async move {
            let slots = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS_MAX));
            loop {
                // A free slot first, then a connection: beyond the limit, clients wait in the backlog.
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                match listener.accept().await {
                    Ok((stream, _)) => {
                        let shared = accepting.clone();
                        tokio::spawn(async move {
                            handle(shared, stream).await;
                            drop(slot);
                        });
                    }
                    // Out of descriptors: wait, the clients stay queued.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        });
        Ok(Proxy {
            address,
            shared,
            task,
        })
    }

    /// Every request's fate so far (the first `RECORD_EVENTS_MAX` finished, then those still in flight), in
    /// arrival order.
    pub fn record(&self) -> Vec<ProxyEvent> {
        let record = self.shared.record();
        let mut events = record.events.clone();
        events.extend(record.in_flight.values().cloned());
        events.sort_by_key(|event| event.index);
        events
    }

    /// How many requests got each action (by `action_name`), every request counted, kept in the record or not.
    pub fn action_counts(&self) -> BTreeMap<String, u64> {
        self.shared.record().counts.clone()
    }

    /// Finished events the record did not keep (beyond `RECORD_EVENTS_MAX`).
    pub fn events_not_kept(&self) -> u64 {
        self.shared.record().not_kept
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Send a raw request upstream, read the raw response to its end, within `UPSTREAM_TIMEOUT`.
async fn forward(upstream: SocketAddr, request: &[u8]) -> Result<Vec<u8>, HttpError> {
    let exchange = async {
        let mut stream = TcpStream::connect(upstream)
            .await
            .map_err(|error| HttpError::Connect(upstream, error))?;
        // An upstream that answers before reading the whole request and closes still has its answer forwarded.
        write_then_read_bytes(&mut stream, &with_connection_close(request)).await
    };
    tokio::time::timeout(UPSTREAM_TIMEOUT, exchange)
        .await
        .map_err(|_| HttpError::Timeout(UPSTREAM_TIMEOUT))?
}

fn status_and_body(response: &[u8]) -> (Option<u16>, Option<String>) {
    match super::http::parse_response(response) {
        Ok(parsed) => (Some(parsed.status), Some(sample(parsed.body))),
        Err(_) => (None, None),
    }
}

/// At most `BODY_SAMPLE_BYTES` of a body (cut at a character boundary).
fn sample(mut body: String) -> String {
    if body.len() > BODY_SAMPLE_BYTES {
        let mut end = BODY_SAMPLE_BYTES;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        body.truncate(end);
        // Truncating keeps the capacity: without this every event held its whole body (488 MB for 120 4-MiB
        // answers, measured).
        body.shrink_to_fit();
    }
    body
}

/// An event finished: counted, kept while there is room (its body while there is room for bodies).
fn finish(shared: &Shared, mut event: ProxyEvent) {
    let mut record = shared.record();
    record.in_flight.remove(&event.index);
    *record.counts.entry(action_name(event.action)).or_insert(0) += 1;
    if record.events.len() >= RECORD_EVENTS_MAX {
        record.not_kept += 1;
        return;
    }
    if record.events.len() >= RECORD_BODIES_MAX {
        event.upstream_body = None;
    }
    record.events.push(event);
}

/// The event so far, visible to `Proxy::record` while the request is handled.
fn progress(shared: &Shared, event: &ProxyEvent) {
    let mut in_flight = event.clone();
    in_flight.in_flight = true;
    shared.record().in_flight.insert(event.index, in_flight);
}

async fn handle(shared: Arc<Shared>, mut client: TcpStream) {
    let read = tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut client)).await;
    let Ok(Ok(Some(request))) = read else {
        // Nothing, half a request, or too slow: a reset (the client is not told anything was answered).
        let _ = client.set_zero_linger();
        return;
    };
    let (index, action) = {
        let mut planner = shared.planner.lock().expect("the planner's lock");
        let index = planner.0;
        planner.0 += 1;
        (index, planner.1.next_action())
    };
    let mut event = ProxyEvent {
        index,
        action,
        key: request_header(&request, &shared.key_header),
        upstream_statuses: Vec::new(),
        upstream_body: None,
        delivered: false,
        in_flight: false,
    };
    progress(&shared, &event);
    if action == Action::Delay {
        tokio::time::sleep(shared.delay).await;
    }
    if action != Action::Reset {
        let first = forward(shared.upstream, &request).await.ok();
        if let Some(first) = &first {
            let (status, body) = status_and_body(first);
            event.upstream_statuses.push(status.unwrap_or(0));
            event.upstream_body = body;
            progress(&shared, &event);
        }
        if action == Action::Duplicate {
            if let Ok(second) = forward(shared.upstream, &request).await {
                event.upstream_statuses.extend(status_and_body(&second).0);
            }
        }
        if let Some(first) = first {
            if action != Action::DropResponse {
                let write = tokio::time::timeout(WRITE_TIMEOUT, client.write_all(&first)).await;
                event.delivered = matches!(write, Ok(Ok(())));
            }
        }
    }
    if !event.delivered {
        // A reset, not a polite close: the client must not mistake it for an empty answer.
        let _ = client.set_zero_linger();
    }
    drop(client);
    finish(&shared, event);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(seed: u64) -> FaultPlan {
        FaultPlan {
            seed,
            reset: Fault {
                ratio: Ratio { num: 1, den: 10 },
                budget: None,
            },
            drop_response: Fault {
                ratio: Ratio { num: 1, den: 4 },
                budget: Some(3),
            },
            duplicate: Fault {
                ratio: Ratio { num: 1, den: 5 },
                budget: None,
            },
            delay: Fault::OFF,
            delay_ms: 0,
        }
    }

    #[test]
    fn the_actions_are_the_seeds_and_budgets_bound_them() {
        let actions = plan_actions(&plan(7), 200);
        assert_eq!(
            actions,
            plan_actions(&plan(7), 200),
            "same seed, same actions"
        );
        assert_ne!(
            actions,
            plan_actions(&plan(8), 200),
            "another seed, other actions"
        );
        let count = |a: Action| actions.iter().filter(|&&x| x == a).count();
        assert_eq!(count(Action::DropResponse), 3, "the budget of 3 is used up");
        assert!(count(Action::Reset) > 5 && count(Action::Duplicate) > 10);
        assert!(count(Action::Forward) > 100);
        assert_eq!(count(Action::Delay), 0);
        // A prefix is the same whatever the length asked for.
        assert_eq!(plan_actions(&plan(7), 20), actions[..20].to_vec());
    }

    #[test]
    fn ratios_parse_as_integers() {
        assert_eq!(Ratio::parse("1/10"), Ok(Ratio { num: 1, den: 10 }));
        assert!(Ratio::parse("2/1").is_err());
        assert!(Ratio::parse("1/0").is_err());
        assert!(Ratio::parse("0.5").is_err());
        assert_eq!(Fault::parse("1/1:2"), Ok(Fault::first(2)));
        assert!(Fault::parse("1/2:x").is_err());
        assert_eq!(
            plan_actions(
                &FaultPlan {
                    drop_response: Fault::first(2),
                    ..FaultPlan::none(1)
                },
                4
            ),
            [
                Action::DropResponse,
                Action::DropResponse,
                Action::Forward,
                Action::Forward
            ]
        );
    }

    #[test]
    fn the_record_is_bounded_and_counts_everything() {
        let shared = Shared {
            upstream: "127.0.0.1:9".parse().unwrap(),
            key_header: "Idempotency-Key".into(),
            delay: Duration::ZERO,
            planner: Mutex::new((0, Planner::new(FaultPlan::none(0)))),
            record: Mutex::new(Record::default()),
        };
        let event = |index: u64| ProxyEvent {
            index,
            action: Action::Forward,
            key: None,
            upstream_statuses: vec![201],
            upstream_body: Some("x".repeat(BODY_SAMPLE_BYTES * 2)),
            delivered: true,
            in_flight: false,
        };
        let total = RECORD_EVENTS_MAX as u64 + 5;
        for index in 0..total {
            let mut event = event(index);
            event.upstream_body = event.upstream_body.map(sample);
            progress(&shared, &event);
            finish(&shared, event);
        }
        let record = shared.record();
        assert_eq!(record.events.len(), RECORD_EVENTS_MAX);
        assert_eq!(record.not_kept, 5);
        assert!(record.in_flight.is_empty());
        assert_eq!(record.counts["forward"], total);
        let bodies = record.events.iter().filter(|e| e.upstream_body.is_some());
        assert_eq!(bodies.clone().count(), RECORD_BODIES_MAX);
        assert!(bodies
            .map(|e| e.upstream_body.as_ref().unwrap().len())
            .all(|len| len == BODY_SAMPLE_BYTES));
        drop(record);
        // A request still in flight is in the record, marked.
        progress(&shared, &event(total));
        let in_flight = &shared.record().in_flight[&total];
        assert!(in_flight.in_flight);
        assert!(serde_json::to_string(in_flight)
            .unwrap()
            .contains("\"in_flight\":true"));
        assert!(!serde_json::to_string(&event(0))
            .unwrap()
            .contains("in_flight"));
    }

    #[test]
    fn samples_cut_at_a_character_boundary() {
        let text = format!("{}é", "a".repeat(BODY_SAMPLE_BYTES - 1));
        assert_eq!(sample(text).len(), BODY_SAMPLE_BYTES - 1);
        // The memory is given back too (truncating alone kept the whole body's capacity).
        let kept = sample("x".repeat(BODY_SAMPLE_BYTES * 16));
        assert!(kept.capacity() <= BODY_SAMPLE_BYTES, "{}", kept.capacity());
        assert_eq!(sample("short".into()), "short");
    }
}
