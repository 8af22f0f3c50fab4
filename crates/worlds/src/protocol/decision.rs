//! The server's decision on a request, given the record stored under its key.

use super::status;

/// What the store holds for a key, as the decision needs to see it. `R` is the stored response, `T` the claim
/// token (who owns an in_progress record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordState<R> {
    /// Claimed and not completed. `lease_expired` is computed by the caller (the model makes expiry an action;
    /// a real store compares timestamps with [`super::lease_expired`]).
    InProgress { lease_expired: bool },
    /// Completed, with the response to replay.
    Completed { response: R },
}

/// The decision. `Execute` and `TakeOver` both lead to the effect and the completion in one transaction, which
/// answers 201.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision<R> {
    /// No record: the request claimed the key and owns it.
    Execute,
    /// An in_progress record whose lease expired: the request takes the claim over and executes.
    TakeOver,
    /// 200 with the stored response.
    Replay(R),
    /// 409: the original request is still in flight.
    InProgress,
    /// 422: the key was used with another body.
    BodyMismatch,
}

impl<R> Decision<R> {
    /// The status code this decision answers with (201 for the executing ones, once they complete).
    pub fn status(&self) -> u16 {
        match self {
            Decision::Execute | Decision::TakeOver => status::CREATED,
            Decision::Replay(_) => status::OK_REPLAY,
            Decision::InProgress => status::CONFLICT_IN_PROGRESS,
            Decision::BodyMismatch => status::UNPROCESSABLE_BODY_MISMATCH,
        }
    }

    pub fn executes(&self) -> bool {
        matches!(self, Decision::Execute | Decision::TakeOver)
    }
}

/// Decide what to do with a request whose body has fingerprint `request_fp`, given the stored record (its
/// fingerprint and state), or `None` when the key is free. The order is the article's: a changed body is a 422
/// whatever the record's state; then in_progress is a 409 (unless its lease expired); then a completed key
/// replays its stored response.
pub fn decide<F: PartialEq, R: Clone>(
    request_fp: &F,
    stored: Option<(&F, &RecordState<R>)>,
) -> Decision<R> {
    let Some((stored_fp, state)) = stored else {
        return Decision::Execute;
    };
    if stored_fp != request_fp {
        return Decision::BodyMismatch;
    }
    match state {
        RecordState::InProgress {
            lease_expired: true,
        } => Decision::TakeOver,
        RecordState::InProgress {
            lease_expired: false,
        } => Decision::InProgress,
        RecordState::Completed { response } => Decision::Replay(response.clone()),
    }
}

/// Whether a request holding claim `my_token` may commit its effect and completion, when the record now carries
/// `record_token` (`None`: the record is gone). Without fencing a completion always commits, which is how a slow
/// owner whose lease was taken over duplicates the effect.
pub fn may_complete<T: PartialEq>(fencing: bool, my_token: &T, record_token: Option<&T>) -> bool {
    !fencing || record_token == Some(my_token)
}

#[cfg(test)]
mod tests {
    use super::*;

    type D = Decision<&'static str>;

    #[test]
    fn the_articles_decision_table() {
        let fp = 7u8;
        assert_eq!(decide::<u8, &str>(&fp, None), D::Execute);
        let in_flight = RecordState::InProgress {
            lease_expired: false,
        };
        assert_eq!(decide(&fp, Some((&fp, &in_flight))), D::InProgress);
        let expired = RecordState::InProgress {
            lease_expired: true,
        };
        assert_eq!(decide(&fp, Some((&fp, &expired))), D::TakeOver);
        let done = RecordState::Completed {
            response: "payment 1",
        };
        assert_eq!(decide(&fp, Some((&fp, &done))), D::Replay("payment 1"));
        assert_eq!(decide(&8u8, Some((&fp, &done))), D::BodyMismatch);
        assert_eq!(decide(&8u8, Some((&fp, &in_flight))), D::BodyMismatch);
        assert_eq!(D::Replay("x").status(), 200);
        assert_eq!(D::Execute.status(), 201);
    }

    #[test]
    fn fencing_refuses_a_stale_owner() {
        assert!(may_complete(true, &1u8, Some(&1)));
        assert!(!may_complete(true, &1u8, Some(&2)));
        assert!(!may_complete(true, &1u8, None));
        assert!(may_complete(false, &1u8, Some(&2)));
    }
}
