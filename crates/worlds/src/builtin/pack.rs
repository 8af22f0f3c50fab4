//! A state as a short byte string (a sixth of its in-memory size), for fingerprinting and for keeping the
//! search frontier compact. Hand-written rather than derived: the derived `Hash` makes a call per field (about
//! a hundred per state) and fingerprinting every successor was the largest cost of exploration; this writes a
//! few small arrays instead.
//!
//! The encoding is injective: every variable-length part is preceded by its length, every enum by its tag
//! (which fixes the layout of what follows), and every field is written in full; `unpack` inverts it
//! (tests/pack.rs checks both on explored states). The only way two distinct states share a fingerprint is
//! therefore a 64-bit hash collision.

use super::config::Faults;
use super::parts;
use super::sorted_map::SortedMap;
use super::state::{
    ClientPhase, ClientState, Job, JobStep, Key, Message, OpOutcome, OpRef, Payment, Proc, Record,
    RecordStatus, Request, Response, State, Store,
};
use crate::check::PartSpans;
use smallvec::SmallVec;

/// Appends fields to the packing. Variable-length items (an idle process is one byte, a busy one up to 16)
/// keep states short: every byte is hashed, stored and copied a few times.
struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    #[inline]
    fn byte(&mut self, byte: u8) {
        self.0.push(byte);
    }

    #[inline]
    fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        self.0.extend_from_slice(&bytes);
    }

    /// A count as one byte. Counts are bounded by the spec (8 clients, 8 operations, small fault budgets),
    /// far below 256; a longer one would break injectivity, so it is refused rather than truncated.
    #[inline]
    fn count(&mut self, len: usize) {
        self.byte(u8::try_from(len).expect("a state holds fewer than 256 of anything"));
    }

    #[inline]
    fn option(&mut self, value: Option<u8>) {
        match value {
            None => self.byte(0),
            Some(value) => self.put([1, value]),
        }
    }

    #[inline]
    fn payment(&mut self, payment: Option<Payment>) {
        match payment {
            None => self.byte(0),
            Some(payment) => self.put([1, payment.op.client, payment.op.op, payment.execution]),
        }
    }

    #[inline]
    fn op(&mut self, op: OpRef) {
        self.put([op.client, op.op]);
    }

    #[inline]
    fn key(&mut self, key: Key) {
        self.put([key.scope, key.value]);
    }

    #[inline]
    fn request(&mut self, request: &Request) {
        self.put([
            request.from.client,
            request.from.op,
            request.attempt,
            request.key.scope,
            request.key.value,
            request.body,
            request.copy,
        ]);
    }

    #[inline]
    fn response(&mut self, response: &Response) {
        let [low, high] = response.code.to_le_bytes();
        self.put([
            response.to.client,
            response.to.op,
            response.attempt,
            low,
            high,
        ]);
        self.payment(response.payload);
    }

    #[inline]
    fn message(&mut self, message: &Message, count: u8) {
        match message {
            Message::Request(request) => {
                self.byte(0);
                self.request(request);
            }
            Message::Response(response) => {
                self.byte(1);
                self.response(response);
            }
        }
        self.byte(count);
    }

    #[inline]
    fn outcome(&mut self, outcome: OpOutcome) {
        match outcome {
            OpOutcome::Pending => self.byte(0),
            OpOutcome::Succeeded { payload } => {
                self.byte(1);
                self.payment(payload);
            }
            OpOutcome::Failed { code } => {
                let [low, high] = code.to_le_bytes();
                self.put([2, low, high]);
            }
            OpOutcome::GaveUp => self.byte(3),
        }
    }

    fn client(&mut self, client: &ClientState) {
        self.put([
            client.op,
            client.attempts,
            client.charged,
            client.phase.tag(),
            client.copies,
        ]);
        self.count(client.outcomes.len());
        for outcome in &client.outcomes {
            self.outcome(*outcome);
        }
    }

    #[inline]
    fn step(&mut self, step: JobStep) {
        match step {
            JobStep::Claim => self.byte(0),
            JobStep::Insert => self.byte(1),
            JobStep::Provider => self.byte(2),
            JobStep::Effect => self.byte(3),
            JobStep::Commit => self.byte(4),
            JobStep::CompleteKv { payload } => {
                self.byte(5);
                self.payment(payload);
            }
            JobStep::Respond { code, payload } => {
                let [low, high] = code.to_le_bytes();
                self.put([6, low, high]);
                self.payment(payload);
            }
        }
    }

    fn proc(&mut self, proc: &Proc) {
        match proc {
            Proc::Idle => self.byte(0),
            Proc::Busy(job) => {
                self.byte(1);
                self.request(&job.request);
                self.step(job.step);
                self.option(job.token);
            }
        }
    }

    fn record(&mut self, key: Key, record: &Record) {
        self.put([
            key.scope,
            key.value,
            record.fingerprint,
            record.body,
            record.op.client,
            record.op.op,
        ]);
        match record.status {
            RecordStatus::InProgress {
                token,
                lease_expired,
            } => self.put([0, token, u8::from(lease_expired)]),
            RecordStatus::Completed { code, payload } => {
                let [low, high] = code.to_le_bytes();
                self.put([1, low, high]);
                self.payment(payload);
            }
        }
    }

    fn network(&mut self, network: &SortedMap<Message, u8, 8>) {
        self.count(network.len());
        for (message, count) in network {
            self.message(message, *count);
        }
    }

    fn records(&mut self, records: &SortedMap<Key, Record, 4>) {
        self.count(records.len());
        for (key, record) in records {
            self.record(*key, record);
        }
    }

    fn payments(&mut self, payments: &SortedMap<OpRef, u8, 4>) {
        self.count(payments.len());
        for (owner, executions) in payments {
            self.op(*owner);
            self.byte(*executions);
        }
    }

    fn versions(&mut self, versions: &SortedMap<Key, u8, 4>) {
        self.count(versions.len());
        for (key, version) in versions {
            self.key(*key);
            self.byte(*version);
        }
    }

    fn charges(&mut self, charges: &[(OpRef, Key)]) {
        self.count(charges.len());
        for (owner, key) in charges {
            self.op(*owner);
            self.key(*key);
        }
    }

    fn first_success(&mut self, first_success: &SortedMap<OpRef, Option<Payment>, 4>) {
        self.count(first_success.len());
        for (owner, payload) in first_success {
            self.op(*owner);
            self.payment(*payload);
        }
    }
}

/// Append the packing of `state` to `out`: its parts (`parts.rs`) in order, with the counts of clients and
/// processes before the first of each.
pub(crate) fn pack(state: &State, out: &mut Vec<u8>) {
    out.reserve(256);
    let mut out = Writer(out);
    out.count(state.clients.len());
    for client in &state.clients {
        out.client(client);
    }
    out.network(&state.network);
    out.count(state.procs.len());
    for proc in &state.procs {
        out.proc(proc);
    }
    out.records(&state.store.records);
    out.payments(&state.store.payments);
    out.versions(&state.store.versions);
    out.charges(&state.store.provider_charges);
    out.first_success(&state.first_success);
    out.put(state.budgets.to_array());
}

/// Append part `part` of `state` (numbered as in `parts.rs`), as `pack` writes it.
#[inline]
pub(crate) fn pack_part(state: &State, part: usize, out: &mut Vec<u8>) {
    let mut out = Writer(out);
    match part {
        parts::NETWORK => out.network(&state.network),
        parts::RECORDS => out.records(&state.store.records),
        parts::PAYMENTS => out.payments(&state.store.payments),
        parts::VERSIONS => out.versions(&state.store.versions),
        parts::CHARGES => out.charges(&state.store.provider_charges),
        parts::FIRST_SUCCESS => out.first_success(&state.first_success),
        parts::BUDGETS => out.put(state.budgets.to_array()),
        _ if part >= parts::PROC_0 => out.proc(&state.procs[part - parts::PROC_0]),
        _ => out.client(&state.clients[part - parts::CLIENT_0]),
    }
}

/// Reads back what `pack` wrote. The bytes come from `pack` only, so a short or malformed input is a bug and
/// panics.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    #[inline]
    fn byte(&mut self) -> u8 {
        self.at += 1;
        self.bytes[self.at - 1]
    }

    #[inline]
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let bytes = self.bytes[self.at..self.at + N]
            .try_into()
            .expect("N bytes");
        self.at += N;
        bytes
    }

    #[inline]
    fn option(&mut self) -> Option<u8> {
        (self.byte() == 1).then(|| self.byte())
    }

    #[inline]
    fn payment(&mut self) -> Option<Payment> {
        (self.byte() == 1).then(|| {
            let [client, op, execution] = self.take();
            Payment {
                op: OpRef { client, op },
                execution,
            }
        })
    }

    #[inline]
    fn op(&mut self) -> OpRef {
        let [client, op] = self.take();
        OpRef { client, op }
    }

    #[inline]
    fn key(&mut self) -> Key {
        let [scope, value] = self.take();
        Key { scope, value }
    }

    #[inline]
    fn code(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }

    fn request(&mut self) -> Request {
        Request {
            from: self.op(),
            attempt: self.byte(),
            key: self.key(),
            body: self.byte(),
            copy: self.byte(),
        }
    }

    fn response(&mut self) -> Response {
        Response {
            to: self.op(),
            attempt: self.byte(),
            code: self.code(),
            payload: self.payment(),
        }
    }

    fn message(&mut self) -> Message {
        match self.byte() {
            0 => Message::Request(self.request()),
            _ => Message::Response(self.response()),
        }
    }

    fn outcome(&mut self) -> OpOutcome {
        match self.byte() {
            0 => OpOutcome::Pending,
            1 => OpOutcome::Succeeded {
                payload: self.payment(),
            },
            2 => OpOutcome::Failed { code: self.code() },
            _ => OpOutcome::GaveUp,
        }
    }

    fn client_into(&mut self, client: &mut ClientState) {
        let [op, attempts, charged, phase, copies, outcomes] = self.take();
        // (five fields, then the count of outcomes)
        client.op = op;
        client.attempts = attempts;
        client.charged = charged;
        client.phase = ClientPhase::from_tag(phase);
        client.copies = copies;
        client.outcomes.clear();
        for _ in 0..outcomes {
            let outcome = self.outcome();
            client.outcomes.push(outcome);
        }
    }

    fn step(&mut self) -> JobStep {
        match self.byte() {
            0 => JobStep::Claim,
            1 => JobStep::Insert,
            2 => JobStep::Provider,
            3 => JobStep::Effect,
            4 => JobStep::Commit,
            5 => JobStep::CompleteKv {
                payload: self.payment(),
            },
            _ => JobStep::Respond {
                code: self.code(),
                payload: self.payment(),
            },
        }
    }

    fn proc(&mut self) -> Proc {
        if self.byte() == 0 {
            return Proc::Idle;
        }
        Proc::Busy(Job {
            request: self.request(),
            step: self.step(),
            token: self.option(),
        })
    }

    fn record(&mut self) -> Record {
        let [fingerprint, body] = self.take();
        let op = self.op();
        let status = if self.byte() == 0 {
            let [token, lease_expired] = self.take();
            RecordStatus::InProgress {
                token,
                lease_expired: lease_expired == 1,
            }
        } else {
            RecordStatus::Completed {
                code: self.code(),
                payload: self.payment(),
            }
        };
        Record {
            fingerprint,
            body,
            op,
            status,
        }
    }

    /// The store's four parts, each noted in `spans`.
    fn store_into(&mut self, store: &mut Store, spans: &mut PartSpans) {
        let start = self.at;
        store.records.clear();
        for _ in 0..self.byte() {
            let key = self.key();
            let record = self.record();
            store.records.push_last(key, record);
        }
        spans.set(parts::RECORDS, start, self.at);
        let start = self.at;
        store.payments.clear();
        for _ in 0..self.byte() {
            let op = self.op();
            let executions = self.byte();
            store.payments.push_last(op, executions);
        }
        spans.set(parts::PAYMENTS, start, self.at);
        let start = self.at;
        store.versions.clear();
        for _ in 0..self.byte() {
            let key = self.key();
            let version = self.byte();
            store.versions.push_last(key, version);
        }
        spans.set(parts::VERSIONS, start, self.at);
        let start = self.at;
        store.provider_charges.clear();
        for _ in 0..self.byte() {
            let charge = (self.op(), self.key());
            store.provider_charges.push(charge);
        }
        spans.set(parts::CHARGES, start, self.at);
    }
}

/// The state `pack` wrote into `bytes`.
#[cfg(test)]
fn unpack(bytes: &[u8]) -> State {
    let mut state = State {
        clients: SmallVec::new(),
        network: super::sorted_map::SortedMap::new(),
        procs: SmallVec::new(),
        store: Store::default(),
        first_success: super::sorted_map::SortedMap::new(),
        budgets: super::budget::Budgets::new([0; 12]),
    };
    unpack_into(bytes, &mut state);
    state
}

/// `unpack` into an existing state, reusing its buffers (the explorer unpacks every frontier state).
pub(crate) fn unpack_into(bytes: &[u8], state: &mut State) {
    unpack_parts(bytes, state, &mut PartSpans::default());
}

/// `unpack_into`, noting where each part (`parts.rs`) lies in `bytes`.
pub(crate) fn unpack_parts(bytes: &[u8], state: &mut State, spans: &mut PartSpans) {
    let mut reader = Reader { bytes, at: 0 };
    let clients = reader.byte() as usize;
    state.clients.truncate(clients);
    while state.clients.len() < clients {
        state.clients.push(ClientState {
            op: 0,
            attempts: 0,
            charged: 0,
            phase: ClientPhase::Done,
            outcomes: SmallVec::new(),
            copies: 0,
        });
    }
    for (index, client) in state.clients.iter_mut().enumerate() {
        let start = reader.at;
        reader.client_into(client);
        spans.set(parts::CLIENT_0 + index, start, reader.at);
    }
    let start = reader.at;
    state.network.clear();
    for _ in 0..reader.byte() {
        let message = reader.message();
        let count = reader.byte();
        state.network.push_last(message, count);
    }
    spans.set(parts::NETWORK, start, reader.at);
    state.procs.clear();
    for index in 0..reader.byte() as usize {
        let start = reader.at;
        let proc = reader.proc();
        state.procs.push(proc);
        spans.set(parts::PROC_0 + index, start, reader.at);
    }
    reader.store_into(&mut state.store, spans);
    let start = reader.at;
    state.first_success.clear();
    for _ in 0..reader.byte() {
        let op = reader.op();
        let payload = reader.payment();
        state.first_success.push_last(op, payload);
    }
    spans.set(parts::FIRST_SUCCESS, start, reader.at);
    spans.set(parts::BUDGETS, reader.at, reader.at + Faults::KINDS);
    state.budgets = super::budget::Budgets::new(reader.take());
    debug_assert_eq!(reader.at, bytes.len(), "unpack read every byte");
}

/// The packed form of a state is what the explorer fingerprints and keeps in its frontier, so it must be
/// injective and exactly invertible. Checked on the states every shipped model reaches (up to a cap per model,
/// breadth first so that every kind of step is covered early).
#[cfg(test)]
mod tests {
    use super::{pack, unpack, State};
    use crate::spec::load_model;
    use std::collections::{HashSet, VecDeque};

    const STATES_PER_MODEL_MAX: usize = 20_000;

    fn reachable_states(path: &std::path::Path) -> Vec<State> {
        let model = load_model(path).expect("shipped models load");
        let world = &model.world;
        let mut seen: HashSet<State> = HashSet::new();
        let mut order = Vec::new();
        let mut queue = VecDeque::from([world.init_state()]);
        let mut actions = Vec::new();
        while let Some(state) = queue.pop_front() {
            if order.len() >= STATES_PER_MODEL_MAX {
                break;
            }
            if !seen.insert(state.clone()) {
                continue;
            }
            world.actions(&state, &mut actions);
            for action in &actions {
                queue.push_back(world.next_state(&state, action).0);
            }
            order.push(state);
        }
        order
    }

    #[test]
    fn packing_is_injective_and_unpacking_inverts_it() {
        let models_dir = crate::repository_file("models");
        let mut models: Vec<_> = std::fs::read_dir(models_dir)
            .expect("models/")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
            .collect();
        models.sort();
        assert!(models.len() >= 30, "the catalogue is there");
        let mut total = 0;
        for path in &models {
            let states = reachable_states(path);
            let mut packings = HashSet::new();
            for state in &states {
                let mut bytes = Vec::new();
                pack(state, &mut bytes);
                assert_eq!(
                    &unpack(&bytes),
                    state,
                    "{}: unpack(pack(s)) != s",
                    path.display()
                );
                packings.insert(bytes);
            }
            // `states` are pairwise distinct, so equal counts mean no two of them pack alike.
            assert_eq!(
                packings.len(),
                states.len(),
                "{}: two states pack alike",
                path.display()
            );
            total += states.len();
        }
        assert!(total > 50_000, "enough states were compared: {total}");
    }
}
