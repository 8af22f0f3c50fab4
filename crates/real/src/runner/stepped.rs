//! A handler run on a real store one call at a time, by replay (`handler::next_step`): the runner sees each call
//! before it is made, so it can stop where it likes (at a transaction's end, after the payment is written), make
//! a call fail instead, make it and lose its answer, or drop the run with its connection (a crash: the open
//! transaction rolls back). A deterministic handler is a function of its request and the answers so far, so the
//! run is that pair and the connection; the handler's prefix is re-run at each step (microseconds: handlers make
//! a few calls).

use super::run_now;
use crate::handler::replay::{next_step, perform, refused, Next};
use crate::handler::{Answer, Call, Handler, Reply, Request, Store};

/// A handler in progress on its own connection.
pub struct Stepped<H, C> {
    handler: H,
    request: Request,
    answered: Vec<(Call, Answer)>,
    connection: C,
}

/// What the handler gets for a call that fails (a timeout, a dropped connection, an exception in the driver).
fn injected() -> Answer {
    refused("injected failure")
}

impl<H: Handler, C: Store> Stepped<H, C> {
    /// `handler` on `request` over `connection`; no call is made yet.
    pub fn new(handler: H, connection: C, request: Request) -> Self {
        Stepped {
            handler,
            request,
            answered: Vec::new(),
            connection,
        }
    }

    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The calls made (or failed) so far and their answers.
    pub fn answered(&self) -> &[(Call, Answer)] {
        &self.answered
    }

    /// What the handler does next. A handler that is not deterministic is a bug in it: this panics, naming the
    /// call that differed.
    pub fn next(&self) -> Next {
        next_step(&self.handler, &self.request, &self.answered)
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// Make the handler's next call (or return its reply, making none).
    pub fn step(&mut self) -> Result<(&Call, &Answer), Reply> {
        match self.next() {
            Next::Reply(reply) => Err(reply),
            Next::Call(call) => {
                let answer = run_now(perform(&mut self.connection, &call));
                self.answered.push((call, answer));
                let (call, answer) = self.answered.last().expect("just pushed");
                Ok((call, answer))
            }
        }
    }

    /// Make calls until one for which `stop` holds has been made: that call; or the reply, if the handler
    /// answers first.
    pub fn run_until(&mut self, stop: impl Fn(&Call) -> bool) -> Result<Call, Reply> {
        loop {
            let (call, _) = self.step()?;
            if stop(call) {
                return Ok(call.clone());
            }
        }
    }

    /// Make calls until the handler answers.
    pub fn run_to_reply(&mut self) -> Reply {
        loop {
            if let Err(reply) = self.step() {
                return reply;
            }
        }
    }

    /// The handler's next call fails instead of being made; false if it has already answered. A commit that
    /// fails loses the transaction, as in the simulated store: the connection rolls it back.
    pub fn fail_next(&mut self) -> bool {
        match self.next() {
            Next::Reply(_) => false,
            Next::Call(call) => {
                if call == Call::Commit {
                    let _ = run_now(self.connection.rollback());
                }
                self.answered.push((call, injected()));
                true
            }
        }
    }

    /// The handler's next call is made, and the handler gets the same error as for `fail_next` (a timeout: it
    /// cannot tell which); false if it has already answered.
    pub fn lose_next_answer(&mut self) -> bool {
        match self.next() {
            Next::Reply(_) => false,
            Next::Call(call) => {
                let _ = run_now(perform(&mut self.connection, &call));
                self.answered.push((call, injected()));
                true
            }
        }
    }
}

/// A call that ends a transaction.
pub fn is_transaction_end(call: &Call) -> bool {
    matches!(call, Call::Commit | Call::Rollback)
}

/// The payment's insert.
pub fn is_effect(call: &Call) -> bool {
    matches!(call, Call::InsertEffect { .. })
}
