//! retry-safety's claims and the comparisons its README shows, made once on the cells: with the
//! key no duplicate though the dangerous case happened, without it every strategy duplicates, and
//! where the strategies part most.

use super::safety::{find, Cell};
use crate::backoff::Strategy;
use crate::claim::{Claim, ClaimVerdict};

/// The timeout the README quotes figures at: 100 ms if swept, else the first.
pub fn quoted_timeout_ms(timeouts_ms: &[u32]) -> u32 {
    if timeouts_ms.contains(&100) {
        100
    } else {
        timeouts_ms[0]
    }
}

/// Duplicate effects over every run, per key mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals {
    pub with_key: u64,
    pub no_key: u64,
}

pub fn totals(cells: &[Cell]) -> Totals {
    let sum = |key: bool| {
        cells
            .iter()
            .filter(|c| c.at.key == key)
            .map(|c| c.duplicate_total)
            .sum()
    };
    Totals {
        with_key: sum(true),
        no_key: sum(false),
    }
}

/// The no-key timeout where the strategies' mean duplicates lie furthest apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub timeout_ms: u32,
    /// (strategy, duplicates per 1000 requests) with the fewest and the most.
    pub low: (Strategy, f64),
    pub high: (Strategy, f64),
}

/// Where the strategies part most, over the timeouts swept (none when no timeout has a no-key cell).
pub fn widest_spread(cells: &[Cell], timeouts_ms: &[u32]) -> Option<Spread> {
    timeouts_ms
        .iter()
        .filter_map(|&timeout_ms| {
            let values: Vec<(Strategy, f64)> = Strategy::POST
                .iter()
                .filter_map(|&s| Some((s, find(cells, s, false, timeout_ms)?.duplicates.mean)))
                .collect();
            let low = values.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
            let high = values.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            Some(Spread {
                timeout_ms,
                low: *low,
                high: *high,
            })
        })
        .max_by(|a, b| (a.high.1 - a.low.1).total_cmp(&(b.high.1 - b.low.1)))
}

/// With the key no duplicate, though the dangerous case happened; without it, every strategy
/// duplicates.
pub fn claims(cells: &[Cell]) -> Vec<Claim> {
    let mut claims = Vec::new();
    let with_key: Vec<&Cell> = cells.iter().filter(|c| c.at.key).collect();
    let statement = "With an idempotency key no request takes effect twice.";
    let criterion = "0 duplicate effects over every with-key run, and with-key runs did time out on attempts the server executed (the dangerous case was reached)";
    claims.push(if with_key.is_empty() {
        Claim::not_tested(statement, criterion)
    } else {
        let total: u64 = with_key.iter().map(|c| c.duplicate_total).sum();
        let reached = with_key.iter().any(|c| c.timed_out_executed.mean > 0.0);
        Claim::new(
            statement,
            criterion,
            ClaimVerdict::of(total == 0 && reached),
            format!(
                "{total} duplicate effects in {} cells; timed out but executed, per 1000 requests, up to {:.1}",
                with_key.len(),
                with_key.iter().map(|c| c.timed_out_executed.mean).fold(0.0, f64::max)
            ),
        )
    });
    let statement = "Without a key every backoff strategy duplicates effects: backoff changes how many attempts time out, not whether one executed.";
    let criterion = "duplicate effects in the no-key runs of each of the post's five strategies";
    let per_strategy: Vec<(Strategy, u64)> = Strategy::POST
        .iter()
        .map(|&s| {
            (
                s,
                cells
                    .iter()
                    .filter(|c| !c.at.key && c.at.strategy == s)
                    .map(|c| c.duplicate_total)
                    .sum(),
            )
        })
        .collect();
    claims.push(if cells.iter().all(|c| c.at.key) {
        Claim::not_tested(statement, criterion)
    } else {
        let evidence: Vec<String> = per_strategy
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
        Claim::new(
            statement,
            criterion,
            ClaimVerdict::of(per_strategy.iter().all(|(_, n)| *n > 0)),
            format!(
                "duplicate effects over all no-key runs: {}",
                evidence.join(", ")
            ),
        )
    });
    claims
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::safety::CellKey;
    use crate::sim::stats::Estimate;

    fn cell(strategy: Strategy, key: bool, timeout_ms: u32, duplicates: f64) -> Cell {
        let exact = |mean| Estimate {
            mean,
            sd: 0.0,
            ci95: 0.0,
        };
        Cell {
            at: CellKey {
                strategy,
                key,
                timeout_ms,
            },
            duplicates: exact(duplicates),
            timed_out_executed: exact(if key { 3.0 } else { duplicates }),
            success_rate: exact(0.9),
            duplicate_total: if key { 0 } else { duplicates as u64 },
        }
    }

    /// The widest spread is where the strategies' no-key duplicates lie furthest apart; with
    /// the spread moved to the other timeout, the finding moves with it.
    #[test]
    fn the_widest_spread_follows_the_figures() {
        let grid = |low_at_100: f64| {
            vec![
                cell(Strategy::None, false, 50, 10.0),
                cell(Strategy::FullJitter, false, 50, 12.0),
                cell(Strategy::None, false, 100, low_at_100),
                cell(Strategy::FullJitter, false, 100, 9.0),
                cell(Strategy::None, true, 100, 0.0),
            ]
        };
        let spread = widest_spread(&grid(1.0), &[50, 100]).unwrap();
        assert_eq!(spread.timeout_ms, 100);
        assert_eq!(spread.low, (Strategy::None, 1.0));
        assert_eq!(spread.high, (Strategy::FullJitter, 9.0));
        assert_eq!(
            widest_spread(&grid(8.0), &[50, 100]).unwrap().timeout_ms,
            50
        );
        assert_eq!(quoted_timeout_ms(&[50, 150]), 50);
        assert_eq!(quoted_timeout_ms(&[50, 100]), 100);
        let totals = totals(&grid(1.0));
        assert_eq!((totals.with_key, totals.no_key), (0, 32));
        // The claims on the same cells: the key holds; a twin where a with-key cell duplicates fails.
        assert_eq!(claims(&grid(1.0))[0].verdict, ClaimVerdict::Reproduced);
        let mut broken = grid(1.0);
        broken[4].duplicate_total = 1;
        assert_eq!(claims(&broken)[0].verdict, ClaimVerdict::NotReproduced);
    }
}
