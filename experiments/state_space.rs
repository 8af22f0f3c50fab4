//! How the state space grows with clients, attempts and faults, with and without symmetry reduction.
//! `cargo run --release --bin state-space [-- --out DIR --max-states N]`; writes `summary.csv`, charts and a
//! README to `results/state-space/`. Unique-state counts are exact (or marked incomplete past `--max-states`),
//! so the output is the same on every machine; times are not written.

use clap::Parser;
use retrylab::atomic::write_atomic;
use retrylab::check::Model as _;
use retrylab::model::{Faults, World, WorldBuilder};
use retrylab::plot::{write_line_chart, BandPoint, LineChart, Scale, Series};
use retrylab::spec::load_model;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "State-space growth of the article's model, with and without symmetry reduction")]
struct Args {
    /// Output folder.
    #[arg(long, default_value = "results/state-space")]
    out: PathBuf,
    /// Stop a search past this many unique states (its count is then a lower bound, marked incomplete).
    #[arg(long, default_value_t = 3_000_000)]
    max_states: u64,
    /// The base model.
    #[arg(long, default_value = "models/article-sqlite.toml")]
    model: PathBuf,
}

struct Row {
    dimension: &'static str,
    value: u32,
    symmetry: bool,
    states: u64,
    transitions: u64,
    complete: bool,
}

/// The fault budgets in the order they are switched on: crash, lost response, duplicated request, early timeout.
fn faults_up_to(count: u32) -> Faults {
    let mut faults = Faults::default();
    if count >= 1 {
        faults.crashes = 1;
    }
    if count >= 2 {
        faults.drop_responses = 1;
    }
    if count >= 3 {
        faults.duplicate_requests = 1;
    }
    if count >= 4 {
        faults.early_timeouts = 1;
    }
    faults
}

fn main() {
    let args = Args::parse();
    // Refuse an unwritable --out before the searches, not after them.
    if let Err(message) = retrylab::atomic::ensure_writable_folder(&args.out) {
        eprintln!("error: {message}");
        std::process::exit(2);
    }
    let base = match load_model(&args.model) {
        Ok(model) => model.world,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(2);
        }
    };
    let vary = |change: &dyn Fn(WorldBuilder) -> WorldBuilder| -> World {
        change(base.to_builder())
            .build()
            .expect("a variant of a valid model is valid")
    };
    let mut worlds: Vec<(&'static str, u32, World)> = Vec::new();
    for clients in 1..=3u8 {
        let world = vary(&|builder| builder.client_count(clients));
        worlds.push(("clients", u32::from(clients), world));
    }
    for attempts in 1..=4u8 {
        let world = vary(&|builder| builder.max_attempts(attempts));
        worlds.push(("max-attempts", u32::from(attempts), world));
    }
    for faults in 0..=4u32 {
        let world = vary(&|builder| builder.faults(faults_up_to(faults)));
        worlds.push(("faults", faults, world));
    }
    let mut rows = Vec::new();
    for (dimension, value, world) in &worlds {
        for symmetry in [false, true] {
            let report = world
                .checker()
                .max_states(args.max_states)
                .symmetry(symmetry)
                .bfs();
            eprintln!(
                "{dimension}={value} symmetry={symmetry}: {} states",
                report.states
            );
            rows.push(Row {
                dimension,
                value: *value,
                symmetry,
                states: report.states,
                transitions: report.transitions,
                complete: report.complete,
            });
        }
    }
    if let Err(error) = write_outputs(&args, &rows) {
        eprintln!("error: {error}");
        std::process::exit(2);
    }
}

fn write_outputs(args: &Args, rows: &[Row]) -> Result<(), String> {
    let mut csv = String::from("dimension,value,symmetry,states,transitions,complete\n");
    for row in rows {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{}",
            row.dimension, row.value, row.symmetry, row.states, row.transitions, row.complete
        );
    }
    write_atomic(&args.out.join("summary.csv"), csv.as_bytes())
        .map_err(|error| error.to_string())?;

    let mut readme = String::from(
        "# State-space growth\n\nUnique states of the article's model (`models/article-sqlite.toml`: 2 clients, 2 server \
         processes, 3 attempts, one crash, one lost response, one duplicated request, one early timeout), varying \
         one dimension at a time, explored exhaustively with and without symmetry reduction (clients and server \
         processes relabelled into a canonical order). Regenerate with `cargo run --release --bin state-space`.\n\n\
         | dimension | value | states | states with symmetry | saving |\n|---|---|---|---|---|\n",
    );
    for (dimension, x_label, stem) in [
        ("clients", "clients (count)", "clients"),
        (
            "max-attempts",
            "max attempts per operation (count)",
            "attempts",
        ),
        (
            "faults",
            "fault kinds switched on (count: crash, lost response, duplicate, early timeout)",
            "faults",
        ),
    ] {
        let mut chart = LineChart::new(
            format!("Unique states against {dimension}"),
            x_label,
            "unique states (count, log scale)",
        );
        chart.y_scale = Scale::Log;
        for (index, symmetry) in [false, true].into_iter().enumerate() {
            let points = rows
                .iter()
                .filter(|row| row.dimension == dimension && row.symmetry == symmetry)
                .map(|row| BandPoint::exact(f64::from(row.value), row.states.max(1) as f64))
                .collect();
            let label = if symmetry {
                "with symmetry reduction"
            } else {
                "without reduction"
            };
            chart.series.push(Series::new(label, index, points));
        }
        write_line_chart(&chart, &args.out, stem).map_err(|error| error.to_string())?;
        let full: Vec<&Row> = rows
            .iter()
            .filter(|row| row.dimension == dimension && !row.symmetry)
            .collect();
        for plain in full {
            let reduced = rows
                .iter()
                .find(|row| row.dimension == dimension && row.symmetry && row.value == plain.value)
                .expect("both runs exist");
            let mark = |row: &Row| {
                if row.complete {
                    String::new()
                } else {
                    " (incomplete: at least)".to_string()
                }
            };
            let _ = writeln!(
                readme,
                "| {dimension} | {} | {}{} | {}{} | {:.1}x |",
                plain.value,
                plain.states,
                mark(plain),
                reduced.states,
                mark(reduced),
                plain.states as f64 / reduced.states.max(1) as f64
            );
        }
    }
    readme.push_str(
        "\nCharts: `clients.svg`/`.png`, `attempts.svg`/`.png`, `faults.svg`/`.png`. A count marked incomplete hit \
         the `--max-states` bound and is a lower bound. The saving grows with the number of interchangeable \
         clients (up to N! for N clients) and processes.\n",
    );
    write_atomic(&args.out.join("README.md"), readme.as_bytes())
        .map_err(|error| error.to_string())?;
    Ok(())
}
