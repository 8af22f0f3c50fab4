//! The dedup-window experiment on a real broker: starts nats-server (loopback, temporary store), runs the grid of
//! `queue_real::window` (places x delay/window ratios, a window of seconds), runs the simulation at the same
//! settings, and writes `nats.csv` and `nats.md` (the two side by side, agreement stated) into the output folder.
//!
//!     cargo run --example dedup_window_nats -- [--events N] [--out DIR]     # defaults: 60, results/dedup-window

use retrylab::queue_real::window::{self, RealConfig};
use retrylab::servers::nats::TempNats;
use std::path::PathBuf;
use std::process::ExitCode;

/// Simulated runs per cell (the committed simulation's count).
const SIMULATED_RUNS: u32 = 4000;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dedup_window_nats: {error}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut config = RealConfig::default();
    let mut out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/dedup-window");
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--events" => {
                let text = value()?;
                config.events_per_cell = text
                    .parse()
                    .ok()
                    .filter(|events| *events > 0)
                    .ok_or(format!("--events: {text:?} is not a positive count"))?;
            }
            "--out" => out = PathBuf::from(value()?),
            other => {
                return Err(format!(
                    "unknown flag {other} (flags: --events N, --out DIR)"
                ))
            }
        }
    }
    let nats =
        TempNats::start().ok_or("nats-server is not installed (apt-get install -y nats-server)")?;
    let folder = tempfile::tempdir().map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let real = window::run_grid(&nats.url(), folder.path(), &config)?;
    let elapsed = started.elapsed();
    let simulated = window::simulated(&config, SIMULATED_RUNS);
    let rows = window::compare(&config, &real, &simulated);
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let csv_path = out.join("nats.csv");
    let mut writer =
        csv::Writer::from_path(&csv_path).map_err(|e| format!("{}: {e}", csv_path.display()))?;
    for row in &rows {
        writer.serialize(row).map_err(|e| e.to_string())?;
    }
    writer.flush().map_err(|e| e.to_string())?;
    let text = window::report(&config, &rows, SIMULATED_RUNS, elapsed);
    let md_path = out.join("nats.md");
    std::fs::write(&md_path, &text).map_err(|e| format!("{}: {e}", md_path.display()))?;
    print!("{text}");
    Ok(())
}
