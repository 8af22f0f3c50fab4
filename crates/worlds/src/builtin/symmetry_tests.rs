//! Tests of `symmetry.rs`, the canonical form against brute force: a symmetric search must count exactly the
//! symmetry classes of the reachable states, found here by relabelling every state with every permutation of its
//! clients and processes. A signature that told fewer clients apart (a colliding hasher, say) would still be
//! sound and keep every verdict, so only a count catches it.

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
    let path = crate::repository_file("models/lease-fenced.toml");
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
        .attempts_max(2)
        .faults(faults)
        .build()
        .unwrap();
    let World::Http(three_clients) = built else {
        panic!("an HTTP world");
    };
    assert_exact("lease-fenced, 3 clients", &three_clients);
}
