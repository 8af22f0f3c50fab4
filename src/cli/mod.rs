//! The `retrylab` command: parse, run, map the result to an exit code.
//!
//! Exit codes: 0 every model got the verdicts it declares (replay: the trace reproduced its violation);
//! 1 at least one did not; 2 bad input or usage.

/// `println!` for the command's output, safe when stdout is closed (see `stdout.rs`).
/// `eprintln!` for diagnostics, which panics when stderr is a closed pipe: a diagnostic nobody can read is
/// dropped, and the exit code still says what happened.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::stdout::write_error_line(format_args!($($arg)*))
    };
}

macro_rules! outln {
    () => {
        $crate::cli::stdout::write_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::stdout::write_line(format_args!($($arg)*))
    };
}

#[cfg(feature = "stack")]
mod auto_stores;
mod check_cmd;
mod explore_cmd;
#[cfg(feature = "stack")]
mod fault_args;
#[cfg(feature = "stack")]
mod graybox_args;
#[cfg(test)]
mod help_lines;
mod interrupt;
mod json;
#[cfg(feature = "stack")]
mod load_cmd;
mod merge_cmd;
mod names;
mod output;
#[cfg(feature = "stack")]
mod probe_cmd;
#[cfg(feature = "stack")]
mod proxy_cmd;
mod replay_cmd;
#[cfg(feature = "stack")]
mod serve_cmd;
mod simulate_cmd;
mod stdout;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

pub const EXIT_OK: i32 = 0;
pub const EXIT_MISMATCH: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;

/// The runtime of the real stack's client commands (probe, load, proxy): two workers, or the one-line error and
/// exit 2.
#[cfg(feature = "stack")]
fn stack_runtime() -> Result<tokio::runtime::Runtime, i32> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| {
            errln!("error: cannot start the runtime: {error}");
            EXIT_BAD_INPUT
        })
}

/// `--max-memory` unless given, for check and simulate alike: half the memory this process may use (the
/// smallest cgroup limit or MemAvailable), 64..=8192 MiB (`check::memory_budget`).
pub fn memory_mib_max(given: Option<u64>) -> u64 {
    given.unwrap_or_else(|| {
        retrylab::check::memory_budget::default_memory_mib_max(std::path::Path::new("/"))
    })
}

#[derive(Parser, Debug)]
#[command(
    name = "retrylab",
    version,
    about = "Model-check and simulate retry and deduplication protocols"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Explore every state of each model (breadth-first) and compare the verdicts with the declared ones.
    Check(CheckArgs),
    /// Seeded swarm random walks over each model.
    Simulate(SimulateArgs),
    /// Replay a saved counterexample trace step by step.
    Replay(ReplayArgs),
    /// Combine the `--json` outputs of `simulate --shard K/N` runs into one result per model.
    Merge(MergeArgs),
    /// Walk a model by hand in the browser: a page on loopback showing the state, the enabled actions, back,
    /// and saving the path as a trace `replay` accepts.
    Explore(ExploreArgs),
    /// Serve a handler design over HTTP: POST /payments with Idempotency-Key, GET /payments/count (loopback).
    #[cfg(feature = "stack")]
    Serve(serve_cmd::ServeArgs),
    /// Check a live API's idempotency (concurrent keys, replays, changed bodies, lost responses...).
    #[cfg(feature = "stack")]
    Probe(probe_cmd::ProbeArgs),
    /// Retrying clients against a service for a bounded time (optionally through the fault proxy).
    #[cfg(feature = "stack")]
    Load(load_cmd::LoadArgs),
    /// The seeded fault-injecting proxy in front of a loopback service; prints its record at the end.
    #[cfg(feature = "stack")]
    Proxy(proxy_cmd::ProxyArgs),
}

#[derive(clap::Args, Debug)]
pub struct ExploreArgs {
    /// A model file.
    pub model: PathBuf,
    /// Where to serve: a loopback address and port (127.0.0.0/8 or ::1); port 0 picks a free one. The address
    /// is the first line printed.
    #[arg(long, default_value = "127.0.0.1:8470", value_name = "ADDR:PORT")]
    pub listen: String,
    /// Folder the page's "Save trace" writes to (`<model>.by-hand.json`).
    #[arg(long, default_value = "target/retrylab/traces")]
    pub traces: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Files holding the JSON lines of each shard's `simulate --json`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Model files, or folders of them (every *.toml below).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// One JSON object per model per line on stdout.
    #[arg(long)]
    pub json: bool,
    /// Folder for counterexample traces.
    #[arg(long, default_value = "target/retrylab/traces")]
    pub traces: PathBuf,
    /// Print the timeline of every counterexample (by default only of unexpected verdicts).
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Print a liveness counterexample's every step (by default only the steps the unresolved operation depends
    /// on: its client, the processes handling its messages, the records they touched).
    #[arg(long)]
    pub full_trace: bool,
    /// Also write the verdict matrix (Markdown with Mermaid diagrams) to FILE, and each counterexample as an SVG
    /// in a folder beside it named after FILE. A FILE ending in .html is the trace explorer instead: an index and
    /// one self-contained page per violation in that folder (a step slider, the state after each step).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Override every model's limits.max-states.
    #[arg(long = "max-states", value_name = "MAX_STATES")]
    pub states_max: Option<u64>,
    /// Override every model's limits.max-depth.
    #[arg(long = "max-depth", value_name = "MAX_DEPTH")]
    pub depth_max: Option<u32>,
    /// Stop a search (as incomplete) before its structures exceed this many MiB. Default: half the memory
    /// available to this process (its cgroup's limit, else MemAvailable), at most 8192.
    #[arg(long = "max-memory", alias = "max-memory-mib", value_name = "MIB")]
    pub memory_mib_max: Option<u64>,
    /// Symmetry reduction: merge states that differ only by which client or server process is which.
    #[arg(long)]
    pub symmetry: bool,
    /// Partial-order reduction: explore one order of the actions the model declares independent. `off` gives
    /// the shortest counterexamples; `on` may give longer ones, with the same verdicts.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub por: OnOff,
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Exit 1 when a safety property holds vacuously: the model enables no fault, or none of its dangerous
    /// scenarios was reached (without it, such a model is only warned about).
    #[arg(long)]
    pub strict: bool,
}

/// A switch written `on` or `off`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// Model files, or folders of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Number of seeds (walks) per model.
    #[arg(long, default_value_t = 1000)]
    pub seeds: u64,
    /// First seed; walks use seeds S, S+1, ..., S+N-1.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Steps per walk at most.
    #[arg(long = "max-depth", value_name = "MAX_DEPTH", default_value_t = 400)]
    pub depth_max: u32,
    /// One JSON object per model per line on stdout (`merge` combines the shards' lines).
    #[arg(long)]
    pub json: bool,
    /// Folder for counterexample traces.
    #[arg(long, default_value = "target/retrylab/traces")]
    pub traces: PathBuf,
    /// Print the timeline of every counterexample (by default only of unexpected verdicts).
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Print a liveness counterexample's every step (by default only the steps the unresolved operation depends
    /// on: its client, the processes handling its messages, the records they touched).
    #[arg(long)]
    pub full_trace: bool,
    /// Worker threads (default: all cores). Results do not depend on it: each walk is its seed's.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Stop (as incomplete) before the walks' results held at once could exceed this many MiB. Default: half
    /// the memory available to this process (its cgroup's limit, else MemAvailable), at most 8192.
    #[arg(long = "max-memory", alias = "max-memory-mib", value_name = "MIB")]
    pub memory_mib_max: Option<u64>,
    /// Run only shard K of N (1-based), e.g. `--shard 3/8`; combine the shards with `retrylab merge`.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
}

fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let (k, n) = text.split_once('/').ok_or("expected K/N, e.g. 2/8")?;
    let k: u64 = k
        .trim()
        .parse()
        .map_err(|_| format!("K is not a number: {k}"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("N is not a number: {n}"))?;
    if n == 0 || k == 0 || k > n {
        return Err(format!("need 1 <= K <= N, got {k}/{n}"));
    }
    Ok((k, n))
}

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// A trace file written by check or simulate.
    pub trace: PathBuf,
    /// One JSON object on stdout: model, property, reproduced, steps, trace, violated_at (the step).
    #[arg(long)]
    pub json: bool,
    /// Print a liveness counterexample's every step (by default only the steps the unresolved operation depends
    /// on: its client, the processes handling its messages, the records they touched).
    #[arg(long)]
    pub full_trace: bool,
}

/// Run the command line; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                EXIT_OK
            };
            let _ = error.print();
            return code;
        }
    };
    run(cli)
}

/// The most worker threads a run may ask for, whatever the machine (the bound the scale issue sets).
pub const THREADS_MAX: usize = 1024;
/// Threads per available core at most: more only add switching (and `--threads 100000` once spawned them all).
pub const THREADS_PER_CORE_MAX: usize = 64;

/// Refuse a thread count before any thread starts: zero, or more than the machine could use.
fn check_threads(threads: usize) -> Result<(), String> {
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    let bound = THREADS_MAX.min(cores.saturating_mul(THREADS_PER_CORE_MAX));
    if threads == 0 {
        return Err("must be at least 1".to_string());
    }
    if threads > bound {
        return Err(format!(
            "{threads} is too many: at most {bound} ({THREADS_PER_CORE_MAX} per core on {cores} core(s), \
             {THREADS_MAX} in all)"
        ));
    }
    Ok(())
}

pub fn run(cli: Cli) -> i32 {
    let threads = match &cli.command {
        Command::Check(args) => args.threads,
        Command::Simulate(args) => args.threads,
        _ => None,
    };
    if let Some(threads) = threads {
        if let Err(message) = check_threads(threads) {
            errln!("error: --threads: {message}");
            return EXIT_BAD_INPUT;
        }
    }
    // Without --threads rayon reads RAYON_NUM_THREADS: the same bound applies to it.
    if let (None, Ok(value)) = (threads, std::env::var("RAYON_NUM_THREADS")) {
        let checked = value
            .trim()
            .parse::<usize>()
            .map_err(|_| format!("'{value}' is not a number"))
            .and_then(|threads| match threads {
                0 => Ok(()), // rayon's "one per core"
                _ => check_threads(threads),
            });
        if let Err(message) = checked {
            errln!("error: RAYON_NUM_THREADS: {message}");
            return EXIT_BAD_INPUT;
        }
    }
    let pool = match rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
    {
        Ok(pool) => pool,
        Err(error) => {
            errln!("error: cannot start worker threads: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    pool.install(|| match cli.command {
        Command::Check(args) => {
            interrupt::clean_up_on_signal();
            check_cmd::run(&args)
        }
        Command::Simulate(args) => {
            interrupt::clean_up_on_signal();
            simulate_cmd::run(&args)
        }
        Command::Replay(args) => replay_cmd::run(&args),
        Command::Merge(args) => merge_cmd::run(&args),
        Command::Explore(args) => explore_cmd::run(&args),
        #[cfg(feature = "stack")]
        Command::Serve(args) => serve_cmd::run(&args),
        #[cfg(feature = "stack")]
        Command::Probe(args) => probe_cmd::run(&args),
        #[cfg(feature = "stack")]
        Command::Load(args) => load_cmd::run(&args),
        #[cfg(feature = "stack")]
        Command::Proxy(args) => proxy_cmd::run(&args),
    })
}
