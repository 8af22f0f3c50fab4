//! Your own handler: the server's logic written once as ordinary async Rust over a store interface
//! ([`Store`]), explored by the checker under every crash point, loss and retry, and run for real on the
//! databases. README.md's "Check your own handler" is the guide; the design is in the module docs below.
//!
//! - [`api`]: the store interface, the request and reply, the [`Handler`] and [`Worker`] traits.
//! - [`calls`]: store calls and answers as data.
//! - [`replay`]: running a handler step by step by replaying its recorded answers.
//! - [`sim`]: the simulated store the checker runs handlers against.
//! - [`sqlite`]: the store interface on SQLite; [`drive`]: real handlers run one call at a time.
//! - [`designs`]: designs written once in the library (the article's), used by every runner.

pub mod api;
pub mod calls;
pub mod designs;
pub mod drive;
#[cfg(feature = "real")]
pub mod lockstep;
#[cfg(feature = "real")]
pub mod postgres;
pub mod prefix;
pub mod replay;
pub mod shared;
pub mod sim;
#[cfg(feature = "real")]
pub mod sqlite;
pub mod world;
mod world_assert;
mod world_describe;
pub mod world_properties;
mod world_records;
pub mod world_report;
mod world_step;
mod world_view;

pub use api::{
    Activation, Clock, Handler, NoWorker, Reply, Request, SetMode, Store, StoreError, StoreResult,
    Worker,
};
pub use calls::{Answer, Call};
pub use replay::{next_step, Next, NotDeterministic};
pub use world::{HandlerFaults, HandlerWorld, RecordsIn};
pub use world_properties::{Charge, Effect, Seen};
pub use world_report::{HandlerReport, Reach, ScenarioLine};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod worker_tests;
