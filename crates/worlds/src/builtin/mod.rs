//! The built-in worlds: clients, a lossy network, server processes, the store and a ghost effect ledger, as a pure
//! state machine, with a server role (`Server`) for what a process does with a request: the idempotency-key
//! handler (`HttpWorld`) or a queue consumer and its broker (`QueueWorld`). `World` is either, as a model file
//! describes it, made by `WorldBuilder`; `State` is one point of the state space (Clone + Eq + Hash, ordered
//! collections only) and `Action` everything that can happen next, faults included: both are shared.
//!
//! Time is abstract. Everything is asynchronous: any enabled action may happen next, so a process that is not
//! scheduled is a paused process, and a client may time out while its request is only slow. The one timing
//! assumption: a client told 409 by a server that has a lease waits out the lease (Retry-After) before retrying.

mod action;
mod budget;
mod builder;
mod checked;
mod config;
mod describe;
mod describe_queue;
mod described;
mod events;
mod http;
mod independence;
mod pack;
mod parts;
mod properties;
mod queue;
mod sorted_map;
mod state;
mod step;
mod symmetry;
mod unresolved;
mod view;
mod world;

/// The protocol's knobs, where worlds are configured (they live in `crate::protocol`).
pub use crate::protocol::{
    DedupKey, Inbox, KeyScope, KeyStore, OnError, Producer, ProducerDedup, Provider, QueueConfig,
};
pub use action::Action;
pub use budget::Budgets;
pub use builder::{WorldBuilder, WorldError};
pub use checked::check_property;
pub use config::{Body, ClientsConfig, Fault, Faults, Operation};
pub use described::{DescribedStep, Party, StepKind};
pub use events::{Event, Events};
pub use properties::{PropertyKind, WorldProperty};
pub use state::{
    ClientPhase, ClientState, Job, JobStep, Key, Message, OpOutcome, OpRef, Payment, Proc, Record,
    RecordStatus, Request, Response, State, Store,
};
pub use symmetry::Relabel;
pub use unresolved::{AtRest, Reason, Unresolved};
pub use world::{Http, HttpWorld, Queue, QueueWorld, Server, Transition, World, WorldOf};
