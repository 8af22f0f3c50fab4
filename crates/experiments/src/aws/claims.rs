//! The AWS post's claims (docs/src/domain.md section 7), each turned into a test on the sweep's summary.
//!
//! Vague words get explicit thresholds, stated in each claim's `criterion`, so a reader can
//! disagree with the threshold rather than with a hidden judgement.

use super::sweep::{find_cell, CellSummary};
use super::world::AwsParams;
use crate::backoff::Strategy;
use crate::claim::{Claim, ClaimVerdict};
use crate::sim::stats::log_log_slope;

/// Multi-point claims are judged from this client count up: below it there is too little
/// contention for the strategies to separate (at 10 clients they all finish in a few rounds).
pub const CONTENTION_CLIENTS_MIN: u32 = 50;

/// "About the same" work: means within this relative difference.
pub const SAME_WORK_TOLERANCE: f64 = 0.15;

/// "Much longer": at least this ratio of mean completion times.
pub const MUCH_LONGER_RATIO: f64 = 1.2;

/// "O(N^2) growth": a fitted exponent of calls against clients at least this high.
pub const QUADRATIC_EXPONENT_MIN: f64 = 1.7;

const NONE: Strategy = Strategy::None;
const EXPO: Strategy = Strategy::Exponential;
const EQUAL: Strategy = Strategy::EqualJitter;
const FULL: Strategy = Strategy::FullJitter;
const DECOR: Strategy = Strategy::Decorrelated { growth: 3 };

/// The five cells of the post's strategies at one client count.
struct Column<'a> {
    clients: u32,
    none: &'a CellSummary,
    expo: &'a CellSummary,
    equal: &'a CellSummary,
    full: &'a CellSummary,
    decor: &'a CellSummary,
}

fn columns(cells: &[CellSummary]) -> Vec<Column<'_>> {
    let mut clients: Vec<u32> = cells.iter().map(|c| c.clients).collect();
    clients.sort_unstable();
    clients.dedup();
    clients
        .into_iter()
        .filter_map(|n| {
            Some(Column {
                clients: n,
                none: find_cell(cells, NONE, n)?,
                expo: find_cell(cells, EXPO, n)?,
                equal: find_cell(cells, EQUAL, n)?,
                full: find_cell(cells, FULL, n)?,
                decor: find_cell(cells, DECOR, n)?,
            })
        })
        .collect()
}

/// Judges a per-client-count condition over the contended columns.
fn over_contended(
    columns: &[Column<'_>],
    statement: &'static str,
    criterion: String,
    holds: impl Fn(&Column<'_>) -> bool,
    describe: impl Fn(&Column<'_>) -> String,
) -> Claim {
    let contended: Vec<&Column<'_>> = columns
        .iter()
        .filter(|c| c.clients >= CONTENTION_CLIENTS_MIN)
        .collect();
    if contended.is_empty() {
        return Claim::not_tested(statement, criterion);
    }
    let failing: Vec<u32> = contended
        .iter()
        .filter(|c| !holds(c))
        .map(|c| c.clients)
        .collect();
    let verdict = if failing.is_empty() {
        ClaimVerdict::Reproduced
    } else if failing.len() * 2 <= contended.len() {
        ClaimVerdict::Partly
    } else {
        ClaimVerdict::NotReproduced
    };
    // Evidence at the middle contended point and at the largest one.
    let middle = contended[contended.len() / 2];
    let last = contended[contended.len() - 1];
    let mut evidence = format!(
        "holds at {} of {} client counts >= {CONTENTION_CLIENTS_MIN}",
        contended.len() - failing.len(),
        contended.len()
    );
    if !failing.is_empty() {
        evidence += &format!(" (fails at {failing:?})");
    }
    evidence += &format!("; {}", describe(middle));
    if last.clients != middle.clients {
        evidence += &format!("; {}", describe(last));
    }
    Claim::new(statement, criterion, verdict, evidence)
}

fn calls(c: &CellSummary) -> f64 {
    c.calls.mean
}

fn time(c: &CellSummary) -> f64 {
    c.time_ms.mean
}

/// Evaluates every claim of the post and its known critiques on the summaries of a sweep.
pub fn evaluate(cells: &[CellSummary]) -> Vec<Claim> {
    let cols = columns(cells);
    vec![
        exponential_loses(&cols),
        full_and_equal_work(&cols),
        equal_takes_longer(&cols),
        full_against_decorrelated(&cols),
        full_halves_calls_at_100(&cols),
        growth_claim(cells),
        no_backoff_fastest(&cols),
    ]
}

/// Exponential without jitter: more calls and more time than every jittered strategy.
fn exponential_loses(cols: &[Column<'_>]) -> Claim {
    over_contended(
        cols,
        "Exponential backoff without jitter is the clear loser: more work and far more time than the jittered strategies.",
        "at each client count, exponential's mean calls and mean completion time exceed those of equal, full and decorrelated jitter".into(),
        |c| {
            let jittered = [c.equal, c.full, c.decor];
            jittered.iter().all(|j| calls(c.expo) > calls(j) && time(c.expo) > time(j))
        },
        |c| {
            let worst_calls = calls(c.equal).max(calls(c.full)).max(calls(c.decor));
            let worst_time = time(c.equal).max(time(c.full)).max(time(c.decor));
            format!(
                "N={}: exponential {:.0} calls, {:.0} ms vs the worst jittered {:.0} calls, {:.0} ms ({:.1}x the time)",
                c.clients, calls(c.expo), time(c.expo), worst_calls, worst_time, time(c.expo) / worst_time
            )
        },
    )
}

/// Full and equal jitter about the same work, decorrelated more.
fn full_and_equal_work(cols: &[Column<'_>]) -> Claim {
    over_contended(
        cols,
        "Full and equal jitter do about the same work; decorrelated jitter does more.",
        format!(
            "equal's mean calls within {:.0}% of full's, and decorrelated's above both",
            SAME_WORK_TOLERANCE * 100.0
        ),
        |c| {
            (calls(c.equal) / calls(c.full) - 1.0).abs() <= SAME_WORK_TOLERANCE
                && calls(c.decor) > calls(c.full).max(calls(c.equal))
        },
        |c| {
            format!(
                "N={}: full {:.0}, equal {:.0}, decorrelated {:.0} calls",
                c.clients,
                calls(c.full),
                calls(c.equal),
                calls(c.decor)
            )
        },
    )
}

fn equal_takes_longer(cols: &[Column<'_>]) -> Claim {
    over_contended(
        cols,
        "Equal jitter takes much longer to finish than full jitter.",
        format!("equal's mean completion time at least {MUCH_LONGER_RATIO}x full's"),
        |c| time(c.equal) >= MUCH_LONGER_RATIO * time(c.full),
        |c| {
            format!(
                "N={}: equal {:.0} ms vs full {:.0} ms ({:.2}x)",
                c.clients,
                time(c.equal),
                time(c.full),
                time(c.equal) / time(c.full)
            )
        },
    )
}

/// Full jitter: fewer calls than decorrelated but more time; where the times are within the
/// noise, the evidence says so.
fn full_against_decorrelated(cols: &[Column<'_>]) -> Claim {
    let mut full_vs_decor = over_contended(
        cols,
        "Full jitter does less work than decorrelated jitter but takes slightly more time.",
        "full's mean calls below decorrelated's and full's mean completion time above decorrelated's".into(),
        |c| calls(c.full) < calls(c.decor) && time(c.full) > time(c.decor),
        |c| {
            format!(
                "N={}: full {:.0} calls, {:.0} ms vs decorrelated {:.0} calls, {:.0} ms",
                c.clients, calls(c.full), time(c.full), calls(c.decor), time(c.decor)
            )
        },
    );
    let overlapping: Vec<u32> = cols
        .iter()
        .filter(|c| c.clients >= CONTENTION_CLIENTS_MIN)
        .filter(|c| {
            (time(c.full) - time(c.decor)).abs() <= c.full.time_ms.ci95 + c.decor.time_ms.ci95
        })
        .map(|c| c.clients)
        .collect();
    if !overlapping.is_empty() {
        full_vs_decor.evidence +=
            &format!("; the two times' 95% intervals overlap at N = {overlapping:?}");
    }
    full_vs_decor
}

fn full_halves_calls_at_100(cols: &[Column<'_>]) -> Claim {
    let statement =
        "At 100 clients, full jitter cuts calls by more than half against plain exponential.";
    let Some(c) = cols.iter().find(|c| c.clients == 100) else {
        return Claim::not_tested(statement, "needs the 100-client cells");
    };
    let ratio = calls(c.full) / calls(c.expo);
    // Conservative: the upper end of full's interval against the lower end of exponential's.
    let conservative = c.full.calls.high() / c.expo.calls.low();
    Claim {
        statement: statement.into(),
        criterion: "mean calls of full jitter below 0.5x exponential's at 100 clients, also comparing the ends of the 95% intervals".into(),
        verdict: if conservative < 0.5 {
            ClaimVerdict::Reproduced
        } else if ratio < 0.5 {
            ClaimVerdict::Partly
        } else {
            ClaimVerdict::NotReproduced
        },
        evidence: format!(
            "full {:.0} ± {:.0} vs exponential {:.0} ± {:.0} calls: ratio {:.2} (interval ends {:.2})",
            c.full.calls.mean, c.full.calls.ci95, c.expo.calls.mean, c.expo.calls.ci95, ratio, conservative
        ),
    }
}

/// The critique: no backoff finishes first and does the most work.
fn no_backoff_fastest(cols: &[Column<'_>]) -> Claim {
    over_contended(
        cols,
        "Critique: work trades against time; no backoff is the fastest to finish (and does the most work).",
        "at each client count, none's mean completion time is the lowest of the five and its mean calls the highest".into(),
        |c| {
            let others = [c.expo, c.equal, c.full, c.decor];
            others.iter().all(|o| time(c.none) < time(o) && calls(c.none) > calls(o))
        },
        |c| {
            let fastest_other = time(c.expo).min(time(c.equal)).min(time(c.full)).min(time(c.decor));
            format!(
                "N={}: none {:.0} ms with {:.0} calls vs the fastest backoff {:.0} ms",
                c.clients, time(c.none), calls(c.none), fastest_other
            )
        },
    )
}

/// "No strategy changes the O(N^2) growth of work": fit `calls ~ N^k` per strategy.
fn growth_claim(cells: &[CellSummary]) -> Claim {
    let statement = "No strategy changes the O(N^2) growth of work.";
    let criterion = format!(
        "least-squares exponent k of mean calls ~ N^k over client counts >= {CONTENTION_CLIENTS_MIN}, at least {QUADRATIC_EXPONENT_MIN} for every strategy"
    );
    let mut exponents = Vec::new();
    for strategy in Strategy::POST {
        let points: Vec<(f64, f64)> = cells
            .iter()
            .filter(|c| c.strategy == strategy && c.clients >= CONTENTION_CLIENTS_MIN)
            .map(|c| (f64::from(c.clients), c.calls.mean))
            .collect();
        if points.len() < 3 {
            return Claim::not_tested(statement, criterion);
        }
        let tail = &points[points.len().saturating_sub(5)..];
        exponents.push((strategy, log_log_slope(&points), log_log_slope(tail)));
    }
    let quadratic = exponents
        .iter()
        .filter(|(_, k, _)| *k >= QUADRATIC_EXPONENT_MIN)
        .count();
    Claim {
        statement: statement.into(),
        criterion,
        verdict: if quadratic == exponents.len() {
            ClaimVerdict::Reproduced
        } else if quadratic * 2 >= exponents.len() {
            ClaimVerdict::Partly
        } else {
            ClaimVerdict::NotReproduced
        },
        evidence: exponents
            .iter()
            .map(|(s, k, k_tail)| format!("{s} k={k:.2} (last 5 client counts: {k_tail:.2})"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The critique that decorrelated jitter sticks to the cap about 2/3 of the time, judged on
/// `draws` consecutive delays of one client ([`super::world::cap_stickiness`]).
pub fn cap_claim(
    params: &AwsParams,
    draws: u32,
    at_cap_share: f64,
    stay_share: Option<f64>,
) -> Claim {
    let stay = stay_share.map_or("n/a".to_string(), |s| format!("{:.1}%", s * 100.0));
    Claim::new(
        "Critique: decorrelated jitter sticks to the cap about 2/3 of the time.",
        format!("share of delays equal to the cap over {draws} consecutive retries of one client"),
        if at_cap_share > 0.5 {
            ClaimVerdict::Reproduced
        } else {
            ClaimVerdict::Partly
        },
        format!(
            "a delay at the cap is followed by another delay exactly at the cap {stay} of the time (theory (3 cap - cap)/(3 cap - base) = {:.1}%), \
             but only {:.1}% of all delays sit at the cap, because a draw below the cap takes several retries to climb back",
            (2.0 * params.cap_ms) / (3.0 * params.cap_ms - params.base_ms) * 100.0,
            at_cap_share * 100.0
        ),
    )
}

/// The client count the README's "beyond the post" figures are quoted at: 100 if in the grid
/// (the post's reference point), else the largest.
pub fn reference_clients(clients: &[u32]) -> u32 {
    if clients.contains(&100) {
        100
    } else {
        *clients.last().expect("validated non-empty")
    }
}

/// Where no backoff wins: on completion time, and at what cost in calls against full jitter.
#[derive(Clone, Debug, PartialEq)]
pub struct NoneWins {
    /// No backoff finishes strictly first at every client count that has its cell.
    pub fastest_everywhere: bool,
    /// (clients, none's calls / full jitter's, full jitter's time / none's), by client count.
    pub against_full: Vec<(u32, f64, f64)>,
}

pub fn none_wins(cells: &[CellSummary], clients: &[u32]) -> NoneWins {
    let mut fastest_everywhere = true;
    let mut against_full = Vec::new();
    for &n in clients {
        let Some(none) = find_cell(cells, NONE, n) else {
            continue;
        };
        let others: Vec<&CellSummary> = Strategy::POST[1..]
            .iter()
            .filter_map(|&s| find_cell(cells, s, n))
            .collect();
        if others.iter().any(|o| o.time_ms.mean <= none.time_ms.mean) {
            fastest_everywhere = false;
        }
        if let Some(full) = find_cell(cells, FULL, n) {
            against_full.push((
                n,
                none.calls.mean / full.calls.mean,
                full.time_ms.mean / none.time_ms.mean,
            ));
        }
    }
    NoneWins {
        fastest_everywhere,
        against_full,
    }
}

/// The post's strategy that serves the median client first and the one that serves the p99
/// client first at `n` clients, with their mean latencies.
pub fn fastest_clients(
    cells: &[CellSummary],
    n: u32,
) -> Option<((Strategy, f64), (Strategy, f64))> {
    let best = |f: fn(&CellSummary) -> f64| {
        Strategy::POST
            .iter()
            .filter_map(|&s| find_cell(cells, s, n))
            .min_by(|a, b| f(a).total_cmp(&f(b)))
            .map(|c| (c.strategy, f(c)))
    };
    Some((
        best(|c| c.latency_ms_p50.mean)?,
        best(|c| c.latency_ms_p99.mean)?,
    ))
}

/// "About the same" work for the growth-equalised decorrelated jitter: mean calls at most this
/// ratio of full jitter's.
pub const EQUALISED_SAME_WORK_RATIO_MAX: f64 = 1.05;

/// How the decorrelated jitter with its mean growth equalised (x4) compares with full jitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EqualisedWork {
    /// Fewer calls: the post's extra work came from its slower growth.
    Less,
    /// Within [`EQUALISED_SAME_WORK_RATIO_MAX`], not fewer: the same conclusion.
    AboutTheSame,
    /// More calls: decorrelation itself costs work.
    More,
}

/// The decorrelated variants against full jitter at one client count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decorrelated<'a> {
    pub full: &'a CellSummary,
    pub x3: &'a CellSummary,
    pub x2: &'a CellSummary,
    pub x4: &'a CellSummary,
    pub capped: &'a CellSummary,
    pub x4_work: EqualisedWork,
}

/// None unless the grid has every variant's cell at `n` clients.
pub fn decorrelated(cells: &[CellSummary], n: u32) -> Option<Decorrelated<'_>> {
    let get = |s| find_cell(cells, s, n);
    let (full, x4) = (get(FULL)?, get(Strategy::Decorrelated { growth: 4 })?);
    let x4_work = if x4.calls.mean <= full.calls.mean * EQUALISED_SAME_WORK_RATIO_MAX {
        if x4.calls.mean < full.calls.mean {
            EqualisedWork::Less
        } else {
            EqualisedWork::AboutTheSame
        }
    } else {
        EqualisedWork::More
    };
    Some(Decorrelated {
        full,
        x3: get(DECOR)?,
        x2: get(Strategy::Decorrelated { growth: 2 })?,
        x4,
        capped: get(Strategy::DecorrelatedCapped { growth: 3 })?,
        x4_work,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(strategy: Strategy, calls: f64, time_ms: f64) -> CellSummary {
        CellSummary::exact(strategy, 100, calls, time_ms)
    }

    fn post(none_time_ms: f64) -> Vec<CellSummary> {
        vec![
            cell(NONE, 5000.0, none_time_ms),
            cell(EXPO, 3000.0, 9000.0),
            cell(EQUAL, 1500.0, 3000.0),
            cell(FULL, 1000.0, 2000.0),
            cell(DECOR, 1200.0, 1900.0),
        ]
    }

    /// No backoff wins on time only while it finishes strictly first: a twin where full jitter
    /// ties it is not "at every client count".
    #[test]
    fn no_backoff_wins_only_when_strictly_first() {
        let wins = none_wins(&post(500.0), &[100]);
        assert!(wins.fastest_everywhere);
        assert_eq!(wins.against_full, vec![(100, 5.0, 4.0)]);
        assert!(!none_wins(&post(2000.0), &[100]).fastest_everywhere);
        let ((p50, _), (p99, _)) = fastest_clients(&post(500.0), 100).unwrap();
        assert_eq!((p50, p99), (NONE, NONE));
        assert_eq!(fastest_clients(&post(500.0), 50), None);
    }

    /// The x4 variant's work against full jitter's 1000 calls: fewer, within 5%, more.
    #[test]
    fn equalised_decorrelated_work_is_judged_against_full_jitter() {
        let judged = |x4_calls: f64| {
            let mut cells = post(500.0);
            cells.push(cell(Strategy::Decorrelated { growth: 2 }, 4000.0, 4000.0));
            cells.push(cell(Strategy::Decorrelated { growth: 4 }, x4_calls, 2000.0));
            cells.push(cell(
                Strategy::DecorrelatedCapped { growth: 3 },
                1100.0,
                2000.0,
            ));
            decorrelated(&cells, 100).map(|d| d.x4_work)
        };
        assert_eq!(judged(900.0), Some(EqualisedWork::Less));
        assert_eq!(judged(1040.0), Some(EqualisedWork::AboutTheSame));
        assert_eq!(judged(1100.0), Some(EqualisedWork::More));
        assert_eq!(decorrelated(&post(500.0), 100), None);
    }
}
