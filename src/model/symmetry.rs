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
use std::hash::{Hash, Hasher};

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
            Message::Response(response) => Message::Response(Response {
                to: self.op(response.to),
                ..response
            }),
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
                response: Response {
                    to: self.op(response.to),
                    ..response
                },
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
        for proc in state.procs.iter_mut() {
            if let Proc::Busy(job) = proc {
                job.request = self.request(scope, job.request);
            }
        }
        state
            .network
            .rewrite(|message, _| *message = self.message(scope, *message));
        state.store.records.rewrite(|key, record| {
            *key = self.key(scope, *key);
            record.op = self.op(record.op);
        });
        for op in state.store.payments.iter_mut() {
            *op = self.op(*op);
        }
        for (op, key) in state.store.provider_charges.iter_mut() {
            *op = self.op(*op);
            *key = self.key(scope, *key);
        }
        state.first_success.rewrite(|op, _| *op = self.op(*op));
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
    const KINDS: usize = 6;
    let (messages, jobs, records, payments, charges, firsts) = (0, 1, 2, 3, 4, 5);
    let clients = state.clients.len();
    let mut sums = [[0u64; KINDS]; CLIENTS_MAX];
    let mut add = |client: u8, kind: usize, item: u64| {
        if let Some(sum) = sums[..clients].get_mut(client as usize) {
            sum[kind] = sum[kind].wrapping_add(item);
        }
    };
    for (message, count) in &state.network {
        let client = match message {
            Message::Request(request) => request.from.client,
            Message::Response(response) => response.to.client,
        };
        add(
            client,
            messages,
            item_hash((erase_message(scope, *message), *count)),
        );
    }
    for proc in &state.procs {
        if let Proc::Busy(job) = proc {
            let erased = Job {
                request: erase_request(scope, job.request),
                ..*job
            };
            add(job.request.from.client, jobs, item_hash(erased));
        }
    }
    for (key, record) in &state.store.records {
        let item = item_hash((
            key.value,
            record.fingerprint,
            record.body,
            record.op.op,
            record.status,
        ));
        add(record.op.client, records, item);
        // A per-client key names its client too.
        if scope == KeyScope::PerClient && key.scope != record.op.client {
            add(key.scope, records, item);
        }
    }
    for (index, op) in state.store.payments.iter().enumerate() {
        add(op.client, payments, item_hash((index, op.op)));
    }
    for (index, (op, key)) in state.store.provider_charges.iter().enumerate() {
        add(op.client, charges, item_hash((index, op.op, key.value)));
    }
    for (op, payload) in &state.first_success {
        add(op.client, firsts, item_hash((op.op, payload)));
    }
    let mut signatures = [0; CLIENTS_MAX];
    for ((signature, client), sum) in signatures.iter_mut().zip(&state.clients).zip(&sums) {
        let mut hasher = Signature::default();
        client.hash(&mut hasher);
        sum.iter().for_each(|kind| hasher.mix(*kind));
        *signature = hasher.finish();
    }
    signatures
}

/// One item's hash, spread (`finish`) so that sums of items do not cancel field by field.
#[inline(always)]
fn item_hash(item: impl Hash) -> u64 {
    let mut hasher = Signature::default();
    item.hash(&mut hasher);
    hasher.finish()
}

/// The hasher of client signatures. The derived `Hash` writes a field at a time, mostly single bytes (ids,
/// counters, enum tags): those are gathered eight to a word and each word is mixed with one rotate, xor and
/// multiply. A streaming XXH64 spent more on each write's bookkeeping than on mixing (a third of a symmetric
/// search's time), and mixing every byte made a chain of dependent multiplies. Signatures only order clients:
/// a collision merges fewer states (the tie goes by index), never wrong ones.
#[derive(Clone, Copy, Default)]
struct Signature {
    mixed: u64,
    pending: u64,
    pending_bytes: u32,
}

impl Signature {
    #[inline(always)]
    fn mix(&mut self, word: u64) {
        const ODD: u64 = 0x9e37_79b9_7f4a_7c15;
        self.mixed = (self.mixed.rotate_left(23) ^ word).wrapping_mul(ODD);
    }

    #[inline(always)]
    fn push_byte(&mut self, byte: u8) {
        self.pending |= u64::from(byte) << (8 * self.pending_bytes);
        self.pending_bytes += 1;
        if self.pending_bytes == 8 {
            self.mix(self.pending);
            self.pending = 0;
            self.pending_bytes = 0;
        }
    }

    /// A tag or a length: one byte when it fits (they nearly always do).
    #[inline(always)]
    fn push_small(&mut self, value: u64) {
        match u8::try_from(value) {
            Ok(byte) => self.push_byte(byte),
            Err(_) => self.mix(value),
        }
    }
}

impl Hasher for Signature {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.push_byte(*byte);
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, value: u8) {
        self.push_byte(value);
    }

    #[inline(always)]
    fn write_u16(&mut self, value: u16) {
        let [low, high] = value.to_le_bytes();
        self.push_byte(low);
        self.push_byte(high);
    }

    #[inline(always)]
    fn write_u32(&mut self, value: u32) {
        self.mix(u64::from(value));
    }

    #[inline(always)]
    fn write_u64(&mut self, value: u64) {
        self.mix(value);
    }

    #[inline(always)]
    fn write_usize(&mut self, value: usize) {
        self.push_small(value as u64);
    }

    #[inline(always)]
    fn write_isize(&mut self, value: isize) {
        self.push_small(value as u64);
    }

    fn finish(&self) -> u64 {
        // The pending bytes with their count ("ab" and "ab\0" differ), then a multiply-shift that spreads the
        // top bits, which decide the order.
        let mut last = *self;
        last.mix(self.pending ^ (u64::from(self.pending_bytes) << 59));
        let x = last.mixed ^ (last.mixed >> 29);
        x.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
    }
}

fn erase_request(scope: KeyScope, request: Request) -> Request {
    let key = match scope {
        KeyScope::PerClient => Key {
            scope: u8::MAX,
            value: request.key.value,
        },
        KeyScope::Global => request.key,
    };
    Request {
        from: OpRef {
            client: u8::MAX,
            op: request.from.op,
        },
        key,
        ..request
    }
}

fn erase_message(scope: KeyScope, message: Message) -> Message {
    match message {
        Message::Request(request) => Message::Request(erase_request(scope, request)),
        Message::Response(response) => Message::Response(Response {
            to: OpRef {
                client: u8::MAX,
                op: response.to.op,
            },
            ..response
        }),
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
mod tests {
    //! The canonical form against brute force: a symmetric search must count exactly the symmetry classes of the
    //! reachable states, found here by relabelling every state with every permutation of its clients and processes.
    //! A signature that told fewer clients apart (a colliding hasher, say) would still be sound and keep every
    //! verdict, so only a count catches it.

    use super::super::pack::pack;
    use super::super::world::{HttpWorld, World};
    use super::*;
    use crate::check::Model as _;
    use std::collections::{HashSet, VecDeque};

    /// Every ordering of `0..n`, as `map[old] = new`.
    fn permutations(n: usize) -> Vec<SmallVec<[u8; 8]>> {
        let mut all: Vec<SmallVec<[u8; 8]>> = vec![SmallVec::new()];
        for _ in 0..n {
            let mut longer = Vec::new();
            for prefix in &all {
                for x in (0..n as u8).filter(|x| !prefix.contains(x)) {
                    let mut permutation = prefix.clone();
                    permutation.push(x);
                    longer.push(permutation);
                }
            }
            all = longer;
        }
        all
    }

    fn packed(state: &State) -> Vec<u8> {
        let mut bytes = Vec::new();
        pack(state, &mut bytes);
        bytes
    }

    /// Every state the full model reaches (breadth first, by packing).
    fn reachable(world: &HttpWorld) -> Vec<State> {
        let init = world.init_state();
        let mut seen = HashSet::from([packed(&init)]);
        let mut queue = VecDeque::from([init]);
        let mut states = Vec::new();
        let mut actions = Vec::new();
        while let Some(state) = queue.pop_front() {
            actions.clear();
            world.actions(&state, &mut actions);
            for action in &actions {
                let mut next = state.clone();
                world.apply(&mut next, action);
                if seen.insert(packed(&next)) {
                    queue.push_back(next);
                }
            }
            states.push(state);
        }
        states
    }

    /// How many classes the states fall into when each is named by its least packing over `relabellings`.
    fn classes(world: &HttpWorld, states: &[State], relabellings: &[Relabel]) -> usize {
        let scope = world.server.key_scope();
        let least: HashSet<Vec<u8>> = states
            .iter()
            .map(|state| {
                relabellings
                    .iter()
                    .map(|relabel| packed(&relabel.state(scope, state)))
                    .min()
                    .expect("the identity at least")
            })
            .collect();
        least.len()
    }

    fn relabellings(client_perms: &[SmallVec<[u8; 8]>], procs: usize) -> Vec<Relabel> {
        let proc_perms = permutations(procs);
        client_perms
            .iter()
            .flat_map(|client| {
                proc_perms.iter().map(move |proc| Relabel {
                    client: client.clone(),
                    proc: proc.clone(),
                })
            })
            .collect()
    }

    fn assert_exact(name: &str, world: &HttpWorld) {
        let states = reachable(world);
        let full = world.checker().bfs();
        assert_eq!(
            full.states,
            states.len() as u64,
            "{name}: the brute force's own search"
        );
        let (clients, procs) = (world.clients().count as usize, world.processes() as usize);
        let all = classes(world, &states, &relabellings(&permutations(clients), procs));
        let identity: SmallVec<[u8; 8]> = (0..clients as u8).collect();
        let procs_only = classes(world, &states, &relabellings(&[identity], procs));
        let reduced = world.checker().symmetry(true).bfs();
        assert!(reduced.complete, "{name}");
        assert_eq!(
            reduced.states, all as u64,
            "{name}: symmetric search against the classes"
        );
        // The twin: a canonical form that never reordered clients would count this many, and fail above.
        assert!(
            procs_only > all,
            "{name}: {procs_only} classes by processes alone, {all} in all"
        );
        println!(
            "{name}: {} states, {all} classes ({procs_only} by processes alone)",
            states.len()
        );
    }

    #[test]
    fn symmetric_search_counts_exactly_the_symmetry_classes() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/lease-fenced.toml");
        let World::Http(two_clients) = crate::spec::load_model(&path).unwrap().world else {
            panic!("lease-fenced is an HTTP world");
        };
        assert_exact("lease-fenced", &two_clients);
        // Three clients (six orderings), smaller faults so the brute force stays quick.
        let mut faults = two_clients.faults();
        faults.crashes = 0;
        faults.pauses = 0;
        let built = World::Http(two_clients)
            .to_builder()
            .client_count(3)
            .max_attempts(2)
            .faults(faults)
            .build()
            .unwrap();
        let World::Http(three_clients) = built else {
            panic!("an HTTP world");
        };
        assert_exact("lease-fenced, 3 clients", &three_clients);
    }
}
