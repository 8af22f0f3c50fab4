//! Traces that know their run: a trace replayed on a design whose calls differ stops there and says why (and
//! replays on its own design), and step texts print Retry-After waits, clock moves and overwritten values.

use super::super::{HandlerAction, HandlerFaults, HandlerState, HandlerWorld, Message};
use super::Made;
use crate::check::{replay_path, timeline, Model};
use crate::handler::api::{Handler, Reply, Request, Store, StoreError};

/// Claims the key outside a transaction (autocommit), then marks it done: with `fenced`, only if it still holds
/// its claim (compare-and-set); without, whatever it holds. A key already claimed answers 409.
struct Claim {
    fenced: bool,
}

impl Handler for Claim {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let run = async {
            if !db.insert_if_absent("keys", &request.key, "claimed").await? {
                return Ok(Reply::new(409, "{}"));
            }
            let expected = self.fenced.then_some("claimed");
            db.update("keys", &request.key, "done", expected).await?;
            Ok::<_, StoreError>(Reply::new(201, "{}"))
        };
        run.await.unwrap_or_else(|_| Reply::new(500, "{}"))
    }
}

fn world(fenced: bool) -> HandlerWorld<Claim> {
    let faults = HandlerFaults {
        early_timeouts: 1,
        pauses: 1,
        ..HandlerFaults::default()
    };
    HandlerWorld::new(Claim { fenced }, 1, "{}")
        .processes(2)
        .faults(faults)
        .retry_after_ms(500)
}

/// The first enabled action `pick` accepts, applied; the path so far grows by it.
fn take<W: Model>(
    world: &W,
    state: &mut W::State,
    path: &mut Vec<W::Action>,
    pick: impl Fn(&W::Action) -> bool,
) {
    let mut enabled = Vec::new();
    world.actions(state, &mut enabled);
    let action = (enabled.into_iter().find(|action| pick(action)))
        .unwrap_or_else(|| panic!("no such action after {path:?}"));
    world.apply(state, &action);
    path.push(action);
}

/// C1 sends, times out early and sends again; P1 claims and completes attempt 1 (the update at step 6), P2 is
/// told 409 for attempt 2, which C1 receives (the request's first attempt's answer is abandoned), and sends
/// attempt 3 after Retry-After.
fn race(world: &HandlerWorld<Claim>) -> (Vec<HandlerAction>, HandlerState) {
    let mut state = world.init_state();
    let mut path = Vec::new();
    let step = |proc: u8| move |a: &HandlerAction| matches!(a, HandlerAction::Step { proc: p, .. } if *p == proc);
    let request = |attempt: u8| move |a: &HandlerAction| matches!(a, HandlerAction::DeliverRequest { message: Message::Request { attempt: n, .. }, .. } if *n == attempt);
    take(world, &mut state, &mut path, |a| {
        matches!(a, HandlerAction::Send { .. })
    });
    take(world, &mut state, &mut path, |a| {
        matches!(a, HandlerAction::Timeout { .. })
    });
    take(world, &mut state, &mut path, request(1));
    take(world, &mut state, &mut path, request(2));
    take(world, &mut state, &mut path, step(0)); // insert-if-absent: claimed
    take(world, &mut state, &mut path, step(0)); // update
    take(world, &mut state, &mut path, step(1)); // insert-if-absent: not claimed
    take(world, &mut state, &mut path, step(1)); // answer 409
    take(world, &mut state, &mut path, |a| {
        matches!(a, HandlerAction::DeliverResponse { .. })
    });
    take(world, &mut state, &mut path, |a| {
        matches!(a, HandlerAction::Send { .. })
    });
    (path, state)
}

#[test]
fn a_trace_replayed_on_a_design_whose_calls_differ_stops_there_and_says_why() {
    let unfenced = world(false);
    let (path, _) = race(&unfenced);
    // On its own design the trace replays to its end.
    assert!(replay_path(&unfenced, &path, None).is_ok());
    // The fenced design makes the same calls up to the update, which is a compare-and-set there.
    let diverged = replay_path(&world(true), &path, None).expect_err("the update differs");
    assert_eq!(diverged.step, 6, "{diverged}");
    assert_eq!(
        diverged.reason,
        "the calls differ: P1's next step here is `update keys[k0] = done if it holds claimed` \
         (update-if-holds on keys[k0]); in the trace it was update on keys[k0]"
    );
    assert!(diverged
        .to_string()
        .starts_with("the trace diverges at step 6: "));
}

#[test]
fn a_step_records_the_call_kind_and_key_not_the_value() {
    let (path, _) = race(&world(false));
    let made: Vec<String> = path
        .iter()
        .filter_map(|action| match action {
            HandlerAction::Step { made, .. } => Some(made.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        made,
        [
            "insert-if-absent on keys[k0]",
            "update on keys[k0]",
            "insert-if-absent on keys[k0]",
            "answer 409"
        ]
    );
    let begin = Made::of(&crate::handler::Next::Call(crate::handler::Call::Begin));
    assert_eq!((begin.kind, begin.key), ("BEGIN", None));
    let ended = Made::of(&crate::handler::Next::Reply(Reply::new(0, "")));
    assert_eq!(ended.to_string(), "end-of-run");
}

#[test]
fn steps_print_retry_after_waits_clock_moves_and_overwritten_values() {
    let unfenced = world(false);
    let (path, _) = race(&unfenced);
    let text: Vec<String> = timeline(&unfenced, &path)
        .unwrap()
        .steps
        .into_iter()
        .map(|step| step.text)
        .collect();
    assert_eq!(text[5], "P1 update keys[k0] = done (replaces claimed)");
    assert_eq!(
        text[9],
        "C1.op1 sends attempt 3 (key k0) after waiting 500 ms (Retry-After); clock 0 ms -> 500 ms"
    );
    // Its twin without Retry-After sends at once: no wait, no clock.
    let mut at_once = world(false);
    at_once.retry_after_ms = None;
    let (path, _) = race(&at_once);
    let last = timeline(&at_once, &path).unwrap().steps.pop().unwrap().text;
    assert_eq!(last, "C1.op1 sends attempt 3 (key k0)");
}

#[test]
fn a_pause_prints_the_clock_and_a_failed_compare_and_set_what_it_found() {
    let fenced = world(true);
    let mut state = fenced.init_state();
    let mut path = Vec::new();
    take(&fenced, &mut state, &mut path, |a| {
        matches!(a, HandlerAction::Send { .. })
    });
    take(&fenced, &mut state, &mut path, |a| {
        matches!(a, HandlerAction::DeliverRequest { .. })
    });
    take(&fenced, &mut state, &mut path, |a| {
        matches!(a, HandlerAction::Step { .. })
    });
    take(&fenced, &mut state, &mut path, |a| {
        matches!(a, HandlerAction::Pause)
    });
    // Another writer changed the record meanwhile: the compare-and-set finds it and writes nothing.
    let place = ("keys".to_string(), "k0".to_string());
    state.store.rows.insert(place, ("taken".to_string(), 0));
    let update = fenced.step_action(&state, 0).expect("P1 is busy");
    let mut after = state.clone();
    let observed = fenced.apply(&mut after, &update);
    assert_eq!(
        fenced.describe_step(&state, &update, &after, observed),
        "P1 update keys[k0] = done if it holds claimed (it holds taken: nothing written)"
    );
    let run = timeline(&fenced, &path).unwrap();
    assert_eq!(
        run.steps[3].text,
        "a busy process is paused for 60000 ms; clock 0 ms -> 60000 ms"
    );
}
