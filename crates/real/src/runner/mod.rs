//! Where a trace meets a real database: handlers run on real stores one call at a time. The one step-by-step
//! runner of the crate; every driver of a model's trace on real code uses it:
//!
//! - [`run_now`]: poll a store call (or a handler) once; it must be ready. A real store's calls complete at once
//!   (`Store`'s methods are async so that the checker can interleave them), so no async runtime is needed.
//! - [`stepped`]: a handler run on a real store: start it on a connection ([`Stepped::new`]), see its next call
//!   before it is made, make it ([`Stepped::step`]), fail it instead ([`Stepped::fail_next`]) or lose its answer
//!   ([`Stepped::lose_next_answer`]), crash it (drop: the connection goes with its open transaction).
//! - [`lockstep`]: the real databases a trace runs on ([`lockstep::Backend`]: SQLite, PostgreSQL; memory in
//!   `crate::real`), and a handler world's trace driven on one, compared with the model after every step.
//!
//! The drivers keep their own mapping of model actions onto these: `lockstep` (a handler world: one model step,
//! one call), `crate::real::drive` (the built-in world: one model step, a transaction of the article handler)
//! and `crate::queue_real::drive` (a queue world on NATS). The queue's consumer is not a `Handler` run by
//! `Stepped`: it is the consumer as production runs it (`queue_real::consumer::Consumer`, a state machine whose
//! steps are the queue model's job steps, at most one transaction each, and whose `consume` loop is the
//! production consumer), so it steps itself; it shares the backends, `run_now`, and crash-as-drop.

pub mod lockstep;
pub mod stepped;

pub use stepped::Stepped;

use crate::handler::api::{Handler, Reply, Request, Store};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Poll `future` once with a waker that does nothing; its output. It must be ready: every await in it is a real
/// store's call, which completes at once. Anything else (a timer, a channel) is a bug in the caller.
pub fn run_now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("awaited something that is not a real store's call"),
    }
}

/// Run a handler to its reply on a real store, all its calls at once (a service's request).
pub fn run_to_reply<H: Handler, S: Store>(handler: &H, store: &mut S, request: &Request) -> Reply {
    run_now(handler.handle(store, request))
}
