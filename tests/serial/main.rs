//! The tests that must have the machine's cores to themselves, one test at a time: the gray-box samples of
//! `examples/graybox` (a request whose first statement is not seen within 200 ms is taken as queued behind
//! another, so a busy core can still change a run; lock waits are PostgreSQL's word, not a timer's) and
//! the queue models on a real NATS broker (they measure against the broker's wall-clock duplicate window; a
//! parallel test's load once delayed an original past it). Every test here that starts a probe or a broker
//! holds `ONE_AT_A_TIME` for its whole run, and cargo runs test binaries one after another, so none of them
//! runs beside another test's load (the only test without the lock reads the README). In an area binary they
//! would share the cores with that area's tests. Features `cli` and `stack` (the samples), `nats` (the broker).

#[cfg(all(feature = "cli", feature = "stack"))]
mod graybox;
#[cfg(feature = "nats")]
mod queue_nats;

/// Held by each of this binary's probe and broker tests for its whole run.
#[cfg(any(all(feature = "cli", feature = "stack"), feature = "nats"))]
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
