//! What the controller asks of a wire protocol beyond framing, one implementation per protocol in the
//! protocol's own module (`pg_classify::Postgres`, `resp_classify::Redis`): whether a store's error says a
//! boundary ran nothing at all (so it is no step of the request), and whether two normalised texts are the same
//! step. A new gate adds an implementation and one arm in [`of`].

use super::gate::Wire;
use super::{pg_classify, resp_classify};

pub trait Protocol: Sync {
    /// The store refused the boundary without running any of it (Redis `NOSCRIPT`): the client will send the
    /// step again, so this attempt is dropped from the request's statements.
    fn ran_nothing(&self, error: &str) -> bool;

    /// Whether two normalised texts are one step (the same statement, maybe sent another way).
    fn same_step(&self, recorded: &str, seen: &str) -> bool {
        recorded == seen
    }
}

/// The protocol a gate speaks.
pub fn of(wire: Wire) -> &'static dyn Protocol {
    match wire {
        Wire::Postgres => &pg_classify::Postgres,
        Wire::Redis => &resp_classify::Redis,
    }
}
