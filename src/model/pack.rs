//! A state as a short byte string (about a quarter of its in-memory size), for fingerprinting and for keeping
//! the search frontier compact. Hand-written rather than derived: the derived `Hash` makes a call per field
//! (about a hundred per state) and fingerprinting every successor was the largest cost of exploration; this
//! writes a few fixed-size arrays instead.
//!
//! The encoding is injective: every variable-length part is preceded by its length, every enum by its tag, and
//! every field is written in full, and `unpack` inverts it (tests/pack.rs checks both on explored states).
//! The only way two distinct states share a fingerprint is therefore a 64-bit hash collision.

use super::sorted_map::SortedMap;
use super::state::{
    ClientPhase, ClientState, Job, JobStep, Key, Message, OpRef, Outcome, Proc, Record,
    RecordStatus, Request, Response, State, Store,
};
use smallvec::SmallVec;

#[inline]
fn option(value: Option<u8>) -> [u8; 2] {
    match value {
        None => [0, 0],
        Some(value) => [1, value],
    }
}

#[inline]
fn op(op: OpRef) -> [u8; 2] {
    [op.client, op.op]
}

#[inline]
fn key(key: Key) -> [u8; 2] {
    [key.scope, key.value]
}

#[inline]
fn code(code: u16) -> [u8; 2] {
    code.to_le_bytes()
}

#[inline]
fn request(request: &Request) -> [u8; 7] {
    let [from_client, from_op] = op(request.from);
    let [scope, value] = key(request.key);
    [
        from_client,
        from_op,
        request.attempt,
        scope,
        value,
        request.body,
        request.copy,
    ]
}

#[inline]
fn response(response: &Response) -> [u8; 7] {
    let [to_client, to_op] = op(response.to);
    let [code_low, code_high] = code(response.code);
    let [has_payload, payload] = option(response.payload);
    [
        to_client,
        to_op,
        response.attempt,
        code_low,
        code_high,
        has_payload,
        payload,
    ]
}

#[inline]
fn message(message: &Message) -> [u8; 8] {
    let (tag, body) = match message {
        Message::Request(message) => (0, request(message)),
        Message::Response(message) => (1, response(message)),
    };
    let mut bytes = [tag; 8];
    bytes[1..].copy_from_slice(&body);
    bytes
}

#[inline]
fn outcome(outcome: Outcome) -> [u8; 3] {
    match outcome {
        Outcome::Pending => [0, 0, 0],
        Outcome::Succeeded { payload } => {
            let [has, value] = option(payload);
            [1, has, value]
        }
        Outcome::Failed { code: failed } => {
            let [low, high] = code(failed);
            [2, low, high]
        }
        Outcome::GaveUp => [3, 0, 0],
    }
}

#[inline]
fn phase(phase: ClientPhase) -> u8 {
    match phase {
        ClientPhase::Ready {
            after_conflict: false,
        } => 0,
        ClientPhase::Ready {
            after_conflict: true,
        } => 1,
        ClientPhase::Waiting => 2,
        ClientPhase::Done => 3,
    }
}

/// Writes into a slice sized beforehand by `packed_len`: one bounds check per field and no capacity checks
/// (`Vec::extend_from_slice` per field made packing twice as slow).
struct Writer<'a> {
    bytes: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    #[inline]
    fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        self.bytes[self.at..self.at + N].copy_from_slice(&bytes);
        self.at += N;
    }

    #[inline]
    fn byte(&mut self, byte: u8) {
        self.bytes[self.at] = byte;
        self.at += 1;
    }
}

/// Bytes per fixed-size item (see the writers below).
const CLIENT_BYTES: usize = 6;
const OUTCOME_BYTES: usize = 3;
const MESSAGE_BYTES: usize = 9;
const PROC_BYTES: usize = 15;
const RECORD_BYTES: usize = 11;
const OP_BYTES: usize = 2;
const CHARGE_BYTES: usize = 4;
const FIRST_SUCCESS_BYTES: usize = 4;
const BUDGET_BYTES: usize = 12;

/// The exact length of `pack(state)`.
fn packed_len(state: &State) -> usize {
    let outcomes: usize = state
        .clients
        .iter()
        .map(|client| client.outcomes.len())
        .sum();
    // One length byte for each of the 7 variable-length parts, plus `next_token`.
    8 + CLIENT_BYTES * state.clients.len()
        + OUTCOME_BYTES * outcomes
        + MESSAGE_BYTES * state.network.len()
        + PROC_BYTES * state.procs.len()
        + RECORD_BYTES * state.store.records.len()
        + OP_BYTES * state.store.payments.len()
        + CHARGE_BYTES * state.store.provider_charges.len()
        + FIRST_SUCCESS_BYTES * state.first_success.len()
        + BUDGET_BYTES
}

fn client(out: &mut Writer, client: &ClientState) {
    out.put([
        client.op,
        client.attempts,
        client.charged,
        phase(client.phase),
        client.copies,
        count(client.outcomes.len()),
    ]);
    for result in &client.outcomes {
        out.put(outcome(*result));
    }
}

#[inline]
fn step(step: JobStep) -> [u8; 5] {
    match step {
        JobStep::Claim => [0; 5],
        JobStep::Insert => [1, 0, 0, 0, 0],
        JobStep::Provider => [2, 0, 0, 0, 0],
        JobStep::Effect => [3, 0, 0, 0, 0],
        JobStep::Commit => [4, 0, 0, 0, 0],
        JobStep::CompleteKv { payload } => {
            let [has, value] = option(payload);
            [5, has, value, 0, 0]
        }
        JobStep::Respond {
            code: sent,
            payload,
        } => {
            let [has, value] = option(payload);
            let [low, high] = code(sent);
            [6, has, value, low, high]
        }
    }
}

#[inline]
fn proc(proc: &Proc) -> [u8; 15] {
    let mut bytes = [0; 15];
    if let Proc::Busy(Job {
        request: job_request,
        step: job_step,
        token,
    }) = proc
    {
        bytes[0] = 1;
        bytes[1..8].copy_from_slice(&request(job_request));
        bytes[8..13].copy_from_slice(&step(*job_step));
        bytes[13..15].copy_from_slice(&option(*token));
    }
    bytes
}

#[inline]
fn record(record: &Record) -> [u8; 9] {
    let [op_client, op_op] = op(record.op);
    let status = match record.status {
        RecordStatus::InProgress {
            token,
            lease_expired,
        } => [0, token, u8::from(lease_expired), 0, 0],
        RecordStatus::Completed {
            code: done,
            payload,
        } => {
            let [has, value] = option(payload);
            let [low, high] = code(done);
            [1, has, value, low, high]
        }
    };
    let mut bytes = [0; 9];
    bytes[..4].copy_from_slice(&[record.fingerprint, record.body, op_client, op_op]);
    bytes[4..].copy_from_slice(&status);
    bytes
}

fn store(out: &mut Writer, store: &Store) {
    out.byte(length(&store.records));
    for (record_key, value) in &store.records {
        out.put(key(*record_key));
        out.put(record(value));
    }
    out.byte(count(store.payments.len()));
    for owner in &store.payments {
        out.put(op(*owner));
    }
    out.byte(store.next_token);
    out.byte(count(store.provider_charges.len()));
    for (owner, charge_key) in &store.provider_charges {
        out.put(op(*owner));
        out.put(key(*charge_key));
    }
}

/// A count as one byte. Counts are bounded by the spec (8 clients, 8 operations, small fault budgets), far
/// below 256; a longer one would break injectivity, so it is refused rather than truncated.
#[inline]
fn count(len: usize) -> u8 {
    u8::try_from(len).expect("a state holds fewer than 256 of anything")
}

fn length<K: Ord + Copy, V, const N: usize>(map: &SortedMap<K, V, N>) -> u8 {
    count(map.len())
}

/// Append the packing of `state` to `out`.
pub fn pack(state: &State, out: &mut Vec<u8>) {
    let start = out.len();
    let len = packed_len(state);
    out.resize(start + len, 0);
    let mut out = Writer {
        bytes: &mut out[start..],
        at: 0,
    };
    out.byte(count(state.clients.len()));
    for each in &state.clients {
        client(&mut out, each);
    }
    out.byte(length(&state.network));
    for (each, count) in &state.network {
        out.put(message(each));
        out.byte(*count);
    }
    out.byte(count(state.procs.len()));
    for each in &state.procs {
        out.put(proc(each));
    }
    store(&mut out, &state.store);
    out.byte(length(&state.first_success));
    for (owner, payload) in &state.first_success {
        out.put(op(*owner));
        out.put(option(*payload));
    }
    out.put(state.budgets);
    debug_assert_eq!(out.at, len, "packed_len is exact");
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
        let [has, value] = self.take();
        (has == 1).then_some(value)
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
            payload: self.option(),
        }
    }

    fn message(&mut self) -> Message {
        match self.byte() {
            0 => Message::Request(self.request()),
            _ => Message::Response(self.response()),
        }
    }

    fn outcome(&mut self) -> Outcome {
        let tag = self.byte();
        match tag {
            0 | 3 => {
                self.take::<2>();
                if tag == 0 {
                    Outcome::Pending
                } else {
                    Outcome::GaveUp
                }
            }
            1 => Outcome::Succeeded {
                payload: self.option(),
            },
            _ => Outcome::Failed { code: self.code() },
        }
    }

    fn client_into(&mut self, client: &mut ClientState) {
        let [op, attempts, charged, phase, copies, outcomes] = self.take();
        client.op = op;
        client.attempts = attempts;
        client.charged = charged;
        client.phase = match phase {
            0 | 1 => ClientPhase::Ready {
                after_conflict: phase == 1,
            },
            2 => ClientPhase::Waiting,
            _ => ClientPhase::Done,
        };
        client.copies = copies;
        client.outcomes.clear();
        for _ in 0..outcomes {
            let outcome = self.outcome();
            client.outcomes.push(outcome);
        }
    }

    fn step(&mut self) -> JobStep {
        let tag = self.byte();
        let payload = self.option();
        let code = self.code();
        match tag {
            0 => JobStep::Claim,
            1 => JobStep::Insert,
            2 => JobStep::Provider,
            3 => JobStep::Effect,
            4 => JobStep::Commit,
            5 => JobStep::CompleteKv { payload },
            _ => JobStep::Respond { code, payload },
        }
    }

    fn proc(&mut self) -> Proc {
        if self.byte() == 0 {
            self.take::<14>();
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
        let [tag, first, second] = self.take();
        let code = self.code();
        Record {
            fingerprint,
            body,
            op,
            status: if tag == 0 {
                RecordStatus::InProgress {
                    token: first,
                    lease_expired: second == 1,
                }
            } else {
                RecordStatus::Completed {
                    code,
                    payload: (first == 1).then_some(second),
                }
            },
        }
    }

    fn store_into(&mut self, store: &mut Store) {
        store.records.clear();
        for _ in 0..self.byte() {
            let key = self.key();
            let record = self.record();
            store.records.push_last(key, record);
        }
        store.payments.clear();
        for _ in 0..self.byte() {
            let op = self.op();
            store.payments.push(op);
        }
        store.next_token = self.byte();
        store.provider_charges.clear();
        for _ in 0..self.byte() {
            let charge = (self.op(), self.key());
            store.provider_charges.push(charge);
        }
    }
}

/// The state `pack` wrote into `bytes`.
pub fn unpack(bytes: &[u8]) -> State {
    let mut state = State {
        clients: SmallVec::new(),
        network: SortedMap::new(),
        procs: SmallVec::new(),
        store: Store::default(),
        first_success: SortedMap::new(),
        budgets: [0; 12],
    };
    unpack_into(bytes, &mut state);
    state
}

/// `unpack` into an existing state, reusing its buffers (the explorer unpacks every frontier state).
pub fn unpack_into(bytes: &[u8], state: &mut State) {
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
    for client in &mut state.clients {
        reader.client_into(client);
    }
    state.network.clear();
    for _ in 0..reader.byte() {
        let message = reader.message();
        let count = reader.byte();
        state.network.push_last(message, count);
    }
    state.procs.clear();
    for _ in 0..reader.byte() {
        let proc = reader.proc();
        state.procs.push(proc);
    }
    reader.store_into(&mut state.store);
    state.first_success.clear();
    for _ in 0..reader.byte() {
        let op = reader.op();
        let payload = reader.option();
        state.first_success.push_last(op, payload);
    }
    state.budgets = reader.take();
    debug_assert_eq!(reader.at, bytes.len(), "unpack read every byte");
}
