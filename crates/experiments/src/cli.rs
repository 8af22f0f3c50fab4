//! The one `main` of the experiment binaries: the flags they all take (`--seed`, `--runs`,
//! `--out`, `--threads`), `--out` checked before any work, the thread pool, the progress bar, the
//! sweep, the report and the writes, with the documented exit codes: 0 done, 1 the run or a write
//! failed, 2 bad arguments or an unusable `--out` (one line on stderr, nothing written).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::grid::{sweep, Context, Experiment};

/// Largest worker count accepted by `--threads`.
pub const THREADS_MAX: usize = 256;

/// Flags every experiment binary takes (`#[command(flatten)]` them). Defaults differ per binary,
/// so they are resolved against [`Defaults`] rather than in clap.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CommonArgs {
    /// Seed of the ChaCha8 generator; every run uses its own stream of it.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seeded runs per cell.
    #[arg(long)]
    pub runs: Option<u32>,
    /// Output folder, created if missing (default `results/<binary>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: all cores). The output does not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Per-binary defaults and limits of the common flags.
#[derive(Clone, Copy, Debug)]
pub struct Defaults {
    pub seed: u64,
    pub runs: u32,
    pub runs_min: u32,
    pub runs_max: u32,
}

/// The checked common flags.
#[derive(Clone, Debug, PartialEq)]
pub struct Common {
    pub seed: u64,
    pub runs: u32,
    pub out: PathBuf,
    pub threads: Option<usize>,
    /// The flags the user gave, rendered (the README's command repeats only those).
    pub given: Vec<String>,
}

impl CommonArgs {
    pub fn resolve(&self, name: &str, defaults: &Defaults) -> Result<Common, String> {
        let runs = self.runs.unwrap_or(defaults.runs);
        if !(defaults.runs_min..=defaults.runs_max).contains(&runs) {
            return Err(format!(
                "--runs must be in {}..={}, got {runs}",
                defaults.runs_min, defaults.runs_max
            ));
        }
        if let Some(threads) = self.threads {
            if !(1..=THREADS_MAX).contains(&threads) {
                return Err(format!(
                    "--threads must be in 1..={THREADS_MAX}, got {threads}"
                ));
            }
        }
        let mut given = Vec::new();
        if let Some(seed) = self.seed {
            given.push(format!("--seed {seed}"));
        }
        if let Some(runs) = self.runs {
            given.push(format!("--runs {runs}"));
        }
        if let Some(out) = &self.out {
            given.push(format!("--out {}", out.display()));
        }
        Ok(Common {
            seed: self.seed.unwrap_or(defaults.seed),
            runs,
            out: self
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("results/{name}"))),
            threads: self.threads,
            given,
        })
    }
}

/// The command that regenerates an output: the binary plus the flags that were given.
pub fn command_line(name: &str, flags: &[String]) -> String {
    let mut command = format!("cargo run --release --bin {name}");
    if !flags.is_empty() {
        command += " --";
        for flag in flags {
            command.push(' ');
            command += flag;
        }
    }
    command
}

/// Why a binary stopped: bad input (exit 2) or a failed run or write (exit 1).
enum Failure {
    Usage(String),
    Run(String),
}

/// Parses the binary's flags `C`, lets `build` check its own flags and make the experiment, then
/// runs it into `--out`. `build` returns the common flags and the experiment, or a usage error.
pub fn main<C, E>(
    defaults: &Defaults,
    build: impl FnOnce(C) -> Result<(CommonArgs, E), String>,
) -> ExitCode
where
    C: clap::Parser,
    E: Experiment,
{
    let name = C::command().get_name().to_string();
    let cli = match C::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let text = e.to_string();
            eprintln!("{name}: {}", text.lines().next().unwrap_or("bad arguments"));
            return ExitCode::from(2);
        }
    };
    match checked(defaults, build(cli)).and_then(|(common, experiment)| run(&common, &experiment)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("{name}: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Run(message)) => {
            eprintln!("{name}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Every flag checked, then `--out` probed: bad input writes nothing and runs nothing.
fn checked<E: Experiment>(
    defaults: &Defaults,
    built: Result<(CommonArgs, E), String>,
) -> Result<(Common, E), Failure> {
    let (args, experiment) = built.map_err(Failure::Usage)?;
    let common = args
        .resolve(experiment.name(), defaults)
        .map_err(Failure::Usage)?;
    crate::atomic::ensure_writable_folder(&common.out).map_err(Failure::Usage)?;
    Ok((common, experiment))
}

fn run<E: Experiment>(common: &Common, experiment: &E) -> Result<(), Failure> {
    let name = experiment.name();
    let cell_count = experiment.cells().len();
    eprintln!(
        "{name}: seed {}, {cell_count} cells x {} runs -> {}",
        common.seed,
        common.runs,
        common.out.display()
    );
    let started = Instant::now();
    let bar = progress(cell_count as u64 * u64::from(common.runs));
    let work = || sweep(experiment, common.seed, common.runs, &|| bar.inc(1));
    let grid = match common.threads {
        Some(threads) => rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| Failure::Run(e.to_string()))?
            .install(work),
        None => work(),
    }
    .map_err(Failure::Run)?;
    bar.finish_and_clear();
    let sweep_s = started.elapsed().as_secs_f64();
    let events: u64 = grid.runs().map(|(_, run)| E::event_count(run)).sum();
    // Wall time goes to stderr only: results must not depend on the clock.
    if events > 0 {
        eprintln!(
            "{name}: sweep {sweep_s:.3} s wall, {events} events, {:.1} M events/s",
            events as f64 / sweep_s / 1e6
        );
    }
    let mut flags = common.given.clone();
    flags.extend(experiment.flags());
    let context = Context {
        seed: common.seed,
        runs: common.runs,
        command: command_line(name, &flags),
    };
    let output = experiment.report(&grid, &context).map_err(Failure::Run)?;
    output.write(&common.out).map_err(Failure::Run)?;
    if super::index::refresh_for(&common.out).map_err(Failure::Run)? {
        eprintln!("{name}: rewrote the results index (README.md) beside it");
    }
    eprintln!(
        "{name}: wrote {} ({:.3} s in total)",
        common.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A progress bar on stderr when it is a terminal, hidden otherwise.
fn progress(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} (eta {eta})")
    {
        bar.set_style(style);
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULTS: Defaults = Defaults {
        seed: 7,
        runs: 10,
        runs_min: 2,
        runs_max: 100,
    };

    fn args(runs: Option<u32>, threads: Option<usize>) -> CommonArgs {
        CommonArgs {
            runs,
            threads,
            ..CommonArgs::default()
        }
    }

    #[test]
    fn defaults_fill_in_and_limits_are_checked() {
        let common = args(None, None).resolve("demo", &DEFAULTS).unwrap();
        assert_eq!((common.seed, common.runs), (7, 10));
        assert_eq!(common.out, PathBuf::from("results/demo"));
        assert_eq!(
            command_line("demo", &common.given),
            "cargo run --release --bin demo"
        );
        assert!(args(Some(1), None).resolve("demo", &DEFAULTS).is_err());
        assert!(args(Some(101), None).resolve("demo", &DEFAULTS).is_err());
        assert!(args(None, Some(0)).resolve("demo", &DEFAULTS).is_err());
        assert!(args(None, Some(THREADS_MAX + 1))
            .resolve("demo", &DEFAULTS)
            .is_err());
        let mut given = args(Some(3), Some(2))
            .resolve("demo", &DEFAULTS)
            .unwrap()
            .given;
        given.push("--x 1".into());
        assert_eq!(
            command_line("demo", &given),
            "cargo run --release --bin demo -- --runs 3 --x 1"
        );
    }
}
