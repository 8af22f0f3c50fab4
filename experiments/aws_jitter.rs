//! aws-jitter: reproduces Brooker (2015), "Exponential Backoff And Jitter" (AWS Architecture
//! Blog), seeded and with 95% confidence intervals, and goes a little beyond it.
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use retrylab::backoff::{Backoff, Strategy};
use retrylab::plot::{self, BandPoint, LegendAt, LineChart, LineStyle, Scale, Series};
use retrylab::sim::aws::claims::{self, Claim};
use retrylab::sim::aws::sweep::{find_cell, RUNS_MAX};
use retrylab::sim::aws::{
    cap_stickiness, run_sweep, summarise, CellSummary, RunRecord, SweepConfig,
};
use retrylab::sim::run_rng;

const SEED_DEFAULT: u64 = 2015;
const OUT_DEFAULT: &str = "results/aws-jitter";
const THREADS_MAX: usize = 256;

/// Beyond the post: decorrelated jitter with its growth factor equalised to the others' x2 (on
/// the upper bound of the draw, x2; on the mean of the draw, x4: `E[U(base, g s)] ~ g s / 2`),
/// and with the cap applied before drawing.
const EXTRA_STRATEGIES: [Strategy; 3] = [
    Strategy::Decorrelated { growth: 2 },
    Strategy::Decorrelated { growth: 4 },
    Strategy::DecorrelatedCapped { growth: 3 },
];

/// Draws used to measure how often decorrelated jitter repeats the cap.
const CAP_DRAWS: u32 = 1_000_000;

/// Raw flags, validated into a `SweepConfig` by `validate`.
#[derive(Parser, Debug)]
#[command(
    name = "aws-jitter",
    about = "Reproduce the AWS 'Exponential Backoff And Jitter' comparison: CSV, charts, README"
)]
struct Cli {
    /// Client counts, comma-separated, ascending (default 10,20,...,190).
    #[arg(long, value_delimiter = ',')]
    clients: Option<Vec<u32>>,
    /// Runs per (strategy, clients) cell, at least 2 for an interval.
    #[arg(long, default_value_t = 100)]
    runs: u32,
    /// Seed of the ChaCha8 generator; each run uses its own stream of it.
    #[arg(long, default_value_t = SEED_DEFAULT)]
    seed: u64,
    /// Output folder (created if missing).
    #[arg(long, default_value = OUT_DEFAULT)]
    out: PathBuf,
    /// Worker threads (default: all cores). The output does not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Only the post's five strategies (skip the decorrelated variants).
    #[arg(long)]
    post_only: bool,
}

struct Options {
    config: SweepConfig,
    out: PathBuf,
    threads: Option<usize>,
    post_only: bool,
    clients_given: bool,
}

fn validate(cli: Cli) -> Result<Options, String> {
    let mut config = SweepConfig::post(cli.seed);
    let clients_given = cli.clients.is_some();
    if let Some(clients) = cli.clients {
        if clients.is_empty() {
            return Err("--clients needs at least one client count".into());
        }
        if clients.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!(
                "--clients must be strictly ascending, got {clients:?}"
            ));
        }
        config.clients = clients;
    }
    if !(2..=RUNS_MAX).contains(&cli.runs) {
        return Err(format!(
            "--runs must be in 2..={RUNS_MAX} (an interval needs two runs), got {}",
            cli.runs
        ));
    }
    config.runs = cli.runs;
    if let Some(threads) = cli.threads {
        if !(1..=THREADS_MAX).contains(&threads) {
            return Err(format!(
                "--threads must be in 1..={THREADS_MAX}, got {threads}"
            ));
        }
    }
    if !cli.post_only {
        config.strategies.extend(EXTRA_STRATEGIES);
    }
    config.validate().map_err(|e| e.to_string())?;
    retrylab::atomic::ensure_writable_folder(&cli.out)?;
    Ok(Options {
        config,
        out: cli.out,
        threads: cli.threads,
        post_only: cli.post_only,
        clients_given,
    })
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let text = e.to_string();
            eprintln!(
                "aws-jitter: {}",
                text.lines().next().unwrap_or("bad arguments")
            );
            return ExitCode::from(2);
        }
    };
    let options = match validate(cli) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("aws-jitter: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("aws-jitter: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &Options) -> Result<(), String> {
    let config = &options.config;
    eprintln!(
        "aws-jitter: seed {}, {} strategies x {} client counts x {} runs = {} runs -> {}",
        config.seed,
        config.strategies.len(),
        config.clients.len(),
        config.runs,
        config.run_count(),
        options.out.display()
    );
    let progress = if std::io::stderr().is_terminal() {
        let bar =
            ProgressBar::with_draw_target(Some(config.run_count()), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} (eta {eta})")
                .map_err(|e| e.to_string())?,
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let started = Instant::now();
    let sweep = || run_sweep(config, &|| progress.inc(1));
    let records = match options.threads {
        Some(threads) => rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| e.to_string())?
            .install(sweep),
        None => sweep(),
    }
    .map_err(|e| e.to_string())?;
    let sweep_s = started.elapsed().as_secs_f64();
    progress.finish_and_clear();
    let cells = summarise(&records);
    let events: u64 = cells.iter().map(|c| c.event_count).sum();
    // Wall time goes to stderr only: results must not depend on the clock.
    eprintln!(
        "aws-jitter: sweep {:.3} s wall, {} events, {:.1} M events/s",
        sweep_s,
        events,
        events as f64 / sweep_s / 1e6
    );

    std::fs::create_dir_all(&options.out)
        .map_err(|e| format!("creating {}: {e}", options.out.display()))?;
    let out = options.out.as_path();
    let write = |name: &str, text: &str| {
        plot::write_atomic(&out.join(name), text.as_bytes()).map_err(|e| e.to_string())
    };
    write("runs.csv", &runs_csv(&records))?;
    let post_cells: Vec<CellSummary> = cells
        .iter()
        .filter(|c| Strategy::POST.contains(&c.strategy))
        .copied()
        .collect();
    write("summary.csv", &summary_csv(&post_cells))?;
    write("summary-all.csv", &summary_all_csv(&cells))?;
    draw_charts(&cells, out, options.post_only).map_err(|e| e.to_string())?;
    let cap_rng = &mut run_rng(config.seed, u64::MAX);
    let stickiness = cap_stickiness(
        Backoff::new(
            Strategy::Decorrelated { growth: 3 },
            config.params.base_ms,
            config.params.cap_ms,
        )
        .map_err(|e| e.to_string())?,
        CAP_DRAWS,
        cap_rng,
    );
    let claims = claims::evaluate(&post_cells);
    write(
        "README.md",
        &readme(
            options,
            &cells,
            &claims,
            stickiness.at_cap_share,
            stickiness.stay_share,
        ),
    )?;
    eprintln!(
        "aws-jitter: wrote {} ({:.3} s in total)",
        out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn runs_csv(records: &[RunRecord]) -> String {
    let mut text = String::from(
        "strategy,clients,run,stream,calls,time_ms,latency_ms_p50,latency_ms_p99,events\n",
    );
    for r in records {
        let o = &r.outcome;
        let _ = writeln!(
            text,
            "{},{},{},{},{},{:.3},{:.3},{:.3},{}",
            r.strategy,
            r.clients,
            r.run_index,
            r.stream,
            o.call_count,
            o.time_ms,
            o.latency_ms_p50,
            o.latency_ms_p99,
            o.event_count
        );
    }
    text
}

fn summary_csv(cells: &[CellSummary]) -> String {
    let mut text = String::from(
        "strategy,clients,runs,calls_mean,calls_sd,calls_ci95,time_ms_mean,time_ms_sd,time_ms_ci95\n",
    );
    for c in cells {
        let _ = writeln!(
            text,
            "{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3}",
            c.strategy,
            c.clients,
            c.runs,
            c.calls.mean,
            c.calls.sd,
            c.calls.ci95,
            c.time_ms.mean,
            c.time_ms.sd,
            c.time_ms.ci95
        );
    }
    text
}

fn summary_all_csv(cells: &[CellSummary]) -> String {
    let mut text = String::from(
        "strategy,clients,runs,calls_mean,calls_sd,calls_ci95,time_ms_mean,time_ms_sd,time_ms_ci95,\
         latency_ms_p50_mean,latency_ms_p50_ci95,latency_ms_p99_mean,latency_ms_p99_ci95,events\n",
    );
    for c in cells {
        let _ = writeln!(
            text,
            "{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{}",
            c.strategy,
            c.clients,
            c.runs,
            c.calls.mean,
            c.calls.sd,
            c.calls.ci95,
            c.time_ms.mean,
            c.time_ms.sd,
            c.time_ms.ci95,
            c.latency_ms_p50.mean,
            c.latency_ms_p50.ci95,
            c.latency_ms_p99.mean,
            c.latency_ms_p99.ci95,
            c.event_count
        );
    }
    text
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

fn draw_charts(cells: &[CellSummary], out: &Path, post_only: bool) -> Result<(), plot::PlotError> {
    let calls = |c: &CellSummary| (c.calls.mean, c.calls.ci95);
    let time = |c: &CellSummary| (c.time_ms.mean, c.time_ms.ci95);
    let clients_axis = "clients (count)";
    let calls_axis = "calls: write requests per run (count)";
    let time_axis = "completion time of the last client (ms)";

    let mut work = LineChart::new(
        "Work: calls vs clients (mean of runs, 95% band)",
        clients_axis,
        calls_axis,
    );
    work.series = Strategy::POST
        .iter()
        .map(|&s| series_by_clients(cells, s, calls))
        .collect();
    plot::write_line_chart(&work, out, "work")?;

    let mut time_chart = LineChart::new(
        "Completion time vs clients (mean of runs, 95% band)",
        clients_axis,
        time_axis,
    );
    time_chart.series = Strategy::POST
        .iter()
        .map(|&s| series_by_clients(cells, s, time))
        .collect();
    plot::write_line_chart(&time_chart, out, "time")?;
    time_chart.title = "Completion time vs clients, log scale (mean of runs, 95% band)".into();
    time_chart.y_scale = Scale::Log;
    time_chart.legend_at = LegendAt::LowerRight;
    plot::write_line_chart(&time_chart, out, "time-log")?;

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
    plot::write_line_chart(&tradeoff, out, "tradeoff")?;

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
    plot::write_line_chart(&latency, out, "latency")?;

    if !post_only {
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
        plot::write_line_chart(&work, out, "decorrelated-work")?;
        let mut time_chart = LineChart::new(
            "Decorrelated jitter variants: completion time",
            clients_axis,
            time_axis,
        );
        time_chart.series = decorrelated
            .iter()
            .map(|&s| series_by_clients(cells, s, time))
            .collect();
        plot::write_line_chart(&time_chart, out, "decorrelated-time")?;
    }
    Ok(())
}

fn command_line(options: &Options) -> String {
    let c = &options.config;
    let mut command = String::from("cargo run --release --bin aws-jitter --");
    if options.clients_given {
        let list: Vec<String> = c.clients.iter().map(u32::to_string).collect();
        let _ = write!(command, " --clients {}", list.join(","));
    }
    if c.runs != 100 {
        let _ = write!(command, " --runs {}", c.runs);
    }
    let _ = write!(command, " --seed {}", c.seed);
    if options.out != Path::new(OUT_DEFAULT) {
        let _ = write!(command, " --out {}", options.out.display());
    }
    if options.post_only {
        command += " --post-only";
    }
    command
}

fn readme(
    options: &Options,
    cells: &[CellSummary],
    claims: &[Claim],
    at_cap_share: f64,
    stay_share: Option<f64>,
) -> String {
    let c = &options.config;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# aws-jitter: \"Exponential Backoff And Jitter\" (Brooker, AWS, 2015), reproduced\n"
    );
    let _ = writeln!(
        t,
        "Generated by `experiments/aws_jitter.rs` from this folder's data; do not edit by hand. Regenerate with\n\n    {}\n",
        command_line(options)
    );
    let _ = writeln!(
        t,
        "World (DOMAIN.md section 7, after aws-samples/aws-arch-backoff-simulator): one server with a single versioned row, \
         optimistic concurrency; N clients start at t = 0, each reads the version then writes with it, and retries \
         after a failed write with one network leg plus `backoff(attempt)` (attempt 1 for the first retry), no limit. \
         Every network leg takes |Normal({} ms, {} ms)|; base {} ms, cap {} ms; a fresh backoff state per client. \
         **calls** = write requests received by the server; **time** = when the last client receives its success. \
         {} runs per cell, each on its own ChaCha8 stream of seed {} (stream = strategy tag, clients, run); \
         intervals are 95% Student-t intervals of the mean over runs. The model is `src/sim/aws/model.rs`: the two \
         client-side receipts of an attempt touch no shared state, so they are folded into the next arrival at the \
         server (each leg is still its own draw), which halves the events without changing the process.\n",
        c.params.leg_ms_mean, c.params.leg_ms_sd, c.params.base_ms, c.params.cap_ms, c.runs, c.seed
    );

    let _ = writeln!(t, "## The post's claims\n");
    let _ = writeln!(t, "| claim | verdict | criterion | evidence |");
    let _ = writeln!(t, "|---|---|---|---|");
    for claim in claims {
        let _ = writeln!(
            t,
            "| {} | **{}** | {} | {} |",
            claim.statement,
            claim.verdict.label(),
            claim.criterion,
            claim.evidence
        );
    }
    let stay = stay_share.map_or("n/a".to_string(), |s| format!("{:.1}%", s * 100.0));
    let _ = writeln!(
        t,
        "| Critique: decorrelated jitter sticks to the cap about 2/3 of the time. | **{}** | share of delays equal to the cap over {CAP_DRAWS} consecutive retries of one client | \
         a delay at the cap is followed by another delay exactly at the cap {stay} of the time (theory (3 cap - cap)/(3 cap - base) = {:.1}%), \
         but only {:.1}% of all delays sit at the cap, because a draw below the cap takes several retries to climb back |\n",
        if at_cap_share > 0.5 { "reproduced" } else { "partly reproduced" },
        (2.0 * c.params.cap_ms) / (3.0 * c.params.cap_ms - c.params.base_ms) * 100.0,
        at_cap_share * 100.0
    );
    let _ = writeln!(
        t,
        "Multi-point claims are judged at client counts >= {} (below that the strategies barely separate); \
         thresholds: \"about the same\" = within {:.0}%, \"much longer\" = at least {}x, O(N^2) = fitted exponent >= {}.\n",
        claims::CONTENTION_CLIENTS_MIN,
        claims::SAME_WORK_TOLERANCE * 100.0,
        claims::MUCH_LONGER_RATIO,
        claims::QUADRATIC_EXPONENT_MIN
    );

    let _ = writeln!(t, "## Results (summary.csv: mean ± 95% half-width)\n");
    for (title, value) in [
        (
            "Calls (write requests)",
            (|c: &CellSummary| c.calls) as fn(&CellSummary) -> _,
        ),
        (
            "Completion time of the last client (ms)",
            |c: &CellSummary| c.time_ms,
        ),
    ] {
        let _ = writeln!(t, "{title}:\n");
        let _ = write!(t, "| clients |");
        for s in Strategy::POST {
            let _ = write!(t, " {s} |");
        }
        let _ = write!(t, "\n|---:|");
        for _ in Strategy::POST {
            let _ = write!(t, "---:|");
        }
        t.push('\n');
        for &n in &c.clients {
            let _ = write!(t, "| {n} |");
            for s in Strategy::POST {
                match find_cell(cells, s, n) {
                    Some(cell) => {
                        let e = value(cell);
                        let _ = write!(t, " {:.0} ± {:.0} |", e.mean, e.ci95);
                    }
                    None => t.push_str(" |"),
                }
            }
            t.push('\n');
        }
        t.push('\n');
    }
    let _ = writeln!(
        t,
        "![work](work.png)\n\n![time](time.png)\n\n![time, log scale](time-log.png)\n"
    );

    let _ = writeln!(t, "## Beyond the post\n");
    let n_ref = reference_clients(&c.clients);
    let _ = writeln!(
        t,
        "**Work against time** (tradeoff.png): each line walks through the client counts, 10 at its lower left; \
         lower and further left is better on both axes. At {n_ref} clients:\n"
    );
    let _ = writeln!(
        t,
        "| strategy | calls | time (ms) | client p50 (ms) | client p99 (ms) |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|");
    for s in Strategy::POST.iter().chain(if options.post_only {
        [].iter()
    } else {
        EXTRA_STRATEGIES.iter()
    }) {
        if let Some(cell) = find_cell(cells, *s, n_ref) {
            let _ = writeln!(
                t,
                "| {s} | {:.0} ± {:.0} | {:.0} ± {:.0} | {:.0} ± {:.0} | {:.0} ± {:.0} |",
                cell.calls.mean,
                cell.calls.ci95,
                cell.time_ms.mean,
                cell.time_ms.ci95,
                cell.latency_ms_p50.mean,
                cell.latency_ms_p50.ci95,
                cell.latency_ms_p99.mean,
                cell.latency_ms_p99.ci95
            );
        }
    }
    t.push('\n');
    let _ = writeln!(t, "{}\n", none_wins(cells, &c.clients));
    let _ = writeln!(t, "{}\n", latency_note(cells, n_ref));
    let _ = writeln!(
        t,
        "![work against time](tradeoff.png)\n\n![per-client latency](latency.png)\n"
    );
    if !options.post_only {
        let _ = writeln!(t, "{}\n", decorrelated_note(cells, n_ref));
        let _ = writeln!(t, "![decorrelated work](decorrelated-work.png)\n\n![decorrelated time](decorrelated-time.png)\n");
    }
    let _ = writeln!(
        t,
        "Files: `runs.csv` (one row per run, with its stream), `summary.csv` (the post's five strategies), \
         `summary-all.csv` (all strategies, with per-client p50/p99 and event counts), charts as SVG and PNG."
    );
    t
}

/// 100 clients if in the grid (the post's reference point), else the largest.
fn reference_clients(clients: &[u32]) -> u32 {
    if clients.contains(&100) {
        100
    } else {
        *clients.last().expect("validated non-empty")
    }
}

fn none_wins(cells: &[CellSummary], clients: &[u32]) -> String {
    let mut fastest_everywhere = true;
    let mut extra_calls = Vec::new();
    for &n in clients {
        let Some(none) = find_cell(cells, Strategy::None, n) else {
            continue;
        };
        let others: Vec<&CellSummary> = Strategy::POST[1..]
            .iter()
            .filter_map(|&s| find_cell(cells, s, n))
            .collect();
        if others.iter().any(|o| o.time_ms.mean <= none.time_ms.mean) {
            fastest_everywhere = false;
        }
        if let Some(full) = find_cell(cells, Strategy::FullJitter, n) {
            extra_calls.push((
                n,
                none.calls.mean / full.calls.mean,
                full.time_ms.mean / none.time_ms.mean,
            ));
        }
    }
    let mut text = format!(
        "Where does no backoff win? On completion time {} of this grid. ",
        if fastest_everywhere {
            "at every client count"
        } else {
            "not at every client count"
        }
    );
    if let (Some(first), Some(last)) = (extra_calls.first(), extra_calls.last()) {
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
    let best = |f: fn(&CellSummary) -> f64| {
        Strategy::POST
            .iter()
            .filter_map(|&s| find_cell(cells, s, n))
            .min_by(|a, b| f(a).total_cmp(&f(b)))
            .map(|c| (c.strategy, f(c)))
    };
    match (best(|c| c.latency_ms_p50.mean), best(|c| c.latency_ms_p99.mean)) {
        (Some((s50, v50)), Some((s99, v99))) => format!(
            "**Per-client latency** (latency.png): the post only reports the last client. At {n} clients the median client \
             is served first by {s50} ({v50:.0} ms) and the p99 client by {s99} ({v99:.0} ms)."
        ),
        _ => String::new(),
    }
}

fn decorrelated_note(cells: &[CellSummary], n: u32) -> String {
    let get = |s| find_cell(cells, s, n);
    let (Some(x3), Some(x2), Some(x4), Some(capped), Some(full)) = (
        get(Strategy::Decorrelated { growth: 3 }),
        get(Strategy::Decorrelated { growth: 2 }),
        get(Strategy::Decorrelated { growth: 4 }),
        get(Strategy::DecorrelatedCapped { growth: 3 }),
        get(Strategy::FullJitter),
    ) else {
        return String::new();
    };
    let row = |name: &str, c: &CellSummary| {
        format!(
            "| {name} | {:.0} ± {:.0} | {:.0} ± {:.0} |\n",
            c.calls.mean, c.calls.ci95, c.time_ms.mean, c.time_ms.ci95
        )
    };
    let mut text = format!(
        "**Decorrelated jitter with the growth equalised** (decorrelated-work.png, decorrelated-time.png). The post's \
         decorrelated jitter draws `U(base, 3 sleep)` while the exponential family doubles. Equalising the bound \
         (x2) is not equalising the growth: `U(base, 2 sleep)` has mean `sleep + base/2`, so sleep barely grows. \
         Equalising the mean growth needs x4. Capping before drawing (`U(base, min(cap, 3 sleep))`) keeps the delay \
         jittered at the cap. At {n} clients:\n\n| strategy | calls | time (ms) |\n|---|---:|---:|\n"
    );
    text += &row("full-jitter (x2)", full);
    text += &row("decorrelated-jitter (x3, post)", x3);
    text += &row("decorrelated-jitter-x2", x2);
    text += &row("decorrelated-jitter-x4", x4);
    text += &row("decorrelated-capped (x3, cap before drawing)", capped);
    let (less_or_more, verdict) = if x4.calls.mean <= full.calls.mean * 1.05 {
        (
            if x4.calls.mean < full.calls.mean { "less" } else { "about the same" },
            "so the extra work of the post's decorrelated jitter comes from its slower growth, not from decorrelation itself",
        )
    } else {
        (
            "more",
            "so decorrelation itself costs work, beyond its slower growth",
        )
    };
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
