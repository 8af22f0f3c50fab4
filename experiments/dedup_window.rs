//! dedup-window: the probability that one event takes effect twice, against the producer's republish delay
//! relative to the broker's dedup window, for each place the dedup can live (DOMAIN.md section 5). See
//! `retrylab::sim::dedup_window` for the world. Writes `summary.csv`, two charts (SVG + PNG) and a generated
//! `README.md`.
//!
//! Exit codes: 0 done, 1 a write failed, 2 bad arguments.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use retrylab::plot::{self, BandPoint, LegendAt, LineChart, LineStyle, Scale, Series};
use retrylab::sim::dedup_window::{sweep, Cause, Cell, Config, Place};

const OUT_DEFAULT: &str = "results/dedup-window";
const RUNS_MAX: u32 = 1_000_000;

#[derive(Parser, Debug)]
#[command(
    name = "dedup-window",
    about = "P(duplicate effect) against the republish delay relative to the dedup window, per dedup place"
)]
struct Cli {
    /// Runs (events) per (cause, place, delay) cell.
    #[arg(long, default_value_t = Config::default().runs)]
    runs: u32,
    /// Seed of the ChaCha8 generator; each run uses its own stream of it.
    #[arg(long, default_value_t = Config::default().seed)]
    seed: u64,
    /// The broker's dedup window in seconds (SQS FIFO: 300; NATS JetStream default: 120).
    #[arg(long, default_value_t = 300.0)]
    window_s: f64,
    /// Probability that a consumer crashes during one delivery.
    #[arg(long, default_value_t = Config::default().crash_probability)]
    crash_probability: f64,
    /// Probability that a consumer's ack is lost.
    #[arg(long, default_value_t = Config::default().ack_loss_probability)]
    ack_loss_probability: f64,
    /// Output folder (created if missing).
    #[arg(long, default_value = OUT_DEFAULT)]
    out: PathBuf,
}

fn validate(cli: &Cli) -> Result<Config, String> {
    if !(2..=RUNS_MAX).contains(&cli.runs) {
        return Err(format!(
            "--runs must be in 2..={RUNS_MAX}, got {}",
            cli.runs
        ));
    }
    if !(cli.window_s.is_finite() && cli.window_s > 0.0) {
        return Err(format!(
            "--window-s must be a positive number of seconds, got {}",
            cli.window_s
        ));
    }
    for (flag, value) in [
        ("--crash-probability", cli.crash_probability),
        ("--ack-loss-probability", cli.ack_loss_probability),
    ] {
        if !(0.0..1.0).contains(&value) {
            return Err(format!("{flag} must be in [0, 1), got {value}"));
        }
    }
    retrylab::atomic::ensure_writable_folder(&cli.out)?;
    Ok(Config {
        seed: cli.seed,
        runs: cli.runs,
        window_ms: cli.window_s * 1000.0,
        crash_probability: cli.crash_probability,
        ack_loss_probability: cli.ack_loss_probability,
        ..Config::default()
    })
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            let text = error.to_string();
            eprintln!(
                "dedup-window: {}",
                text.lines().next().unwrap_or("bad arguments")
            );
            return ExitCode::from(2);
        }
    };
    let config = match validate(&cli) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("dedup-window: {message}");
            return ExitCode::from(2);
        }
    };
    let cells = sweep(&config);
    match write_all(&cli.out, &config, &cells) {
        Ok(()) => {
            eprintln!("dedup-window: wrote {}", cli.out.display());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("dedup-window: {message}");
            ExitCode::from(1)
        }
    }
}

fn write_all(out: &Path, config: &Config, cells: &[Cell]) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|error| format!("{}: {error}", out.display()))?;
    let write = |name: &str, text: &str| {
        plot::write_atomic(&out.join(name), text.as_bytes()).map_err(|error| error.to_string())
    };
    write("summary.csv", &summary_csv(config, cells))?;
    for cause in Cause::ALL {
        plot::write_line_chart(&chart(config, cells, cause), out, cause.name())
            .map_err(|error| error.to_string())?;
    }
    write("README.md", &readme(config, cells))
}

fn summary_csv(config: &Config, cells: &[Cell]) -> String {
    let mut text = String::from(
        "cause,place,delay_over_window,delay_s_nominal,runs,duplicates,p_duplicate,ci95_low,ci95_high,copies_forwarded\n",
    );
    for cell in cells {
        let (low, high) = cell.wilson_95();
        let _ = writeln!(
            text,
            "{},{},{},{:.1},{},{},{:.5},{:.5},{:.5},{}",
            cell.cause.name(),
            cell.place.name(),
            cell.ratio,
            cell.ratio * config.window_ms / 1000.0,
            cell.runs,
            cell.duplicates,
            cell.probability(),
            low,
            high,
            cell.copies_forwarded
        );
    }
    text
}

fn chart(config: &Config, cells: &[Cell], cause: Cause) -> LineChart {
    let title = match cause {
        Cause::Retry => format!(
            "Producer retries (same session) after a delay; window {:.0} s",
            config.window_ms / 1000.0
        ),
        Cause::Restart => format!(
            "Producer restarts (new session), then republishes; window {:.0} s",
            config.window_ms / 1000.0
        ),
    };
    let mut chart = LineChart::new(
        title,
        "republish delay / broker dedup window (ratio, log scale)",
        "P(duplicate effect) per event (probability)",
    );
    chart.x_scale = Scale::Log;
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1200;
    for (colour, place) in Place::ALL.into_iter().enumerate() {
        let points = cells
            .iter()
            .filter(|cell| cell.cause == cause && cell.place == place)
            .map(|cell| {
                let (low, high) = cell.wilson_95();
                BandPoint {
                    x: cell.ratio,
                    y: cell.probability(),
                    low,
                    high,
                }
            })
            .collect();
        let mut series = Series::new(place.label(), colour, points);
        if place == Place::InboxOffset {
            // It lies on "no dedup" (both 1.0): dashed so both stay visible.
            series.line = LineStyle::Dashed;
        }
        chart.series.push(series);
    }
    chart
}

fn find(cells: &[Cell], cause: Cause, place: Place, ratio: f64) -> Option<&Cell> {
    cells
        .iter()
        .find(|cell| cell.cause == cause && cell.place == place && cell.ratio == ratio)
}

fn readme(config: &Config, cells: &[Cell]) -> String {
    let mut text = String::new();
    let window_s = config.window_ms / 1000.0;
    let _ = writeln!(text, "# dedup-window: where the dedup lives\n");
    let _ = writeln!(
        text,
        "Generated by `cargo run --release --bin dedup-window -- --seed {} --runs {} --window-s {}` \
         (DOMAIN.md section 5). Do not edit: rerun.\n",
        config.seed, config.runs, window_s
    );
    let _ = writeln!(
        text,
        "One run is one event. Its producer publishes it, then publishes it again after a delay: its publish \
         ack was lost and it retries in the same session (`retry.png`), or it restarted, or an outbox relay \
         crashed before marking the row, and republishes from a new session (`restart.png`). The delay is the \
         nominal delay (x axis, as a multiple of the broker's dedup window of {window_s} s; SQS FIFO: 300 s, \
         NATS JetStream: 120 s) times U(0.5, 1.5). The consumer gets every message at least once: it crashes \
         during a delivery with probability {} (at a uniformly chosen step boundary of its handler), an ack is \
         lost with probability {}, and the broker redelivers up to {} times. The y axis is the fraction of \
         events that took effect twice or more, with 95% Wilson intervals ({} events per point, one ChaCha8 \
         stream per event).\n",
        config.crash_probability, config.ack_loss_probability, config.max_receives, config.runs
    );
    let _ = writeln!(text, "![retry](retry.png)\n\n![restart](restart.png)\n");
    let ratios: Vec<f64> = [0.1, 0.85, 1.15, 10.0]
        .into_iter()
        .filter(|ratio| config.ratios.contains(ratio))
        .collect();
    let _ = write!(text, "| cause | dedup place |");
    for ratio in &ratios {
        let _ = write!(text, " delay {ratio} x window |");
    }
    let _ = write!(text, "\n|---|---|");
    for _ in &ratios {
        let _ = write!(text, "---|");
    }
    text.push('\n');
    for cause in Cause::ALL {
        for place in Place::ALL {
            let _ = write!(text, "| {} | {} |", cause.name(), place.label());
            for ratio in &ratios {
                match find(cells, cause, place, *ratio) {
                    Some(cell) => {
                        let (low, high) = cell.wilson_95();
                        let _ = write!(
                            text,
                            " {:.3} [{:.3}, {:.3}] |",
                            cell.probability(),
                            low,
                            high
                        );
                    }
                    None => text.push_str(" - |"),
                }
            }
            text.push('\n');
        }
    }
    let _ = writeln!(text, "\n## What it shows\n");
    let _ = writeln!(text, "{}", findings(config, cells));
    let _ = writeln!(
        text,
        "The model checker shows the same in `models/queue-*.toml` (every interleaving, no probabilities): \
         the window and the session are bounds, the inbox in the effect's transaction keyed by event id is the \
         only place where neither the delay nor the cause matters."
    );
    text
}

/// Findings computed from the cells (no number is written by hand).
fn findings(config: &Config, cells: &[Cell]) -> String {
    let mut text = String::new();
    let first = config.ratios.first().copied().unwrap_or(0.0);
    let last = config.ratios.last().copied().unwrap_or(0.0);
    let p =
        |cause, place, ratio| find(cells, cause, place, ratio).map_or(f64::NAN, Cell::probability);
    let max_over = |place: Place| {
        cells
            .iter()
            .filter(|cell| cell.place == place)
            .map(Cell::probability)
            .fold(0.0, f64::max)
    };
    let _ = writeln!(
        text,
        "- Broker window, producer retry: {:.3} at {first} x window, {:.3} at {last} x window: the window \
         protects exactly as long as the republish comes inside it; past it every republish is a new message.",
        p(Cause::Retry, Place::BrokerWindow, first),
        p(Cause::Retry, Place::BrokerWindow, last)
    );
    let _ = writeln!(
        text,
        "- Broker session: {:.3} (retry) against {:.3} (restart) at {first} x window: the session ignores time \
         and fails on every restart, however quick.",
        p(Cause::Retry, Place::BrokerSession, first),
        p(Cause::Restart, Place::BrokerSession, first)
    );
    let _ = writeln!(
        text,
        "- With the broker alone (window inside its bound, or session without restart), duplicates remain at \
         {:.3}: the consumer's crashes and lost acks are redeliveries no producer dedup can see.",
        p(Cause::Retry, Place::BrokerSession, first)
    );
    let _ = writeln!(
        text,
        "- Consumer inbox keyed by offset: {:.3} at every delay: it absorbs redeliveries but a republished copy \
         has a new offset.",
        p(Cause::Retry, Place::InboxOffset, first)
    );
    let _ = writeln!(
        text,
        "- Consumer inbox by event id after the effect: at most {:.3}, from crashes between the effect and the \
         inbox row, whatever the delay.",
        max_over(Place::InboxAfterEffect)
    );
    let _ = writeln!(
        text,
        "- Consumer inbox by event id in the effect's transaction: at most {:.3} over every cell.\n",
        max_over(Place::InboxSameTransaction)
    );
    text
}
