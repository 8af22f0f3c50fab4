//! The aws-jitter output: `runs.csv`, `summary.csv` (the post's five strategies),
//! `summary-all.csv`, the charts and the README, whose claims table is [`super::claims`]'.

use std::fmt::Write as _;

use serde::Serialize;

use super::claims::{
    cap_claim, decorrelated, evaluate, fastest_clients, none_wins, reference_clients, Decorrelated,
    EqualisedWork, NoneWins, CONTENTION_CLIENTS_MIN, MUCH_LONGER_RATIO, QUADRATIC_EXPONENT_MIN,
    SAME_WORK_TOLERANCE,
};
use super::sweep::{find_cell, summarise, AwsJitter, CellSummary, RunRecord};
use super::world::cap_stickiness;
use crate::backoff::{Backoff, Strategy};
use crate::claim::{markdown_table, Claim};
use crate::grid::Context;
use crate::output::Output;
use crate::plot::{BandPoint, LegendAt, LineChart, LineStyle, Scale, Series};
use crate::sim::run_rng;
use crate::sim::stats::Estimate;
use crate::table::{display, dp3, Align, Markdown};

/// Beyond the post: decorrelated jitter with its growth factor equalised to the others' x2 (on
/// the upper bound of the draw, x2; on the mean of the draw, x4: `E[U(base, g s)] ~ g s / 2`),
/// and with the cap applied before drawing.
pub const EXTRA_STRATEGIES: [Strategy; 3] = [
    Strategy::Decorrelated { growth: 2 },
    Strategy::Decorrelated { growth: 4 },
    Strategy::DecorrelatedCapped { growth: 3 },
];

/// Draws used to measure how often decorrelated jitter repeats the cap.
pub const CAP_DRAWS: u32 = 1_000_000;

/// The generator stream of the cap measurement (no run of the grid uses it).
const CAP_STREAM: u64 = u64::MAX;

#[derive(Serialize)]
struct RunRow {
    #[serde(serialize_with = "display")]
    strategy: Strategy,
    clients: u32,
    run: u32,
    stream: u64,
    calls: u64,
    #[serde(serialize_with = "dp3")]
    time_ms: f64,
    #[serde(serialize_with = "dp3")]
    latency_ms_p50: f64,
    #[serde(serialize_with = "dp3")]
    latency_ms_p99: f64,
    events: u64,
}

#[derive(Serialize)]
struct SummaryRow {
    #[serde(serialize_with = "display")]
    strategy: Strategy,
    clients: u32,
    runs: u32,
    #[serde(serialize_with = "dp3")]
    calls_mean: f64,
    #[serde(serialize_with = "dp3")]
    calls_sd: f64,
    #[serde(serialize_with = "dp3")]
    calls_ci95: f64,
    #[serde(serialize_with = "dp3")]
    time_ms_mean: f64,
    #[serde(serialize_with = "dp3")]
    time_ms_sd: f64,
    #[serde(serialize_with = "dp3")]
    time_ms_ci95: f64,
}

/// A summary row with the per-client percentiles and the event count.
#[derive(Serialize)]
struct SummaryAllRow {
    #[serde(serialize_with = "display")]
    strategy: Strategy,
    clients: u32,
    runs: u32,
    #[serde(serialize_with = "dp3")]
    calls_mean: f64,
    #[serde(serialize_with = "dp3")]
    calls_sd: f64,
    #[serde(serialize_with = "dp3")]
    calls_ci95: f64,
    #[serde(serialize_with = "dp3")]
    time_ms_mean: f64,
    #[serde(serialize_with = "dp3")]
    time_ms_sd: f64,
    #[serde(serialize_with = "dp3")]
    time_ms_ci95: f64,
    #[serde(serialize_with = "dp3")]
    latency_ms_p50_mean: f64,
    #[serde(serialize_with = "dp3")]
    latency_ms_p50_ci95: f64,
    #[serde(serialize_with = "dp3")]
    latency_ms_p99_mean: f64,
    #[serde(serialize_with = "dp3")]
    latency_ms_p99_ci95: f64,
    events: u64,
}

fn run_row(r: &RunRecord) -> RunRow {
    let o = &r.outcome;
    RunRow {
        strategy: r.strategy,
        clients: r.clients,
        run: r.run_index,
        stream: r.stream,
        calls: o.call_count,
        time_ms: o.time_ms,
        latency_ms_p50: o.latency_ms_p50,
        latency_ms_p99: o.latency_ms_p99,
        events: o.event_count,
    }
}

fn summary_row(c: &CellSummary) -> SummaryRow {
    SummaryRow {
        strategy: c.strategy,
        clients: c.clients,
        runs: c.runs,
        calls_mean: c.calls.mean,
        calls_sd: c.calls.sd,
        calls_ci95: c.calls.ci95,
        time_ms_mean: c.time_ms.mean,
        time_ms_sd: c.time_ms.sd,
        time_ms_ci95: c.time_ms.ci95,
    }
}

fn summary_all_row(c: &CellSummary) -> SummaryAllRow {
    SummaryAllRow {
        strategy: c.strategy,
        clients: c.clients,
        runs: c.runs,
        calls_mean: c.calls.mean,
        calls_sd: c.calls.sd,
        calls_ci95: c.calls.ci95,
        time_ms_mean: c.time_ms.mean,
        time_ms_sd: c.time_ms.sd,
        time_ms_ci95: c.time_ms.ci95,
        latency_ms_p50_mean: c.latency_ms_p50.mean,
        latency_ms_p50_ci95: c.latency_ms_p50.ci95,
        latency_ms_p99_mean: c.latency_ms_p99.mean,
        latency_ms_p99_ci95: c.latency_ms_p99.ci95,
        events: c.event_count,
    }
}

/// The post's claims on its five strategies, and the cap critique, measured on `seed`.
pub fn all_claims(
    experiment: &AwsJitter,
    cells: &[CellSummary],
    seed: u64,
) -> Result<Vec<Claim>, String> {
    let post_cells: Vec<CellSummary> = cells
        .iter()
        .filter(|c| Strategy::POST.contains(&c.strategy))
        .copied()
        .collect();
    let params = &experiment.config.params;
    let decorrelated = Backoff::new(
        Strategy::Decorrelated { growth: 3 },
        params.base_ms,
        params.cap_ms,
    )
    .map_err(|e| e.to_string())?;
    let stickiness = cap_stickiness(decorrelated, CAP_DRAWS, &mut run_rng(seed, CAP_STREAM));
    let mut claims = evaluate(&post_cells);
    claims.push(cap_claim(
        params,
        CAP_DRAWS,
        stickiness.at_cap_share,
        stickiness.stay_share,
    ));
    Ok(claims)
}

/// Every file of the output from the runs' records.
pub fn report(
    experiment: &AwsJitter,
    records: &[RunRecord],
    context: &Context,
) -> Result<Output, String> {
    let cells = summarise(records);
    // The claims (the cap measurement is most of a report's serial time) beside the tables.
    let (claims, tables) = rayon::join(
        || all_claims(experiment, &cells, context.seed),
        || tables(records, &cells),
    );
    let (claims, mut output) = (claims?, tables?);
    charts(&cells, experiment.post_only, &mut output);
    output.text("README.md", readme(experiment, context, &cells, &claims));
    output.claims = claims;
    Ok(output)
}

/// `runs.csv`, `summary.csv` and `summary-all.csv`.
fn tables(records: &[RunRecord], cells: &[CellSummary]) -> Result<Output, String> {
    let mut output = Output::default();
    output.table("runs.csv", &records.iter().map(run_row).collect::<Vec<_>>())?;
    let post_rows: Vec<SummaryRow> = cells
        .iter()
        .filter(|c| Strategy::POST.contains(&c.strategy))
        .map(summary_row)
        .collect();
    output.table("summary.csv", &post_rows)?;
    output.table(
        "summary-all.csv",
        &cells.iter().map(summary_all_row).collect::<Vec<_>>(),
    )?;
    Ok(output)
}

/// Chart colours by strategy, stable across charts.
fn colour_of(strategy: Strategy) -> usize {
    match strategy {
        Strategy::None => 7,
        Strategy::Exponential => 1,
        Strategy::EqualJitter => 3,
        Strategy::FullJitter => 0,
        Strategy::Decorrelated { growth: 3 } => 2,
        Strategy::Decorrelated { growth: 2 } => 5,
        Strategy::Decorrelated { .. } => 6,
        Strategy::DecorrelatedCapped { .. } => 4,
        Strategy::Constant => 6,
    }
}

fn series_by_clients(
    cells: &[CellSummary],
    strategy: Strategy,
    value: impl Fn(&CellSummary) -> (f64, f64),
) -> Series {
    let points = cells
        .iter()
        .filter(|c| c.strategy == strategy)
        .map(|c| {
            let (mean, ci95) = value(c);
            BandPoint {
                x: f64::from(c.clients),
                y: mean,
                low: mean - ci95,
                high: mean + ci95,
            }
        })
        .collect();
    Series::new(strategy.name(), colour_of(strategy), points)
}

const CLIENTS_AXIS: &str = "clients (count)";
const CALLS_AXIS: &str = "calls: write requests per run (count)";
const TIME_AXIS: &str = "completion time of the last client (ms)";

fn calls(c: &CellSummary) -> (f64, f64) {
    (c.calls.mean, c.calls.ci95)
}

fn time(c: &CellSummary) -> (f64, f64) {
    (c.time_ms.mean, c.time_ms.ci95)
}

fn charts(cells: &[CellSummary], post_only: bool, output: &mut Output) {
    post_charts(cells, output);
    tradeoff_and_latency_charts(cells, output);
    if !post_only {
        decorrelated_charts(cells, output);
    }
}

/// The post's charts: work and completion time against clients (time also on a log scale).
fn post_charts(cells: &[CellSummary], output: &mut Output) {
    let (clients_axis, calls_axis, time_axis) = (CLIENTS_AXIS, CALLS_AXIS, TIME_AXIS);

    let mut work = LineChart::new(
        "Work: calls vs clients (mean of runs, 95% band)",
        clients_axis,
        calls_axis,
    );
    work.series = Strategy::POST
        .iter()
        .map(|&s| series_by_clients(cells, s, calls))
        .collect();
    output.chart("work", work.clone());

    let mut time_chart = LineChart::new(
        "Completion time vs clients (mean of runs, 95% band)",
        clients_axis,
        time_axis,
    );
    time_chart.series = Strategy::POST
        .iter()
        .map(|&s| series_by_clients(cells, s, time))
        .collect();
    output.chart("time", time_chart.clone());
    time_chart.title = "Completion time vs clients, log scale (mean of runs, 95% band)".into();
    time_chart.y_scale = Scale::Log;
    time_chart.legend_at = LegendAt::LowerRight;
    output.chart("time-log", time_chart.clone());
}

/// Beyond the post: work against time, and the median and p99 client's completion time.
fn tradeoff_and_latency_charts(cells: &[CellSummary], output: &mut Output) {
    let (clients_axis, calls_axis, time_axis) = (CLIENTS_AXIS, CALLS_AXIS, TIME_AXIS);
    // Where does no backoff win? Each line walks through the client counts.
    let mut tradeoff = LineChart::new(
        "Work against time: each point one client count (10 at the lower left)",
        time_axis,
        calls_axis,
    );
    tradeoff.x_scale = Scale::Log;
    tradeoff.y_scale = Scale::Log;
    tradeoff.series = Strategy::POST
        .iter()
        .map(|&s| {
            let points = cells
                .iter()
                .filter(|c| c.strategy == s)
                .map(|c| BandPoint::exact(c.time_ms.mean, c.calls.mean))
                .collect();
            Series::new(s.name(), colour_of(s), points)
        })
        .collect();
    output.chart("tradeoff", tradeoff.clone());

    // Per-client latency: p50 dashed, p99 solid, same colour per strategy.
    let mut latency = LineChart::new(
        "Per-client completion time: p99 (solid) and p50 (dashed)",
        clients_axis,
        "client completion time (ms)",
    );
    latency.y_scale = Scale::Log;
    latency.legend_at = LegendAt::Outside;
    latency.width_px = 1120;
    for &s in &Strategy::POST {
        let mut p50 =
            series_by_clients(cells, s, |c| (c.latency_ms_p50.mean, c.latency_ms_p50.ci95));
        p50.label = format!("{} p50", s.name());
        p50.line = LineStyle::Dashed;
        let mut p99 =
            series_by_clients(cells, s, |c| (c.latency_ms_p99.mean, c.latency_ms_p99.ci95));
        p99.label = format!("{} p99", s.name());
        latency.series.push(p99);
        latency.series.push(p50);
    }
    output.chart("latency", latency.clone());
}

/// Decorrelated jitter's growth variants against full jitter.
fn decorrelated_charts(cells: &[CellSummary], output: &mut Output) {
    let (clients_axis, calls_axis, time_axis) = (CLIENTS_AXIS, CALLS_AXIS, TIME_AXIS);
    let decorrelated = [
        Strategy::FullJitter,
        Strategy::Decorrelated { growth: 3 },
        Strategy::Decorrelated { growth: 2 },
        Strategy::Decorrelated { growth: 4 },
        Strategy::DecorrelatedCapped { growth: 3 },
    ];
    let mut work = LineChart::new(
        "Decorrelated jitter: growth x3 (post), x2, x4; cap before drawing",
        clients_axis,
        calls_axis,
    );
    work.series = decorrelated
        .iter()
        .map(|&s| series_by_clients(cells, s, calls))
        .collect();
    output.chart("decorrelated-work", work.clone());
    let mut time_chart = LineChart::new(
        "Decorrelated jitter variants: completion time",
        clients_axis,
        time_axis,
    );
    time_chart.series = decorrelated
        .iter()
        .map(|&s| series_by_clients(cells, s, time))
        .collect();
    output.chart("decorrelated-time", time_chart.clone());
}

fn readme(
    experiment: &AwsJitter,
    context: &Context,
    cells: &[CellSummary],
    claims: &[Claim],
) -> String {
    let c = &experiment.config;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# aws-jitter: \"Exponential Backoff And Jitter\" (Brooker, AWS, 2015), reproduced\n"
    );
    let _ = writeln!(
        t,
        "Generated by `experiments/aws_jitter.rs` from this folder's data; do not edit by hand. Regenerate with\n\n    {}\n",
        context.command
    );
    let _ = writeln!(
        t,
        "World (docs/src/domain.md section 7, after aws-samples/aws-arch-backoff-simulator): one server with a single versioned row, \
         optimistic concurrency; N clients start at t = 0, each reads the version then writes with it, and retries \
         after a failed write with one network leg plus `backoff(attempt)` (attempt 1 for the first retry), no limit. \
         Every network leg takes |Normal({} ms, {} ms)|; base {} ms, cap {} ms; a fresh backoff state per client. \
         **calls** = write requests received by the server; **time** = when the last client receives its success. \
         {} runs per cell, each on its own ChaCha8 stream of seed {} (stream = strategy tag, clients, run); \
         intervals are 95% Student-t intervals of the mean over runs. The model is `src/experiments/aws/world.rs`: the two \
         client-side receipts of an attempt touch no shared state, so they are folded into the next arrival at the \
         server (each leg is still its own draw), which halves the events without changing the process.\n",
        c.params.leg_ms_mean, c.params.leg_ms_sd, c.params.base_ms, c.params.cap_ms, context.runs, context.seed
    );

    let _ = writeln!(t, "## The post's claims\n");
    t += &markdown_table(claims);
    t.push('\n');
    let _ = writeln!(
        t,
        "Multi-point claims are judged at client counts >= {} (below that the strategies barely separate); \
         thresholds: \"about the same\" = within {:.0}%, \"much longer\" = at least {}x, O(N^2) = fitted exponent >= {}.\n",
        CONTENTION_CLIENTS_MIN,
        SAME_WORK_TOLERANCE * 100.0,
        MUCH_LONGER_RATIO,
        QUADRATIC_EXPONENT_MIN
    );

    let _ = writeln!(t, "## Results (summary.csv: mean ± 95% half-width)\n");
    t += &results_tables(&c.clients, cells);
    let _ = writeln!(
        t,
        "![work](work.png)\n\n![time](time.png)\n\n![time, log scale](time-log.png)\n"
    );
    t += &beyond_the_post(experiment, cells);
    let _ = writeln!(
        t,
        "Files: `runs.csv` (one row per run, with its stream), `summary.csv` (the post's five strategies), \
         `summary-all.csv` (all strategies, with per-client p50/p99 and event counts), charts as SVG and PNG."
    );
    t
}

/// "12 ± 3": a mean and its 95% half-width, no decimals.
fn mean_ci(e: Estimate) -> String {
    format!("{:.0} ± {:.0}", e.mean, e.ci95)
}

/// Calls and completion time: one table each, a row per client count, a column per strategy.
fn results_tables(clients: &[u32], cells: &[CellSummary]) -> String {
    let mut t = String::new();
    for (title, value) in [
        (
            "Calls (write requests)",
            (|c: &CellSummary| c.calls) as fn(&CellSummary) -> Estimate,
        ),
        (
            "Completion time of the last client (ms)",
            |c: &CellSummary| c.time_ms,
        ),
    ] {
        let _ = writeln!(t, "{title}:\n");
        let mut table = Markdown::new(
            std::iter::once(("clients".to_string(), Align::Number))
                .chain(Strategy::POST.map(|s| (s.to_string(), Align::Number))),
        );
        for &n in clients {
            table.row(
                std::iter::once(n.to_string()).chain(Strategy::POST.map(|s| {
                    find_cell(cells, s, n).map_or("-".to_string(), |cell| mean_ci(value(cell)))
                })),
            );
        }
        t += &table.finish();
        t.push('\n');
    }
    t
}

/// Work against time, per-client latency and the decorrelated variants, at the reference
/// client count.
fn beyond_the_post(experiment: &AwsJitter, cells: &[CellSummary]) -> String {
    let clients = &experiment.config.clients;
    let mut t = String::new();
    let _ = writeln!(t, "## Beyond the post\n");
    let n_ref = reference_clients(clients);
    let _ = writeln!(
        t,
        "**Work against time** (tradeoff.png): each line walks through the client counts, 10 at its lower left; \
         lower and further left is better on both axes. At {n_ref} clients:\n"
    );
    let mut table = Markdown::new([
        ("strategy", Align::Text),
        ("calls", Align::Number),
        ("time (ms)", Align::Number),
        ("client p50 (ms)", Align::Number),
        ("client p99 (ms)", Align::Number),
    ]);
    let extra: &[Strategy] = if experiment.post_only {
        &[]
    } else {
        &EXTRA_STRATEGIES
    };
    for s in Strategy::POST.iter().chain(extra) {
        if let Some(cell) = find_cell(cells, *s, n_ref) {
            table.row([
                s.to_string(),
                mean_ci(cell.calls),
                mean_ci(cell.time_ms),
                mean_ci(cell.latency_ms_p50),
                mean_ci(cell.latency_ms_p99),
            ]);
        }
    }
    t += &table.finish();
    t.push('\n');
    let _ = writeln!(t, "{}\n", none_wins_note(&none_wins(cells, clients)));
    let _ = writeln!(t, "{}\n", latency_note(cells, n_ref));
    let _ = writeln!(
        t,
        "![work against time](tradeoff.png)\n\n![per-client latency](latency.png)\n"
    );
    if !experiment.post_only {
        let note =
            decorrelated(cells, n_ref).map_or(String::new(), |d| decorrelated_note(&d, n_ref));
        let _ = writeln!(t, "{note}\n");
        let _ = writeln!(t, "![decorrelated work](decorrelated-work.png)\n\n![decorrelated time](decorrelated-time.png)\n");
    }
    t
}

fn none_wins_note(wins: &NoneWins) -> String {
    let mut text = format!(
        "Where does no backoff win? On completion time {} of this grid. ",
        if wins.fastest_everywhere {
            "at every client count"
        } else {
            "not at every client count"
        }
    );
    if let (Some(first), Some(last)) = (wins.against_full.first(), wins.against_full.last()) {
        let _ = write!(
            text,
            "Against full jitter it costs {:.1}x the calls at {} clients and {:.1}x at {}, while full jitter takes {:.1}x and {:.1}x as long: \
             no backoff wins when the work is free (an idle server, an instantaneous one as here) and only the latency counts.",
            first.1, first.0, last.1, last.0, first.2, last.2
        );
    }
    text
}

fn latency_note(cells: &[CellSummary], n: u32) -> String {
    match fastest_clients(cells, n) {
        Some(((s50, v50), (s99, v99))) => format!(
            "**Per-client latency** (latency.png): the post only reports the last client. At {n} clients the median client \
             is served first by {s50} ({v50:.0} ms) and the p99 client by {s99} ({v99:.0} ms)."
        ),
        None => String::new(),
    }
}

fn decorrelated_note(d: &Decorrelated, n: u32) -> String {
    let mut table = Markdown::new([
        ("strategy", Align::Text),
        ("calls", Align::Number),
        ("time (ms)", Align::Number),
    ]);
    for (name, c) in [
        ("full-jitter (x2)", d.full),
        ("decorrelated-jitter (x3, post)", d.x3),
        ("decorrelated-jitter-x2", d.x2),
        ("decorrelated-jitter-x4", d.x4),
        ("decorrelated-capped (x3, cap before drawing)", d.capped),
    ] {
        table.row([name.to_string(), mean_ci(c.calls), mean_ci(c.time_ms)]);
    }
    let mut text = format!(
        "**Decorrelated jitter with the growth equalised** (decorrelated-work.png, decorrelated-time.png). The post's \
         decorrelated jitter draws `U(base, 3 sleep)` while the exponential family doubles. Equalising the bound \
         (x2) is not equalising the growth: `U(base, 2 sleep)` has mean `sleep + base/2`, so sleep barely grows. \
         Equalising the mean growth needs x4. Capping before drawing (`U(base, min(cap, 3 sleep))`) keeps the delay \
         jittered at the cap. At {n} clients:\n\n"
    );
    text += &table.finish();
    let (less_or_more, verdict) = match d.x4_work {
        EqualisedWork::Less | EqualisedWork::AboutTheSame => (
            if d.x4_work == EqualisedWork::Less { "less" } else { "about the same" },
            "so the extra work of the post's decorrelated jitter comes from its slower growth, not from decorrelation itself",
        ),
        EqualisedWork::More => (
            "more",
            "so decorrelation itself costs work, beyond its slower growth",
        ),
    };
    let (x2, x4, full) = (d.x2, d.x4, d.full);
    text += &format!(
        "\nWith the mean growth equalised (x4), decorrelated jitter does {less_or_more} work than full jitter \
         ({:.0} vs {:.0} calls) and takes {:.0} vs {:.0} ms: {verdict}. With the bound equalised (x2) it does \
         {:.1}x full jitter's work and finishes in {:.2}x its time.\n",
        x4.calls.mean,
        full.calls.mean,
        x4.time_ms.mean,
        full.time_ms.mean,
        x2.calls.mean / full.calls.mean,
        x2.time_ms.mean / full.time_ms.mean
    );
    text
}
