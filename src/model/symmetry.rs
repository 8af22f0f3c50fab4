//! Symmetry reduction by canonical ordering. Clients that perform the same operations are interchangeable, and so
//! are server processes: a state and its relabelling behave the same, so the explorer needs to see only one of
//! them. `canonicalize` relabels a state into a canonical order (sorting, not enumerating permutations). Any
//! relabelling is sound, since it maps a state to a member of its own symmetry class; a better order only merges
//! more states. Properties and scenarios do not depend on who is client 1, so verdicts are unchanged.
//!
//! Counterexamples found on canonical states are mapped back to real actions with the permutation
//! (`Relabel::action_back`), so traces replay on the unreduced model.

use super::action::Action;
use super::sorted_map::SortedMap;
use super::state::*;
use super::world::{Server, WorldOf};
use crate::protocol::KeyScope;
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};

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
        let mut clients = state.clients.clone();
        for (old, client) in state.clients.iter().enumerate() {
            clients[self.client(old as u8) as usize] = client.clone();
        }
        let mut procs = state.procs.clone();
        for (old, proc) in state.procs.iter().enumerate() {
            procs[self.proc[old] as usize] = match *proc {
                Proc::Busy(job) => Proc::Busy(Job {
                    request: self.request(scope, job.request),
                    ..job
                }),
                Proc::Idle => Proc::Idle,
            };
        }
        let mut network = SortedMap::new();
        for (message, count) in &state.network {
            network.insert(self.message(scope, *message), *count);
        }
        let mut records = SortedMap::new();
        for (key, record) in &state.store.records {
            records.insert(
                self.key(scope, *key),
                Record {
                    op: self.op(record.op),
                    ..*record
                },
            );
        }
        let mut first_success = SortedMap::new();
        for (op, payload) in &state.first_success {
            first_success.insert(self.op(*op), *payload);
        }
        State {
            clients,
            network,
            procs,
            store: Store {
                records,
                payments: state.store.payments.iter().map(|op| self.op(*op)).collect(),
                next_token: state.store.next_token,
                provider_charges: state
                    .store
                    .provider_charges
                    .iter()
                    .map(|(op, key)| (self.op(*op), self.key(scope, *key)))
                    .collect(),
            },
            first_success,
            budgets: state.budgets,
        }
    }
}

/// A client's view of the state with its own identity erased: clients with equal signatures are ordered by
/// their original index (any order is sound; equal views are where the merging happens).
fn client_signature(scope: KeyScope, state: &State, client: u8) -> u64 {
    let mut hasher = Signature(0);
    state.clients[client as usize].hash(&mut hasher);
    let blank = |op: OpRef| op.client == client;
    let mut messages: SmallVec<[(Message, u8); 8]> = SmallVec::new();
    for (message, count) in &state.network {
        let mine = match message {
            Message::Request(request) => blank(request.from),
            Message::Response(response) => blank(response.to),
        };
        if mine {
            messages.push((erase_message(scope, *message), *count));
        }
    }
    messages.sort();
    messages.hash(&mut hasher);
    let mut jobs: SmallVec<[Job; 4]> = SmallVec::new();
    for proc in &state.procs {
        if let Proc::Busy(job) = proc {
            if blank(job.request.from) {
                jobs.push(Job {
                    request: erase_request(scope, job.request),
                    ..*job
                });
            }
        }
    }
    jobs.sort();
    jobs.hash(&mut hasher);
    for (key, record) in &state.store.records {
        if blank(record.op) || (scope == KeyScope::PerClient && key.scope == client) {
            (
                key.value,
                record.fingerprint,
                record.body,
                record.op.op,
                record.status,
            )
                .hash(&mut hasher);
        }
    }
    for (index, op) in state.store.payments.iter().enumerate() {
        if blank(*op) {
            (index, op.op).hash(&mut hasher);
        }
    }
    for (op, key) in &state.store.provider_charges {
        if blank(*op) {
            (op.op, key.value).hash(&mut hasher);
        }
    }
    for (op, payload) in &state.first_success {
        if blank(*op) {
            (op.op, payload).hash(&mut hasher);
        }
    }
    hasher.finish()
}

/// The hasher of client signatures: one rotate, xor and multiply per written field. The derived `Hash`
/// writes a byte or two at a time, and a streaming XXH64 spent more on each write's bookkeeping than
/// on mixing (a third of a symmetric search's time). Signatures only order clients: a collision merges
/// fewer states (the tie goes by index), never wrong ones.
struct Signature(u64);

impl Signature {
    #[inline(always)]
    fn mix(&mut self, word: u64) {
        const ODD: u64 = 0x9e37_79b9_7f4a_7c15;
        self.0 = (self.0.rotate_left(23) ^ word).wrapping_mul(ODD);
    }
}

impl Hasher for Signature {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            // The length too: "ab" and "ab\0" differ.
            self.mix(u64::from_le_bytes(word) ^ (chunk.len() as u64) << 59);
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, value: u8) {
        self.mix(u64::from(value));
    }

    #[inline(always)]
    fn write_u16(&mut self, value: u16) {
        self.mix(u64::from(value));
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
        self.mix(value as u64);
    }

    #[inline(always)]
    fn write_isize(&mut self, value: isize) {
        self.mix(value as u64);
    }

    fn finish(&self) -> u64 {
        // A last multiply-shift spreads the top bits, which decide the order.
        let x = self.0 ^ (self.0 >> 29);
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
            *state = relabel.state(scope, state);
        }
        // Processes hold no identity anywhere else, and equal processes are alike: sorting them is the
        // relabelling `canonicalize` makes.
        state.procs.sort_unstable();
    }
}

/// The canonical order of the clients, as `client[old] = new`: by signature, ties by index.
fn client_relabelling(scope: KeyScope, state: &State) -> SmallVec<[u8; 8]> {
    let clients = state.clients.len();
    let mut client_order: SmallVec<[(u64, u8); 8]> = (0..clients as u8)
        .map(|client| (client_signature(scope, state, client), client))
        .collect();
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
