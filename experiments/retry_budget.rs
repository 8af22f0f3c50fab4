//! retry-budget: Brooker (2022)'s comparison of retry controls. 100 Poisson clients at 10
//! requests/s, a server failing each call with probability p; load amplification (server calls
//! per user request) and success rate against p for each policy (src/storms/brooker.rs).
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

mod harness;

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Parser;
use harness::{Common, CommonArgs, Defaults, Failure};
use retrylab::plot::{BandPoint, LegendAt, LineChart, Series};
use retrylab::sim::stats::{estimate, Estimate};
use retrylab::storms::brooker::{simulate, BrookerConfig};
use retrylab::storms::client::PolicyKind;

const DEFAULTS: Defaults = Defaults {
    name: "retry-budget",
    seed: 2022,
    runs: 10,
    runs_min: 2,
    runs_max: 1000,
};

/// p from 0 to 1 in steps of 0.1, in per mille.
const FAILURE_PERMILLE: [u32; 11] = [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000];

/// p at and above which the budgeted policies are expected to amplify less than 3 retries.
const HIGH_P_PERMILLE: u32 = 500;

/// A moderate failure rate at which the controls part ways.
const MODERATE_P_PERMILLE: u32 = 300;

#[derive(Parser, Debug)]
#[command(
    name = "retry-budget",
    about = "Load amplification and success rate against the server's failure rate, per retry control"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Simulated seconds per run; the first half is warm-up and is not counted.
    #[arg(long, default_value_t = 120)]
    duration_s: u32,
}

fn main() -> ExitCode {
    harness::main_with("retry-budget", |cli: Cli| {
        let common = cli.common.resolve(&DEFAULTS).map_err(Failure::Usage)?;
        harness::check_duration_s(cli.duration_s, 2, 3600)?;
        run(&common, cli.duration_s)
    })
}

struct Cell {
    policy: PolicyKind,
    failure_permille: u32,
    amplification: Estimate,
    success_rate: Estimate,
    request_count_mean: f64,
}

fn config(failure_permille: u32, duration_s: u32) -> BrookerConfig {
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

fn run(common: &Common, duration_s: u32) -> Result<(), Failure> {
    // After every flag is checked (bad flags write nothing), before the sweep.
    common.check_out()?;
    let mut jobs = Vec::new();
    for policy in PolicyKind::BUDGET {
        for p in FAILURE_PERMILLE {
            for run_index in 0..common.runs {
                jobs.push((policy, p, run_index));
            }
        }
    }
    eprintln!(
        "retry-budget: seed {}, {} policies x {} failure rates x {} runs of {duration_s} s -> {}",
        common.seed,
        PolicyKind::BUDGET.len(),
        FAILURE_PERMILLE.len(),
        common.runs,
        common.out.display()
    );
    let outcomes = common.run_grid(
        &jobs,
        |&(policy, p, run_index)| stream_id(policy, p, run_index),
        |&(policy, p, _), rng| simulate(&config(p, duration_s), policy, rng),
    )?;
    let cells: Vec<Cell> = jobs
        .chunks(common.runs as usize)
        .zip(outcomes.chunks(common.runs as usize))
        .map(|(cell_jobs, runs)| {
            let column = |f: fn(&retrylab::storms::brooker::BrookerOutcome) -> f64| {
                estimate(&runs.iter().map(f).collect::<Vec<f64>>())
            };
            Cell {
                policy: cell_jobs[0].0,
                failure_permille: cell_jobs[0].1,
                amplification: column(|o| o.amplification()),
                success_rate: column(|o| o.success_rate()),
                request_count_mean: column(|o| o.request_count as f64).mean,
            }
        })
        .collect();

    let out = common.out_dir()?;
    out.write("summary.csv", &summary_csv(&cells, common.runs))?;
    out.chart(
        &chart(
            &cells,
            "Load amplification against the server's failure rate",
            "server calls per user request (ratio)",
            |c| c.amplification,
        ),
        "amplification",
    )?;
    out.chart(
        &chart(
            &cells,
            "Success rate against the server's failure rate",
            "requests that succeeded (fraction)",
            |c| c.success_rate,
        ),
        "success",
    )?;
    let extra = if duration_s == 120 {
        Vec::new()
    } else {
        vec![format!("--duration-s {duration_s}")]
    };
    out.write("README.md", &readme(common, &extra, duration_s, &cells))?;
    eprintln!("retry-budget: wrote {}", common.out.display());
    Ok(())
}

fn summary_csv(cells: &[Cell], runs: u32) -> String {
    let mut text = String::from(
        "policy,failure_probability,runs,amplification_mean,amplification_sd,amplification_ci95,\
         success_rate_mean,success_rate_sd,success_rate_ci95,requests_per_run_mean\n",
    );
    for c in cells {
        let _ = writeln!(
            text,
            "{},{:.1},{runs},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.1}",
            c.policy,
            f64::from(c.failure_permille) / 1000.0,
            c.amplification.mean,
            c.amplification.sd,
            c.amplification.ci95,
            c.success_rate.mean,
            c.success_rate.sd,
            c.success_rate.ci95,
            c.request_count_mean
        );
    }
    text
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

fn find(cells: &[Cell], policy: PolicyKind, p: u32) -> Option<&Cell> {
    cells
        .iter()
        .find(|c| c.policy == policy && c.failure_permille == p)
}

fn readme(common: &Common, extra: &[String], duration_s: u32, cells: &[Cell]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# retry-budget: retry controls against a failing server\n"
    );
    let _ = writeln!(
        t,
        "Generated by `{}` (seed {}, {} runs per cell, {duration_s} s simulated per run). Do not edit by hand.\n",
        common.command_line("retry-budget", extra),
        common.seed,
        common.runs
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
    let _ = writeln!(t, "## What the figures show\n");
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
    let budgeted: Vec<PolicyKind> = PolicyKind::BUDGET
        .into_iter()
        .filter(PolicyKind::is_budgeted)
        .collect();
    let mut at_p1: Vec<String> = budgeted
        .iter()
        .filter_map(|&policy| get(policy, 1000))
        .map(|c| format!("{} {:.2}", c.policy, c.amplification.mean))
        .collect();
    at_p1.sort();
    let _ = writeln!(t, "- The retry controls at p = 1: {}.", at_p1.join(", "));
    let mut exceptions = Vec::new();
    for &policy in &budgeted {
        for p in FAILURE_PERMILLE
            .into_iter()
            .filter(|&p| p >= HIGH_P_PERMILLE)
        {
            if let (Some(c), Some(three)) = (get(policy, p), get(PolicyKind::ThreeRetries, p)) {
                if c.amplification.high() >= three.amplification.low() {
                    exceptions.push(format!("{policy} at p = {:.1}", f64::from(p) / 1000.0));
                }
            }
        }
    }
    let _ = writeln!(
        t,
        "- At every p >= {:.1}, {} (95% intervals apart).",
        f64::from(HIGH_P_PERMILLE) / 1000.0,
        if exceptions.is_empty() {
            "every retry control amplifies less than 3 retries".to_string()
        } else {
            format!(
                "the retry controls amplify less than 3 retries except {}",
                exceptions.join(", ")
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
    let mut low_p: Vec<String> = budgeted
        .iter()
        .filter_map(|&policy| get(policy, 100))
        .map(|c| format!("{} {:.4}", c.policy, c.success_rate.mean))
        .collect();
    low_p.sort();
    let _ = writeln!(
        t,
        "- Success at p = 0.1 with the controls: {}.",
        low_p.join(", ")
    );
    // Which controls still act like plain retries at a moderate failure rate, and which cut
    // retries (and success) already there.
    let (mut alike, mut cut) = (Vec::new(), Vec::new());
    if let Some(three) = get(PolicyKind::ThreeRetries, MODERATE_P_PERMILLE) {
        for &policy in &budgeted {
            if let Some(c) = get(policy, MODERATE_P_PERMILLE) {
                let extra_share = (c.amplification.mean - 1.0) / (three.amplification.mean - 1.0);
                let text = format!("{policy} {:.3}", c.amplification.mean);
                if extra_share >= 0.95 {
                    alike.push(text);
                } else {
                    cut.push(text);
                }
            }
        }
        let _ = writeln!(
            t,
            "- At p = {:.1}, where 3 retries amplify {:.3}: behaving like 3 retries (at least 95% of their extra calls): {}; \
             cutting retries: {}. A large quota (aws-quota's 500 tokens, a retry costing 5 and a successful retry \
             refunding its 5) drains only where failures outrun refunds; the controls that follow the recent failure \
             ratio cut retries at any sizeable p.",
            f64::from(MODERATE_P_PERMILLE) / 1000.0,
            three.amplification.mean,
            if alike.is_empty() { "none".to_string() } else { alike.join(", ") },
            if cut.is_empty() { "none".to_string() } else { cut.join(", ") }
        );
    }
    if let Some(sre) = get(PolicyKind::SreRatio, 1000) {
        let _ = writeln!(
            t,
            "- The SRE ratio holds amplification at {:.3} at p = 1: the SRE book's \"from ~3x to ~1.1x\" \
             (a 10% ratio of retries to attempts allows 1/0.9 = 1.111 attempts per request).",
            sre.amplification.mean
        );
    }
    t.push('\n');
    let shown = [100, 300, 500, 700, 1000];
    let _ = writeln!(
        t,
        "## Amplification and success rate (summary.csv: mean ± 95% half-width)\n"
    );
    let _ = write!(t, "| policy |");
    for p in shown {
        let _ = write!(t, " amplification p={:.1} |", f64::from(p) / 1000.0);
    }
    for p in shown {
        let _ = write!(t, " success p={:.1} |", f64::from(p) / 1000.0);
    }
    let _ = write!(t, "\n|---|");
    for _ in 0..2 * shown.len() {
        t.push_str("---:|");
    }
    t.push('\n');
    for policy in PolicyKind::BUDGET {
        let _ = write!(t, "| {policy} |");
        for p in shown {
            if let Some(c) = get(policy, p) {
                let _ = write!(
                    t,
                    " {:.3} ± {:.3} |",
                    c.amplification.mean, c.amplification.ci95
                );
            }
        }
        for p in shown {
            if let Some(c) = get(policy, p) {
                let _ = write!(
                    t,
                    " {:.3} ± {:.3} |",
                    c.success_rate.mean, c.success_rate.ci95
                );
            }
        }
        t.push('\n');
    }
    let _ = writeln!(
        t,
        "\n![amplification](amplification.png)\n\n![success rate](success.png)\n\n\
         Files: `summary.csv` (one row per policy and p), charts as SVG and PNG."
    );
    t
}
