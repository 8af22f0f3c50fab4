//! retry-layers: how many requests reach the bottom service per user call when it fails, for k
//! layers of services each making r attempts (every layer retries) or only the top one retrying.
//! Simulated message by message on the event kernel (src/storms/layers.rs).
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

mod harness;

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Parser;
use harness::{Common, CommonArgs, Defaults, Failure};
use retrylab::plot::{BandPoint, LegendAt, LineChart, LineStyle, Scale, Series};
use retrylab::sim::stats::{estimate, Estimate};
use retrylab::storms::layers::{simulate_call, LayerConfig, LayerOutcome, LayerPolicy};

const DEFAULTS: Defaults = Defaults {
    name: "retry-layers",
    seed: 27,
    runs: 20,
    runs_min: 2,
    runs_max: 10_000,
};

/// The grid: 1..=5 layers, 1..=5 attempts per layer (5 x 5 = 3125 bottom requests at most).
const LAYERS: [u32; 5] = [1, 2, 3, 4, 5];
const ATTEMPTS: [u32; 5] = [1, 2, 3, 4, 5];

#[derive(Parser, Debug)]
#[command(
    name = "retry-layers",
    about = "Requests reaching a failing bottom service per user call, k layers x r attempts"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
}

fn main() -> ExitCode {
    harness::main_with("retry-layers", |cli: Cli| {
        let common = cli.common.resolve(&DEFAULTS).map_err(Failure::Usage)?;
        run(&common)
    })
}

/// The runs of one (layers, attempts, policy) cell.
struct Cell {
    config: LayerConfig,
    /// Bottom requests per call (the same in every run: jitter moves time, not counts).
    bottom_requests_per_call: u64,
    requests_per_call: u64,
    give_up_ms: Estimate,
}

fn stream_id(config: &LayerConfig, run_index: u32) -> u64 {
    let policy_tag = match config.policy {
        LayerPolicy::EveryLayer => 1,
        LayerPolicy::OneLayer => 2,
    };
    (policy_tag << 56)
        | (u64::from(config.layers) << 48)
        | (u64::from(config.attempts_per_layer) << 40)
        | u64::from(run_index)
}

/// Summarises the runs of one cell.
fn summarise(config: LayerConfig, runs: &[LayerOutcome]) -> Result<Cell, String> {
    // The count must not depend on the draws; if it did, a mean would hide a bug.
    let bottom_counts: Vec<u64> = runs.iter().map(|o| o.bottom_request_count).collect();
    if bottom_counts.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!(
            "bottom requests differ between runs of {config:?}: {bottom_counts:?}"
        ));
    }
    Ok(Cell {
        config,
        bottom_requests_per_call: bottom_counts[0],
        requests_per_call: runs[0].request_count,
        give_up_ms: estimate(&runs.iter().map(|o| o.give_up_ms).collect::<Vec<f64>>()),
    })
}

fn run(common: &Common) -> Result<(), Failure> {
    // After every flag is checked (bad flags write nothing), before the sweep.
    common.check_out()?;
    let mut configs = Vec::new();
    for policy in LayerPolicy::ALL {
        for layers in LAYERS {
            for attempts in ATTEMPTS {
                configs.push(LayerConfig::new(layers, attempts, policy));
            }
        }
    }
    eprintln!(
        "retry-layers: seed {}, {} cells x {} runs -> {}",
        common.seed,
        configs.len(),
        common.runs,
        common.out.display()
    );
    let jobs: Vec<(LayerConfig, u32)> = configs
        .iter()
        .flat_map(|&config| (0..common.runs).map(move |run_index| (config, run_index)))
        .collect();
    let outcomes = common.run_grid(
        &jobs,
        |(config, run_index)| stream_id(config, *run_index),
        |(config, _), rng| simulate_call(config, rng),
    )?;
    let cells = configs
        .iter()
        .zip(outcomes.chunks(common.runs as usize))
        .map(|(&config, runs)| summarise(config, runs))
        .collect::<Result<Vec<Cell>, String>>()?;

    let out = common.out_dir()?;
    out.write("summary.csv", &summary_csv(&cells))?;
    out.write("timing.csv", &timing_csv(&cells))?;
    out.chart(&requests_chart(&cells), "bottom-requests")?;
    out.chart(&time_chart(&cells), "give-up-time")?;
    out.write("README.md", &readme(common, &cells))?;
    eprintln!("retry-layers: wrote {}", common.out.display());
    Ok(())
}

fn summary_csv(cells: &[Cell]) -> String {
    let mut text = String::from("layers,attempts_per_layer,policy,bottom_requests_per_call\n");
    for c in cells {
        let _ = writeln!(
            text,
            "{},{},{},{}",
            c.config.layers,
            c.config.attempts_per_layer,
            c.config.policy.name(),
            c.bottom_requests_per_call
        );
    }
    text
}

fn timing_csv(cells: &[Cell]) -> String {
    let mut text = String::from(
        "layers,attempts_per_layer,policy,requests_per_call,give_up_ms_mean,give_up_ms_sd,give_up_ms_ci95\n",
    );
    for c in cells {
        let _ = writeln!(
            text,
            "{},{},{},{},{:.3},{:.3},{:.3}",
            c.config.layers,
            c.config.attempts_per_layer,
            c.config.policy.name(),
            c.requests_per_call,
            c.give_up_ms.mean,
            c.give_up_ms.sd,
            c.give_up_ms.ci95
        );
    }
    text
}

fn find(cells: &[Cell], policy: LayerPolicy, layers: u32, attempts: u32) -> Option<&Cell> {
    cells.iter().find(|c| {
        c.config.policy == policy
            && c.config.layers == layers
            && c.config.attempts_per_layer == attempts
    })
}

fn series(
    cells: &[Cell],
    policy: LayerPolicy,
    attempts: u32,
    value: impl Fn(&Cell) -> BandPoint,
) -> Series {
    let points = LAYERS
        .iter()
        .filter_map(|&k| find(cells, policy, k, attempts).map(&value))
        .collect();
    let mut s = Series::new(
        format!("{}, r = {attempts}", policy.name()),
        attempts as usize - 1,
        points,
    );
    if policy == LayerPolicy::OneLayer {
        s.line = LineStyle::Dashed;
    }
    s
}

fn requests_chart(cells: &[Cell]) -> LineChart {
    let mut chart = LineChart::new(
        "Requests reaching the failing bottom service per user call",
        "layers of services between user and bottom (count)",
        "bottom requests per user call (count, log scale)",
    );
    chart.y_scale = Scale::Log;
    chart.legend_at = LegendAt::Outside;
    chart.width_px = 1120;
    for policy in LayerPolicy::ALL {
        for attempts in 2..=5 {
            chart.series.push(series(cells, policy, attempts, |c| {
                BandPoint::exact(
                    f64::from(c.config.layers),
                    c.bottom_requests_per_call as f64,
                )
            }));
        }
    }
    chart
}

fn time_chart(cells: &[Cell]) -> LineChart {
    let mut chart = LineChart::new(
        "Time until the user sees the failure (r = 3, mean of runs, 95% band)",
        "layers of services between user and bottom (count)",
        "time to failure at the user (ms, log scale)",
    );
    chart.y_scale = Scale::Log;
    chart.legend_at = LegendAt::UpperLeft;
    for policy in LayerPolicy::ALL {
        chart.series.push(series(cells, policy, 3, |c| BandPoint {
            x: f64::from(c.config.layers),
            y: c.give_up_ms.mean,
            // A log axis spans every band: keep a wide band of a few runs above 1 ms (a call
            // takes at least four 1 ms legs), or the axis would span hundreds of decades.
            low: c.give_up_ms.low().max(1.0),
            high: c.give_up_ms.high(),
        }));
    }
    chart
}

fn readme(common: &Common, cells: &[Cell]) -> String {
    let count = |policy, k, r| find(cells, policy, k, r).map_or(0, |c| c.bottom_requests_per_call);
    let mut t = String::new();
    let _ = writeln!(t, "# retry-layers: retries at every layer multiply\n");
    let _ = writeln!(
        t,
        "Generated by `{}` (seed {}, {} runs per cell). Do not edit by hand.\n",
        common.command_line("retry-layers", &[]),
        common.seed,
        common.runs
    );
    let _ = writeln!(
        t,
        "A user calls service 1, service 1 calls service 2, ..., service k calls the bottom service, which fails \
         every request. A retrying service makes up to r attempts per incoming request (full-jitter backoff from \
         10 ms, capped at 1 s; network legs of 1 ms) and then fails upwards. **every-layer**: all k services retry; \
         **one-layer**: only service 1 retries, the others make one attempt. The counts come from simulating every \
         message of the call tree on the event kernel, not from a formula; they are the same in every run (the \
         binary refuses to write them otherwise), while the time to failure varies with the jitter.\n"
    );
    let _ = writeln!(
        t,
        "## What the figures show\n\n\
         - With every layer retrying, one user call sends **{}** requests to the bottom at 3 layers x 3 attempts \
         (3 x 3 x 3, the article's mistake 7) and **{}** at 5 layers x 3 attempts (the AWS Builders' Library's 243).\n\
         - With only one layer retrying, the bottom sees **{}** requests at 3 x 3 and **{}** at 5 x 3: r, whatever the depth.\n\
         - The requests received by all services together at 5 x 3 are {} (every layer) against {} (one layer).",
        count(LayerPolicy::EveryLayer, 3, 3),
        count(LayerPolicy::EveryLayer, 5, 3),
        count(LayerPolicy::OneLayer, 3, 3),
        count(LayerPolicy::OneLayer, 5, 3),
        find(cells, LayerPolicy::EveryLayer, 5, 3).map_or(0, |c| c.requests_per_call),
        find(cells, LayerPolicy::OneLayer, 5, 3).map_or(0, |c| c.requests_per_call),
    );
    if let (Some(every), Some(one)) = (
        find(cells, LayerPolicy::EveryLayer, 5, 3),
        find(cells, LayerPolicy::OneLayer, 5, 3),
    ) {
        let _ = writeln!(
            t,
            "- The user also waits longer for the same failure: at 5 x 3 it arrives after {:.0} ± {:.0} ms with every \
             layer retrying and {:.0} ± {:.0} ms with one (mean ± 95% half-width): the inner layers' backoffs nest \
             inside the outer ones'.",
            every.give_up_ms.mean, every.give_up_ms.ci95, one.give_up_ms.mean, one.give_up_ms.ci95
        );
    }
    let _ = writeln!(t, "\n## Bottom requests per user call (summary.csv)\n");
    let _ = write!(t, "| layers |");
    for r in ATTEMPTS {
        let _ = write!(t, " every, r={r} |");
    }
    for r in ATTEMPTS {
        let _ = write!(t, " one, r={r} |");
    }
    let _ = write!(t, "\n|---:|");
    for _ in 0..2 * ATTEMPTS.len() {
        t.push_str("---:|");
    }
    t.push('\n');
    for k in LAYERS {
        let _ = write!(t, "| {k} |");
        for policy in LayerPolicy::ALL {
            for r in ATTEMPTS {
                let _ = write!(t, " {} |", count(policy, k, r));
            }
        }
        t.push('\n');
    }
    let _ = writeln!(
        t,
        "\n![bottom requests](bottom-requests.png)\n\n![time to failure](give-up-time.png)\n\n\
         Files: `summary.csv` (`layers,attempts_per_layer,policy,bottom_requests_per_call`), `timing.csv` (requests \
         at all services and the time to failure at the user, mean, sd and 95% half-width over runs), charts as SVG and PNG."
    );
    t
}
