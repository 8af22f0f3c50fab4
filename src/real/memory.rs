//! The in-memory key store: the protocol's tables in a `Vec` behind one lock of the caller's choice.
//!
//! The rows are a plain list, like a table: under [`Claim::UniqueIndex`] the claim looks for the key and inserts in
//! one critical section (one `Lock::with`), the in-memory `INSERT OR IGNORE`; under [`Claim::SelectThenInsert`] the
//! look-up and the insert are two critical sections, so two requests can both see no row and both insert.

use super::{
    decide_on_row, payment_response, reply_after_lost_claim, reply_for, ClaimLookup, ClaimToken,
    Claimed, KeyRow, KeyStore, Lock, Payment, Reply, Request, StoreError,
};
use crate::protocol::{self, Claim, Decision, ProtocolConfig};

/// The store's tables: key records (no index: duplicates are possible under select-then-insert) and payments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    pub rows: Vec<KeyRow>,
    pub payments: Vec<Payment>,
    /// The last claim token handed out (tokens start at 1).
    pub token_last: u64,
}

impl Tables {
    fn first_row(&self, request: &Request) -> Option<usize> {
        self.rows
            .iter()
            .position(|row| row.client_id == request.client_id && row.key == request.key)
    }

    /// The row a completion with `token` acts on: the row that still carries `token`, else the key's first row.
    /// Under a unique index there is one row per key, so this is simply the key's row.
    fn completion_row(&self, request: &Request, token: ClaimToken) -> Option<usize> {
        self.rows
            .iter()
            .position(|row| {
                row.client_id == request.client_id && row.key == request.key && row.token == token
            })
            .or_else(|| self.first_row(request))
    }

    fn next_token(&mut self) -> ClaimToken {
        self.token_last += 1;
        ClaimToken(self.token_last)
    }

    /// Act on an executing decision: insert a new in_progress row (`Execute`) or move the key's first row to a new
    /// claim (`TakeOver`). Returns the new claim's token.
    fn write_claim(
        &mut self,
        request: &Request,
        decision: &Decision<String>,
        fingerprint: protocol::Fingerprint,
        now_ms: u64,
    ) -> ClaimToken {
        let token = self.next_token();
        match (decision, self.first_row(request)) {
            (Decision::TakeOver, Some(index)) => {
                let row = &mut self.rows[index];
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

    /// A copy of the tables (for assertions and for the trace driver's comparisons).
    pub fn snapshot(&self) -> Tables {
        self.tables.with(|tables| tables.clone())
    }

    fn owner_or_answer(
        token: Option<ClaimToken>,
        decision: Decision<String>,
    ) -> Result<Claimed, StoreError> {
        match token {
            Some(token) => Ok(Claimed::Owner { token, decision }),
            None => Ok(Claimed::Answered(
                reply_for(&decision)?.expect("a decision without a claim token does not execute"),
            )),
        }
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
                    let row = tables.first_row(request).map(|index| &tables.rows[index]);
                    decide_on_row(&self.config, &fingerprint, row, now_ms)
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
        let (token, decision) = match (self.config.claim, lookup.0) {
            // The broken variant acts on what its earlier SELECT saw, without looking again.
            (Claim::SelectThenInsert, Some(decision)) => {
                let token = decision.executes().then(|| {
                    self.tables
                        .with(|tables| tables.write_claim(request, &decision, fingerprint, now_ms))
                });
                (token, decision)
            }
            // One critical section: look, decide, and write the claim (INSERT OR IGNORE + read back).
            _ => self.tables.with(|tables| {
                let row = tables.first_row(request).map(|index| &tables.rows[index]);
                let decision = decide_on_row(&self.config, &fingerprint, row, now_ms);
                let token = decision
                    .executes()
                    .then(|| tables.write_claim(request, &decision, fingerprint, now_ms));
                (token, decision)
            }),
        };
        Self::owner_or_answer(token, decision)
    }

    fn complete(
        &self,
        request: &Request,
        token: ClaimToken,
        now_ms: u64,
    ) -> Result<Reply, StoreError> {
        self.tables.with(|tables| {
            let index = tables.completion_row(request, token);
            let record_token = index.map(|index| tables.rows[index].token);
            if !protocol::may_complete(self.config.fencing, &token, record_token.as_ref()) {
                let row = index.map(|index| &tables.rows[index]);
                return reply_after_lost_claim(&self.config, request, row, now_ms);
            }
            // The effect and the completion in one critical section: the in-memory single transaction.
            let payment_id = tables.payments.len() as u64 + 1;
            tables.payments.push(Payment {
                payment_id,
                client_id: request.client_id.clone(),
                key: request.key.clone(),
                amount: request.amount().to_string(),
            });
            let response = payment_response(payment_id, request);
            if let Some(index) = index {
                tables.rows[index].response = Some(response.to_string());
            }
            Ok(Reply {
                status: Decision::<String>::Execute.status(),
                body: response,
            })
        })
    }

    fn payments(&self) -> Result<Vec<Payment>, StoreError> {
        Ok(self.tables.with(|tables| tables.payments.clone()))
    }
}
