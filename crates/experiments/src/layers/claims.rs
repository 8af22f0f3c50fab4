//! The counts the article and the AWS Builders' Library quote (27 and 243 bottom requests), r
//! with one retrying layer whatever the depth, and the nested waits, judged on the cells.

use super::{find, Cell, LayerPolicy};
use crate::claim::{Claim, ClaimVerdict};

/// "Longer": the mean time to failure at 5 x 3 with every layer retrying is at least this many
/// times the one-layer mean.
pub const NESTED_WAIT_RATIO_MIN: f64 = 10.0;

/// The claims: the two published counts, one layer's r, the nested waits.
pub fn claims(cells: &[Cell]) -> Vec<Claim> {
    let mut claims: Vec<Claim> = [
        (3, 3, 27, "the article's mistake 7"),
        (5, 3, 243, "the AWS Builders' Library"),
    ]
    .into_iter()
    .map(|(k, r, expected, source)| published_count(cells, k, r, expected, source))
    .collect();
    claims.push(one_layer_sends_r(cells));
    claims.push(waits_nest(cells));
    claims
}

/// Every layer retrying, k x r: the bottom sees `expected` requests per call.
fn published_count(cells: &[Cell], k: u32, r: u32, expected: u64, source: &str) -> Claim {
    let statement = format!("With every layer retrying, {k} layers x {r} attempts send {expected} requests to the bottom per user call ({source}).");
    let criterion = format!(
        "bottom requests per call at {k} x {r}, every-layer, equal to {expected} in every run"
    );
    match find(cells, LayerPolicy::EveryLayer, k, r).map(|c| c.bottom_requests_per_call) {
        None => Claim::not_tested(statement, criterion),
        Some(n) => Claim::new(
            statement,
            criterion,
            ClaimVerdict::of(n == expected),
            format!("{n} bottom requests per call"),
        ),
    }
}

fn one_layer_sends_r(cells: &[Cell]) -> Claim {
    let one_layer: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.config.policy == LayerPolicy::OneLayer)
        .collect();
    let statement = "With only the top layer retrying, the bottom sees r requests per call, whatever the depth.";
    let criterion = "bottom requests per call equal to r in every one-layer cell";
    if one_layer.is_empty() {
        return Claim::not_tested(statement, criterion);
    }
    let off: Vec<String> = one_layer
        .iter()
        .filter(|c| c.bottom_requests_per_call != u64::from(c.config.attempts_per_layer))
        .map(|c| {
            format!(
                "{} x {}: {}",
                c.config.layers, c.config.attempts_per_layer, c.bottom_requests_per_call
            )
        })
        .collect();
    let evidence = if off.is_empty() {
        format!("r in all {} one-layer cells", one_layer.len())
    } else {
        format!("differs at {}", off.join(", "))
    };
    Claim::new(
        statement,
        criterion,
        ClaimVerdict::of(off.is_empty()),
        evidence,
    )
}

fn waits_nest(cells: &[Cell]) -> Claim {
    let statement = "The user waits much longer for the same failure when every layer retries: the backoffs nest.";
    let criterion = format!("mean time to failure at 5 x 3, every-layer, at least {NESTED_WAIT_RATIO_MIN}x the one-layer mean");
    let (Some(every), Some(one)) = (
        find(cells, LayerPolicy::EveryLayer, 5, 3),
        find(cells, LayerPolicy::OneLayer, 5, 3),
    ) else {
        return Claim::not_tested(statement, criterion);
    };
    let ratio = every.give_up_ms.mean / one.give_up_ms.mean;
    Claim::new(
        statement,
        criterion,
        ClaimVerdict::of(ratio >= NESTED_WAIT_RATIO_MIN),
        format!(
            "{:.0} ± {:.0} ms against {:.0} ± {:.0} ms ({ratio:.0}x)",
            every.give_up_ms.mean, every.give_up_ms.ci95, one.give_up_ms.mean, one.give_up_ms.ci95
        ),
    )
}
