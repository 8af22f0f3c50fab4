//! Symmetry reduction by canonical ordering. Clients that perform the same operations are interchangeable, and so
//! are server processes: a state and its relabelling behave the same, so the explorer needs to see only one of
//! them. `canonicalize` relabels a state into a canonical order (sorting, not enumerating permutations). Any
//! relabelling is sound, since it maps a state to a member of its own symmetry class; a better order only merges
//! more states. Properties and scenarios do not depend on who is client 1, so verdicts are unchanged.
//!
//! Counterexamples found on canonical states are mapped back to real actions with the permutation
//! (`Relabel::action_back`), so traces replay on the unreduced model.

use super::action::Action;
use super::config::ClientsConfig;
use super::state::*;
use super::world::{Server, WorldOf};
use crate::protocol::KeyScope;
use smallvec::SmallVec;

const CLIENTS_MAX: usize = ClientsConfig::COUNT_MAX as usize;

/// A relabelling: `client[old] = new`, `proc[old] = new`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relabel {
    client: SmallVec<[u8; 8]>,
    proc: SmallVec<[u8; 8]>,
}

impl Relabel {
    fn inverse(map: &[u8]) -> SmallVec<[u8; 8]> {
        let mut inverse: SmallVec<[u8; 8]> = SmallVec::from_elem(0, map.len());
        for (old, new) in map.iter().enumerate() {
            inverse[*new as usize] = old as u8;
        }
        inverse
    }

    /// The relabelling that changes nothing.
    pub fn identity(state: &State) -> Relabel {
        Relabel {
            client: (0..state.clients.len() as u8).collect(),
            proc: (0..state.procs.len() as u8).collect(),
        }
    }

    /// First `self`, then `then`.
    pub fn then(&self, then: &Relabel) -> Relabel {
        Relabel {
            client: self
                .client
                .iter()
                .map(|x| then.client[*x as usize])
                .collect(),
            proc: self.proc.iter().map(|x| then.proc[*x as usize]).collect(),
        }
    }

    /// The action, given in relabelled terms, in the original labels.
    pub fn action_back(&self, scope: KeyScope, action: &Action) -> Action {
        let back = Relabel {
            client: Self::inverse(&self.client),
            proc: Self::inverse(&self.proc),
        };
        back.action(scope, action)
    }

    /// Exchange the labels of original processes `a` and `b` (for two idle processes: an automorphism).
    pub fn swap_procs(&mut self, a: u8, b: u8) {
        self.proc.swap(a as usize, b as usize);
    }

    fn client(&self, client: u8) -> u8 {
        self.client[client as usize]
    }

    fn op(&self, op: OpRef) -> OpRef {
        OpRef {
            client: self.client(op.client),
            op: op.op,
        }
    }

    fn payment(&self, payment: Option<Payment>) -> Option<Payment> {
        payment.map(|payment| Payment {
            op: self.op(payment.op),
            ..payment
        })
    }

    fn step(&self, step: JobStep) -> JobStep {
        match step {
            JobStep::CompleteKv { payload } => JobStep::CompleteKv {
                payload: self.payment(payload),
            },
            JobStep::Respond { code, payload } => JobStep::Respond {
                code,
                payload: self.payment(payload),
            },
            other => other,
        }
    }

    fn key(&self, scope: KeyScope, key: Key) -> Key {
        match scope {
            KeyScope::PerClient => Key {
                scope: self.client(key.scope),
                value: key.value,
            },
            KeyScope::Global => key,
        }
    }

    fn request(&self, scope: KeyScope, request: Request) -> Request {
        Request {
            from: self.op(request.from),
            key: self.key(scope, request.key),
            ..request
        }
    }

    fn message(&self, scope: KeyScope, message: Message) -> Message {
        match message {
            Message::Request(request) => Message::Request(self.request(scope, request)),
            Message::Response(response) => Message::Response(self.response(response)),
        }
    }

    fn response(&self, response: Response) -> Response {
        Response {
            to: self.op(response.to),
            payload: self.payment(response.payload),
            ..response
        }
    }

    fn action(&self, scope: KeyScope, action: &Action) -> Action {
        match *action {
            Action::Send { client } => Action::Send {
                client: self.client(client),
            },
            Action::Timeout { client } => Action::Timeout {
                client: self.client(client),
            },
            Action::DeliverRequest { request, proc } => Action::DeliverRequest {
                request: self.request(scope, request),
                proc: self.proc[proc as usize],
            },
            Action::DeliverResponse { response } => Action::DeliverResponse {
                response: self.response(response),
            },
            Action::Step { proc } => Action::Step {
                proc: self.proc[proc as usize],
            },
            Action::Drop { message } => Action::Drop {
                message: self.message(scope, message),
            },
            Action::Duplicate { message } => Action::Duplicate {
                message: self.message(scope, message),
            },
            Action::Crash { proc } => Action::Crash {
                proc: self.proc[proc as usize],
            },
            Action::Fail { proc } => Action::Fail {
                proc: self.proc[proc as usize],
            },
            Action::ExpireKey { key } => Action::ExpireKey {
                key: self.key(scope, key),
            },
            Action::ExpireLease { key } => Action::ExpireLease {
                key: self.key(scope, key),
            },
            Action::Republish {
                client,
                late,
                restarted,
            } => Action::Republish {
                client: self.client(client),
                late,
                restarted,
            },
        }
    }

    fn state(&self, scope: KeyScope, state: &State) -> State {
        let mut relabelled = state.clone();
        self.state_in_place(scope, &mut relabelled);
        relabelled
    }

    /// The state relabelled, in place: clients and processes moved to their new places, every reference to a
    /// client rewritten, and the maps keyed by one re-sorted.
    fn state_in_place(&self, scope: KeyScope, state: &mut State) {
        permute(&mut state.clients, &self.client);
        permute(&mut state.procs, &self.proc);
        for client in state.clients.iter_mut() {
            for outcome in client.outcomes.iter_mut() {
                if let OpOutcome::Succeeded { payload } = outcome {
                    *payload = self.payment(*payload);
                }
            }
        }
        for proc in state.procs.iter_mut() {
            if let Proc::Busy(job) = proc {
                job.request = self.request(scope, job.request);
                job.step = self.step(job.step);
            }
        }
        state
            .network
            .rewrite(|message, _| *message = self.message(scope, *message));
        state.store.records.rewrite(|key, record| {
            *key = self.key(scope, *key);
            record.op = self.op(record.op);
            if let RecordStatus::Completed { payload, .. } = &mut record.status {
                *payload = self.payment(*payload);
            }
        });
        state
            .store
            .versions
            .rewrite(|key, _| *key = self.key(scope, *key));
        state.store.payments.rewrite(|op, _| *op = self.op(*op));
        for (op, key) in state.store.provider_charges.iter_mut() {
            *op = self.op(*op);
            *key = self.key(scope, *key);
        }
        state.first_success.rewrite(|op, payload| {
            *op = self.op(*op);
            *payload = self.payment(*payload);
        });
    }
}

/// Move `items[old]` to `items[map[old]]`, following the permutation's cycles with swaps.
fn permute<T>(items: &mut [T], map: &[u8]) {
    let mut to: SmallVec<[u8; 8]> = SmallVec::from_slice(map);
    for at in 0..items.len() {
        // The item now at `at` belongs at `to[at]`: swap it there, and take over that place's destination.
        while to[at] as usize != at {
            let destination = to[at] as usize;
            items.swap(at, destination);
            to.swap(at, destination);
        }
    }
}

/// Each client's view of the state with its own identity erased, hashed: clients with equal signatures are
/// ordered by their original index (any order is sound; equal views are where the merging happens).
///
/// One pass over the state for all clients: every item that names a client (a message, a job, a record, a
/// payment, a provider charge, a first success) is hashed with its client erased and added to that client's
/// sum for its kind. A sum is a hash of the multiset, so no item list is gathered or sorted. Items in a
/// sequence (payments, provider charges) carry their position.
///
/// Arrays of `CLIENTS_MAX`, not vectors: this runs on every transition of a symmetric search.
fn client_signatures(scope: KeyScope, state: &State) -> [u64; CLIENTS_MAX] {
    let mut sums = Sums {
        clients: state.clients.len(),
        sums: [[0u64; KINDS]; CLIENTS_MAX],
    };
    add_moving(&mut sums, scope, state);
    add_records(&mut sums, scope, state);
    add_ledgers(&mut sums, state);
    let mut signatures = [0; CLIENTS_MAX];
    for (index, ((signature, client), sum)) in signatures
        .iter_mut()
        .zip(&state.clients)
        .zip(&sums.sums)
        .enumerate()
    {
        let mut mixed = Mixer::default();
        client_words(index as u8, client, &mut mixed);
        sum.iter().for_each(|kind| mixed.mix(*kind));
        *signature = mixed.finish();
    }
    signatures
}

/// The kinds of items a client's signature sums separately (each sum is one word of the signature).
const KINDS: usize = 7;
const MESSAGES: usize = 0;
const JOBS: usize = 1;
const RECORDS: usize = 2;
const PAYMENTS: usize = 3;
const CHARGES: usize = 4;
const FIRSTS: usize = 5;
const VERSIONS: usize = 6;

/// Per client, per kind: the wrapping sum of the item hashes that name the client.
struct Sums {
    clients: usize,
    sums: [[u64; KINDS]; CLIENTS_MAX],
}

impl Sums {
    #[inline(always)]
    fn add(&mut self, client: u8, kind: usize, item: u64) {
        if let Some(sum) = self.sums[..self.clients].get_mut(client as usize) {
            sum[kind] = sum[kind].wrapping_add(item);
        }
    }
}

/// Messages in flight and the jobs of busy processes.
#[inline(always)]
fn add_moving(sums: &mut Sums, scope: KeyScope, state: &State) {
    for (message, count) in &state.network {
        let (client, word) = erased_message(scope, message, *count);
        sums.add(client, MESSAGES, item_hash(&[word]));
    }
    for proc in &state.procs {
        if let Proc::Busy(job) = proc {
            let request = erased_request(scope, &job.request);
            let [token_tag, token] = option_bytes(job.token);
            let head = word([
                request[0], request[1], request[2], request[3], request[4], request[5], token_tag,
                token,
            ]);
            sums.add(
                job.request.from.client,
                JOBS,
                item_hash(&[head, word(step_bytes(job.request.from.client, job.step))]),
            );
        }
    }
}

/// The store's records, and a per-client key's versions.
#[inline(always)]
fn add_records(sums: &mut Sums, scope: KeyScope, state: &State) {
    for (key, record) in &state.store.records {
        let status = match record.status {
            RecordStatus::InProgress {
                token,
                lease_expired,
            } => [0, token, u8::from(lease_expired), 0, 0, 0, 0, 0],
            RecordStatus::Completed { code, payload } => {
                let [low, high] = code.to_le_bytes();
                let [tag, op, execution] = payment_bytes(record.op.client, payload);
                [1, low, high, tag, op, execution, 0, 0]
            }
        };
        let head = word([
            key.value,
            record.fingerprint,
            record.body,
            record.op.op,
            0,
            0,
            0,
            0,
        ]);
        let item = item_hash(&[head, word(status)]);
        sums.add(record.op.client, RECORDS, item);
        // A per-client key names its client too.
        if scope == KeyScope::PerClient && key.scope != record.op.client {
            sums.add(key.scope, RECORDS, item);
        }
    }
    // A per-client key's version names its client; a global key's names none (every relabelling keeps it).
    if scope == KeyScope::PerClient {
        for (key, version) in &state.store.versions {
            let item = word([key.value, *version, 0, 0, 0, 0, 0, 0]);
            sums.add(key.scope, VERSIONS, item_hash(&[item]));
        }
    }
}

/// The ledgers: payments, provider charges (in sequence) and first successes.
#[inline(always)]
fn add_ledgers(sums: &mut Sums, state: &State) {
    for (op, executions) in &state.store.payments {
        sums.add(
            op.client,
            PAYMENTS,
            item_hash(&[word([op.op, *executions, 0, 0, 0, 0, 0, 0])]),
        );
    }
    for (index, (op, key)) in state.store.provider_charges.iter().enumerate() {
        let item = word([index as u8, op.op, key.value, 0, 0, 0, 0, 0]);
        sums.add(op.client, CHARGES, item_hash(&[item]));
    }
    for (op, payload) in &state.first_success {
        let [tag, paid_op, execution] = payment_bytes(op.client, *payload);
        sums.add(
            op.client,
            FIRSTS,
            item_hash(&[word([op.op, tag, paid_op, execution, 0, 0, 0, 0])]),
        );
    }
}

/// Eight bytes as one word. Every item below is a fixed layout per kind (its tags fix what follows), so the
/// zero padding keeps the encoding injective.
#[inline(always)]
fn word(bytes: [u8; 8]) -> u64 {
    u64::from_le_bytes(bytes)
}

/// A payment as its tag (0: none, 1: a payment of `owner`, 2: another client's), its operation and its
/// execution number: the other client is not named, so the bytes are the same under any relabelling. Two
/// clients whose items differ only in which other client's payment they hold then tie, and the tie goes by
/// index (sound, it only merges fewer states; only a cross-client response, a bug, makes such a payment).
#[inline(always)]
fn payment_bytes(owner: u8, payment: Option<Payment>) -> [u8; 3] {
    match payment {
        None => [0, 0, 0],
        Some(payment) => {
            let tag = if payment.op.client == owner { 1 } else { 2 };
            [tag, payment.op.op, payment.execution]
        }
    }
}

#[inline(always)]
fn option_bytes(value: Option<u8>) -> [u8; 2] {
    match value {
        None => [0, 0],
        Some(value) => [1, value],
    }
}

/// A request with its client erased (and, under per-client keys, the key's scope, which names the client).
#[inline(always)]
fn erased_request(scope: KeyScope, request: &Request) -> [u8; 6] {
    let key_scope = match scope {
        KeyScope::PerClient => u8::MAX,
        KeyScope::Global => request.key.scope,
    };
    [
        request.from.op,
        request.attempt,
        key_scope,
        request.key.value,
        request.body,
        request.copy,
    ]
}

/// A message's client, and the message with that client erased, with its count.
#[inline(always)]
fn erased_message(scope: KeyScope, message: &Message, count: u8) -> (u8, u64) {
    match message {
        Message::Request(request) => {
            let [op, attempt, key_scope, key, body, copy] = erased_request(scope, request);
            (
                request.from.client,
                word([0, op, attempt, key_scope, key, body, copy, count]),
            )
        }
        Message::Response(response) => {
            let [low, high] = response.code.to_le_bytes();
            let [tag, paid_op, execution] = payment_bytes(response.to.client, response.payload);
            let bytes = [
                1 | (tag << 1),
                response.to.op,
                response.attempt,
                low,
                high,
                paid_op,
                execution,
                count,
            ];
            (response.to.client, word(bytes))
        }
    }
}

#[inline(always)]
fn step_bytes(owner: u8, step: JobStep) -> [u8; 8] {
    match step {
        JobStep::Claim => [0; 8],
        JobStep::Insert => [1, 0, 0, 0, 0, 0, 0, 0],
        JobStep::Provider => [2, 0, 0, 0, 0, 0, 0, 0],
        JobStep::Effect => [3, 0, 0, 0, 0, 0, 0, 0],
        JobStep::Commit => [4, 0, 0, 0, 0, 0, 0, 0],
        JobStep::CompleteKv { payload } => {
            let [tag, op, execution] = payment_bytes(owner, payload);
            [5, tag, op, execution, 0, 0, 0, 0]
        }
        JobStep::Respond { code, payload } => {
            let [low, high] = code.to_le_bytes();
            let [tag, op, execution] = payment_bytes(owner, payload);
            [6, low, high, tag, op, execution, 0, 0]
        }
    }
}

/// A client's own fields (its index aside: `index` only tells its own payments from others') into `mixed`: one
/// word, then one per outcome.
#[inline(always)]
fn client_words(index: u8, client: &ClientState, mixed: &mut Mixer) {
    let outcomes = client.outcomes.len() as u8;
    mixed.mix(word([
        client.op,
        client.attempts,
        client.charged,
        client.phase.tag(),
        client.copies,
        outcomes,
        0,
        0,
    ]));
    for outcome in &client.outcomes {
        let bytes = match *outcome {
            OpOutcome::Pending => [0; 8],
            OpOutcome::Succeeded { payload } => {
                let [tag, op, execution] = payment_bytes(index, payload);
                [1, tag, op, execution, 0, 0, 0, 0]
            }
            OpOutcome::Failed { code } => {
                let [low, high] = code.to_le_bytes();
                [2, low, high, 0, 0, 0, 0, 0]
            }
            OpOutcome::GaveUp => [3, 0, 0, 0, 0, 0, 0, 0],
        };
        mixed.mix(word(bytes));
    }
}

/// One item's hash from its words, spread (`finish`) so that sums of items do not cancel field by field.
#[inline(always)]
fn item_hash(words: &[u64]) -> u64 {
    let mut mixed = Mixer::default();
    words.iter().for_each(|word| mixed.mix(*word));
    mixed.finish()
}

/// The hasher of client signatures: each word (eight fields of a byte, gathered by hand) is mixed with one
/// rotate, xor and multiply. The derived `Hash` fed a byte at a time through a `Hasher` cost a branch and a
/// shift per field, and a streaming XXH64 more again (a third of a symmetric search's time). Signatures only
/// order clients: a collision merges fewer states (the tie goes by index), never wrong ones.
#[derive(Clone, Copy, Default)]
struct Mixer {
    mixed: u64,
}

impl Mixer {
    #[inline(always)]
    fn mix(&mut self, word: u64) {
        const ODD: u64 = 0x9e37_79b9_7f4a_7c15;
        self.mixed = (self.mixed.rotate_left(23) ^ word).wrapping_mul(ODD);
    }

    /// A multiply-shift that spreads the top bits, which decide the order. No word count is mixed in: every
    /// kind of item has a fixed number of words, and a client's outcome count is in its first word.
    #[inline(always)]
    fn finish(&self) -> u64 {
        let x = self.mixed ^ (self.mixed >> 29);
        x.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
    }
}

impl<S: Server> WorldOf<S> {
    /// The canonical representative of `state` under client and process symmetry, and the relabelling used.
    pub fn canonicalize(&self, state: &State) -> (State, Relabel) {
        let scope = self.server.key_scope();
        let client = client_relabelling(scope, state);
        let identity_procs: SmallVec<[u8; 8]> = (0..state.procs.len() as u8).collect();
        let relabel_clients = Relabel {
            client,
            proc: identity_procs,
        };
        let relabelled = relabel_clients.state(scope, state);
        // Processes hold no identity anywhere else: sorting them is the whole relabelling.
        let mut proc_order: SmallVec<[(Proc, u8); 8]> = relabelled
            .procs
            .iter()
            .enumerate()
            .map(|(index, proc)| (*proc, index as u8))
            .collect();
        proc_order.sort();
        let mut proc: SmallVec<[u8; 8]> = SmallVec::from_elem(0, proc_order.len());
        for (new, (_, old)) in proc_order.iter().enumerate() {
            proc[*old as usize] = new as u8;
        }
        let mut canonical = relabelled;
        canonical.procs = proc_order.iter().map(|(p, _)| *p).collect();
        (
            canonical,
            Relabel {
                client: relabel_clients.client,
                proc,
            },
        )
    }

    /// [`WorldOf::canonicalize`]'s state, made in place: when the clients are already in canonical order
    /// (a step often leaves them so) only the processes are sorted.
    pub fn canonicalize_in_place(&self, state: &mut State) {
        let scope = self.server.key_scope();
        let client = client_relabelling(scope, state);
        if client
            .iter()
            .enumerate()
            .any(|(old, new)| old != *new as usize)
        {
            let relabel = Relabel {
                client,
                proc: (0..state.procs.len() as u8).collect(),
            };
            relabel.state_in_place(scope, state);
        }
        // Processes hold no identity anywhere else, and equal processes are alike: sorting them is the
        // relabelling `canonicalize` makes.
        state.procs.sort_unstable();
    }
}

/// The canonical order of the clients, as `client[old] = new`: by signature, ties by index.
fn client_relabelling(scope: KeyScope, state: &State) -> SmallVec<[u8; 8]> {
    let clients = state.clients.len();
    let signatures = client_signatures(scope, state);
    let mut client_order = [(0u64, 0u8); CLIENTS_MAX];
    for (old, (order, signature)) in client_order.iter_mut().zip(signatures).enumerate() {
        *order = (signature, old as u8);
    }
    let client_order = &mut client_order[..clients];
    client_order.sort_unstable();
    let mut client: SmallVec<[u8; 8]> = SmallVec::from_elem(0, clients);
    for (new, (_, old)) in client_order.iter().enumerate() {
        client[*old as usize] = new as u8;
    }
    client
}

#[cfg(test)]
#[path = "symmetry_tests.rs"]
mod tests;
