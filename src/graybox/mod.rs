//! Gray-box checks of a running service in any language (issue 32): every SQL statement and Redis command it
//! sends is a step boundary, observed and controlled at the wire.
//!
//! - [`gate`]: the loopback wire proxies (PostgreSQL's frontend/backend protocol, Redis's RESP) that sit between
//!   the service and its real stores, record each boundary's normalised text and connection, and hold, release
//!   or withhold the answer of each one as the controller decides.
//! - [`pg_wire`] (the service's side) and [`pg_answers`] (the store's), [`resp`]: the two protocols' framing, by
//!   hand; [`normalise`]: literals replaced. `link` forwards one connection with them.
//! - [`explore`]: which order of statements to try next (stateless DFS, preemption-bounded).
//! - The controller side (the service process, schedules, the checks `crash-at-every-statement`,
//!   `interleaved-same-key`, `lost-response`, replay) builds on [`gate::Gates`].

pub mod explore;
pub mod gate;
mod link;
pub mod normalise;
pub mod pg_answers;
pub mod pg_wire;
pub mod resp;
