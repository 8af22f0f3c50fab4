//! metastability's claims and the comparison its README shows, made once on the cells: which
//! policies stay collapsed after the capacity drop (plain retries, busy for nobody) and which
//! recover (no retries and every retry control).

use super::metastability::Cell;
use crate::claim::{Claim, ClaimVerdict};
use crate::client::PolicyKind;

/// "Busy for nobody": in the last 10 s of a collapsed run the server finishes at least this many
/// times the requests that reach a waiting client.
pub const WASTE_RATIO_MIN: f64 = 10.0;

impl Cell {
    /// Collapsed in at least half of the runs.
    pub fn stays_collapsed(&self) -> bool {
        2 * self.collapsed_runs() >= self.recoveries.len()
    }

    /// The count of collapsed runs of a policy that recovers, when there is one to mention.
    pub fn some_runs_collapsed(&self) -> Option<usize> {
        Some(self.collapsed_runs()).filter(|&n| n > 0)
    }
}

/// The policies, split by whether they stay collapsed, each in grid order.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition<'a> {
    pub collapsed: Vec<&'a Cell>,
    pub recovered: Vec<&'a Cell>,
}

pub fn partition(cells: &[Cell]) -> Partition<'_> {
    let (collapsed, recovered) = cells.iter().partition(|c| c.stays_collapsed());
    Partition {
        collapsed,
        recovered,
    }
}

/// Plain retries stay collapsed, busy for nobody; no retries and every retry control recover.
pub fn claims(cells: &[Cell]) -> Vec<Claim> {
    let three = cells.iter().find(|c| c.policy == PolicyKind::ThreeRetries);
    vec![
        stays_collapsed(three),
        busy_for_nobody(three),
        others_recover(cells),
    ]
}

/// Plain retries keep the server collapsed after capacity is back.
fn stays_collapsed(three: Option<&Cell>) -> Claim {
    let statement =
        "Plain retries keep the server collapsed after its capacity is back (metastable).";
    let criterion = "3-retries collapsed in at least half of the runs";
    match three {
        None => Claim::not_tested(statement, criterion),
        Some(c) => Claim::new(
            statement,
            criterion,
            ClaimVerdict::of(c.stays_collapsed()),
            format!(
                "collapsed in {} of {} runs",
                c.collapsed_runs(),
                c.recoveries.len()
            ),
        ),
    }
}

/// While collapsed, the server is busy with answers nobody waits for.
fn busy_for_nobody(three: Option<&Cell>) -> Claim {
    let statement = "While collapsed, the server works at full speed on answers nobody waits for.";
    let criterion =
        format!("3-retries' throughput in the last 10 s at least {WASTE_RATIO_MIN}x its goodput");
    match three {
        None => Claim::not_tested(statement, criterion),
        Some(c) => Claim::new(
            statement,
            criterion,
            ClaimVerdict::of(
                c.throughput_end.mean >= WASTE_RATIO_MIN * c.goodput_end.mean.max(1.0),
            ),
            format!(
                "goodput {:.0}/s, throughput {:.0}/s",
                c.goodput_end.mean, c.throughput_end.mean
            ),
        ),
    }
}

/// No retries and every retry control let the server recover.
fn others_recover(cells: &[Cell]) -> Claim {
    let statement = "No retries and every retry control let the server recover.";
    let criterion = "every other policy recovers in more than half of its runs";
    let others: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.policy != PolicyKind::ThreeRetries)
        .collect();
    if others.is_empty() {
        return Claim::not_tested(statement, criterion);
    }
    let mut evidence: Vec<String> = others
        .iter()
        .map(|c| match c.recovery_ms() {
            Some(e) => format!(
                "{} {:.1} s ({} of {} runs collapsed)",
                c.policy,
                e.mean / 1000.0,
                c.collapsed_runs(),
                c.recoveries.len()
            ),
            None => format!("{} never recovered", c.policy),
        })
        .collect();
    evidence.sort();
    Claim::new(
        statement,
        criterion,
        ClaimVerdict::of(others.iter().all(|c| !c.stays_collapsed())),
        format!("recovery after capacity is back: {}", evidence.join(", ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::Recovery;
    use crate::sim::stats::Estimate;

    fn cell(policy: PolicyKind, collapsed_runs: usize) -> Cell {
        let exact = |mean| Estimate {
            mean,
            sd: 0.0,
            ci95: 0.0,
        };
        let mut recoveries = vec![Recovery::After { ms: 1500.0 }; 4 - collapsed_runs];
        recoveries.extend(vec![Recovery::Collapsed; collapsed_runs]);
        Cell {
            policy,
            goodput_per_s: Vec::new(),
            throughput_per_s: Vec::new(),
            recoveries,
            success_rate: exact(0.5),
            goodput_end: exact(5.0),
            throughput_end: exact(300.0),
        }
    }

    /// Collapsed in half the runs is "stays collapsed"; one run fewer is "recovers", and the
    /// claims follow the partition.
    #[test]
    fn the_partition_splits_at_half_the_runs() {
        let cells = [
            cell(PolicyKind::ThreeRetries, 2),
            cell(PolicyKind::NoRetries, 1),
        ];
        let split = partition(&cells);
        assert_eq!(split.collapsed, vec![&cells[0]]);
        assert_eq!(split.recovered, vec![&cells[1]]);
        assert_eq!(cells[1].some_runs_collapsed(), Some(1));
        assert_eq!(cell(PolicyKind::NoRetries, 0).some_runs_collapsed(), None);
        assert!(claims(&cells)
            .iter()
            .all(|c| c.verdict == ClaimVerdict::Reproduced));
        let twin = [
            cell(PolicyKind::ThreeRetries, 1),
            cell(PolicyKind::NoRetries, 2),
        ];
        assert_eq!(partition(&twin).collapsed, vec![&twin[1]]);
        assert!(claims(&twin)
            .iter()
            .all(|c| c.statement.starts_with("While") || c.verdict == ClaimVerdict::NotReproduced));
    }
}
