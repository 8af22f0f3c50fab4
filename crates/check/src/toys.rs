//! The checker on its own: toy models small enough to count by hand, with pinned state counts, shortest
//! counterexample lengths and `sometimes` / `eventually` verdicts, each on 1, 2 and 3 threads.

use super::*;

/// The same report on 1, 2 and 3 threads (counts, verdicts, paths).
pub(super) fn bfs_on_threads<M: Model>(model: &M) -> Report<M> {
    let one = model.checker().threads(1).bfs();
    for threads in [2, 3] {
        let other = model.checker().threads(threads).bfs();
        assert_eq!(one.states, other.states, "{threads} threads");
        assert_eq!(one.transitions, other.transitions, "{threads} threads");
        assert_eq!(one.properties, other.properties, "{threads} threads");
    }
    one
}

// A counter from 0 up to `top`, one step at a time: `top + 1` states in a line.
struct Counter {
    top: u8,
}

impl Model for Counter {
    type State = u8;
    type Action = &'static str;
    type Obs = ();

    fn init_state(&self) -> u8 {
        0
    }

    fn actions(&self, state: &u8, out: &mut Vec<&'static str>) {
        out.clear();
        if *state < self.top {
            out.push("inc");
        }
    }

    fn apply(&self, state: &mut u8, _action: &&'static str) {
        *state += 1;
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("at most top", |model, state| *state <= model.top),
            Property::always("never 3", |_, state| *state != 3),
            Property::sometimes("reaches top", |model, state| *state == model.top),
            Property::sometimes("reaches 9", |_, state| *state == 9),
            Property::eventually("ends at top", |model, state| *state == model.top),
            Property::eventually("reaches 9 eventually", |_, state| *state == 9),
            Property::eventually_at_rest("rests at top", |model, state| *state == model.top),
        ]
    }
}

#[test]
fn a_counter_has_its_states_its_shortest_counterexample_and_its_examples() {
    let report = bfs_on_threads(&Counter { top: 5 });
    assert_eq!(report.states, 6);
    assert_eq!(report.transitions, 5);
    assert_eq!(report.depth, 5);
    assert!(report.complete);
    assert_eq!(report.verdict("at most top"), Verdict::Holds);
    assert_eq!(report.verdict("never 3"), Verdict::Violated);
    assert_eq!(report.counterexample("never 3").unwrap().len(), 3);
    assert_eq!(report.verdict("reaches top"), Verdict::Holds);
    assert_eq!(report.example("reaches top").unwrap().len(), 5);
    // Never witnessed by a complete search: a `sometimes` that fails.
    assert_eq!(report.verdict("reaches 9"), Verdict::Violated);
    assert_eq!(report.verdict("ends at top"), Verdict::Holds);
    assert_eq!(report.verdict("rests at top"), Verdict::Holds);
    // Comes to rest at 5 without ever seeing 9: the whole path is the counterexample.
    assert_eq!(report.verdict("reaches 9 eventually"), Verdict::Violated);
    assert_eq!(
        report.counterexample("reaches 9 eventually").unwrap().len(),
        5
    );
}

#[test]
fn a_search_cut_short_is_incomplete_never_holds() {
    let counter = Counter { top: 5 };
    let report = counter.checker().depth_max(2).bfs();
    assert!(!report.complete);
    assert_eq!(report.stopped_by, Some(StoppedBy::MaxDepth(2)));
    assert_eq!(report.verdict("at most top"), Verdict::Incomplete);
    assert_eq!(report.verdict("reaches top"), Verdict::Incomplete);
    assert_eq!(report.verdict("ends at top"), Verdict::Incomplete);
    let report = counter.checker().states_max(3).bfs();
    assert!(!report.complete);
    assert_eq!(report.stopped_by, Some(StoppedBy::MaxStates(3)));
    assert_eq!(report.verdict("at most top"), Verdict::Incomplete);
    // What was found within the bound is still found.
    let report = counter.checker().depth_max(4).bfs();
    assert_eq!(report.verdict("never 3"), Verdict::Violated);
    // A depth bound that cuts nothing stops nothing.
    let report = counter.checker().depth_max(5).bfs();
    assert_eq!((report.complete, report.stopped_by), (true, None));
}

#[test]
#[should_panic(expected = "no property named 'nope'; the model's properties are: at most top")]
fn an_unknown_property_name_lists_the_valid_ones() {
    let _ = Counter { top: 1 }.checker().bfs().verdict("nope");
}

// Two paths into one state: init -> G -> X -> end, and init -> Y -> X -> end. The search first reaches X from
// G, the goal; judging `eventually G` along the search tree would call it satisfied and miss the path through Y
// (stateright's PR #3). Judged on the graph, it is violated by init -> Y -> X -> end.
struct Join;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Place {
    Init,
    G,
    Y,
    X,
    End,
}

impl Model for Join {
    type State = Place;
    type Action = Place;
    type Obs = ();

    fn init_state(&self) -> Place {
        Place::Init
    }

    fn actions(&self, state: &Place, out: &mut Vec<Place>) {
        out.clear();
        match state {
            Place::Init => out.extend([Place::G, Place::Y]),
            Place::G | Place::Y => out.push(Place::X),
            Place::X => out.push(Place::End),
            Place::End => {}
        }
    }

    fn apply(&self, state: &mut Place, action: &Place) {
        *state = *action;
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::eventually("passes G", |_, state| *state == Place::G),
            Property::eventually("passes X", |_, state| *state == Place::X),
        ]
    }
}

#[test]
fn eventually_is_judged_on_the_graph_so_a_join_does_not_hide_a_violation() {
    let report = bfs_on_threads(&Join);
    assert_eq!(report.states, 5);
    assert_eq!(report.verdict("passes X"), Verdict::Holds);
    assert_eq!(report.verdict("passes G"), Verdict::Violated);
    assert_eq!(
        report.counterexample("passes G").unwrap(),
        [Place::Y, Place::X, Place::End]
    );
    assert_eq!(report.property("passes G").cycle_from, None);
}

// Two processes taking a lock. `atomic: false` reads the flag in one step and sets it in the next, so both
// can enter. There are cycles (enter, leave, enter again), and `leave` is a fault in `faulty` (a crash that
// loses the lock holder) to exercise judging once faults stop.
struct Mutex {
    atomic: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Pc {
    Idle,
    Checked,
    Critical,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Procs {
    pc: [Pc; 2],
    locked: bool,
}

impl Model for Mutex {
    type State = Procs;
    type Action = usize;
    type Obs = ();

    fn init_state(&self) -> Procs {
        Procs {
            pc: [Pc::Idle; 2],
            locked: false,
        }
    }

    fn actions(&self, state: &Procs, out: &mut Vec<usize>) {
        out.clear();
        for proc in 0..2 {
            let blocked = state.pc[proc] == Pc::Idle && state.locked;
            if !blocked {
                out.push(proc);
            }
        }
    }

    fn apply(&self, state: &mut Procs, proc: &usize) {
        let pc = &mut state.pc[*proc];
        *pc = match (*pc, self.atomic) {
            (Pc::Idle, true) => {
                state.locked = true;
                Pc::Critical
            }
            (Pc::Idle, false) => Pc::Checked,
            (Pc::Checked, _) => {
                state.locked = true;
                Pc::Critical
            }
            (Pc::Critical, _) => {
                state.locked = false;
                Pc::Idle
            }
        };
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("mutual exclusion", |_, state: &Procs| {
                state.pc != [Pc::Critical, Pc::Critical]
            }),
            Property::sometimes("P1 enters", |_, state: &Procs| state.pc[0] == Pc::Critical),
            // No fairness: P1 may take every step forever, so P2 need never enter (a cycle).
            Property::eventually("P2 enters", |_, state: &Procs| state.pc[1] == Pc::Critical),
        ]
    }

    fn canonicalize(&self, state: &Procs) -> Option<Procs> {
        let mut canonical = state.clone();
        canonical.pc.sort();
        Some(canonical)
    }
}

#[test]
fn a_mutex_that_checks_then_sets_lets_both_in() {
    // Every pair of {Idle, Checked, Critical} is reachable (9) with the flag set when someone entered last; once
    // both are in and one leaves, the flag is clear while the other is still in: (Critical, Idle), (Idle,
    // Critical), (Critical, Checked) and (Checked, Critical) again with the flag clear: 13 states.
    let report = bfs_on_threads(&Mutex { atomic: false });
    assert_eq!(report.states, 13);
    assert_eq!(report.verdict("mutual exclusion"), Verdict::Violated);
    // P1 checks, P2 checks, P1 enters, P2 enters.
    assert_eq!(
        report.counterexample("mutual exclusion").unwrap(),
        [0, 1, 0, 1]
    );
    assert_eq!(report.verdict("P1 enters"), Verdict::Holds);
}

#[test]
fn an_atomic_mutex_holds_and_a_cycle_violates_eventually() {
    let report = bfs_on_threads(&Mutex { atomic: true });
    // (Idle, Idle), (Critical, Idle), (Idle, Critical).
    assert_eq!(report.states, 3);
    assert_eq!(report.verdict("mutual exclusion"), Verdict::Holds);
    assert_eq!(report.verdict("P2 enters"), Verdict::Violated);
    // P1 enters and leaves forever: a lasso back to the initial state.
    let lasso = report.property("P2 enters");
    assert_eq!(lasso.path.as_deref().unwrap(), [0, 0]);
    assert_eq!(lasso.cycle_from, Some(0));
    // The lasso replays as a violation; the same path without its cycle does not (it never comes to rest).
    let path = lasso.path.clone().unwrap();
    let replayed = replay_path(&Mutex { atomic: true }, &path, Some(0)).unwrap();
    assert_eq!(replayed.verdict("P2 enters"), Verdict::Violated);
    let open = replay_path(&Mutex { atomic: true }, &path, None).unwrap();
    assert_eq!(open.verdict("P2 enters"), Verdict::Incomplete);
    let wrong_cycle = replay_path(&Mutex { atomic: true }, &path, Some(1)).unwrap();
    assert_eq!(wrong_cycle.verdict("P2 enters"), Verdict::Incomplete);
}

#[test]
fn symmetry_merges_the_two_processes_and_keeps_verdicts() {
    let model = Mutex { atomic: false };
    let full = model.checker().bfs();
    let reduced = model.checker().symmetry(true).bfs();
    // The 13 with the two processes' pcs sorted: 6 unordered pairs with the flag as it must be, plus
    // {Idle, Critical} and {Checked, Critical} with the flag clear.
    assert_eq!(reduced.states, 8);
    // Only symmetric properties may be judged on the reduced space: "P1 enters" and "P2 enters" name a process.
    assert_eq!(
        full.verdict("mutual exclusion"),
        reduced.verdict("mutual exclusion")
    );
    let path = reduced.counterexample("mutual exclusion").unwrap();
    assert_eq!(path.len(), 4);
    let replayed = replay_path(&model, path, None).unwrap();
    assert_eq!(replayed.property("mutual exclusion").at_step, Some(4));
}

#[test]
fn walks_find_the_bug_and_prove_nothing() {
    let report = Mutex { atomic: false }
        .checker()
        .depth_max(20)
        .walks(1, 200);
    assert_eq!(report.walks, 200);
    assert_eq!(report.verdict("mutual exclusion"), Verdict::Violated);
    assert_eq!(report.verdict("P1 enters"), Verdict::Holds);
    let report = Mutex { atomic: true }.checker().depth_max(20).walks(1, 200);
    assert_eq!(report.verdict("mutual exclusion"), Verdict::Incomplete);
    let same = Mutex { atomic: true }.checker().depth_max(20).walks(1, 200);
    assert_eq!(report.properties, same.properties);
}

// A sender whose message the network may lose (a fault, at most once). It resends after a loss. Once faults stop
// the message is delivered: `eventually` holds. Without the resend, a loss is a state at rest short of the goal.
struct Lossy {
    resend: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Wire {
    in_flight: bool,
    delivered: bool,
    lost: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Net {
    Send,
    Deliver,
    Lose,
}

impl Model for Lossy {
    type State = Wire;
    type Action = Net;
    type Obs = ();

    fn init_state(&self) -> Wire {
        Wire {
            in_flight: false,
            delivered: false,
            lost: false,
        }
    }

    fn actions(&self, state: &Wire, out: &mut Vec<Net>) {
        out.clear();
        let sent_once = state.in_flight || state.delivered || state.lost;
        if !state.in_flight && !state.delivered && (!sent_once || self.resend) {
            out.push(Net::Send);
        }
        if state.in_flight {
            out.push(Net::Deliver);
            if !state.lost {
                out.push(Net::Lose);
            }
        }
    }

    fn apply(&self, state: &mut Wire, action: &Net) {
        match action {
            Net::Send => state.in_flight = true,
            Net::Deliver => (state.in_flight, state.delivered) = (false, true),
            Net::Lose => (state.in_flight, state.lost) = (false, true),
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::eventually("delivered", |_, state: &Wire| state.delivered),
            Property::eventually_at_rest("rests delivered", |_, state: &Wire| state.delivered),
        ]
    }

    fn is_fault(&self, _state: &Wire, action: &Net) -> bool {
        *action == Net::Lose
    }

    fn acyclic(&self) -> bool {
        true
    }
}

#[test]
fn eventually_is_judged_once_faults_stop() {
    let report = bfs_on_threads(&Lossy { resend: true });
    assert_eq!(report.verdict("delivered"), Verdict::Holds);
    assert_eq!(report.verdict("rests delivered"), Verdict::Holds);
    let report = bfs_on_threads(&Lossy { resend: false });
    // Send, lose: at rest, never delivered. Both ways of judging agree.
    assert_eq!(
        report.counterexample("delivered").unwrap(),
        [Net::Send, Net::Lose]
    );
    assert_eq!(
        report.counterexample("rests delivered").unwrap(),
        [Net::Send, Net::Lose]
    );
}

// Promises acyclicity and breaks it: debug builds catch the broken promise.
struct Liar;

impl Model for Liar {
    type State = bool;
    type Action = ();
    type Obs = ();

    fn init_state(&self) -> bool {
        false
    }

    fn actions(&self, _state: &bool, out: &mut Vec<()>) {
        out.clear();
        out.push(());
    }

    fn apply(&self, state: &mut bool, _action: &()) {
        *state = !*state;
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::eventually_at_rest("rests", |_, _| true)]
    }

    fn acyclic(&self) -> bool {
        true
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    should_panic(expected = "promises Model::acyclic, but a cycle of non-fault actions was found")
)]
fn a_broken_acyclicity_promise_is_caught_in_debug_builds() {
    let _ = Liar.checker().bfs();
}
