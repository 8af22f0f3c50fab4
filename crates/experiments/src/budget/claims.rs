//! Brooker (2022)'s findings and the SRE book's, judged on the retry-budget cells: the ordering of
//! the policies by load amplification, and what retries buy at a low failure rate.

use super::{find, Cell, HIGH_P_PERMILLE, MODERATE_P_PERMILLE};
use crate::claim::{Claim, ClaimVerdict};
use crate::client::PolicyKind;

/// "Near no retries" at p = 1: amplification at most this.
pub const NEAR_ONE_MAX: f64 = 1.2;

/// "Like 3 retries": at least this share of their extra calls.
pub const ALIKE_SHARE_MIN: f64 = 0.95;

fn budgeted(cells: &[Cell]) -> Vec<PolicyKind> {
    let mut policies: Vec<PolicyKind> = cells
        .iter()
        .map(|c| c.policy)
        .filter(PolicyKind::is_budgeted)
        .collect();
    policies.dedup();
    policies
}

pub fn evaluate(cells: &[Cell]) -> Vec<Claim> {
    let get = |policy, p| find(cells, policy, p);
    let mut claims = Vec::new();

    let statement = "With the server failing every call, 3 retries multiply the load by 4 (1 + 3).";
    let criterion = "mean amplification of 3-retries at p = 1 within 0.01 of 4";
    claims.push(match get(PolicyKind::ThreeRetries, 1000) {
        None => Claim::not_tested(statement, criterion),
        Some(c) => Claim::new(
            statement,
            criterion,
            ClaimVerdict::of((c.amplification.mean - 4.0).abs() <= 0.01),
            format!("{:.3}", c.amplification.mean),
        ),
    });

    let statement = "At p = 1 every retry control holds the load near that of no retries.";
    let criterion =
        format!("for every control, no-retries' amplification <= its own <= {NEAR_ONE_MAX}");
    let none = get(PolicyKind::NoRetries, 1000);
    let at_p1: Vec<&Cell> = budgeted(cells)
        .into_iter()
        .filter_map(|policy| get(policy, 1000))
        .collect();
    claims.push(match none {
        Some(none) if !at_p1.is_empty() => {
            let holds = at_p1.iter().all(|c| {
                none.amplification.mean <= c.amplification.mean
                    && c.amplification.mean <= NEAR_ONE_MAX
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
        _ => Claim::not_tested(statement, criterion),
    });

    let statement = format!(
        "At every p >= {:.1} every retry control amplifies less than 3 retries.",
        f64::from(HIGH_P_PERMILLE) / 1000.0
    );
    let criterion = "the upper end of each control's 95% interval below the lower end of 3-retries' (partly: fails in at most half of the cells)";
    let mut judged = 0;
    let mut exceptions = Vec::new();
    for policy in budgeted(cells) {
        for c in cells
            .iter()
            .filter(|c| c.policy == policy && c.failure_permille >= HIGH_P_PERMILLE)
        {
            if let Some(three) = get(PolicyKind::ThreeRetries, c.failure_permille) {
                judged += 1;
                if c.amplification.high() >= three.amplification.low() {
                    exceptions.push(format!(
                        "{policy} at p = {:.1}",
                        f64::from(c.failure_permille) / 1000.0
                    ));
                }
            }
        }
    }
    claims.push(if judged == 0 {
        Claim::not_tested(statement, criterion)
    } else {
        let verdict = if exceptions.is_empty() {
            ClaimVerdict::Reproduced
        } else if 2 * exceptions.len() <= judged {
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
                exceptions.join(", ")
            )
        };
        Claim::new(statement, criterion, verdict, evidence)
    });

    let statement = "The SRE ratio holds amplification at about 1.1 at p = 1 (the SRE book's \"from ~3x to ~1.1x\").";
    let criterion = "mean amplification of sre-ratio at p = 1 in 1.05..=1.112 (a 10% ratio allows 1/0.9 = 1.111 attempts per request)";
    claims.push(match get(PolicyKind::SreRatio, 1000) {
        None => Claim::not_tested(statement, criterion),
        Some(c) => Claim::new(
            statement,
            criterion,
            ClaimVerdict::of((1.05..=1.112).contains(&c.amplification.mean)),
            format!("{:.3}", c.amplification.mean),
        ),
    });

    let statement = "At p = 0.1 retries pay off: 3 retries succeed almost always, no retries about 1 - p of the time.";
    let criterion =
        "success rate above 0.99 with 3-retries and below 0.92 with no-retries at p = 0.1";
    claims.push(
        match (
            get(PolicyKind::ThreeRetries, 100),
            get(PolicyKind::NoRetries, 100),
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
        },
    );

    let p = f64::from(MODERATE_P_PERMILLE) / 1000.0;
    let statement = format!("At p = {p:.1} the 500-token AWS quota still retries like 3 retries, while gRPC throttling already cuts retries.");
    let criterion = format!(
        "aws-quota makes at least {:.0}% of 3-retries' extra calls, grpc-throttle fewer",
        ALIKE_SHARE_MIN * 100.0
    );
    claims.push(match (get(PolicyKind::ThreeRetries, MODERATE_P_PERMILLE), get(PolicyKind::AwsQuota, MODERATE_P_PERMILLE), get(PolicyKind::GrpcThrottle, MODERATE_P_PERMILLE)) {
        (Some(three), Some(quota), Some(grpc)) => {
            let share = |c: &Cell| (c.amplification.mean - 1.0) / (three.amplification.mean - 1.0);
            Claim::new(
                statement,
                criterion,
                ClaimVerdict::of(share(quota) >= ALIKE_SHARE_MIN && share(grpc) < ALIKE_SHARE_MIN),
                format!(
                    "amplification 3-retries {:.3}, aws-quota {:.3} ({:.0}% of the extra calls), grpc-throttle {:.3} ({:.0}%)",
                    three.amplification.mean, quota.amplification.mean, share(quota) * 100.0, grpc.amplification.mean, share(grpc) * 100.0
                ),
            )
        }
        _ => Claim::not_tested(statement, criterion),
    });
    claims
}
