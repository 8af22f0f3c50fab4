//! The checked world: clients, a lossy network, server processes, the store and a ghost effect ledger, as a pure
//! state machine. `World` is the configuration (what the model file said); `State` is one point of the state space
//! (Clone + Eq + Hash, ordered collections only); `Action` is everything that can happen next, faults included.
//!
//! Time is abstract. Everything is asynchronous: any enabled action may happen next, so a process that is not
//! scheduled is a paused process, and a client may time out while its request is only slow. The one timing
//! assumption: a client told 409 by a server that has a lease waits out the lease (Retry-After) before retrying.

mod action;
mod checked;
mod config;
mod describe;
mod describe_queue;
mod events;
mod pack;
mod properties;
mod queue;
mod sorted_map;
mod state;
mod step;
mod symmetry;

pub use action::Action;
pub use checked::check_property;
pub use config::{
    ClientsConfig, DedupKey, Faults, Inbox, KeyScope, KeyStore, OnError, Operation, Producer,
    ProducerDedup, Provider, QueueConfig, World,
};
pub use events::{Event, Events};
pub use pack::{pack, unpack, unpack_into};
pub use properties::{Property, PropertyKind};
pub use queue::COPY_DELIVERY_BASE;
pub use sorted_map::SortedMap;
pub use state::{
    ClientPhase, ClientState, Job, JobStep, Key, Message, OpRef, Outcome, Proc, Record,
    RecordStatus, Request, Response, State, Store,
};
pub use symmetry::Relabel;
