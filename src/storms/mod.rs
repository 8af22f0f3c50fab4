//! Retry storms beyond the AWS post (issue 6): worlds where retries multiply load.
//!
//! - [`layers`]: a chain of services, each retrying its callee: requests reaching the bottom.
//! - [`client`]: the named retry policies (attempt limit, backoff, retry control) of the clients.
//! - [`brooker`]: Brooker (2022): Poisson clients, a server failing with probability p.
//! - [`capacity`]: a server with workers, a bounded queue and a capacity drop; clients with
//!   timeouts; effects with and without an idempotency key.

use rand_chacha::ChaCha8Rng;

use crate::sim::kernel::{run, EventQueue, Model, RunEnd, RunStats};

pub mod brooker;
pub mod capacity;
pub mod client;
pub mod layers;

/// The one-way network delay of a world's config: finite and not negative.
pub(crate) fn check_leg_ms(leg_ms: f64) -> Result<(), String> {
    if leg_ms.is_finite() && leg_ms >= 0.0 {
        Ok(())
    } else {
        Err(format!("leg_ms must be finite and >= 0, got {leg_ms}"))
    }
}

/// Runs `model` on a fresh queue of at most `queue_len_max` pending events until it drains; a
/// run cut short by the event bound is an error, never a result.
pub fn run_drained<M: Model>(
    model: &mut M,
    queue_len_max: usize,
    rng: &mut ChaCha8Rng,
    events_max: u64,
) -> Result<RunStats, String> {
    let mut queue = EventQueue::new(queue_len_max);
    let stats = run(model, &mut queue, rng, events_max);
    if stats.end != RunEnd::Drained {
        return Err(format!("run did not drain: {:?}", stats.end));
    }
    Ok(stats)
}
