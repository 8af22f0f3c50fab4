//! Your own handler: the server's logic written once as ordinary async Rust over a store interface
//! ([`Store`]), explored by the checker under every crash point, loss and retry, and run for real on the
//! databases. docs/src/handler.md is the guide; the design is in the module docs below.
//!
//! - [`api`]: the store interface, the request and reply, the [`Handler`] and [`Worker`] traits.
//! - [`calls`]: store calls and answers as data.
//! - [`lost`]: faults of named calls: not made, or made with the answer lost, each with its own budget.
//! - [`replay`]: running a handler step by step by replaying its recorded answers.
//! - [`sim`]: the simulated store the checker runs handlers against.
//! - [`sqlite`]: the store interface on SQLite; [`drive`]: real handlers run one call at a time.
//! - [`world::requests`]: per-attempt requests (key, body, headers) and the client's reaction per status.
//! - [`designs`]: designs written once in the library (the article's), used by every runner.

pub mod api;
pub mod calls;
pub mod designs;
pub mod lost;
pub mod prefix;
pub mod replay;
pub mod shared;
pub mod sim;
pub mod world;

pub use api::{
    Activation, Clock, Handler, NoWorker, Reply, Request, SetMode, Store, StoreError, StoreResult,
    Worker,
};
pub use calls::{Answer, Call};
pub use lost::{CallFault, Failure};
pub use replay::{next_step, Next, NotDeterministic};
pub use world::properties::{Charge, Effect, Seen};
pub use world::report::{HandlerReport, Reach, ScenarioLine};
pub use world::requests::{Attempt, Reaction};
pub use world::trace::Made;
pub use world::{HandlerFaults, HandlerWorld, RecordsIn};
