//! The retrylab world as a stateright model: the very same transition relation (`actions` / `next_state`), and
//! for its symmetry the very same canonical form (`check::canonical`, as the search makes it), so the two checkers search the same
//! space and the unique-state counts can be compared.

use super::family::{Flags, Outcome};
use retrylab::builtin::{State, World};
use retrylab::check::Verdict;
use stateright::{Checker, Model};

#[path = "../support/stateright_model.rs"]
mod stateright_model;
use stateright_model::Stateright as Twin;
use std::sync::RwLock;
use std::time::Instant;

/// stateright takes its representative function as a plain `fn`, which cannot capture the world: the run's
/// world waits here.
static CANONICAL_WORLD: RwLock<Option<World>> = RwLock::new(None);

fn representative(state: &State) -> State {
    let world = CANONICAL_WORLD.read().expect("not poisoned");
    let world = world.as_ref().expect("set before a symmetric run");
    // The form retrylab's search makes, by the same code path.
    retrylab::check::canonical(world, state)
}

/// Check `world` with stateright's BFS on `flags.threads` threads, cut at `flags.states_max`. Not stateright's
/// own `timeout`: in 0.30.2 its timeout thread holds the job market's lock while it sleeps (a second at a time),
/// which stalls the workers (the 2-client member took over 20 s instead of 0.3 s). The time limit is the parent
/// process killing this one (`main.rs`).
pub fn check(world: &World, symmetry: bool, flags: &Flags) -> Outcome {
    *CANONICAL_WORLD.write().expect("not poisoned") = Some(world.clone());
    let started = Instant::now();
    let mut builder = Twin(world.clone())
        .checker()
        .threads(flags.threads)
        .target_state_count(flags.states_max as usize);
    // stateright 0.30.2 applies symmetry in its DFS only (its BFS ignores the representative function).
    let (states, violated) = if symmetry {
        builder = builder.symmetry_fn(representative);
        finish(builder.spawn_dfs().join())
    } else {
        finish(builder.spawn_bfs().join())
    };
    let seconds = started.elapsed().as_secs_f64();
    let verdict = if violated {
        Verdict::Violated
    } else if states >= flags.states_max {
        Verdict::Incomplete
    } else {
        Verdict::Holds
    };
    Outcome {
        states: Some(states),
        seconds,
        verdict,
    }
}

/// Unique states, and whether the property was violated.
fn finish(checker: impl Checker<Twin>) -> (u64, bool) {
    (
        checker.unique_state_count() as u64,
        checker.discovery("no-duplicate-effect").is_some(),
    )
}
