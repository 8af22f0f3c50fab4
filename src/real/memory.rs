//! The in-memory key store: the protocol's tables in a `Vec` behind one lock of the caller's choice.
//!
//! The rows are a plain list, like a table: under [`Claim::UniqueIndex`] the claim looks for the key and inserts in
//! one critical section (one `Lock::with`), the in-memory `INSERT OR IGNORE`; under [`Claim::SelectThenInsert`] the
//! look-up and the insert are two critical sections, so two requests can both see no row and both insert. Reads
//! see a key's latest row and a completion updates every row of the key, as SQL without a unique index would.

use super::{
    decide_on_row, internal_error_reply, open_claim_token, payment_response, reply_for,
    still_holds_claim, ClaimLookup, ClaimToken, Claimed, Completion, KeyRow, KeyStore, Lock,
    OnError, Payment, Reply, Request, StoreError, StoreFlow, StoredResponse,
};
use crate::protocol::{self, status, Claim, Decision, ProtocolConfig};

/// The store's tables: key records (no index: duplicates are possible under select-then-insert) and payments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    pub rows: Vec<KeyRow>,
    pub payments: Vec<Payment>,
    /// The last claim token handed out (tokens start at 1).
    pub token_last: u64,
}

impl Tables {
    /// The key's latest row (its only row under a unique index).
    fn latest_row(&self, request: &Request) -> Option<&KeyRow> {
        self.rows
            .iter()
            .rev()
            .find(|row| row.client_id == request.client_id && row.key == request.key)
    }

    /// Act on an executing decision. A unique index takes an expired claim over in its row; select-then-insert
    /// always inserts a new row (it has no index to find the old one by). Returns the new claim's token.
    fn write_claim(
        &mut self,
        claim: Claim,
        request: &Request,
        decision: &Decision<StoredResponse>,
        fingerprint: protocol::Fingerprint,
        now_ms: u64,
    ) -> ClaimToken {
        self.token_last += 1;
        let token = ClaimToken(self.token_last);
        let existing = self
            .rows
            .iter_mut()
            .rev()
            .find(|row| row.client_id == request.client_id && row.key == request.key);
        match (claim, decision, existing) {
            (Claim::UniqueIndex, Decision::TakeOver, Some(row)) => {
                row.token = token;
                row.claimed_at_ms = now_ms;
            }
            _ => self.rows.push(KeyRow {
                client_id: request.client_id.clone(),
                key: request.key.clone(),
                fingerprint,
                token,
                claimed_at_ms: now_ms,
                response: None,
            }),
        }
        token
    }
}

/// The in-memory store. `L` is the lock: [`super::StdLock`] in a service, loom's or shuttle's mutex in tests.
pub struct MemoryStore<L> {
    config: ProtocolConfig,
    tables: L,
}

impl<L: Lock<Tables>> MemoryStore<L> {
    pub fn new(config: ProtocolConfig) -> Self {
        MemoryStore {
            config,
            tables: L::new(Tables::default()),
        }
    }

    /// A copy of the tables (for assertions).
    pub fn snapshot(&self) -> Tables {
        self.tables.with(|tables| tables.clone())
    }
}

impl<L: Lock<Tables>> KeyStore for MemoryStore<L> {
    fn config(&self) -> &ProtocolConfig {
        &self.config
    }

    fn claim_lookup(&self, request: &Request, now_ms: u64) -> Result<ClaimLookup, StoreError> {
        match self.config.claim {
            Claim::UniqueIndex => Ok(ClaimLookup(None)),
            Claim::SelectThenInsert => {
                let fingerprint = request.fingerprint(&self.config);
                let decision = self.tables.with(|tables| {
                    decide_on_row(
                        &self.config,
                        &fingerprint,
                        tables.latest_row(request),
                        now_ms,
                    )
                });
                Ok(ClaimLookup(Some(decision)))
            }
        }
    }

    fn claim_finish(
        &self,
        request: &Request,
        lookup: ClaimLookup,
        now_ms: u64,
    ) -> Result<Claimed, StoreError> {
        let fingerprint = request.fingerprint(&self.config);
        let claim = self.config.claim;
        let (token, decision) = match (claim, lookup.0) {
            // The broken variant acts on what its earlier SELECT saw, without looking again.
            (Claim::SelectThenInsert, Some(decision)) => {
                let token = decision.executes().then(|| {
                    self.tables.with(|tables| {
                        tables.write_claim(claim, request, &decision, fingerprint, now_ms)
                    })
                });
                (token, decision)
            }
            // One critical section: look, decide, and write the claim (INSERT OR IGNORE + read back).
            _ => self.tables.with(|tables| {
                let decision = decide_on_row(
                    &self.config,
                    &fingerprint,
                    tables.latest_row(request),
                    now_ms,
                );
                let token = decision
                    .executes()
                    .then(|| tables.write_claim(claim, request, &decision, fingerprint, now_ms));
                (token, decision)
            }),
        };
        match token {
            Some(token) => Ok(Claimed::Owner { token, decision }),
            None => Ok(Claimed::Answered(
                reply_for(&decision)?.expect("a decision that does not execute has a reply"),
            )),
        }
    }

    fn complete_with(
        &self,
        request: &Request,
        token: ClaimToken,
        _now_ms: u64,
        before_commit: &mut dyn FnMut() -> StoreFlow,
    ) -> Result<Completion, StoreError> {
        // The effect and the completion in one critical section: the in-memory single transaction. The writes
        // are prepared first and applied only after the hook said commit, which is what a rollback leaves.
        self.tables.with(|tables| {
            let record_token = open_claim_token(tables.latest_row(request));
            if !protocol::may_complete(self.config.fencing, &token, record_token.as_ref()) {
                return Ok(Completion::Refused);
            }
            let payment_id = tables.payments.len() as u64 + 1;
            let response = payment_response(payment_id, request);
            if before_commit() == StoreFlow::Crash {
                return Err(StoreError::Crashed);
            }
            tables.payments.push(Payment {
                payment_id,
                client_id: request.client_id.clone(),
                key: request.key.clone(),
                amount: request.amount().to_string(),
            });
            for row in tables.rows.iter_mut() {
                if row.client_id == request.client_id && row.key == request.key {
                    row.response = Some(StoredResponse {
                        status: status::CREATED,
                        body: response.to_string(),
                    });
                }
            }
            Ok(Completion::Created(Reply {
                status: Decision::<String>::Execute.status(),
                body: response,
            }))
        })
    }

    fn fail(
        &self,
        request: &Request,
        token: ClaimToken,
        on_error: OnError,
    ) -> Result<Reply, StoreError> {
        let reply = internal_error_reply();
        self.tables.with(|tables| {
            if !still_holds_claim(token, tables.latest_row(request)) {
                return;
            }
            let of_key =
                |row: &KeyRow| row.client_id == request.client_id && row.key == request.key;
            match on_error {
                OnError::StoreResponse => {
                    for row in tables.rows.iter_mut().filter(|row| of_key(row)) {
                        row.response = Some(StoredResponse {
                            status: reply.status,
                            body: reply.body.to_string(),
                        });
                    }
                }
                OnError::DeleteKey => tables.rows.retain(|row| !of_key(row)),
                OnError::KeepInProgress => {}
            }
        });
        Ok(reply)
    }

    fn expire_key(&self, client_id: &str, key: &str) -> Result<(), StoreError> {
        self.tables.with(|tables| {
            tables.rows.retain(|row| {
                !(row.client_id == client_id && row.key == key && row.response.is_some())
            })
        });
        Ok(())
    }

    fn payments(&self) -> Result<Vec<Payment>, StoreError> {
        Ok(self.tables.with(|tables| tables.payments.clone()))
    }

    fn rows(&self) -> Result<Vec<KeyRow>, StoreError> {
        Ok(self.tables.with(|tables| tables.rows.clone()))
    }
}
