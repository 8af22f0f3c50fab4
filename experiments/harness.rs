//! Plumbing shared by the storm experiments: common flags, exit codes, thread pool, progress
//! bar, output folder with atomic writes. The worlds themselves live in `retrylab::storms`.
//!
//! A module of each storm binary (`mod harness;`), not of the library: it is how these binaries
//! parse flags and draw progress (clap, indicatif), nothing a library user calls.
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use retrylab::plot::{self, LineChart};
use retrylab::sim::run_rng;

/// Largest worker count accepted by `--threads`.
pub const THREADS_MAX: usize = 256;

/// Flags every storm binary takes. Defaults differ per binary, so they are resolved in
/// [`CommonArgs::resolve`] rather than in clap.
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// Seed of the ChaCha8 generator; every run uses its own stream of it.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seeded runs per cell.
    #[arg(long)]
    pub runs: Option<u32>,
    /// Output folder, created if missing (default results/<binary>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: all cores). The output does not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Per-binary defaults and limits for the common flags.
#[derive(Clone, Copy, Debug)]
pub struct Defaults {
    pub name: &'static str,
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
    /// Whether the user chose these (the README's command repeats only what was given).
    pub seed_given: bool,
    pub runs_given: bool,
    pub out_given: bool,
}

impl CommonArgs {
    pub fn resolve(self, defaults: &Defaults) -> Result<Common, String> {
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
        Ok(Common {
            seed: self.seed.unwrap_or(defaults.seed),
            runs,
            out: self
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("results/{}", defaults.name))),
            threads: self.threads,
            seed_given: self.seed.is_some(),
            runs_given: self.runs.is_some(),
            out_given: self.out.is_some(),
        })
    }
}

impl Common {
    /// The command that regenerates the output, for the README: the binary plus the flags that
    /// were given (`extra` are binary-specific flags already rendered).
    pub fn command_line(&self, name: &str, extra: &[String]) -> String {
        let mut command = format!("cargo run --release --bin {name} --");
        if self.seed_given {
            command += &format!(" --seed {}", self.seed);
        }
        if self.runs_given {
            command += &format!(" --runs {}", self.runs);
        }
        if self.out_given {
            command += &format!(" --out {}", self.out.display());
        }
        for flag in extra {
            command.push(' ');
            command += flag;
        }
        command
    }

    /// Runs `work` on a pool of `--threads` workers, or on rayon's global pool.
    pub fn in_pool<T: Send>(&self, work: impl FnOnce() -> T + Send) -> Result<T, String> {
        match self.threads {
            Some(threads) => Ok(rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| e.to_string())?
                .install(work)),
            None => Ok(work()),
        }
    }

    /// Runs `work` once per job on the pool, each job with its own generator
    /// `run_rng(seed, stream(job))`, with a progress bar; results come back in job order, so
    /// they do not depend on the thread count.
    pub fn run_grid<J, T, S, W>(&self, jobs: &[J], stream: S, work: W) -> Result<Vec<T>, String>
    where
        J: Sync,
        T: Send,
        S: Fn(&J) -> u64 + Sync,
        W: Fn(&J, &mut ChaCha8Rng) -> Result<T, String> + Sync,
    {
        let bar = progress(jobs.len() as u64);
        let results = self.in_pool(|| {
            jobs.par_iter()
                .with_max_len(1)
                .map(|job| {
                    let result = work(job, &mut run_rng(self.seed, stream(job)));
                    bar.inc(1);
                    result
                })
                .collect::<Result<Vec<T>, String>>()
        })?;
        bar.finish_and_clear();
        results
    }

    /// Refuse an unwritable `--out` before the sweep (a usage error, exit 2).
    pub fn check_out(&self) -> Result<(), Failure> {
        retrylab::atomic::ensure_writable_folder(&self.out).map_err(Failure::Usage)
    }

    pub fn out_dir(&self) -> Result<OutDir, String> {
        std::fs::create_dir_all(&self.out)
            .map_err(|e| format!("creating {}: {e}", self.out.display()))?;
        Ok(OutDir {
            dir: self.out.clone(),
        })
    }
}

/// Parses flags and runs `run`, mapping the outcome to the documented exit codes. A clap error
/// prints one line; `--help` prints the help and exits 0.
pub fn main_with<C: clap::Parser>(
    name: &str,
    run: impl FnOnce(C) -> Result<(), Failure>,
) -> ExitCode {
    let cli = match C::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let text = e.to_string();
            eprintln!("{name}: {}", text.lines().next().unwrap_or("bad arguments"));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
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

/// Why a binary stopped: bad input (exit 2) or a failed run or write (exit 1).
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    Usage(String),
    Run(String),
}

impl From<String> for Failure {
    /// Plain messages are run failures; usage errors are built explicitly.
    fn from(message: String) -> Self {
        Failure::Run(message)
    }
}

/// Checks a `--duration-s` flag against its range.
// Only retry-budget and retry-safety take `--duration-s`; every storm binary compiles its own copy of this module.
#[allow(dead_code)]
pub fn check_duration_s(duration_s: u32, low: u32, high: u32) -> Result<(), Failure> {
    if (low..=high).contains(&duration_s) {
        Ok(())
    } else {
        Err(Failure::Usage(format!(
            "--duration-s must be in {low}..={high}, got {duration_s}"
        )))
    }
}

/// A progress bar on stderr when it is a terminal, hidden otherwise.
pub fn progress(len: u64) -> ProgressBar {
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

/// The output folder; every file goes through [`retrylab::atomic::write_atomic`].
pub struct OutDir {
    dir: PathBuf,
}

impl OutDir {
    pub fn write(&self, name: &str, text: &str) -> Result<(), String> {
        let path = self.dir.join(name);
        retrylab::atomic::write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("writing {}: {e}", path.display()))
    }

    /// `<stem>.svg` and `<stem>.png`.
    pub fn chart(&self, chart: &LineChart, stem: &str) -> Result<(), String> {
        plot::write_line_chart(chart, &self.dir, stem).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULTS: Defaults = Defaults {
        name: "demo",
        seed: 7,
        runs: 10,
        runs_min: 2,
        runs_max: 100,
    };

    fn args(runs: Option<u32>, threads: Option<usize>) -> CommonArgs {
        CommonArgs {
            seed: None,
            runs,
            out: None,
            threads,
        }
    }

    #[test]
    fn defaults_fill_in_and_limits_are_checked() {
        let common = args(None, None).resolve(&DEFAULTS).unwrap();
        assert_eq!(common.seed, 7);
        assert_eq!(common.runs, 10);
        assert_eq!(common.out, PathBuf::from("results/demo"));
        assert_eq!(
            common.command_line("demo", &[]),
            "cargo run --release --bin demo --"
        );
        assert!(args(Some(1), None).resolve(&DEFAULTS).is_err());
        assert!(args(Some(101), None).resolve(&DEFAULTS).is_err());
        assert!(args(None, Some(0)).resolve(&DEFAULTS).is_err());
        let given = args(Some(3), Some(2)).resolve(&DEFAULTS).unwrap();
        assert_eq!(
            given.command_line("demo", &["--x 1".into()]),
            "cargo run --release --bin demo -- --runs 3 --x 1"
        );
    }
}
