//! Connections that carry no request: a background job, a pool's keep-alive, a metrics thread, a heartbeat
//! `UPDATE` every 50 ms. Their statements are no steps of any request; held and attributed to the request
//! released last, they made a correct design fail `interleaved-same-key`, its crash check `incomplete`, and a
//! run that never ended.
//!
//! Learnt at the gate, not from a timer: a request statement sent while the probe has nothing of its own in
//! flight (no schedule running, no request, no restart or count through the service) belongs to no request,
//! and so does everything else its connection sends, for the connection's life. Such a connection's statements
//! pass unheld, never a step, a decision point or a crash point, and the evidence counts them. What the service
//! sends while starting (its readiness answer, a warm-up query) is not learnt from: the probe is busy then.

use super::gate::ConnectionId;
use std::collections::BTreeSet;

/// What is known of the service's background connections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Background {
    connections: BTreeSet<ConnectionId>,
    /// Statements of background connections passed unheld (over every run).
    pub passed: usize,
}

impl Background {
    pub fn contains(&self, connection: ConnectionId) -> bool {
        self.connections.contains(&connection)
    }

    /// `connection` sent a statement no request can have sent.
    pub fn learn(&mut self, connection: ConnectionId) {
        self.connections.insert(connection);
    }

    /// A connection ended: it is no longer needed (connection ids are never reused).
    pub fn forget(&mut self, connection: ConnectionId) {
        self.connections.remove(&connection);
    }

    /// "12 statements of connections that carry no request (a background job, a keep-alive) passed unheld".
    pub fn summary(&self) -> Option<String> {
        summary(self.passed)
    }
}

/// What a check's evidence says of `passed` statements of background connections (None: there were none).
pub fn summary(passed: usize) -> Option<String> {
    match passed {
        0 => None,
        1 => Some("1 statement of a connection that carries no request (a background job, a keep-alive) passed unheld".into()),
        n => Some(format!("{n} statements of connections that carry no request (a background job, a keep-alive) passed unheld")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learnt_connections_are_kept_until_the_service_is_gone() {
        let mut background = Background::default();
        assert!(!background.contains(7));
        background.learn(7);
        assert!(background.contains(7) && !background.contains(8));
        assert_eq!(background.summary(), None);
        background.passed = 3;
        assert!(background
            .summary()
            .unwrap()
            .starts_with("3 statements of connections"));
        background.forget(7);
        assert!(!background.contains(7));
        assert_eq!(
            background.passed, 3,
            "the count is the check's, not the connections'"
        );
    }
}
