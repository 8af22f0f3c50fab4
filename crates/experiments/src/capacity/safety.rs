//! retry-safety: attempts that time out at the client but in fact executed, and the duplicate
//! effects their retries cause, without an idempotency key and with one, per backoff strategy
//! and client timeout (the capacity world of [`super::world`], with its capacity drop).

use std::fmt::Write as _;

use rand_chacha::ChaCha8Rng;
use serde::Serialize;

pub use super::safety_claims::claims;
use super::safety_claims::{quoted_timeout_ms, totals, widest_spread};
use super::world::{simulate, CapacityConfig, CapacityOutcome};
use crate::backoff::{Backoff, Strategy};
use crate::check_duration_s;
use crate::claim::{markdown_table, Claim};
use crate::client::PolicyKind;
use crate::grid::{Context, Experiment, Grid, RunAt};
use crate::output::Output;
use crate::plot::{BandPoint, LegendAt, LineChart, LineStyle, Series};
use crate::sim::stats::{estimate, Estimate};
use crate::table::{display, dp3, dp4, Align, Markdown};

pub const SEED_DEFAULT: u64 = 9110;
pub const RUNS_DEFAULT: u32 = 5;
pub const DURATION_S_DEFAULT: u32 = 60;

/// Client timeouts swept, in ms (the server's mean latency at 60% load is about 20 ms).
pub const TIMEOUTS_MS: [u32; 5] = [50, 100, 150, 200, 300];

/// Accepted client timeouts.
pub const TIMEOUT_MS_MIN: u32 = 10;
pub const TIMEOUT_MS_MAX: u32 = 10_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellKey {
    pub strategy: Strategy,
    pub key: bool,
    pub timeout_ms: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub at: CellKey,
    /// Per 1000 requests.
    pub duplicates: Estimate,
    pub timed_out_executed: Estimate,
    pub success_rate: Estimate,
    pub duplicate_total: u64,
}

fn config(at: CellKey, duration_s: u32) -> Result<CapacityConfig, String> {
    let backoff = Backoff::new(at.strategy, 25.0, 1000.0).map_err(|e| e.to_string())?;
    Ok(CapacityConfig {
        timeout_ms: f64::from(at.timeout_ms),
        duration_ms: f64::from(duration_s) * 1000.0,
        idempotency_key: at.key,
        ..CapacityConfig::standard(backoff)
    })
}

fn stream_id(at: CellKey, run_index: u32) -> u64 {
    let strategy_tag = Strategy::POST
        .iter()
        .position(|s| *s == at.strategy)
        .map_or(0, |i| i as u64 + 1);
    (strategy_tag << 56)
        | (u64::from(at.key) << 48)
        | (u64::from(at.timeout_ms) << 24)
        | u64::from(run_index)
}

/// The experiment: the timeouts swept and the simulated length of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RetrySafety {
    pub timeouts_ms: Vec<u32>,
    pub duration_s: u32,
}

impl RetrySafety {
    pub fn new(timeouts_ms: Vec<u32>, duration_s: u32) -> Result<Self, String> {
        check_duration_s(duration_s, 30, 3600)?;
        let in_range = |t: &u32| (TIMEOUT_MS_MIN..=TIMEOUT_MS_MAX).contains(t);
        if timeouts_ms.is_empty()
            || !timeouts_ms.iter().all(in_range)
            || timeouts_ms.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(format!(
                "--timeouts-ms must be ascending values in {TIMEOUT_MS_MIN}..={TIMEOUT_MS_MAX}, got {timeouts_ms:?}"
            ));
        }
        Ok(RetrySafety {
            timeouts_ms,
            duration_s,
        })
    }
}

impl Experiment for RetrySafety {
    type Cell = CellKey;
    type Run = CapacityOutcome;

    fn name(&self) -> &'static str {
        "retry-safety"
    }

    fn cells(&self) -> Vec<CellKey> {
        let mut cells = Vec::new();
        for strategy in Strategy::POST {
            for key in [false, true] {
                for &timeout_ms in &self.timeouts_ms {
                    cells.push(CellKey {
                        strategy,
                        key,
                        timeout_ms,
                    });
                }
            }
        }
        cells
    }

    fn stream(&self, at: &CellKey, run: RunAt) -> u64 {
        stream_id(*at, run.run_index)
    }

    fn run(&self, at: &CellKey, rng: &mut ChaCha8Rng) -> Result<CapacityOutcome, String> {
        simulate(
            &config(*at, self.duration_s)?,
            PolicyKind::ThreeRetries,
            rng,
        )
    }

    fn event_count(run: &CapacityOutcome) -> u64 {
        run.event_count
    }

    fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if self.duration_s != DURATION_S_DEFAULT {
            flags.push(format!("--duration-s {}", self.duration_s));
        }
        if self.timeouts_ms != TIMEOUTS_MS {
            let list: Vec<String> = self.timeouts_ms.iter().map(u32::to_string).collect();
            flags.push(format!("--timeouts-ms {}", list.join(",")));
        }
        flags
    }

    fn report(
        &self,
        grid: &Grid<CellKey, CapacityOutcome>,
        context: &Context,
    ) -> Result<Output, String> {
        let cells = summarise_grid(grid);
        let mut output = Output::default();
        output.table(
            "summary.csv",
            &cells
                .iter()
                .map(|c| summary_row(c, context.runs))
                .collect::<Vec<_>>(),
        )?;
        output.chart("duplicates", duplicates_chart(&cells));
        output.chart("timed-out-executed", timed_out_chart(&cells));
        let claims = claims(&cells);
        output.text("README.md", readme(context, self, &cells, &claims));
        output.claims = claims;
        Ok(output)
    }
}

/// Every cell's estimates per 1000 requests, in grid order.
pub fn summarise_grid(grid: &Grid<CellKey, CapacityOutcome>) -> Vec<Cell> {
    let per_1000 =
        |count: u64, o: &CapacityOutcome| count as f64 * 1000.0 / o.request_count.max(1) as f64;
    grid.cells
        .iter()
        .map(|cell| {
            let column = |f: &dyn Fn(&CapacityOutcome) -> f64| {
                estimate(&cell.runs.iter().map(f).collect::<Vec<f64>>())
            };
            Cell {
                at: cell.cell,
                duplicates: column(&|o| per_1000(o.duplicate_effect_count, o)),
                timed_out_executed: column(&|o| per_1000(o.timed_out_executed_count, o)),
                success_rate: column(&|o| o.success_count as f64 / o.request_count.max(1) as f64),
                duplicate_total: cell.runs.iter().map(|o| o.duplicate_effect_count).sum(),
            }
        })
        .collect()
}

#[derive(Serialize)]
struct SummaryRow {
    #[serde(serialize_with = "display")]
    strategy: Strategy,
    idempotency: &'static str,
    timeout_ms: u32,
    runs: u32,
    #[serde(serialize_with = "dp3")]
    duplicates_per_1000_mean: f64,
    #[serde(serialize_with = "dp3")]
    duplicates_per_1000_ci95: f64,
    #[serde(serialize_with = "dp3")]
    timed_out_executed_per_1000_mean: f64,
    #[serde(serialize_with = "dp3")]
    timed_out_executed_per_1000_ci95: f64,
    #[serde(serialize_with = "dp4")]
    success_rate_mean: f64,
    #[serde(serialize_with = "dp4")]
    success_rate_ci95: f64,
}

fn summary_row(c: &Cell, runs: u32) -> SummaryRow {
    SummaryRow {
        strategy: c.at.strategy,
        idempotency: key_name(c.at.key),
        timeout_ms: c.at.timeout_ms,
        runs,
        duplicates_per_1000_mean: c.duplicates.mean,
        duplicates_per_1000_ci95: c.duplicates.ci95,
        timed_out_executed_per_1000_mean: c.timed_out_executed.mean,
        timed_out_executed_per_1000_ci95: c.timed_out_executed.ci95,
        success_rate_mean: c.success_rate.mean,
        success_rate_ci95: c.success_rate.ci95,
    }
}

pub fn key_name(key: bool) -> &'static str {
    if key {
        "with-key"
    } else {
        "no-key"
    }
}

fn series(cells: &[Cell], strategy: Strategy, key: bool, value: fn(&Cell) -> Estimate) -> Series {
    let points = cells
        .iter()
        .filter(|c| c.at.strategy == strategy && c.at.key == key)
        .map(|c| {
            let e = value(c);
            BandPoint {
                x: f64::from(c.at.timeout_ms),
                y: e.mean,
                low: e.low().max(0.0),
                high: e.high(),
            }
        })
        .collect();
    let index = Strategy::POST
        .iter()
        .position(|s| *s == strategy)
        .unwrap_or(0);
    let mut s = Series::new(format!("{strategy}, {}", key_name(key)), index, points);
    if key {
        s.line = LineStyle::Dashed;
    }
    s
}

fn duplicates_chart(cells: &[Cell]) -> LineChart {
    let mut chart = LineChart::new(
        "Duplicate effects: no key (solid) against an idempotency key (dashed)",
        "client timeout (ms)",
        "duplicate effects per 1000 requests",
    );
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1180;
    for key in [false, true] {
        for strategy in Strategy::POST {
            chart
                .series
                .push(series(cells, strategy, key, |c| c.duplicates));
        }
    }
    chart
}

fn timed_out_chart(cells: &[Cell]) -> LineChart {
    let mut chart = LineChart::new(
        "Attempts the client timed out on that the server executed (no key)",
        "client timeout (ms)",
        "timed-out but executed attempts per 1000 requests",
    );
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1180;
    for strategy in Strategy::POST {
        chart
            .series
            .push(series(cells, strategy, false, |c| c.timed_out_executed));
    }
    chart
}

pub fn find(cells: &[Cell], strategy: Strategy, key: bool, timeout_ms: u32) -> Option<&Cell> {
    cells.iter().find(|c| {
        c.at == CellKey {
            strategy,
            key,
            timeout_ms,
        }
    })
}

fn readme(context: &Context, grid: &RetrySafety, cells: &[Cell], claims: &[Claim]) -> String {
    let duration_s = grid.duration_s;
    let (first_ms, last_ms) = (
        grid.timeouts_ms[0],
        grid.timeouts_ms[grid.timeouts_ms.len() - 1],
    );
    let mut t = String::new();
    let _ = writeln!(t, "# retry-safety: timed out is not failed\n");
    let _ = writeln!(
        t,
        "Generated by `{}` (seed {}, {} runs per cell, {duration_s} s simulated per run). Do not edit by hand.\n",
        context.command, context.seed, context.runs
    );
    let _ = writeln!(
        t,
        "The world of `metastability` (10 workers, queue of 200, 600 requests/s offered against 1000/s of capacity, \
         only 3 workers from 10 s to 20 s), every client making up to 3 retries with one of the AWS post's backoff \
         strategies (base 25 ms, cap 1 s), for client timeouts from {first_ms} to {last_ms} ms. Each executed request performs an \
         effect (a payment). **no-key**: every executed attempt is an effect, so an attempt that timed out at the \
         client but executed at the server, plus its retry, pays twice. **with-key**: the server claims the request's \
         idempotency key before executing and answers later attempts with 409 (still in progress) or the stored \
         response (completed), deciding with `retrylab::protocol::decide`.\n"
    );
    let _ = writeln!(t, "## Claims\n\n{}", markdown_table(claims));
    let _ = writeln!(t, "## What the figures show\n");
    t += &figures(grid, cells);
    t += &summary_table(grid, cells);
    let _ = writeln!(
        t,
        "\n![duplicates](duplicates.png)\n\n![timed out but executed](timed-out-executed.png)\n\n\
         Files: `summary.csv` (one row per strategy, key mode and timeout), charts as SVG and PNG."
    );
    t
}

/// The README's bullets: totals, figures at the quoted timeout, the trend and the widest spread.
fn figures(grid: &RetrySafety, cells: &[Cell]) -> String {
    let mut t = String::new();
    let (first_ms, last_ms) = (
        grid.timeouts_ms[0],
        grid.timeouts_ms[grid.timeouts_ms.len() - 1],
    );
    let quoted_ms = quoted_timeout_ms(&grid.timeouts_ms);
    let totals = totals(cells);
    let _ = writeln!(
        t,
        "- With the key there are **{}** duplicate effects in all runs of all cells; without it **{}**.",
        totals.with_key, totals.no_key
    );
    let mut at_100: Vec<String> = Strategy::POST
        .iter()
        .filter_map(|&s| find(cells, s, false, quoted_ms))
        .map(|c| {
            format!(
                "{} {:.1} ± {:.1}",
                c.at.strategy, c.duplicates.mean, c.duplicates.ci95
            )
        })
        .collect();
    at_100.sort();
    let _ = writeln!(
        t,
        "- Without a key, duplicate effects per 1000 requests at a {quoted_ms} ms timeout: {}. Backoff changes how many \
         attempts time out (by how much load it adds while the server is slow), not whether a timed-out attempt \
         executed: every strategy duplicates.",
        at_100.join(", ")
    );
    let trend: Vec<String> = Strategy::POST
        .iter()
        .filter_map(|&s| {
            let short = find(cells, s, false, first_ms)?;
            let long = find(cells, s, false, last_ms)?;
            Some(format!(
                "{} {:.1} -> {:.1}",
                s, short.duplicates.mean, long.duplicates.mean
            ))
        })
        .collect();
    let _ = writeln!(
        t,
        "- From a {} ms to a {} ms timeout (duplicates per 1000 requests, no key): {}.",
        first_ms,
        last_ms,
        trend.join(", ")
    );
    if let Some(spread) = widest_spread(cells, &grid.timeouts_ms) {
        let _ = writeln!(
            t,
            "- The strategies part most at a {} ms timeout: from {:.1} duplicates per 1000 requests ({}) \
             to {:.1} ({}), with wide intervals: near that timeout whether plain retries tip the server into the \
             collapse after the capacity drop depends on the run, and on how much load the backoff adds.",
            spread.timeout_ms, spread.low.1, spread.low.0, spread.high.1, spread.high.0
        );
    }
    t += &success_bullet(cells, quoted_ms);
    t
}

fn success_bullet(cells: &[Cell], quoted_ms: u32) -> String {
    let mut success: Vec<String> = Strategy::POST
        .iter()
        .filter_map(|&s| {
            Some((
                find(cells, s, false, quoted_ms)?,
                find(cells, s, true, quoted_ms)?,
            ))
        })
        .map(|(a, b)| {
            format!(
                "{} {:.3} / {:.3}",
                a.at.strategy, a.success_rate.mean, b.success_rate.mean
            )
        })
        .collect();
    success.sort();
    format!(
        "- Success rate at {quoted_ms} ms, no key / with key: {}. At short timeouts the capacity drop leaves plain 3 retries \
         collapsed (see `metastability`); with the key the server answers an attempt whose key is in progress (409) or \
         completed (replay) without service time (the lookup is modelled as free), so retries of work already done \
         stop occupying workers and the queue drains: here the key also ends the collapse. A key lookup that costs \
         as much as the work would not.\n\n",
        success.join(", ")
    )
}

/// One row per strategy and timeout: duplicates, timed out but executed, success.
fn summary_table(grid: &RetrySafety, cells: &[Cell]) -> String {
    let mut table = Markdown::new([
        ("strategy", Align::Text),
        ("timeout (ms)", Align::Number),
        ("duplicates /1000, no key", Align::Number),
        ("with key", Align::Number),
        ("timed out but executed /1000, no key", Align::Number),
        ("success, no key", Align::Number),
        ("success, with key", Align::Number),
    ]);
    for strategy in Strategy::POST {
        for &timeout_ms in &grid.timeouts_ms {
            if let (Some(a), Some(b)) = (
                find(cells, strategy, false, timeout_ms),
                find(cells, strategy, true, timeout_ms),
            ) {
                table.row([
                    strategy.to_string(),
                    timeout_ms.to_string(),
                    format!("{:.1} ± {:.1}", a.duplicates.mean, a.duplicates.ci95),
                    format!("{:.1}", b.duplicates.mean),
                    format!(
                        "{:.1} ± {:.1}",
                        a.timed_out_executed.mean, a.timed_out_executed.ci95
                    ),
                    format!("{:.3}", a.success_rate.mean),
                    format!("{:.3}", b.success_rate.mean),
                ]);
            }
        }
    }
    table.finish()
}
