//! Brooker (2022)'s findings and the SRE book's, judged on the retry-budget cells: the ordering of
//! the policies by load amplification, and what retries buy at a low failure rate. Every
//! comparison of the experiment is made here, once: [`findings`] holds the ones the README's prose
//! also shows (where the controls fail to stay apart from plain retries, which controls act like
//! them at a moderate p), and [`Findings::claims`] judges them.

use super::{find, Cell, HIGH_P_PERMILLE, MODERATE_P_PERMILLE};
use crate::claim::{Claim, ClaimVerdict};
use crate::client::PolicyKind;

/// "Near no retries" at p = 1: amplification at most this.
pub const NEAR_ONE_MAX: f64 = 1.2;

/// "Like 3 retries": at least this share of their extra calls.
pub const ALIKE_SHARE_MIN: f64 = 0.95;

/// The retry controls of the grid, in grid order.
fn budgeted(cells: &[Cell]) -> Vec<PolicyKind> {
    let mut policies: Vec<PolicyKind> = cells
        .iter()
        .map(|c| c.policy)
        .filter(PolicyKind::is_budgeted)
        .collect();
    policies.dedup();
    policies
}

/// The high-p cells where a control's 95% interval is not below 3 retries'.
#[derive(Clone, Debug, PartialEq)]
pub struct HighP {
    /// Control cells at p >= [`HIGH_P_PERMILLE`] that have a 3-retries cell to compare with.
    pub judged: usize,
    /// (control, p in per mille) where the intervals are not apart.
    pub exceptions: Vec<(PolicyKind, u32)>,
}

/// One control at the moderate failure rate, against 3 retries' extra calls.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Share {
    pub policy: PolicyKind,
    pub amplification: f64,
    /// (amplification - 1) / (3 retries' amplification - 1).
    pub share: f64,
}

impl Share {
    /// Makes at least [`ALIKE_SHARE_MIN`] of 3 retries' extra calls.
    pub fn alike(&self) -> bool {
        self.share >= ALIKE_SHARE_MIN
    }
}

/// The controls at p = [`MODERATE_P_PERMILLE`].
#[derive(Clone, Debug, PartialEq)]
pub struct Moderate {
    pub three_amplification: f64,
    pub controls: Vec<Share>,
}

impl Moderate {
    /// The controls that retry like 3 retries (`true`) or cut retries (`false`).
    pub fn alike(&self, alike: bool) -> Vec<Share> {
        self.controls
            .iter()
            .filter(|c| c.alike() == alike)
            .copied()
            .collect()
    }

    fn get(&self, policy: PolicyKind) -> Option<&Share> {
        self.controls.iter().find(|c| c.policy == policy)
    }
}

/// The comparisons of the experiment, evaluated once on its cells.
#[derive(Clone, Debug)]
pub struct Findings<'a> {
    cells: &'a [Cell],
    pub high_p: HighP,
    /// None when the grid has no 3-retries cell at the moderate p.
    pub moderate: Option<Moderate>,
}

pub fn findings(cells: &[Cell]) -> Findings<'_> {
    Findings {
        cells,
        high_p: high_p(cells),
        moderate: moderate(cells),
    }
}

fn high_p(cells: &[Cell]) -> HighP {
    let mut judged = 0;
    let mut exceptions = Vec::new();
    for policy in budgeted(cells) {
        for c in cells
            .iter()
            .filter(|c| c.policy == policy && c.failure_permille >= HIGH_P_PERMILLE)
        {
            if let Some(three) = find(cells, PolicyKind::ThreeRetries, c.failure_permille) {
                judged += 1;
                if c.amplification.high() >= three.amplification.low() {
                    exceptions.push((policy, c.failure_permille));
                }
            }
        }
    }
    HighP { judged, exceptions }
}

fn moderate(cells: &[Cell]) -> Option<Moderate> {
    let three = find(cells, PolicyKind::ThreeRetries, MODERATE_P_PERMILLE)?;
    let controls = budgeted(cells)
        .into_iter()
        .filter_map(|policy| find(cells, policy, MODERATE_P_PERMILLE))
        .map(|c| Share {
            policy: c.policy,
            amplification: c.amplification.mean,
            share: (c.amplification.mean - 1.0) / (three.amplification.mean - 1.0),
        })
        .collect();
    Some(Moderate {
        three_amplification: three.amplification.mean,
        controls,
    })
}

/// The claims, in the README's order.
pub fn evaluate(cells: &[Cell]) -> Vec<Claim> {
    findings(cells).claims()
}

/// "p = 0.3" from per mille.
pub fn p_text(permille: u32) -> String {
    format!("p = {:.1}", f64::from(permille) / 1000.0)
}

impl Findings<'_> {
    pub fn claims(&self) -> Vec<Claim> {
        vec![
            self.dead_server(),
            self.controls_near_one(),
            self.high_p_claim(),
            self.sre_ratio(),
            self.low_p_pays(),
            self.moderate_claim(),
        ]
    }

    fn get(&self, policy: PolicyKind, p: u32) -> Option<&Cell> {
        find(self.cells, policy, p)
    }

    fn dead_server(&self) -> Claim {
        let statement =
            "With the server failing every call, 3 retries multiply the load by 4 (1 + 3).";
        let criterion = "mean amplification of 3-retries at p = 1 within 0.01 of 4";
        match self.get(PolicyKind::ThreeRetries, 1000) {
            None => Claim::not_tested(statement, criterion),
            Some(c) => Claim::new(
                statement,
                criterion,
                ClaimVerdict::of((c.amplification.mean - 4.0).abs() <= 0.01),
                format!("{:.3}", c.amplification.mean),
            ),
        }
    }

    fn controls_near_one(&self) -> Claim {
        let statement = "At p = 1 every retry control holds the load near that of no retries.";
        let criterion =
            format!("for every control, no-retries' amplification <= its own <= {NEAR_ONE_MAX}");
        let at_p1: Vec<&Cell> = budgeted(self.cells)
            .into_iter()
            .filter_map(|policy| self.get(policy, 1000))
            .collect();
        let none = match self.get(PolicyKind::NoRetries, 1000) {
            Some(none) if !at_p1.is_empty() => none,
            _ => return Claim::not_tested(statement, criterion),
        };
        let holds = at_p1.iter().all(|c| {
            none.amplification.mean <= c.amplification.mean && c.amplification.mean <= NEAR_ONE_MAX
        });
        let evidence: Vec<String> = at_p1
            .iter()
            .map(|c| format!("{} {:.3}", c.policy, c.amplification.mean))
            .collect();
        Claim::new(
            statement,
            criterion,
            ClaimVerdict::of(holds),
            format!(
                "no-retries {:.3}; {}",
                none.amplification.mean,
                evidence.join(", ")
            ),
        )
    }

    fn high_p_claim(&self) -> Claim {
        let statement = format!(
            "At every p >= {:.1} every retry control amplifies less than 3 retries.",
            f64::from(HIGH_P_PERMILLE) / 1000.0
        );
        let criterion = "the upper end of each control's 95% interval below the lower end of 3-retries' (partly: fails in at most half of the cells)";
        let HighP { judged, exceptions } = &self.high_p;
        if *judged == 0 {
            return Claim::not_tested(statement, criterion);
        }
        let verdict = if exceptions.is_empty() {
            ClaimVerdict::Reproduced
        } else if 2 * exceptions.len() <= *judged {
            ClaimVerdict::Partly
        } else {
            ClaimVerdict::NotReproduced
        };
        let evidence = if exceptions.is_empty() {
            format!("apart in all {judged} cells")
        } else {
            format!(
                "not apart in {} of {judged} cells: {}",
                exceptions.len(),
                self.exceptions_text()
            )
        };
        Claim::new(statement, criterion, verdict, evidence)
    }

    /// "token-bucket at p = 0.7, ..." for the high-p exceptions.
    pub fn exceptions_text(&self) -> String {
        let named: Vec<String> = self
            .high_p
            .exceptions
            .iter()
            .map(|(policy, p)| format!("{policy} at {}", p_text(*p)))
            .collect();
        named.join(", ")
    }

    fn sre_ratio(&self) -> Claim {
        let statement = "The SRE ratio holds amplification at about 1.1 at p = 1 (the SRE book's \"from ~3x to ~1.1x\").";
        let criterion = "mean amplification of sre-ratio at p = 1 in 1.05..=1.112 (a 10% ratio allows 1/0.9 = 1.111 attempts per request)";
        match self.get(PolicyKind::SreRatio, 1000) {
            None => Claim::not_tested(statement, criterion),
            Some(c) => Claim::new(
                statement,
                criterion,
                ClaimVerdict::of((1.05..=1.112).contains(&c.amplification.mean)),
                format!("{:.3}", c.amplification.mean),
            ),
        }
    }

    fn low_p_pays(&self) -> Claim {
        let statement = "At p = 0.1 retries pay off: 3 retries succeed almost always, no retries about 1 - p of the time.";
        let criterion =
            "success rate above 0.99 with 3-retries and below 0.92 with no-retries at p = 0.1";
        match (
            self.get(PolicyKind::ThreeRetries, 100),
            self.get(PolicyKind::NoRetries, 100),
        ) {
            (Some(three), Some(none)) => Claim::new(
                statement,
                criterion,
                ClaimVerdict::of(three.success_rate.mean > 0.99 && none.success_rate.mean < 0.92),
                format!(
                    "3-retries {:.4} (theory 1 - p^4 = 0.9999), no-retries {:.4}",
                    three.success_rate.mean, none.success_rate.mean
                ),
            ),
            _ => Claim::not_tested(statement, criterion),
        }
    }

    fn moderate_claim(&self) -> Claim {
        let statement = format!("At {} the 500-token AWS quota still retries like 3 retries, while gRPC throttling already cuts retries.", p_text(MODERATE_P_PERMILLE));
        let criterion = format!(
            "aws-quota makes at least {:.0}% of 3-retries' extra calls, grpc-throttle fewer",
            ALIKE_SHARE_MIN * 100.0
        );
        let Some(moderate) = &self.moderate else {
            return Claim::not_tested(statement, criterion);
        };
        let (Some(quota), Some(grpc)) = (
            moderate.get(PolicyKind::AwsQuota),
            moderate.get(PolicyKind::GrpcThrottle),
        ) else {
            return Claim::not_tested(statement, criterion);
        };
        Claim::new(
            statement,
            criterion,
            ClaimVerdict::of(quota.alike() && !grpc.alike()),
            format!(
                "amplification 3-retries {:.3}, aws-quota {:.3} ({:.0}% of the extra calls), grpc-throttle {:.3} ({:.0}%)",
                moderate.three_amplification, quota.amplification, quota.share * 100.0, grpc.amplification, grpc.share * 100.0
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::stats::Estimate;

    fn cell(policy: PolicyKind, amplification: f64) -> Cell {
        let exact = |mean| Estimate {
            mean,
            sd: 0.0,
            ci95: 0.0,
        };
        Cell {
            policy,
            failure_permille: MODERATE_P_PERMILLE,
            amplification: exact(amplification),
            success_rate: exact(0.9),
            request_count_mean: 1000.0,
        }
    }

    /// At p = 0.3 the quota must keep 95% of plain retries' extra calls and gRPC must not: the
    /// claim holds on such figures and fails when the quota cuts retries too.
    #[test]
    fn the_moderate_claim_holds_and_its_twin_with_a_cutting_quota_fails() {
        let cells = [
            cell(PolicyKind::ThreeRetries, 1.4),
            cell(PolicyKind::AwsQuota, 1.39),
            cell(PolicyKind::GrpcThrottle, 1.1),
        ];
        let judged = findings(&cells);
        assert_eq!(judged.moderate_claim().verdict, ClaimVerdict::Reproduced);
        let moderate = judged.moderate.as_ref().unwrap();
        assert_eq!(moderate.alike(true).len(), 1);
        assert_eq!(moderate.alike(false)[0].policy, PolicyKind::GrpcThrottle);
        let mut cut = cells.clone();
        cut[1] = cell(PolicyKind::AwsQuota, 1.2);
        let judged = findings(&cut);
        assert_eq!(judged.moderate_claim().verdict, ClaimVerdict::NotReproduced);
        assert!(judged.moderate.unwrap().alike(true).is_empty());
    }
}
