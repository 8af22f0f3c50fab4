//! Everything that can happen next, faults included. Serialisable: a trace is a list of actions.

use super::state::{Key, Message, Request, Response};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum Action {
    /// A client in `Ready` sends its next attempt.
    Send { client: u8 },
    /// A waiting client stops waiting: it sends its next attempt at once, or gives up when none is left.
    Timeout { client: u8 },
    /// The network hands a request to an idle server process, any of them: which one is a choice of the
    /// network, so two requests delivered to two processes commute (symmetry merges the choices into one state).
    DeliverRequest { request: Request, proc: u8 },
    /// The network hands a response to its client.
    DeliverResponse { response: Response },
    /// A busy server process runs its next handler step.
    Step { proc: u8 },
    /// Fault: the network loses one copy of a message.
    Drop { message: Message },
    /// Fault: the network delivers one more copy of a message.
    Duplicate { message: Message },
    /// Fault: a busy process crashes at a step boundary (its open transaction is lost) and restarts idle.
    Crash { proc: u8 },
    /// Fault: the handler fails (a 500) at this step boundary.
    Fail { proc: u8 },
    /// Fault: a completed key's TTL runs out while its client may still retry.
    ExpireKey { key: Key },
    /// Fault (queue worlds): the producer publishes the client's latest event again; `late`: after the broker's
    /// dedup window; `restarted`: from a new producer session. The broker drops it or accepts a new message.
    Republish {
        client: u8,
        late: bool,
        restarted: bool,
    },
    /// A lease on an in_progress record runs out. A fault ("pause") when its owner is alive, otherwise just time.
    ExpireLease { key: Key },
}
