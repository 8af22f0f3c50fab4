//! What the dedup-window README says about the places, judged on the cells: the order of the
//! places by how often an event takes effect twice (the model checker's verdicts on
//! `models/queue-*.toml`, in probabilities).

use super::find;
use super::world::{Cause, Cell, Config, Place};
use crate::claim::{Claim, ClaimVerdict};

/// "Protects" / "fails": a probability difference of at least this much between two cells.
pub const CLEAR_DIFFERENCE: f64 = 0.5;

/// "Never recognises": duplicates in more than this share of events.
pub const ALMOST_ALWAYS: f64 = 0.9;

/// "Only through crashes": duplicates in fewer than this share of events.
pub const RARE: f64 = 0.2;

/// The largest P(duplicate) over the cells of `place` (none when the grid has none).
pub fn max_over(cells: &[Cell], place: Place) -> Option<f64> {
    cells
        .iter()
        .filter(|cell| cell.place == place)
        .map(Cell::probability)
        .reduce(f64::max)
}

/// The smallest ratio inside the window and the largest past it, if the grid has both.
fn inside_and_past(config: &Config) -> Option<(f64, f64)> {
    let inside = config.ratios.iter().copied().find(|&r| r < 1.0)?;
    let past = config.ratios.iter().copied().rev().find(|&r| r > 1.5)?;
    Some((inside, past))
}

/// The claims, from the surest place to the weakest.
pub fn evaluate(config: &Config, cells: &[Cell]) -> Vec<Claim> {
    vec![
        same_transaction_never(cells),
        window_bounds(config, cells),
        session_fails_on_restart(config, cells),
        offset_misses_copies(cells),
        after_effect_rare(cells),
    ]
}

fn probability(cells: &[Cell], cause: Cause, place: Place, ratio: f64) -> Option<f64> {
    find(cells, cause, place, ratio).map(Cell::probability)
}

fn same_transaction_never(cells: &[Cell]) -> Claim {
    match max_over(cells, Place::InboxSameTransaction) {
        None => Claim::not_tested(
            "An inbox keyed by event id in the effect's transaction never duplicates.",
            "no duplicate in any cell",
        ),
        Some(max) => Claim::new(
            "An inbox keyed by event id in the effect's transaction never duplicates.",
            "no duplicate in any cell, whatever the cause and the delay",
            ClaimVerdict::of(max == 0.0),
            format!("largest P(duplicate) over its cells {max:.3}"),
        ),
    }
}

fn window_bounds(config: &Config, cells: &[Cell]) -> Claim {
    let window = "A broker window protects only while the republish comes inside it.";
    let window_criterion = format!(
        "for both causes, P(duplicate) past the window exceeds P inside it by at least {CLEAR_DIFFERENCE}"
    );
    let Some((inside, past)) = inside_and_past(config) else {
        return Claim::not_tested(window, window_criterion);
    };
    let p = |cause, ratio| probability(cells, cause, Place::BrokerWindow, ratio);
    let pairs: Vec<(Cause, f64, f64)> = Cause::ALL
        .into_iter()
        .filter_map(|cause| Some((cause, p(cause, inside)?, p(cause, past)?)))
        .collect();
    let holds = pairs.len() == 2 && pairs.iter().all(|(_, a, b)| b - a >= CLEAR_DIFFERENCE);
    let evidence: Vec<String> = pairs
        .iter()
        .map(|(cause, a, b)| {
            format!(
                "{}: {a:.3} at {inside} x window, {b:.3} at {past} x window",
                cause.name()
            )
        })
        .collect();
    Claim::new(
        window,
        window_criterion,
        ClaimVerdict::of(holds),
        evidence.join("; "),
    )
}

fn session_fails_on_restart(config: &Config, cells: &[Cell]) -> Claim {
    let session =
        "A broker session ignores time and fails on every producer restart, however quick.";
    let session_criterion = format!(
        "at the shortest delay, P(duplicate) after a restart exceeds P after a retry by at least {CLEAR_DIFFERENCE}"
    );
    let first = config.ratios.first().copied().unwrap_or(f64::NAN);
    match (
        probability(cells, Cause::Retry, Place::BrokerSession, first),
        probability(cells, Cause::Restart, Place::BrokerSession, first),
    ) {
        (Some(retry), Some(restart)) => Claim::new(
            session,
            session_criterion,
            ClaimVerdict::of(restart - retry >= CLEAR_DIFFERENCE),
            format!("at {first} x window: retry {retry:.3}, restart {restart:.3}"),
        ),
        _ => Claim::not_tested(session, session_criterion),
    }
}

fn offset_misses_copies(cells: &[Cell]) -> Claim {
    let offset = "An inbox keyed by the broker offset does not recognise a republished copy.";
    let offset_criterion = format!("P(duplicate) above {ALMOST_ALWAYS} in every cell");
    let smallest = cells
        .iter()
        .filter(|cell| cell.place == Place::InboxOffset)
        .map(Cell::probability)
        .reduce(f64::min);
    match smallest {
        None => Claim::not_tested(offset, offset_criterion),
        Some(min) => Claim::new(
            offset,
            offset_criterion,
            ClaimVerdict::of(min > ALMOST_ALWAYS),
            format!("smallest P(duplicate) over its cells {min:.3}"),
        ),
    }
}

fn after_effect_rare(cells: &[Cell]) -> Claim {
    let after = "An inbox written after the effect duplicates only through crashes between the two, whatever the delay.";
    let after_criterion = format!(
        "P(duplicate) below {RARE} in every cell, and above the same-transaction inbox's somewhere"
    );
    match (
        max_over(cells, Place::InboxAfterEffect),
        max_over(cells, Place::InboxSameTransaction),
    ) {
        (Some(after_max), Some(same_max)) => Claim::new(
            after,
            after_criterion,
            ClaimVerdict::of(after_max < RARE && after_max > same_max),
            format!("largest P(duplicate) {after_max:.3} (same transaction: {same_max:.3})"),
        ),
        _ => Claim::not_tested(after, after_criterion),
    }
}
