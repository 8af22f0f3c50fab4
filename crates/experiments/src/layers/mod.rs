//! retry-layers: how many requests reach the bottom service per user call when it fails, for k
//! layers of services each making r attempts (every layer retries) or only the top one retrying.
//! The world is [`world`] (message by message on the event kernel); here are the grid, the
//! claims (27, 243, r) and the output.

pub mod claims;
pub mod world;

use std::fmt::Write as _;

use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::claim::{markdown_table, Claim};
use crate::grid::{Context, Experiment, Grid, RunAt};
use crate::output::Output;
use crate::plot::{BandPoint, LegendAt, LineChart, LineStyle, Scale, Series};
use crate::sim::stats::{estimate, Estimate};
use crate::table::{dp3, Align, Markdown};
pub use claims::{claims, NESTED_WAIT_RATIO_MIN};
pub use world::{simulate_call, LayerConfig, LayerOutcome, LayerPolicy};

pub const SEED_DEFAULT: u64 = 27;
pub const RUNS_DEFAULT: u32 = 20;

/// The grid: 1..=5 layers, 1..=5 attempts per layer (5 x 5 = 3125 bottom requests at most).
pub const LAYERS: [u32; 5] = [1, 2, 3, 4, 5];
pub const ATTEMPTS: [u32; 5] = [1, 2, 3, 4, 5];

/// The experiment over a grid of layer counts and attempts per layer.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryLayers {
    pub layers: Vec<u32>,
    pub attempts: Vec<u32>,
}

impl Default for RetryLayers {
    fn default() -> Self {
        RetryLayers {
            layers: LAYERS.to_vec(),
            attempts: ATTEMPTS.to_vec(),
        }
    }
}

impl Experiment for RetryLayers {
    type Cell = LayerConfig;
    type Run = LayerOutcome;

    fn name(&self) -> &'static str {
        "retry-layers"
    }

    fn cells(&self) -> Vec<LayerConfig> {
        let mut cells = Vec::new();
        for policy in LayerPolicy::ALL {
            for &layers in &self.layers {
                for &attempts in &self.attempts {
                    cells.push(LayerConfig::new(layers, attempts, policy));
                }
            }
        }
        cells
    }

    fn stream(&self, config: &LayerConfig, at: RunAt) -> u64 {
        stream_id(config, at.run_index)
    }

    fn run(&self, config: &LayerConfig, rng: &mut ChaCha8Rng) -> Result<LayerOutcome, String> {
        simulate_call(config, rng)
    }

    fn event_count(run: &LayerOutcome) -> u64 {
        run.event_count
    }

    fn report(
        &self,
        grid: &Grid<LayerConfig, LayerOutcome>,
        context: &Context,
    ) -> Result<Output, String> {
        let cells = summarise_grid(grid)?;
        let mut output = Output::default();
        output.table(
            "summary.csv",
            &cells.iter().map(summary_row).collect::<Vec<_>>(),
        )?;
        output.table(
            "timing.csv",
            &cells.iter().map(timing_row).collect::<Vec<_>>(),
        )?;
        output.chart("bottom-requests", requests_chart(&cells));
        output.chart("give-up-time", time_chart(&cells));
        let claims = claims(&cells);
        output.text("README.md", readme(context, &cells, &claims));
        output.claims = claims;
        Ok(output)
    }
}

/// Every cell's summary, in grid order.
pub fn summarise_grid(grid: &Grid<LayerConfig, LayerOutcome>) -> Result<Vec<Cell>, String> {
    grid.cells
        .iter()
        .map(|cell| summarise(cell.cell, &cell.runs))
        .collect()
}

#[derive(Serialize)]
struct SummaryRow {
    layers: u32,
    attempts_per_layer: u32,
    policy: &'static str,
    bottom_requests_per_call: u64,
}

#[derive(Serialize)]
struct TimingRow {
    layers: u32,
    attempts_per_layer: u32,
    policy: &'static str,
    requests_per_call: u64,
    #[serde(serialize_with = "dp3")]
    give_up_ms_mean: f64,
    #[serde(serialize_with = "dp3")]
    give_up_ms_sd: f64,
    #[serde(serialize_with = "dp3")]
    give_up_ms_ci95: f64,
}

fn summary_row(c: &Cell) -> SummaryRow {
    SummaryRow {
        layers: c.config.layers,
        attempts_per_layer: c.config.attempts_per_layer,
        policy: c.config.policy.name(),
        bottom_requests_per_call: c.bottom_requests_per_call,
    }
}

fn timing_row(c: &Cell) -> TimingRow {
    TimingRow {
        layers: c.config.layers,
        attempts_per_layer: c.config.attempts_per_layer,
        policy: c.config.policy.name(),
        requests_per_call: c.requests_per_call,
        give_up_ms_mean: c.give_up_ms.mean,
        give_up_ms_sd: c.give_up_ms.sd,
        give_up_ms_ci95: c.give_up_ms.ci95,
    }
}

/// The runs of one (layers, attempts, policy) cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub config: LayerConfig,
    /// Bottom requests per call (the same in every run: jitter moves time, not counts).
    pub bottom_requests_per_call: u64,
    pub requests_per_call: u64,
    pub give_up_ms: Estimate,
}

fn stream_id(config: &LayerConfig, run_index: u32) -> u64 {
    let policy_tag = match config.policy {
        LayerPolicy::EveryLayer => 1,
        LayerPolicy::OneLayer => 2,
    };
    (policy_tag << 56)
        | (u64::from(config.layers) << 48)
        | (u64::from(config.attempts_per_layer) << 40)
        | u64::from(run_index)
}

/// Summarises the runs of one cell.
pub fn summarise(config: LayerConfig, runs: &[LayerOutcome]) -> Result<Cell, String> {
    // The count must not depend on the draws; if it did, a mean would hide a bug.
    let bottom_counts: Vec<u64> = runs.iter().map(|o| o.bottom_request_count).collect();
    if bottom_counts.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!(
            "bottom requests differ between runs of {config:?}: {bottom_counts:?}"
        ));
    }
    Ok(Cell {
        config,
        bottom_requests_per_call: bottom_counts[0],
        requests_per_call: runs[0].request_count,
        give_up_ms: estimate(&runs.iter().map(|o| o.give_up_ms).collect::<Vec<f64>>()),
    })
}

pub fn find(cells: &[Cell], policy: LayerPolicy, layers: u32, attempts: u32) -> Option<&Cell> {
    cells.iter().find(|c| {
        c.config.policy == policy
            && c.config.layers == layers
            && c.config.attempts_per_layer == attempts
    })
}

fn series(
    cells: &[Cell],
    policy: LayerPolicy,
    attempts: u32,
    value: impl Fn(&Cell) -> BandPoint,
) -> Series {
    let points = LAYERS
        .iter()
        .filter_map(|&k| find(cells, policy, k, attempts).map(&value))
        .collect();
    let mut s = Series::new(
        format!("{}, r = {attempts}", policy.name()),
        attempts as usize - 1,
        points,
    );
    if policy == LayerPolicy::OneLayer {
        s.line = LineStyle::Dashed;
    }
    s
}

fn requests_chart(cells: &[Cell]) -> LineChart {
    let mut chart = LineChart::new(
        "Requests reaching the failing bottom service per user call",
        "layers of services between user and bottom (count)",
        "bottom requests per user call (count, log scale)",
    );
    chart.y_scale = Scale::Log;
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1120;
    for policy in LayerPolicy::ALL {
        for attempts in 2..=5 {
            chart.series.push(series(cells, policy, attempts, |c| {
                BandPoint::exact(
                    f64::from(c.config.layers),
                    c.bottom_requests_per_call as f64,
                )
            }));
        }
    }
    chart
}

fn time_chart(cells: &[Cell]) -> LineChart {
    let mut chart = LineChart::new(
        "Time until the user sees the failure (r = 3, mean of runs, 95% band)",
        "layers of services between user and bottom (count)",
        "time to failure at the user (ms, log scale)",
    );
    chart.y_scale = Scale::Log;
    chart.legend_at = LegendAt::UpperLeft;
    for policy in LayerPolicy::ALL {
        chart.series.push(series(cells, policy, 3, |c| BandPoint {
            x: f64::from(c.config.layers),
            y: c.give_up_ms.mean,
            // A band reaching below 0 is drawn to the axis's edge (src/plot floors it).
            low: c.give_up_ms.low(),
            high: c.give_up_ms.high(),
        }));
    }
    chart
}

fn readme(context: &Context, cells: &[Cell], claims: &[Claim]) -> String {
    let count = |policy, k, r| find(cells, policy, k, r).map_or(0, |c| c.bottom_requests_per_call);
    let mut t = String::new();
    let _ = writeln!(t, "# retry-layers: retries at every layer multiply\n");
    let _ = writeln!(
        t,
        "Generated by `{}` (seed {}, {} runs per cell). Do not edit by hand.\n",
        context.command, context.seed, context.runs
    );
    let _ = writeln!(
        t,
        "A user calls service 1, service 1 calls service 2, ..., service k calls the bottom service, which fails \
         every request. A retrying service makes up to r attempts per incoming request (full-jitter backoff from \
         10 ms, capped at 1 s; network legs of 1 ms) and then fails upwards. **every-layer**: all k services retry; \
         **one-layer**: only service 1 retries, the others make one attempt. The counts come from simulating every \
         message of the call tree on the event kernel, not from a formula; they are the same in every run (the \
         binary refuses to write them otherwise), while the time to failure varies with the jitter.\n"
    );
    let _ = writeln!(
        t,
        "## What the figures show\n\n\
         - With every layer retrying, one user call sends **{}** requests to the bottom at 3 layers x 3 attempts \
         (3 x 3 x 3, the article's mistake 7) and **{}** at 5 layers x 3 attempts (the AWS Builders' Library's 243).\n\
         - With only one layer retrying, the bottom sees **{}** requests at 3 x 3 and **{}** at 5 x 3: r, whatever the depth.\n\
         - The requests received by all services together at 5 x 3 are {} (every layer) against {} (one layer).",
        count(LayerPolicy::EveryLayer, 3, 3),
        count(LayerPolicy::EveryLayer, 5, 3),
        count(LayerPolicy::OneLayer, 3, 3),
        count(LayerPolicy::OneLayer, 5, 3),
        find(cells, LayerPolicy::EveryLayer, 5, 3).map_or(0, |c| c.requests_per_call),
        find(cells, LayerPolicy::OneLayer, 5, 3).map_or(0, |c| c.requests_per_call),
    );
    if let (Some(every), Some(one)) = (
        find(cells, LayerPolicy::EveryLayer, 5, 3),
        find(cells, LayerPolicy::OneLayer, 5, 3),
    ) {
        let _ = writeln!(
            t,
            "- The user also waits longer for the same failure: at 5 x 3 it arrives after {:.0} ± {:.0} ms with every \
             layer retrying and {:.0} ± {:.0} ms with one (mean ± 95% half-width): the inner layers' backoffs nest \
             inside the outer ones'.",
            every.give_up_ms.mean, every.give_up_ms.ci95, one.give_up_ms.mean, one.give_up_ms.ci95
        );
    }
    let _ = writeln!(t, "\n## Claims\n\n{}", markdown_table(claims));
    let _ = writeln!(t, "## Bottom requests per user call (summary.csv)\n");
    t += &counts_table(cells);
    let _ = writeln!(
        t,
        "\n![bottom requests](bottom-requests.png)\n\n![time to failure](give-up-time.png)\n\n\
         Files: `summary.csv` (`layers,attempts_per_layer,policy,bottom_requests_per_call`), `timing.csv` (requests \
         at all services and the time to failure at the user, mean, sd and 95% half-width over runs), charts as SVG and PNG."
    );
    t
}

/// Bottom requests per user call: a row per layer count, a column per policy and attempts.
fn counts_table(cells: &[Cell]) -> String {
    let count = |policy, k, r| find(cells, policy, k, r).map_or(0, |c| c.bottom_requests_per_call);
    let mut table = Markdown::new(
        std::iter::once(("layers".to_string(), Align::Number))
            .chain(ATTEMPTS.map(|r| (format!("every, r={r}"), Align::Number)))
            .chain(ATTEMPTS.map(|r| (format!("one, r={r}"), Align::Number))),
    );
    for k in LAYERS {
        table.row(
            std::iter::once(k.to_string()).chain(
                LayerPolicy::ALL
                    .into_iter()
                    .flat_map(|policy| ATTEMPTS.map(|r| count(policy, k, r).to_string())),
            ),
        );
    }
    table.finish()
}
