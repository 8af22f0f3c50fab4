//! retry-budget: Brooker (2022)'s comparison of retry controls. 100 Poisson clients at 10
//! requests/s, a server failing each call with probability p; load amplification (server calls
//! per user request) and success rate against p for each policy. The world is [`world`]; the
//! claims are [`claims`].

pub mod claims;
pub mod world;

use std::fmt::Write as _;

use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::check_duration_s;
use crate::claim::{markdown_table, Claim};
use crate::client::PolicyKind;
use crate::grid::{Context, Experiment, Grid, RunAt};
use crate::output::Output;
use crate::plot::{BandPoint, LegendAt, LineChart, Series};
use crate::sim::stats::{estimate, Estimate};
use crate::table::{display, dp1, dp4, Align, Markdown};
use claims::{p_text, Findings, Moderate};
pub use world::{simulate, BrookerConfig, BrookerOutcome};

pub const SEED_DEFAULT: u64 = 2022;
pub const RUNS_DEFAULT: u32 = 10;
pub const DURATION_S_DEFAULT: u32 = 120;

/// p from 0 to 1 in steps of 0.1, in per mille.
pub const FAILURE_PERMILLE: [u32; 11] = [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000];

/// p at and above which the budgeted policies are expected to amplify less than 3 retries.
pub const HIGH_P_PERMILLE: u32 = 500;

/// A moderate failure rate at which the controls part ways.
pub const MODERATE_P_PERMILLE: u32 = 300;

/// The runs of one (policy, failure rate) cell, summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub policy: PolicyKind,
    pub failure_permille: u32,
    pub amplification: Estimate,
    pub success_rate: Estimate,
    pub request_count_mean: f64,
}

pub fn config(failure_permille: u32, duration_s: u32) -> BrookerConfig {
    let duration_ms = f64::from(duration_s) * 1000.0;
    BrookerConfig {
        duration_ms,
        warmup_ms: duration_ms / 2.0,
        ..BrookerConfig::post(failure_permille)
    }
}

fn stream_id(policy: PolicyKind, failure_permille: u32, run_index: u32) -> u64 {
    (policy.tag() << 48) | (u64::from(failure_permille) << 24) | u64::from(run_index)
}

/// The experiment: policies x failure rates, `duration_s` simulated per run.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryBudget {
    pub policies: Vec<PolicyKind>,
    pub failure_permille: Vec<u32>,
    pub duration_s: u32,
}

impl RetryBudget {
    pub fn new(duration_s: u32) -> Result<Self, String> {
        check_duration_s(duration_s, 2, 3600)?;
        Ok(RetryBudget {
            policies: PolicyKind::BUDGET.to_vec(),
            failure_permille: FAILURE_PERMILLE.to_vec(),
            duration_s,
        })
    }
}

impl Experiment for RetryBudget {
    /// (policy, failure rate in per mille)
    type Cell = (PolicyKind, u32);
    type Run = BrookerOutcome;

    fn name(&self) -> &'static str {
        "retry-budget"
    }

    fn cells(&self) -> Vec<(PolicyKind, u32)> {
        let mut cells = Vec::new();
        for &policy in &self.policies {
            cells.extend(self.failure_permille.iter().map(|&p| (policy, p)));
        }
        cells
    }

    fn stream(&self, &(policy, p): &(PolicyKind, u32), at: RunAt) -> u64 {
        stream_id(policy, p, at.run_index)
    }

    fn run(
        &self,
        &(policy, p): &(PolicyKind, u32),
        rng: &mut ChaCha8Rng,
    ) -> Result<BrookerOutcome, String> {
        simulate(&config(p, self.duration_s), policy, rng)
    }

    fn event_count(run: &BrookerOutcome) -> u64 {
        run.event_count
    }

    fn flags(&self) -> Vec<String> {
        if self.duration_s == DURATION_S_DEFAULT {
            Vec::new()
        } else {
            vec![format!("--duration-s {}", self.duration_s)]
        }
    }

    fn report(
        &self,
        grid: &Grid<(PolicyKind, u32), BrookerOutcome>,
        context: &Context,
    ) -> Result<Output, String> {
        let cells = summarise(grid);
        let mut output = Output::default();
        let rows: Vec<SummaryRow> = cells.iter().map(|c| summary_row(c, context.runs)).collect();
        output.table("summary.csv", &rows)?;
        output.chart(
            "amplification",
            chart(
                &cells,
                "Load amplification against the server's failure rate",
                "server calls per user request (ratio)",
                |c| c.amplification,
            ),
        );
        output.chart(
            "success",
            chart(
                &cells,
                "Success rate against the server's failure rate",
                "requests that succeeded (fraction)",
                |c| c.success_rate,
            ),
        );
        let findings = claims::findings(&cells);
        let claims = findings.claims();
        output.text(
            "README.md",
            readme(context, self.duration_s, &cells, &findings, &claims),
        );
        output.claims = claims;
        Ok(output)
    }
}

/// Every cell's estimates, in grid order.
pub fn summarise(grid: &Grid<(PolicyKind, u32), BrookerOutcome>) -> Vec<Cell> {
    grid.cells
        .iter()
        .map(|cell| {
            let column = |f: fn(&BrookerOutcome) -> f64| {
                estimate(&cell.runs.iter().map(f).collect::<Vec<f64>>())
            };
            Cell {
                policy: cell.cell.0,
                failure_permille: cell.cell.1,
                amplification: column(|o| o.amplification()),
                success_rate: column(|o| o.success_rate()),
                request_count_mean: column(|o| o.request_count as f64).mean,
            }
        })
        .collect()
}

#[derive(Serialize)]
struct SummaryRow {
    #[serde(serialize_with = "display")]
    policy: PolicyKind,
    #[serde(serialize_with = "dp1")]
    failure_probability: f64,
    runs: u32,
    #[serde(serialize_with = "dp4")]
    amplification_mean: f64,
    #[serde(serialize_with = "dp4")]
    amplification_sd: f64,
    #[serde(serialize_with = "dp4")]
    amplification_ci95: f64,
    #[serde(serialize_with = "dp4")]
    success_rate_mean: f64,
    #[serde(serialize_with = "dp4")]
    success_rate_sd: f64,
    #[serde(serialize_with = "dp4")]
    success_rate_ci95: f64,
    #[serde(serialize_with = "dp1")]
    requests_per_run_mean: f64,
}

fn summary_row(c: &Cell, runs: u32) -> SummaryRow {
    SummaryRow {
        policy: c.policy,
        failure_probability: f64::from(c.failure_permille) / 1000.0,
        runs,
        amplification_mean: c.amplification.mean,
        amplification_sd: c.amplification.sd,
        amplification_ci95: c.amplification.ci95,
        success_rate_mean: c.success_rate.mean,
        success_rate_sd: c.success_rate.sd,
        success_rate_ci95: c.success_rate.ci95,
        requests_per_run_mean: c.request_count_mean,
    }
}

fn chart(cells: &[Cell], title: &str, y_label: &str, value: fn(&Cell) -> Estimate) -> LineChart {
    let mut chart = LineChart::new(
        format!("{title} (mean of runs, 95% band)"),
        "probability that the server fails a call (p)",
        y_label,
    );
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1120;
    for (i, policy) in PolicyKind::BUDGET.iter().enumerate() {
        let points = cells
            .iter()
            .filter(|c| c.policy == *policy)
            .map(|c| {
                let e = value(c);
                BandPoint {
                    x: f64::from(c.failure_permille) / 1000.0,
                    y: e.mean,
                    low: e.low(),
                    high: e.high(),
                }
            })
            .collect();
        chart.series.push(Series::new(policy.name(), i, points));
    }
    chart
}

pub fn find(cells: &[Cell], policy: PolicyKind, p: u32) -> Option<&Cell> {
    cells
        .iter()
        .find(|c| c.policy == policy && c.failure_permille == p)
}

fn readme(
    context: &Context,
    duration_s: u32,
    cells: &[Cell],
    findings: &Findings,
    claims: &[Claim],
) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# retry-budget: retry controls against a failing server\n"
    );
    let _ = writeln!(
        t,
        "Generated by `{}` (seed {}, {} runs per cell, {duration_s} s simulated per run). Do not edit by hand.\n",
        context.command, context.seed, context.runs
    );
    let _ = writeln!(
        t,
        "The setup of Brooker (2022), \"Fixing retries with token buckets and circuit breakers\": 100 clients, each \
         sending requests as a Poisson process at 10 requests/s; the server fails each call independently with \
         probability p and has no capacity limit; network legs of 5 ms; full-jitter backoff (25 ms doubling, cap 1 s). \
         Every policy but no-retries allows up to 3 retries (4 attempts), so only the retry control differs; each \
         client has its own control. Counted over the requests that start in the second half of each run (the first \
         half lets the controls with memory settle): amplification = server calls / user requests, success rate = \
         requests that eventually succeeded / user requests.\n\n\
         Policies: **no-retries**; **3-retries** (no control); **token-bucket** (Brooker: a success deposits 0.1 token, \
         a retry takes 1, 10 tokens at most); **retry-breaker** (Brooker: retries stop while the client saw >= 10% \
         failures over the last second, at least 5 calls; first tries always go out); **aws-quota** (AWS SDK standard: \
         500 tokens, 5 per retry, a first-try success refunds 1, a successful retry its 5); **aws-quota-2026** (14 per \
         error retry); **sre-ratio** (Google SRE: retries at most 10% of the client's attempts over 10 s); \
         **grpc-throttle** (gRPC: 10 tokens, failure -1, success +0.1, retries while tokens > 5).\n"
    );
    let _ = writeln!(t, "## Claims\n\n{}", markdown_table(claims));
    let _ = writeln!(t, "## What the figures show\n");
    t += &figures(cells, findings);
    t.push('\n');
    let _ = writeln!(
        t,
        "## Amplification and success rate (summary.csv: mean ± 95% half-width)\n"
    );
    t += &summary_table(cells);
    let _ = writeln!(
        t,
        "\n![amplification](amplification.png)\n\n![success rate](success.png)\n\n\
         Files: `summary.csv` (one row per policy and p), charts as SVG and PNG."
    );
    t
}

/// The README's bullets: the figures behind the claims, as [`Findings`] judged them.
fn figures(cells: &[Cell], findings: &Findings) -> String {
    let mut t = String::new();
    let get = |policy, p| find(cells, policy, p);
    if let (Some(three), Some(none)) = (
        get(PolicyKind::ThreeRetries, 1000),
        get(PolicyKind::NoRetries, 1000),
    ) {
        let _ = writeln!(
            t,
            "- With the server failing every call (p = 1), 3 retries multiply the load by {:.2} (1 + 3) and no retries by {:.2}.",
            three.amplification.mean, none.amplification.mean
        );
    }
    let controls_at = |p: u32, figure: fn(&Cell) -> String| {
        let mut named: Vec<String> = PolicyKind::BUDGET
            .into_iter()
            .filter(PolicyKind::is_budgeted)
            .filter_map(|policy| get(policy, p))
            .map(|c| format!("{} {}", c.policy, figure(c)))
            .collect();
        named.sort();
        named.join(", ")
    };
    let _ = writeln!(
        t,
        "- The retry controls at p = 1: {}.",
        controls_at(1000, |c| format!("{:.2}", c.amplification.mean))
    );
    let _ = writeln!(
        t,
        "- At every p >= {:.1}, {} (95% intervals apart).",
        f64::from(HIGH_P_PERMILLE) / 1000.0,
        if findings.high_p.exceptions.is_empty() {
            "every retry control amplifies less than 3 retries".to_string()
        } else {
            format!(
                "the retry controls amplify less than 3 retries except {}",
                findings.exceptions_text()
            )
        }
    );
    if let (Some(three), Some(none)) = (
        get(PolicyKind::ThreeRetries, 100),
        get(PolicyKind::NoRetries, 100),
    ) {
        let _ = writeln!(
            t,
            "- At p = 0.1 retries pay off: 3 retries succeed {:.4} of the time (theory 1 - p^4 = 0.9999) against {:.4} \
             without retries, for {:.3} calls per request.",
            three.success_rate.mean, none.success_rate.mean, three.amplification.mean
        );
    }
    let _ = writeln!(
        t,
        "- Success at p = 0.1 with the controls: {}.",
        controls_at(100, |c| format!("{:.4}", c.success_rate.mean))
    );
    if let Some(moderate) = &findings.moderate {
        t += &moderate_bullet(moderate);
    }
    if let Some(sre) = get(PolicyKind::SreRatio, 1000) {
        let _ = writeln!(
            t,
            "- The SRE ratio holds amplification at {:.3} at p = 1: the SRE book's \"from ~3x to ~1.1x\" \
             (a 10% ratio of retries to attempts allows 1/0.9 = 1.111 attempts per request).",
            sre.amplification.mean
        );
    }
    t
}

/// Amplification and success rate at five failure rates, one row per policy.
fn summary_table(cells: &[Cell]) -> String {
    let shown = [100, 300, 500, 700, 1000];
    let p = |p: u32| f64::from(p) / 1000.0;
    let mut table = Markdown::new(
        std::iter::once(("policy".to_string(), Align::Text))
            .chain(shown.map(|x| (format!("amplification p={:.1}", p(x)), Align::Number)))
            .chain(shown.map(|x| (format!("success p={:.1}", p(x)), Align::Number))),
    );
    for policy in PolicyKind::BUDGET {
        let figures = |value: fn(&Cell) -> Estimate| {
            shown.map(|x| {
                find(cells, policy, x).map_or("-".to_string(), |c| {
                    let e = value(c);
                    format!("{:.3} ± {:.3}", e.mean, e.ci95)
                })
            })
        };
        table.row(
            std::iter::once(policy.to_string())
                .chain(figures(|c| c.amplification))
                .chain(figures(|c| c.success_rate)),
        );
    }
    table.finish()
}

/// Which controls act like 3 retries at the moderate failure rate, and which cut retries.
fn moderate_bullet(moderate: &Moderate) -> String {
    let mut t = String::new();
    let named = |alike: bool| {
        let named: Vec<String> = moderate
            .alike(alike)
            .iter()
            .map(|c| format!("{} {:.3}", c.policy, c.amplification))
            .collect();
        if named.is_empty() {
            "none".to_string()
        } else {
            named.join(", ")
        }
    };
    let _ = writeln!(
        t,
        "- At {}, where 3 retries amplify {:.3}: behaving like 3 retries (at least 95% of their extra calls): {}; \
         cutting retries: {}. A large quota (aws-quota's 500 tokens, a retry costing 5 and a successful retry \
         refunding its 5) drains only where failures outrun refunds; the controls that follow the recent failure \
         ratio cut retries at any sizeable p.",
        p_text(MODERATE_P_PERMILLE),
        moderate.three_amplification,
        named(true),
        named(false)
    );
    t
}
