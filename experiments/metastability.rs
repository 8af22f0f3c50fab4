//! metastability: a server with capacity loses most of it for a while, then gets it back. Which
//! retry policies let goodput come back, how long it takes, and which keep the server busy with
//! work nobody waits for (src/storms/capacity.rs).
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

mod harness;

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Parser;
use harness::{Common, CommonArgs, Defaults, Failure};
use retrylab::plot::{BandPoint, LegendAt, LineChart, LineStyle, Series};
use retrylab::sim::stats::{estimate, Estimate};
use retrylab::storms::capacity::{recovery, simulate, CapacityConfig, CapacityOutcome, Recovery};
use retrylab::storms::client::{full_jitter, PolicyKind};

const DEFAULTS: Defaults = Defaults {
    name: "metastability",
    seed: 2021,
    runs: 10,
    runs_min: 2,
    runs_max: 1000,
};

const POLICIES: [PolicyKind; 8] = [
    PolicyKind::NoRetries,
    PolicyKind::ThreeRetries,
    PolicyKind::TokenBucket,
    PolicyKind::RetryBreaker,
    PolicyKind::CircuitBreaker,
    PolicyKind::AwsQuota,
    PolicyKind::SreRatio,
    PolicyKind::GrpcThrottle,
];

#[derive(Parser, Debug)]
#[command(
    name = "metastability",
    about = "Goodput over time around a capacity drop, per retry policy: who stays collapsed"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// How long the capacity drop lasts, in seconds (it starts at 10 s; the run lasts 60 s).
    #[arg(long, default_value_t = TRIGGER_S_DEFAULT)]
    trigger_s: u32,
}

const TRIGGER_S_DEFAULT: u32 = 10;
const TRIGGER_S_MAX: u32 = 30;

fn main() -> ExitCode {
    harness::main_with("metastability", |cli: Cli| {
        let common = cli.common.resolve(&DEFAULTS).map_err(Failure::Usage)?;
        if !(1..=TRIGGER_S_MAX).contains(&cli.trigger_s) {
            return Err(Failure::Usage(format!(
                "--trigger-s must be in 1..={TRIGGER_S_MAX}, got {}",
                cli.trigger_s
            )));
        }
        run(&common, cli.trigger_s)
    })
}

fn world(trigger_s: u32) -> Result<CapacityConfig, String> {
    Ok(CapacityConfig {
        trigger_ms: f64::from(trigger_s) * 1000.0,
        ..CapacityConfig::standard(full_jitter(25.0, 1000.0)?)
    })
}

struct Cell {
    policy: PolicyKind,
    goodput_per_s: Vec<Estimate>,
    throughput_per_s: Vec<Estimate>,
    recoveries: Vec<Recovery>,
    success_rate: Estimate,
    /// Mean goodput and throughput per second over the last 10 s of the run.
    goodput_end: Estimate,
    throughput_end: Estimate,
}

/// The end of the run used for the "after" figures.
const END_MS: f64 = 10_000.0;

fn summarise(policy: PolicyKind, config: &CapacityConfig, runs: &[CapacityOutcome]) -> Cell {
    let per_s = 1000.0 / config.bin_ms;
    let by_bin = |f: fn(&CapacityOutcome) -> &Vec<u32>| -> Vec<Estimate> {
        (0..config.bin_count())
            .map(|bin| {
                estimate(
                    &runs
                        .iter()
                        .map(|o| f64::from(f(o)[bin]) * per_s)
                        .collect::<Vec<f64>>(),
                )
            })
            .collect()
    };
    let end_bins = ((END_MS / config.bin_ms) as usize).clamp(1, config.bin_count() - 1);
    let end_mean = |bins: &[u32]| {
        let n = bins.len();
        // The last bin is partial (arrivals stop at the end): leave it out.
        let tail = &bins[n - 1 - end_bins..n - 1];
        tail.iter().map(|&g| f64::from(g)).sum::<f64>() / end_bins as f64 * per_s
    };
    Cell {
        policy,
        goodput_per_s: by_bin(|o| &o.goodput_per_bin),
        throughput_per_s: by_bin(|o| &o.throughput_per_bin),
        recoveries: runs
            .iter()
            .map(|o| recovery(config, &o.goodput_per_bin))
            .collect(),
        success_rate: estimate(
            &runs
                .iter()
                .map(|o| o.success_count as f64 / o.request_count.max(1) as f64)
                .collect::<Vec<f64>>(),
        ),
        goodput_end: estimate(
            &runs
                .iter()
                .map(|o| end_mean(&o.goodput_per_bin))
                .collect::<Vec<f64>>(),
        ),
        throughput_end: estimate(
            &runs
                .iter()
                .map(|o| end_mean(&o.throughput_per_bin))
                .collect::<Vec<f64>>(),
        ),
    }
}

impl Cell {
    fn collapsed_runs(&self) -> usize {
        self.recoveries
            .iter()
            .filter(|r| **r == Recovery::Collapsed)
            .count()
    }

    fn recovery_ms(&self) -> Option<Estimate> {
        let times: Vec<f64> = self
            .recoveries
            .iter()
            .filter_map(|r| match r {
                Recovery::After { ms } => Some(*ms),
                Recovery::Collapsed => None,
            })
            .collect();
        (!times.is_empty()).then(|| estimate(&times))
    }

    /// Collapsed in at least half of the runs.
    fn stays_collapsed(&self) -> bool {
        2 * self.collapsed_runs() >= self.recoveries.len()
    }
}

fn run(common: &Common, trigger_s: u32) -> Result<(), Failure> {
    // After every flag is checked (bad flags write nothing), before the sweep.
    common.check_out()?;
    let config = world(trigger_s)?;
    let mut jobs = Vec::new();
    for policy in POLICIES {
        for run_index in 0..common.runs {
            jobs.push((policy, run_index));
        }
    }
    eprintln!(
        "metastability: seed {}, {} policies x {} runs -> {}",
        common.seed,
        POLICIES.len(),
        common.runs,
        common.out.display()
    );
    let outcomes = common.run_grid(
        &jobs,
        |&(policy, run_index)| (policy.tag() << 32) | u64::from(run_index),
        |&(policy, _), rng| simulate(&config, policy, rng),
    )?;
    let cells: Vec<Cell> = outcomes
        .chunks(common.runs as usize)
        .zip(POLICIES)
        .map(|(runs, policy)| summarise(policy, &config, runs))
        .collect();

    let out = common.out_dir()?;
    out.write("summary.csv", &summary_csv(&cells, common.runs))?;
    out.write("timeline.csv", &timeline_csv(&cells, &config))?;
    out.chart(&goodput_chart(&cells, &config), "goodput")?;
    out.chart(&work_chart(&cells, &config), "throughput-goodput")?;
    let extra = if trigger_s == TRIGGER_S_DEFAULT {
        Vec::new()
    } else {
        vec![format!("--trigger-s {trigger_s}")]
    };
    out.write("README.md", &readme(common, &extra, &config, &cells))?;
    eprintln!("metastability: wrote {}", common.out.display());
    Ok(())
}

fn summary_csv(cells: &[Cell], runs: u32) -> String {
    let mut text = String::from(
        "policy,runs,collapsed_runs,recovery_ms_mean,recovery_ms_ci95,goodput_end_per_s_mean,goodput_end_per_s_ci95,\
         throughput_end_per_s_mean,throughput_end_per_s_ci95,success_rate_mean,success_rate_ci95\n",
    );
    for c in cells {
        let (rec_mean, rec_ci) = c.recovery_ms().map_or((String::new(), String::new()), |e| {
            (format!("{:.0}", e.mean), format!("{:.0}", e.ci95))
        });
        let _ = writeln!(
            text,
            "{},{runs},{},{rec_mean},{rec_ci},{:.1},{:.1},{:.1},{:.1},{:.4},{:.4}",
            c.policy,
            c.collapsed_runs(),
            c.goodput_end.mean,
            c.goodput_end.ci95,
            c.throughput_end.mean,
            c.throughput_end.ci95,
            c.success_rate.mean,
            c.success_rate.ci95
        );
    }
    text
}

fn timeline_csv(cells: &[Cell], config: &CapacityConfig) -> String {
    let mut text = String::from(
        "policy,time_s,goodput_per_s_mean,goodput_per_s_ci95,throughput_per_s_mean,throughput_per_s_ci95\n",
    );
    for c in cells {
        for (bin, (g, w)) in c.goodput_per_s.iter().zip(&c.throughput_per_s).enumerate() {
            let _ = writeln!(
                text,
                "{},{:.1},{:.1},{:.1},{:.1},{:.1}",
                c.policy,
                bin as f64 * config.bin_ms / 1000.0,
                g.mean,
                g.ci95,
                w.mean,
                w.ci95
            );
        }
    }
    text
}

/// Bin midpoints in seconds; the partial last bin is left out.
fn time_series(values: &[Estimate], config: &CapacityConfig) -> Vec<BandPoint> {
    values[..values.len() - 1]
        .iter()
        .enumerate()
        .map(|(bin, e)| BandPoint {
            x: (bin as f64 + 0.5) * config.bin_ms / 1000.0,
            y: e.mean,
            low: e.low().max(0.0),
            high: e.high(),
        })
        .collect()
}

fn goodput_chart(cells: &[Cell], config: &CapacityConfig) -> LineChart {
    let mut chart = LineChart::new(
        format!(
            "Goodput around a capacity drop from {:.0} s to {:.0} s (mean of runs, 95% band)",
            config.trigger_start_ms / 1000.0,
            config.trigger_end_ms() / 1000.0
        ),
        "time (s)",
        "successful answers in time (per s)",
    );
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1180;
    chart.markers = false;
    for (i, c) in cells.iter().enumerate() {
        chart.series.push(Series::new(
            c.policy.name(),
            i,
            time_series(&c.goodput_per_s, config),
        ));
    }
    chart
}

fn work_chart(cells: &[Cell], config: &CapacityConfig) -> LineChart {
    let mut chart = LineChart::new(
        "Work done (throughput, dashed) against useful work (goodput, solid)",
        "time (s)",
        "requests per s",
    );
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1180;
    chart.markers = false;
    for (i, c) in cells.iter().enumerate() {
        if !matches!(c.policy, PolicyKind::NoRetries | PolicyKind::ThreeRetries) {
            continue;
        }
        let mut work = Series::new(
            format!("{} throughput", c.policy),
            i,
            time_series(&c.throughput_per_s, config),
        );
        work.line = LineStyle::Dashed;
        chart.series.push(Series::new(
            format!("{} goodput", c.policy),
            i,
            time_series(&c.goodput_per_s, config),
        ));
        chart.series.push(work);
    }
    chart
}

fn readme(common: &Common, extra: &[String], config: &CapacityConfig, cells: &[Cell]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# metastability: retries that keep a recovered server down\n"
    );
    let _ = writeln!(
        t,
        "Generated by `{}` (seed {}, {} runs per policy). Do not edit by hand.\n",
        common.command_line("metastability", extra),
        common.seed,
        common.runs
    );
    let offered = f64::from(config.clients) * config.rate_per_s;
    let capacity = f64::from(config.workers) * 1000.0 / config.service_ms_mean;
    let degraded = f64::from(config.workers_degraded) * 1000.0 / config.service_ms_mean;
    let _ = writeln!(
        t,
        "A server with {} workers (exponential service time, mean {:.0} ms: {capacity:.0} requests/s), a FIFO queue of \
         {} and an immediate 503 when both are full. {} clients send {offered:.0} requests/s in all (Poisson), time an \
         attempt out after {:.0} ms (legs of {:.0} ms) and retry by their policy (full-jitter backoff 25 ms doubling, \
         cap 1 s; at most 3 retries). The server does not see timeouts: it still does the abandoned work, so \
         **throughput** (work finished) and **goodput** (successful answers that reach a client still waiting) part. \
         The trigger: from {:.0} s to {:.0} s only {} workers ({degraded:.0} requests/s), then full capacity again until \
         {:.0} s. Goodput is counted in bins of {:.1} s; a run has recovered when goodput is back to {}% of its \
         pre-trigger mean for {} bins in a row; it stays collapsed otherwise.\n",
        config.workers,
        config.service_ms_mean,
        config.queue_len_max,
        config.clients,
        config.timeout_ms,
        config.leg_ms,
        config.trigger_start_ms / 1000.0,
        config.trigger_end_ms() / 1000.0,
        config.workers_degraded,
        config.duration_ms / 1000.0,
        config.bin_ms / 1000.0,
        retrylab::storms::capacity::RECOVERED_SHARE_PERMILLE / 10,
        retrylab::storms::capacity::RECOVERED_BINS
    );
    let _ = writeln!(t, "## What the figures show\n");
    let collapsed: Vec<&Cell> = cells.iter().filter(|c| c.stays_collapsed()).collect();
    let recovered: Vec<&Cell> = cells.iter().filter(|c| !c.stays_collapsed()).collect();
    if collapsed.is_empty() {
        let _ = writeln!(t, "- No policy stays collapsed in this setup.");
    } else {
        let names: Vec<String> = collapsed
            .iter()
            .map(|c| {
                format!(
                    "{} ({} of {} runs; in the last 10 s goodput {:.0}/s while the server finishes {:.0} requests/s)",
                    c.policy,
                    c.collapsed_runs(),
                    c.recoveries.len(),
                    c.goodput_end.mean,
                    c.throughput_end.mean
                )
            })
            .collect();
        let _ = writeln!(
            t,
            "- **Stay collapsed after the trigger is gone**: {}. The queue stays full of attempts whose clients have \
             already timed out, each timeout sends another attempt, and the server works at full speed on answers \
             nobody reads.",
            names.join("; ")
        );
    }
    let mut recovered_text: Vec<String> = recovered
        .iter()
        .map(|c| match c.recovery_ms() {
            Some(e) => format!(
                "{} {:.1} ± {:.1} s{}",
                c.policy,
                e.mean / 1000.0,
                e.ci95 / 1000.0,
                if c.collapsed_runs() > 0 {
                    format!(" ({} runs collapsed)", c.collapsed_runs())
                } else {
                    String::new()
                }
            ),
            None => format!("{} (no recovered run)", c.policy),
        })
        .collect();
    recovered_text.sort();
    let _ = writeln!(
        t,
        "- **Recover**, seconds after capacity is back until goodput is back (mean ± 95% half-width over the runs \
         that recovered): {}.",
        recovered_text.join(", ")
    );
    let mut success: Vec<String> = cells
        .iter()
        .map(|c| format!("{} {:.3}", c.policy, c.success_rate.mean))
        .collect();
    success.sort();
    let _ = writeln!(
        t,
        "- Share of all requests of the run that succeeded: {}.\n",
        success.join(", ")
    );
    let _ = writeln!(t, "| policy | collapsed runs | recovery (s) | goodput, last 10 s (/s) | throughput, last 10 s (/s) | success rate |");
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|");
    for c in cells {
        let recovery = c.recovery_ms().map_or("-".to_string(), |e| {
            format!("{:.1} ± {:.1}", e.mean / 1000.0, e.ci95 / 1000.0)
        });
        let _ = writeln!(
            t,
            "| {} | {} of {} | {recovery} | {:.0} ± {:.0} | {:.0} ± {:.0} | {:.3} ± {:.3} |",
            c.policy,
            c.collapsed_runs(),
            c.recoveries.len(),
            c.goodput_end.mean,
            c.goodput_end.ci95,
            c.throughput_end.mean,
            c.throughput_end.ci95,
            c.success_rate.mean,
            c.success_rate.ci95
        );
    }
    let _ = writeln!(
        t,
        "\n![goodput](goodput.png)\n\n![throughput and goodput](throughput-goodput.png)\n\n\
         Files: `summary.csv` (one row per policy), `timeline.csv` (goodput and throughput per second, mean and 95% \
         half-width over runs), charts as SVG and PNG."
    );
    t
}
