//! metastability: a server with capacity loses most of it for a while, then gets it back. Which
//! retry policies let goodput come back, how long it takes, and which keep the server busy with
//! work nobody waits for (Bronson et al., HotOS 2021). The world is [`super::world`].

use std::fmt::Write as _;

use rand_chacha::ChaCha8Rng;
use serde::Serialize;

pub use super::metastability_claims::{claims, WASTE_RATIO_MIN};
use super::metastability_claims::{partition, Partition};
use super::world::{
    recovery, simulate, CapacityConfig, CapacityOutcome, Recovery, RECOVERED_BINS,
    RECOVERED_SHARE_PERMILLE,
};
use crate::claim::{markdown_table, Claim};
use crate::client::{full_jitter, PolicyKind};
use crate::grid::{Context, Experiment, Grid, RunAt};
use crate::output::Output;
use crate::plot::{BandPoint, LegendAt, LineChart, LineStyle, Series};
use crate::sim::stats::{estimate, Estimate};
use crate::table::{display, dp0_or_empty, dp1, dp4, Align, Markdown};

pub const SEED_DEFAULT: u64 = 2021;
pub const RUNS_DEFAULT: u32 = 10;
pub const TRIGGER_S_DEFAULT: u32 = 10;
pub const TRIGGER_S_MAX: u32 = 30;

pub const POLICIES: [PolicyKind; 8] = [
    PolicyKind::NoRetries,
    PolicyKind::ThreeRetries,
    PolicyKind::TokenBucket,
    PolicyKind::RetryBreaker,
    PolicyKind::CircuitBreaker,
    PolicyKind::AwsQuota,
    PolicyKind::SreRatio,
    PolicyKind::GrpcThrottle,
];

pub fn world(trigger_s: u32) -> Result<CapacityConfig, String> {
    Ok(CapacityConfig {
        trigger_ms: f64::from(trigger_s) * 1000.0,
        ..CapacityConfig::standard(full_jitter(25.0, 1000.0)?)
    })
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub policy: PolicyKind,
    pub goodput_per_s: Vec<Estimate>,
    pub throughput_per_s: Vec<Estimate>,
    pub recoveries: Vec<Recovery>,
    pub success_rate: Estimate,
    /// Mean goodput and throughput per second over the last 10 s of the run.
    pub goodput_end: Estimate,
    pub throughput_end: Estimate,
}

/// The end of the run used for the "after" figures.
const END_MS: f64 = 10_000.0;

pub fn summarise(policy: PolicyKind, config: &CapacityConfig, runs: &[CapacityOutcome]) -> Cell {
    let per_s = 1000.0 / config.bin_ms;
    let by_bin = |f: fn(&CapacityOutcome) -> &Vec<u32>| -> Vec<Estimate> {
        (0..config.bin_count())
            .map(|bin| {
                estimate(
                    &runs
                        .iter()
                        .map(|o| f64::from(f(o)[bin]) * per_s)
                        .collect::<Vec<f64>>(),
                )
            })
            .collect()
    };
    let end_bins = ((END_MS / config.bin_ms) as usize).clamp(1, config.bin_count() - 1);
    let end_mean = |bins: &[u32]| {
        let n = bins.len();
        // The last bin is partial (arrivals stop at the end): leave it out.
        let tail = &bins[n - 1 - end_bins..n - 1];
        tail.iter().map(|&g| f64::from(g)).sum::<f64>() / end_bins as f64 * per_s
    };
    Cell {
        policy,
        goodput_per_s: by_bin(|o| &o.goodput_per_bin),
        throughput_per_s: by_bin(|o| &o.throughput_per_bin),
        recoveries: runs
            .iter()
            .map(|o| recovery(config, &o.goodput_per_bin))
            .collect(),
        success_rate: estimate(
            &runs
                .iter()
                .map(|o| o.success_count as f64 / o.request_count.max(1) as f64)
                .collect::<Vec<f64>>(),
        ),
        goodput_end: estimate(
            &runs
                .iter()
                .map(|o| end_mean(&o.goodput_per_bin))
                .collect::<Vec<f64>>(),
        ),
        throughput_end: estimate(
            &runs
                .iter()
                .map(|o| end_mean(&o.throughput_per_bin))
                .collect::<Vec<f64>>(),
        ),
    }
}

impl Cell {
    pub fn collapsed_runs(&self) -> usize {
        self.recoveries
            .iter()
            .filter(|r| **r == Recovery::Collapsed)
            .count()
    }

    pub fn recovery_ms(&self) -> Option<Estimate> {
        let times: Vec<f64> = self
            .recoveries
            .iter()
            .filter_map(|r| match r {
                Recovery::After { ms } => Some(*ms),
                Recovery::Collapsed => None,
            })
            .collect();
        (!times.is_empty()).then(|| estimate(&times))
    }
}

/// The experiment: every policy through one capacity drop of `trigger_s` seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Metastability {
    pub policies: Vec<PolicyKind>,
    pub trigger_s: u32,
    pub config: CapacityConfig,
}

impl Metastability {
    pub fn new(trigger_s: u32) -> Result<Self, String> {
        if !(1..=TRIGGER_S_MAX).contains(&trigger_s) {
            return Err(format!(
                "--trigger-s must be in 1..={TRIGGER_S_MAX}, got {trigger_s}"
            ));
        }
        Ok(Metastability {
            policies: POLICIES.to_vec(),
            trigger_s,
            config: world(trigger_s)?,
        })
    }
}

impl Experiment for Metastability {
    type Cell = PolicyKind;
    type Run = CapacityOutcome;

    fn name(&self) -> &'static str {
        "metastability"
    }

    fn cells(&self) -> Vec<PolicyKind> {
        self.policies.clone()
    }

    fn stream(&self, policy: &PolicyKind, at: RunAt) -> u64 {
        (policy.tag() << 32) | u64::from(at.run_index)
    }

    fn run(&self, policy: &PolicyKind, rng: &mut ChaCha8Rng) -> Result<CapacityOutcome, String> {
        simulate(&self.config, *policy, rng)
    }

    fn event_count(run: &CapacityOutcome) -> u64 {
        run.event_count
    }

    fn flags(&self) -> Vec<String> {
        if self.trigger_s == TRIGGER_S_DEFAULT {
            Vec::new()
        } else {
            vec![format!("--trigger-s {}", self.trigger_s)]
        }
    }

    fn report(
        &self,
        grid: &Grid<PolicyKind, CapacityOutcome>,
        context: &Context,
    ) -> Result<Output, String> {
        let config = &self.config;
        let cells = summarise_grid(config, grid);
        let mut output = Output::default();
        output.table(
            "summary.csv",
            &cells
                .iter()
                .map(|c| summary_row(c, context.runs))
                .collect::<Vec<_>>(),
        )?;
        output.table("timeline.csv", &timeline_rows(&cells, config))?;
        output.chart("goodput", goodput_chart(&cells, config));
        output.chart("throughput-goodput", work_chart(&cells, config));
        let claims = claims(&cells);
        output.text("README.md", readme(context, config, &cells, &claims));
        output.claims = claims;
        Ok(output)
    }
}

/// Every policy's summary, in grid order.
pub fn summarise_grid(
    config: &CapacityConfig,
    grid: &Grid<PolicyKind, CapacityOutcome>,
) -> Vec<Cell> {
    grid.cells
        .iter()
        .map(|cell| summarise(cell.cell, config, &cell.runs))
        .collect()
}

#[derive(Serialize)]
struct SummaryRow {
    #[serde(serialize_with = "display")]
    policy: PolicyKind,
    runs: u32,
    collapsed_runs: usize,
    #[serde(serialize_with = "dp0_or_empty")]
    recovery_ms_mean: Option<f64>,
    #[serde(serialize_with = "dp0_or_empty")]
    recovery_ms_ci95: Option<f64>,
    #[serde(serialize_with = "dp1")]
    goodput_end_per_s_mean: f64,
    #[serde(serialize_with = "dp1")]
    goodput_end_per_s_ci95: f64,
    #[serde(serialize_with = "dp1")]
    throughput_end_per_s_mean: f64,
    #[serde(serialize_with = "dp1")]
    throughput_end_per_s_ci95: f64,
    #[serde(serialize_with = "dp4")]
    success_rate_mean: f64,
    #[serde(serialize_with = "dp4")]
    success_rate_ci95: f64,
}

fn summary_row(c: &Cell, runs: u32) -> SummaryRow {
    let recovery = c.recovery_ms();
    SummaryRow {
        policy: c.policy,
        runs,
        collapsed_runs: c.collapsed_runs(),
        recovery_ms_mean: recovery.map(|e| e.mean),
        recovery_ms_ci95: recovery.map(|e| e.ci95),
        goodput_end_per_s_mean: c.goodput_end.mean,
        goodput_end_per_s_ci95: c.goodput_end.ci95,
        throughput_end_per_s_mean: c.throughput_end.mean,
        throughput_end_per_s_ci95: c.throughput_end.ci95,
        success_rate_mean: c.success_rate.mean,
        success_rate_ci95: c.success_rate.ci95,
    }
}

#[derive(Serialize)]
struct TimelineRow {
    #[serde(serialize_with = "display")]
    policy: PolicyKind,
    #[serde(serialize_with = "dp1")]
    time_s: f64,
    #[serde(serialize_with = "dp1")]
    goodput_per_s_mean: f64,
    #[serde(serialize_with = "dp1")]
    goodput_per_s_ci95: f64,
    #[serde(serialize_with = "dp1")]
    throughput_per_s_mean: f64,
    #[serde(serialize_with = "dp1")]
    throughput_per_s_ci95: f64,
}

fn timeline_rows(cells: &[Cell], config: &CapacityConfig) -> Vec<TimelineRow> {
    let mut rows = Vec::new();
    for c in cells {
        for (bin, (g, w)) in c.goodput_per_s.iter().zip(&c.throughput_per_s).enumerate() {
            rows.push(TimelineRow {
                policy: c.policy,
                time_s: bin as f64 * config.bin_ms / 1000.0,
                goodput_per_s_mean: g.mean,
                goodput_per_s_ci95: g.ci95,
                throughput_per_s_mean: w.mean,
                throughput_per_s_ci95: w.ci95,
            });
        }
    }
    rows
}

/// Bin midpoints in seconds; the partial last bin is left out.
fn time_series(values: &[Estimate], config: &CapacityConfig) -> Vec<BandPoint> {
    values[..values.len() - 1]
        .iter()
        .enumerate()
        .map(|(bin, e)| BandPoint {
            x: (bin as f64 + 0.5) * config.bin_ms / 1000.0,
            y: e.mean,
            low: e.low().max(0.0),
            high: e.high(),
        })
        .collect()
}

fn goodput_chart(cells: &[Cell], config: &CapacityConfig) -> LineChart {
    let mut chart = LineChart::new(
        format!(
            "Goodput around a capacity drop from {:.0} s to {:.0} s (mean of runs, 95% band)",
            config.trigger_start_ms / 1000.0,
            config.trigger_end_ms() / 1000.0
        ),
        "time (s)",
        "successful answers in time (per s)",
    );
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1180;
    chart.markers = false;
    for (i, c) in cells.iter().enumerate() {
        chart.series.push(Series::new(
            c.policy.name(),
            i,
            time_series(&c.goodput_per_s, config),
        ));
    }
    chart
}

fn work_chart(cells: &[Cell], config: &CapacityConfig) -> LineChart {
    let mut chart = LineChart::new(
        "Work done (throughput, dashed) against useful work (goodput, solid)",
        "time (s)",
        "requests per s",
    );
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1180;
    chart.markers = false;
    for (i, c) in cells.iter().enumerate() {
        if !matches!(c.policy, PolicyKind::NoRetries | PolicyKind::ThreeRetries) {
            continue;
        }
        let mut work = Series::new(
            format!("{} throughput", c.policy),
            i,
            time_series(&c.throughput_per_s, config),
        );
        work.line = LineStyle::Dashed;
        chart.series.push(Series::new(
            format!("{} goodput", c.policy),
            i,
            time_series(&c.goodput_per_s, config),
        ));
        chart.series.push(work);
    }
    chart
}

fn readme(context: &Context, config: &CapacityConfig, cells: &[Cell], claims: &[Claim]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# metastability: retries that keep a recovered server down\n"
    );
    let _ = writeln!(
        t,
        "Generated by `{}` (seed {}, {} runs per policy). Do not edit by hand.\n",
        context.command, context.seed, context.runs
    );
    let offered = f64::from(config.clients) * config.rate_per_s;
    let capacity = f64::from(config.workers) * 1000.0 / config.service_ms_mean;
    let degraded = f64::from(config.workers_degraded) * 1000.0 / config.service_ms_mean;
    let _ = writeln!(
        t,
        "A server with {} workers (exponential service time, mean {:.0} ms: {capacity:.0} requests/s), a FIFO queue of \
         {} and an immediate 503 when both are full. {} clients send {offered:.0} requests/s in all (Poisson), time an \
         attempt out after {:.0} ms (legs of {:.0} ms) and retry by their policy (full-jitter backoff 25 ms doubling, \
         cap 1 s; at most 3 retries). The server does not see timeouts: it still does the abandoned work, so \
         **throughput** (work finished) and **goodput** (successful answers that reach a client still waiting) part. \
         The trigger: from {:.0} s to {:.0} s only {} workers ({degraded:.0} requests/s), then full capacity again until \
         {:.0} s. Goodput is counted in bins of {:.1} s; a run has recovered when goodput is back to {}% of its \
         pre-trigger mean for {} bins in a row; it stays collapsed otherwise.\n",
        config.workers,
        config.service_ms_mean,
        config.queue_len_max,
        config.clients,
        config.timeout_ms,
        config.leg_ms,
        config.trigger_start_ms / 1000.0,
        config.trigger_end_ms() / 1000.0,
        config.workers_degraded,
        config.duration_ms / 1000.0,
        config.bin_ms / 1000.0,
        RECOVERED_SHARE_PERMILLE / 10,
        RECOVERED_BINS
    );
    let _ = writeln!(t, "## Claims\n\n{}", markdown_table(claims));
    let _ = writeln!(t, "## What the figures show\n");
    t += &figures(cells);
    t += &summary_table(cells);
    let _ = writeln!(
        t,
        "\n![goodput](goodput.png)\n\n![throughput and goodput](throughput-goodput.png)\n\n\
         Files: `summary.csv` (one row per policy), `timeline.csv` (goodput and throughput per second, mean and 95% \
         half-width over runs), charts as SVG and PNG."
    );
    t
}

/// The README's bullets: who stays collapsed, how fast the others recover, who succeeds.
fn figures(cells: &[Cell]) -> String {
    let mut t = String::new();
    let Partition {
        collapsed,
        recovered,
    } = partition(cells);
    if collapsed.is_empty() {
        let _ = writeln!(t, "- No policy stays collapsed in this setup.");
    } else {
        let names: Vec<String> = collapsed
            .iter()
            .map(|c| {
                format!(
                    "{} ({} of {} runs; in the last 10 s goodput {:.0}/s while the server finishes {:.0} requests/s)",
                    c.policy,
                    c.collapsed_runs(),
                    c.recoveries.len(),
                    c.goodput_end.mean,
                    c.throughput_end.mean
                )
            })
            .collect();
        let _ = writeln!(
            t,
            "- **Stay collapsed after the trigger is gone**: {}. The queue stays full of attempts whose clients have \
             already timed out, each timeout sends another attempt, and the server works at full speed on answers \
             nobody reads.",
            names.join("; ")
        );
    }
    let mut recovered_text: Vec<String> = recovered
        .iter()
        .map(|c| match c.recovery_ms() {
            Some(e) => format!(
                "{} {:.1} ± {:.1} s{}",
                c.policy,
                e.mean / 1000.0,
                e.ci95 / 1000.0,
                c.some_runs_collapsed()
                    .map_or(String::new(), |n| format!(" ({n} runs collapsed)"))
            ),
            None => format!("{} (no recovered run)", c.policy),
        })
        .collect();
    recovered_text.sort();
    let _ = writeln!(
        t,
        "- **Recover**, seconds after capacity is back until goodput is back (mean ± 95% half-width over the runs \
         that recovered): {}.",
        recovered_text.join(", ")
    );
    let mut success: Vec<String> = cells
        .iter()
        .map(|c| format!("{} {:.3}", c.policy, c.success_rate.mean))
        .collect();
    success.sort();
    let _ = writeln!(
        t,
        "- Share of all requests of the run that succeeded: {}.\n",
        success.join(", ")
    );
    t
}

/// One row per policy: collapsed runs, recovery time, the last 10 s, the success rate.
fn summary_table(cells: &[Cell]) -> String {
    let mut table = Markdown::new([
        ("policy", Align::Text),
        ("collapsed runs", Align::Number),
        ("recovery (s)", Align::Number),
        ("goodput, last 10 s (/s)", Align::Number),
        ("throughput, last 10 s (/s)", Align::Number),
        ("success rate", Align::Number),
    ]);
    for c in cells {
        let recovery = c.recovery_ms().map_or("-".to_string(), |e| {
            format!("{:.1} ± {:.1}", e.mean / 1000.0, e.ci95 / 1000.0)
        });
        table.row([
            c.policy.to_string(),
            format!("{} of {}", c.collapsed_runs(), c.recoveries.len()),
            recovery,
            format!("{:.0} ± {:.0}", c.goodput_end.mean, c.goodput_end.ci95),
            format!(
                "{:.0} ± {:.0}",
                c.throughput_end.mean, c.throughput_end.ci95
            ),
            format!("{:.3} ± {:.3}", c.success_rate.mean, c.success_rate.ci95),
        ]);
    }
    table.finish()
}
