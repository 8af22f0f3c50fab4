//! Gray-box checks of a running service in any language (issue 32): every SQL statement and Redis command it
//! sends is a step boundary, observed and controlled at the wire.
//!
//! - [`gate`]: the loopback wire proxies (PostgreSQL's frontend/backend protocol, Redis's RESP) that sit between
//!   the service and its real stores, record each boundary's normalised text and connection, and hold, release
//!   or withhold the answer of each one as the controller decides.
//! - [`pg_wire`] (the service's side) and [`pg_answers`] (the store's), [`resp`]: the two protocols' framing, by
//!   hand, each bounded ([`bounds`]: what accumulates across messages and connections); [`normalise`]: literals replaced, and [`sql_names`]: meaningless names (savepoints, prepared
//!   statements, thread ids). `link` forwards one connection with them.
//! - [`kind`]: what a boundary is (a step of the request, a session setting, housekeeping), decided by
//!   [`pg_classify`] and [`resp_classify`]; [`protocol`]: what the controller asks of each protocol.
//! - [`explore`]: which order of statements to try next (stateless DFS, preemption-bounded).
//! - The controller side builds on [`gate::Gates`]: [`urls`] (the real stores' URLs, loopback only),
//!   [`service`] (the service as a process tree the probe kills and restarts, found by [`proc_tree`], dying
//!   with the probe by `lifeline`, its output in `output_ring`), [`effects`] (count, reset; `reset_cmd`),
//!   [`backends`] (the store's word on which backends wait on a lock; ending a killed service's backends),
//!   [`lab`] (the bench: gates + service + counter), [`run`] (one schedule over the gates), [`checks`]
//!   (`crash-at-every-statement`, `interleaved-same-key`, `lost-response`), [`replay`], [`schedule`] (a failure as
//!   data; its file read by [`bounded_read`]), [`report`] (results), [`probe`] (all of it, for the CLI).

pub mod backends;
pub mod background;
pub mod bounded_read;
pub mod bounds;
pub mod checks;
pub mod effects;
pub mod explore;
#[cfg(test)]
mod fuzz_tests;
pub mod gate;
pub mod kind;
pub mod lab;
mod lifeline;
mod link;
pub mod normalise;
mod output_ring;
pub mod pg_answers;
pub mod pg_classify;
pub mod pg_wire;
mod port_owner;
pub mod probe;
pub mod proc_tree;
pub mod protocol;
pub mod replay;
pub mod report;
mod reset_cmd;
pub mod resp;
pub mod resp_classify;
pub mod run;
pub mod schedule;
pub mod service;
pub mod sql_names;
pub mod urls;
