//! The consumer as real code: what it does with one delivery, over the handler's store interface (`Store`), so
//! its inbox and its effect live in SQLite or PostgreSQL. Where the inbox row goes (same transaction, after or
//! before the effect) and what it is keyed by (event id, stream sequence, delivery number) are the knobs of the
//! queue model, and the rules behind them are `protocol::queue`'s, written once: `on_delivery` decides whether a
//! delivery is processed, `Inbox::commits` says which transactions processing commits.
//!
//! The work is split at the queue model's handler steps (`builtin::JobStep`: claim, provider, effect, commit,
//! completion, respond), one store transaction at most per step, so that a checker trace can be replayed step by
//! step and a crash can fall between any two. In production `run` takes the steps one after the other.

use crate::handler::{Reply, Store, StoreError, StoreResult};
use crate::protocol::queue::{self, Commit, OnDelivery};
use crate::protocol::{status, DedupKey, Inbox, Provider};
use crate::runner::run_now;

/// The consumer's inbox table (keys: the dedup key of processed deliveries).
pub const INBOX: &str = "inbox";
/// The consumer's effect table (one row per processing; its value is the event id).
pub const EFFECTS: &str = "effects";

/// A delivery as the consumer sees it: the event and where the broker has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Given when the event was created (the producer's or the outbox row's event id): the same for every
    /// redelivery and every republished copy.
    pub event_id: String,
    /// The message's position in the stream (Kafka's offset): the same across redeliveries, new for a copy.
    pub stream_sequence: u64,
    /// JetStream numbers every delivery of a consumer, redeliveries included: a delivery tag.
    pub consumer_sequence: u64,
    /// Deliveries of this message so far, this one included (1-based).
    pub delivered: u64,
    pub body: String,
}

/// The consumer's design: the queue model's `[consumer]` knobs and its external call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerDesign {
    pub inbox: Inbox,
    pub dedup_key: DedupKey,
    /// An external effect (an e-mail) made before the effect's transaction, or none.
    pub provider: Provider,
}

impl ConsumerDesign {
    /// The inbox key a delivery carries under this design.
    pub fn inbox_key(&self, delivery: &Delivery) -> String {
        match self.dedup_key {
            DedupKey::EventId => format!("event:{}", delivery.event_id),
            DedupKey::Offset => format!("stream-sequence:{}", delivery.stream_sequence),
            DedupKey::DeliveryNumber => format!("delivery:{}", delivery.consumer_sequence),
        }
    }
}

/// Where a consumer is in handling a delivery: the queue model's job steps, by their names there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Look the delivery up in the inbox (and, before-effect, commit its row).
    Claim,
    /// The external call.
    Provider,
    /// The effect's transaction is about to open (the model holds the effect row here, uncommitted).
    Effect,
    /// The effect's transaction: the effect row, the inbox row when they share it, the commit.
    Commit,
    /// After-effect: the inbox row's own transaction.
    CompleteRow,
    /// Processed: the ack is next.
    Respond,
}

/// One consumer process handling one delivery over its own connection. Dropping it is a crash: the connection
/// goes, with whatever transaction was open.
pub struct Consumer<S> {
    store: S,
    design: ConsumerDesign,
    delivery: Delivery,
    key: String,
    phase: Phase,
}

fn refused(what: &str) -> StoreError {
    StoreError::Refused(what.to_string())
}

impl<S: Store> Consumer<S> {
    pub fn new(store: S, design: ConsumerDesign, delivery: Delivery) -> Consumer<S> {
        let key = design.inbox_key(&delivery);
        Consumer {
            store,
            design,
            delivery,
            key,
            phase: Phase::Claim,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn delivery(&self) -> &Delivery {
        &self.delivery
    }

    /// Run the current step's store calls; the reply once the delivery is handled (then it is to be acked):
    /// 200 acked without processing (its inbox row exists, or the effect's transaction met it), 201 processed.
    pub fn step(&mut self) -> StoreResult<Option<Reply>> {
        let commits = self.design.inbox.commits();
        let effect_at = commits
            .iter()
            .position(|commit| commit.effect)
            .expect("every inbox placement commits the effect");
        match self.phase {
            Phase::Claim => self.claim(&commits[..effect_at]),
            Phase::Provider => {
                let key = match self.design.provider {
                    Provider::IdempotentDerivedKey => Some(format!("email:{}", self.key)),
                    Provider::NotIdempotent => None,
                    Provider::None => unreachable!("no provider step without a provider"),
                };
                run_now(
                    self.store
                        .provider_charge(key.as_deref(), &self.delivery.body),
                )?;
                self.phase = Phase::Effect;
                Ok(None)
            }
            Phase::Effect => {
                self.phase = Phase::Commit;
                Ok(None)
            }
            Phase::Commit => self.commit_effect(commits[effect_at], commits.get(effect_at + 1)),
            Phase::CompleteRow => {
                self.commit_row_alone()?;
                self.phase = Phase::Respond;
                Ok(None)
            }
            Phase::Respond => Ok(Some(Reply::new(status::CREATED, ""))),
        }
    }

    /// Handle the delivery to its reply (production: nothing falls between the steps but real crashes).
    pub fn run(mut self) -> StoreResult<Reply> {
        loop {
            if let Some(reply) = self.step()? {
                return Ok(reply);
            }
        }
    }

    /// A crash at the current step boundary. At `Commit` the effect's transaction is opened and its effect row
    /// written first, so that the database really rolls an effect back (the model's effect is uncommitted there).
    pub fn crash(mut self) {
        if self.phase == Phase::Commit {
            let _ = run_now(self.store.begin());
            let _ = run_now(self.store.insert_effect(EFFECTS, &self.delivery.event_id));
        }
        drop(self);
    }

    /// Look the delivery up; commit the rows an inbox placement commits before the effect.
    fn claim(&mut self, before_effect: &[Commit]) -> StoreResult<Option<Reply>> {
        if self.design.inbox != Inbox::None {
            run_now(self.store.begin())?;
            let found = run_now(self.store.get(INBOX, &self.key))?.is_some();
            if queue::on_delivery(self.design.inbox, found) == OnDelivery::AckWithoutProcessing {
                run_now(self.store.commit())?;
                return Ok(Some(Reply::new(status::OK_REPLAY, "")));
            }
            for commit in before_effect {
                debug_assert!(commit.inbox_row && !commit.effect);
                run_now(
                    self.store
                        .insert_if_absent(INBOX, &self.key, &self.delivery.event_id),
                )?;
            }
            run_now(self.store.commit())?;
        }
        self.phase = match self.design.provider {
            Provider::None => Phase::Effect,
            _ => Phase::Provider,
        };
        Ok(None)
    }

    /// The effect's transaction, with the inbox row when the placement puts it there: a row another consumer
    /// committed meanwhile makes the insert find the unique key taken, and the whole transaction rolls back.
    fn commit_effect(
        &mut self,
        commit: Commit,
        later: Option<&Commit>,
    ) -> StoreResult<Option<Reply>> {
        run_now(self.store.begin())?;
        run_now(self.store.insert_effect(EFFECTS, &self.delivery.event_id))?;
        if commit.inbox_row {
            let inserted = run_now(self.store.insert_if_absent(
                INBOX,
                &self.key,
                &self.delivery.event_id,
            ))?;
            if commit.refused(!inserted) {
                run_now(self.store.rollback())?;
                return Ok(Some(Reply::new(status::OK_REPLAY, "")));
            }
        }
        run_now(self.store.commit())?;
        self.phase = match later {
            Some(later) if later.inbox_row => Phase::CompleteRow,
            Some(_) => {
                return Err(refused(
                    "a commit after the effect holds only the inbox row",
                ))
            }
            None => Phase::Respond,
        };
        Ok(None)
    }

    /// After-effect: the row in a transaction of its own (an upsert: it cannot undo the effect).
    fn commit_row_alone(&mut self) -> StoreResult<()> {
        run_now(self.store.begin())?;
        run_now(
            self.store
                .insert_if_absent(INBOX, &self.key, &self.delivery.event_id),
        )?;
        run_now(self.store.commit())
    }
}

/// A consumer process's loop in production: fetch a delivery, handle it on a fresh connection, ack it; until no
/// delivery comes within `wait` and the broker has nothing left for the consumer (a slow broker's empty fetch is
/// not the end of the queue), or nothing has come for `DRAIN_MAX`. The replies, in order (200: absorbed by the
/// inbox, 201: processed).
pub fn consume<S: Store>(
    queue: &super::broker::Queue<'_>,
    design: ConsumerDesign,
    mut connect: impl FnMut() -> StoreResult<S>,
    wait: std::time::Duration,
) -> Result<Vec<Reply>, String> {
    const DRAIN_MAX: std::time::Duration = std::time::Duration::from_secs(30);
    let mut replies = Vec::new();
    let mut last_delivery = std::time::Instant::now();
    loop {
        let Some(received) = queue.fetch(wait)? else {
            if queue.outstanding()? == 0 || last_delivery.elapsed() > DRAIN_MAX {
                return Ok(replies);
            }
            continue;
        };
        last_delivery = std::time::Instant::now();
        let store = connect().map_err(|e| e.to_string())?;
        let reply = Consumer::new(store, design, received.delivery.clone())
            .run()
            .map_err(|e| e.to_string())?;
        queue.ack(&received.message)?;
        replies.push(reply);
    }
}
