//! Partial-order reduction: from a state where the model declares a reduced set of its enabled actions (one
//! action independent of the rest, `Model::independent_of_rest`, or else a persistent set,
//! `Model::persistent_set`), the breadth-first search explores that set instead of every action, so the orders
//! of independent actions are not all explored. Off unless asked for (`Checker::por`); a model that declares
//! nothing is explored in full either way.
//!
//! # What the reduced set is
//! At a state `s` the search explores `ample(s)`: the first enabled action `a` (in the model's order) that is
//! not a fault and that the model declares independent of the rest; when there is none, the model's persistent
//! set `T` if it holds a non-fault action and is smaller than the enabled set; otherwise every enabled action
//! (a full expansion). A single action is the set `T = {a}`. `a` and `b`, both enabled in a state `t`, are
//! *independent in `t`* when taken in either order they reach the same state, neither disables the other, and
//! each observes the same (its `Model::Obs`) in either order. The reduction rests on these conditions:
//!
//! - **C0, non-emptiness**: `ample(s)` is empty only where nothing is enabled.
//! - **C1, persistence** (the model's declaration), in the form of Valmari's stubborn sets: for every path `w`
//!   from `s` that takes no action of `T`,
//!   - *commutation*: every action `x` of `T` enabled at the end of `w` could have been taken first: `x w` is
//!     a path too, ending in the same state, `x` observing in `s` what it observed after `w` and each step of
//!     `w` observing what it observed before;
//!   - *a key*: some non-fault action of `T` stays enabled, and a non-fault action, all along `w`.
//!
//!   A persistent set in Godefroid's sense (every action of `w` independent of every action of `T` where it is
//!   taken, the actions of `T` staying enabled) meets both. The stubborn form is weaker where two actions race
//!   for something only one of them can have, as two faults for the last of the budget they share: with one
//!   crash left, crashing P1 disables crashing P2 and the reverse, so they are not independent, yet a path
//!   that crashes P2 cannot crash P1 after it, and a path that crashes P1 after other steps could have crashed
//!   it first.
//! - **C2, visibility**: no action of `T` changes the truth of any state-judged `always` or `sometimes`
//!   predicate (also the model's declaration). Step-judged properties (`always_unobserved`,
//!   `sometimes_observed`) need no visibility condition, because independence keeps observations: see the
//!   argument below.
//! - **C3, the cycle proviso**: every cycle of the reduced graph passes through a fully expanded state. On a
//!   model that promises `Model::acyclic` it holds by itself: a reduced set holds non-fault actions and faults
//!   that lie on no cycle (the contract of `persistent_set`: a fault that spends a budget), so a cycle of
//!   reduced states would be a cycle of non-fault actions. On any other model a state is reduced only when
//!   none of its reduced successors was in the visited set when its round began (a BFS-compatible proviso:
//!   reduced edges then go one level deeper, so a cycle holds an edge that does not, from a state expanded in
//!   full).
//! - **Key action, for rest states**: `T` holds a non-fault action that stays enabled, and a non-fault action,
//!   on every path that avoids `T` (C1), so a reduced state is never at rest and no such path ends at rest
//!   without taking `T`.
//!
//! # Why the verdicts are kept
//! Let `s` be a reduced-search state and `w = b1 … bn` a path of the full model from `s`. By induction on the
//! length of `w` and, for equal lengths, on the position of `s` in the acyclic reduced graph (C3 makes the
//! second measure well-founded), the reduced search reaches what `w` reaches:
//! - full expansion at `s`: it takes `b1`, and the rest of `w` is shorter;
//! - `bi` in `T` for some `i` (the first such): `bi` is enabled at the end of `b1 … b(i-1)`, which avoids
//!   `T`, so by C1's commutation `bi b1 … b(i-1) b(i+1) … bn` is a path too, to the same state, each step
//!   observing what it observed in `w` (the steps after `bi` are taken in the same states); its rest after
//!   `bi` is shorter;
//! - no action of `w` in `T`: take the key `a` of `T`; it is enabled at the end of `w`, so by C1's commutation
//!   `a w` is a path, and `w` taken after `a` observes what it observed before, ending in `a(t)` where `w`
//!   ended in `t`; by C2 `a(t)` satisfies the state predicates `t` did.
//!
//! So every observation of every transition of the full model is made by some transition of the reduced search
//! (the step-judged `always` and `sometimes` properties keep their verdicts), every state predicate that holds
//! in a reachable state holds in a reduced-reachable one (the state-judged ones), and every rest state is reached
//! itself, since the last case cannot end at rest (the key is enabled at `t`, and no fault there):
//! `eventually_at_rest`, judged at rest states alone on an acyclic model, keeps its verdict. The reduced search
//! explores real transitions only, so what it
//! finds is real; its counterexamples are shortest in the reduced graph, not always in the model (`por` off
//! gives the shortest). `eventually` properties judged on the state graph (goals on states, or any `eventually`
//! of a model that does not promise acyclicity) need the whole graph: the search expands every state in full
//! for them.
//!
//! # Symmetry: reduction on the quotient
//! Combined with `Model::canonicalize`, the search runs on the symmetry quotient: every state it stores, and
//! so every state it asks for a reduced set, is a canonical representative `c`, and each successor it makes is
//! replaced by its representative `canon(t) = ρ(t)` for a relabelling `ρ`. Three facts make the argument above
//! carry over; they need the model's transition relation, fault status, observations and state predicates to be
//! invariant under relabelling (an action relabelled is enabled in the relabelled state, reaches the relabelled
//! successor, is a fault there exactly when it was one, observes the same events; properties never name a
//! client or a process), which is what canonicalization already requires.
//!
//! - **The representative's set is the original's.** The declaration is asked of `c` itself, a state of the
//!   model like any other, so `T = ample(c)` is persistent and invisible in `c` as a set of the model's own
//!   actions (C1, C2 hold of the unreduced model at `c`). Nothing is translated, and the declaration needs no
//!   symmetry of its own. For another state `s` of the class, `s = ρ⁻¹(c)`, the set `ρ⁻¹(T)` is a persistent
//!   set of `s` (relabel every path from `s`: it is a path from `c`, action for action, with the same
//!   independence, enabledness, fault status and observations); that is the set the reduced quotient takes from
//!   `s`, and counterexamples mapped back (`Relabel::action_back`) walk it.
//! - **Visibility.** The events a transition observes and the predicates a state satisfies are the same for
//!   every member of a class, so C2 and "independence keeps observations" hold of the quotient's transitions as
//!   they do of the model's.
//! - **Cycles.** On a model that promises `acyclic`, the quotient has no cycle of non-fault actions either: a
//!   quotient cycle from `c` back to `c` lifts to a model path from `c` to `π(c)` for some relabelling `π`, made
//!   of the lifted (relabelled, so still non-fault) actions; repeated `k` times, where `π^k` is the identity (the
//!   relabellings form a finite group), it is a model cycle. Without that promise the proviso is applied to
//!   canonical states, in the set the quotient search keeps, so every cycle of the reduced quotient graph holds
//!   a state expanded in full.
//!
//! The induction of "why the verdicts are kept" then runs on the quotient: for a canonical state `c` and a path
//! `w` of the model from `c`, each case takes its first step `x` (a `b1`, a member of `T` moved to the front, or
//! a non-fault `a` of `T`) to `t = x(c)`, the search stores `ρ(t)`, and `ρ` applied to the rest of the path is a
//! path from `ρ(t)` of the same length making the same observations and ending in the class of the original end.
//! So the reduced quotient search reaches the class of every reachable state, makes every observation of every
//! transition, and reaches every rest state's class, as the plain reduced search does. `tests/checker/por.rs` checks
//! the outcome on every model of the catalogue: verdicts and `sometimes` scenarios equal under every combination
//! of symmetry and reduction, and the checked mode in the canonical states of the symmetric search.
//!
//! # Checked mode
//! `Por::Checked` reduces as `Por::On` does and, in every reduced state, tests each action of the reduced set
//! against every enabled action outside it (the first step of C1, and C2 in the state and in each neighbour):
//! where the member is still enabled after the other, both orders are taken and compared; and some non-fault
//! member must be disabled by none of them (the key). A failure panics naming the state and the pair. It cannot
//! see a later step of a path, so it is evidence, not proof; the tests run it on every model of the catalogue.

use super::model::{enabled, Model};
use super::plan::Plan;

/// Whether, and how, a search uses partial-order reduction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Por {
    /// Every state expanded in full: shortest counterexamples.
    #[default]
    Off,
    /// Reduced sets where the model declares them.
    On,
    /// As `On`, and every declaration tested against each other enabled action (slow: for tests).
    Checked,
}

/// How a search reduces, fixed for the run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reduction {
    pub reduce: bool,
    /// The model does not promise acyclicity: a state is reduced only when its reduced successors are new (C3).
    pub proviso: bool,
    pub checked: bool,
}

impl Reduction {
    pub fn new<M: Model>(model: &M, plan: &Plan<M>, por: Por) -> Reduction {
        // Graph-judged `eventually` properties need every edge.
        let reduce = por != Por::Off && plan.graph.is_empty();
        Reduction {
            reduce,
            proviso: reduce && !model.acyclic(),
            checked: reduce && por == Por::Checked,
        }
    }
}

/// The index of the action to explore alone from `state`: the first non-fault one the model declares
/// independent of the rest. `None` when there is none, or when it is the only action (nothing to save).
pub(crate) fn alone<M: Model>(model: &M, state: &M::State, actions: &[M::Action]) -> Option<usize> {
    if actions.len() < 2 {
        return None;
    }
    actions.iter().position(|action| {
        !model.is_fault(state, action) && model.independent_of_rest(state, action)
    })
}

/// The reduced set of `state` into `out` (indices into `actions`, increasing): the action `alone` picks, or
/// else the model's persistent set when it holds a non-fault action and is smaller than `actions`. `false`,
/// with `out` empty, when the state is to be expanded in full.
pub(crate) fn reduced_set<M: Model>(
    model: &M,
    state: &M::State,
    actions: &[M::Action],
    out: &mut Vec<usize>,
) -> bool {
    out.clear();
    if let Some(index) = alone(model, state, actions) {
        out.push(index);
        return true;
    }
    if actions.len() < 2 {
        return false;
    }
    model.persistent_set(state, actions, out);
    let useful = out.len() < actions.len()
        && out
            .iter()
            .any(|&index| !model.is_fault(state, &actions[index]));
    if !useful {
        out.clear();
    }
    useful
}

/// Checked mode: panic unless the reduced set `members` meets C1 and C2 on the first step of every path that
/// avoids it: for each enabled action `b` outside the set, each member still enabled after `b` commutes with it
/// (both orders reach the same state and observe the same, the member neither disables `b` nor changes its
/// fault status), some non-fault member is disabled by no `b` (the key), and no member changes a state
/// predicate, in the state or after `b`.
pub(crate) fn check_declaration<M: Model>(
    model: &M,
    plan: &Plan<M>,
    state: &M::State,
    actions: &[M::Action],
    members: &[usize],
) {
    let declared = if members.len() == 1 {
        "declared independent of the rest".to_string()
    } else {
        let set: Vec<&M::Action> = members.iter().map(|&index| &actions[index]).collect();
        format!("in the declared persistent set {set:?}")
    };
    let mut listed = Vec::new();
    let mut key = false;
    let mut disabled = None;
    for &member in members {
        let a = &actions[member];
        let (after_a, observed_a) = successor(model, state, a);
        check_invisible(model, plan, a, &declared, state, &after_a);
        let mut stays = !model.is_fault(state, a);
        for b in actions
            .iter()
            .enumerate()
            .filter(|(index, _)| !members.contains(index))
            .map(|(_, b)| b)
        {
            let (after_b, observed_b) = successor(model, state, b);
            enabled(model, &after_b, &mut listed);
            if !listed.contains(a) {
                // `b` took what `a` needed (the last of a budget they share): no path takes `b` and then `a`,
                // so C1 asks nothing of the pair, but `a` is not the key.
                stays = false;
                disabled.get_or_insert((a, b));
                continue;
            }
            let fail = |what: &str| -> ! {
                panic!(
                    "partial-order reduction: {a:?}, {declared}, is not independent of {b:?} in {state:?}: \
                     {what}"
                )
            };
            if model.is_fault(&after_b, a) != model.is_fault(state, a) {
                fail("the other changes whether it is a fault");
            }
            enabled(model, &after_a, &mut listed);
            if !listed.contains(b) {
                fail("it disables the other");
            }
            let (after_ab, observed_ab) = successor(model, &after_a, b);
            let (after_ba, observed_ba) = successor(model, &after_b, a);
            if after_ab != after_ba {
                fail("the two orders reach different states");
            }
            if observed_ab != observed_b || observed_ba != observed_a {
                fail("an observation depends on the order");
            }
            check_invisible(model, plan, a, &declared, &after_b, &after_ba);
        }
        key |= stays;
    }
    if let (false, Some((a, b))) = (key, disabled) {
        panic!(
            "partial-order reduction: {a:?}, {declared}, is not independent of {b:?} in {state:?}: the other \
             disables it, and no non-fault action of the set stays enabled after every other action (no key)"
        );
    }
}

/// C2 on one step: `a`, from `before` to `after`, leaves every state-judged predicate as it was.
fn check_invisible<M: Model>(
    model: &M,
    plan: &Plan<M>,
    a: &M::Action,
    declared: &str,
    before: &M::State,
    after: &M::State,
) {
    for &(property, predicate) in plan.always_state.iter().chain(&plan.sometimes_state) {
        assert_eq!(
            predicate(model, before),
            predicate(model, after),
            "partial-order reduction: {a:?}, {declared}, changes the predicate of '{}' in {before:?}",
            plan.properties[property].name
        );
    }
}

fn successor<M: Model>(model: &M, state: &M::State, action: &M::Action) -> (M::State, M::Obs) {
    let mut next = state.clone();
    let observed = model.apply(&mut next, action);
    (next, observed)
}

/// What the checked mode says against `model`'s declarations: the message a `Por::Checked` search panics with
/// (the state and the pair that do not commute, or the set with no key), or nothing when every reduced state
/// passed. For tests of a model's `independent_of_rest` and `persistent_set`: the twin of a wrong declaration
/// asserts on what this returns.
pub fn checked_mode_complaint<M: Model + std::panic::RefUnwindSafe>(model: &M) -> Option<String> {
    let search = std::panic::catch_unwind(|| model.checker().por(Por::Checked).bfs());
    search
        .err()
        .map(|payload| match payload.downcast::<String>() {
            Ok(message) => *message,
            Err(payload) => payload.downcast_ref::<&str>().map_or_else(
                || "a panic without a message".to_string(),
                |s| s.to_string(),
            ),
        })
}
