//! `retrylab load URL`: retrying clients against a service for a bounded time, optionally through the fault
//! proxy; prints requests, successes, duplicates (with `--count-url`) and latency percentiles.

use super::fault_args::FaultArgs;
use super::{EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use retrylab::backoff::{Backoff, RetryAfter, RetryPolicy, Strategy};
use retrylab::stack::client::ClientConfig;
use retrylab::stack::http::Url;
use retrylab::stack::load::{run_load, LoadConfig, RATE_PER_S_MAX};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// The idempotent POST endpoint (loopback only).
    pub url: String,
    /// The effects count endpoint (`retrylab serve`'s is URL/count): duplicates are counted against it.
    #[arg(long, value_name = "URL")]
    pub count_url: Option<String>,
    /// Closed loop: this many clients, each starting its next operation when the last ended.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Open loop instead: this many new operations per second.
    #[arg(long)]
    pub rate: Option<u32>,
    /// How long, in seconds (at most 600).
    #[arg(long, default_value_t = 10)]
    pub duration_s: u64,
    /// The backoff between attempts: none, constant, exponential, equal-jitter, full-jitter,
    /// decorrelated-jitter, decorrelated-capped (the last two also -xG, growth G in 1..=15, e.g.
    /// decorrelated-jitter-x4).
    #[arg(long, default_value = "full-jitter", value_name = "STRATEGY")]
    pub strategy: String,
    /// The backoff's base delay: the first retry's wait (or its upper bound, with jitter), in milliseconds.
    #[arg(long, default_value_t = 10.0)]
    pub base_ms: f64,
    /// The backoff's cap: no wait between attempts is longer, in milliseconds.
    #[arg(long, default_value_t = 1000.0)]
    pub cap_ms: f64,
    /// Attempts per operation, the first included.
    #[arg(long, default_value_t = 6)]
    pub attempts: u32,
    /// An operation's whole time budget.
    #[arg(long, default_value_t = 10_000.0)]
    pub deadline_ms: f64,
    /// One attempt's time limit: the client then gives the attempt up and retries with the same key.
    #[arg(long, default_value_t = 2000)]
    pub attempt_timeout_ms: u64,
    /// The longest Retry-After honoured (longer: give up).
    #[arg(
        long = "retry-after-max-ms",
        value_name = "RETRY_AFTER_MAX_MS",
        default_value_t = 5000.0
    )]
    pub retry_after_ms_max: f64,
    /// The header carrying each operation's idempotency key.
    #[arg(long, default_value = "Idempotency-Key")]
    pub key_header: String,
    /// Seeds the keys' order, the jitter (client N gets SEED+N) and the proxy's faults.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Part of every key (default: from the clock, so a second run against the same store sees new keys, not
    /// replays of the first run's).
    #[arg(long)]
    pub run_id: Option<String>,
    /// The body of every operation's POST.
    #[arg(long, default_value = r#"{"amount":500,"currency":"RUB"}"#)]
    pub body: String,
    /// Through the fault proxy (when any fault is given).
    #[command(flatten)]
    pub faults: FaultArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

fn config(args: &LoadArgs) -> Result<LoadConfig, String> {
    let url = Url::parse(&args.url)?;
    let count_url = match &args.count_url {
        Some(text) => Some(Url::parse(text).map_err(|e| format!("--count-url: {e}"))?),
        None => None,
    };
    let strategy: Strategy = args
        .strategy
        .parse()
        .map_err(|e| format!("--strategy {}: {e}", args.strategy))?;
    let backoff = Backoff::new(strategy, args.base_ms, args.cap_ms)
        .map_err(|e| format!("--base-ms/--cap-ms: {e}"))?;
    if !(args.deadline_ms.is_finite() && args.deadline_ms > 0.0) {
        return Err(format!(
            "--deadline-ms {}: must be a positive number of milliseconds",
            args.deadline_ms
        ));
    }
    if args.attempts == 0 || args.clients == 0 || args.clients > 1024 {
        return Err("--attempts must be at least 1 and --clients in 1..=1024".into());
    }
    if let Some(rate) = args
        .rate
        .filter(|rate| !(1..=RATE_PER_S_MAX).contains(rate))
    {
        return Err(format!(
            "--rate {rate}: must be 1..={RATE_PER_S_MAX} operations per second"
        ));
    }
    let plan = args.faults.plan(args.seed)?;
    let faults = plan.injects_any().then_some(plan);
    Ok(LoadConfig {
        url,
        count_url,
        clients: args.clients,
        rate_per_s: args.rate,
        duration: Duration::from_secs(args.duration_s),
        client: ClientConfig {
            policy: RetryPolicy {
                backoff,
                attempts_max: Some(args.attempts),
                deadline_ms: Some(args.deadline_ms),
                retry_after: RetryAfter::Honour {
                    wait_ms_max: args.retry_after_ms_max,
                },
            },
            attempt_timeout: Duration::from_millis(args.attempt_timeout_ms),
            key_header: args.key_header.clone(),
            client: None,
            seed: args.seed,
        },
        body: args.body.clone(),
        faults,
        run_id: args
            .run_id
            .clone()
            .unwrap_or_else(retrylab::stack::run_id_from_clock),
    })
}

pub fn run(args: &LoadArgs) -> i32 {
    let config = match config(args) {
        Ok(config) => config,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let runtime = match super::stack_runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let report = match runtime.block_on(run_load(&config)) {
        Ok(report) => report,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    if args.json {
        outln!(
            "{}",
            serde_json::to_string(&report).expect("a report serialises")
        );
    } else {
        let shown = |value: Option<u64>| value.map_or("-".to_string(), |v| v.to_string());
        outln!(
            "{} for {:.1} s (run {})",
            report.mode,
            report.elapsed_s,
            report.run_id
        );
        outln!(
            "operations {}  requests {}  succeeded {}  gave up {}  effects {}  duplicates {}",
            report.operations,
            report.requests,
            report.succeeded,
            report.gave_up,
            shown(report.effects),
            shown(report.duplicates)
        );
        outln!(
            "{:.1} operations/s  latency ms p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
            report.operations_per_s,
            report.latency_ms_p50,
            report.latency_ms_p90,
            report.latency_ms_p99,
            report.latency_ms_max
        );
        if !report.proxy_actions.is_empty() {
            let actions: Vec<String> = report
                .proxy_actions
                .iter()
                .map(|(a, n)| format!("{a} {n}"))
                .collect();
            outln!("proxy: {}", actions.join(", "));
        }
    }
    // Duplicates are the finding, and an outage is one too: exit 1, as a failed check.
    match report.failure() {
        Some(why) => {
            errln!("load failed: {why}");
            EXIT_MISMATCH
        }
        None => EXIT_OK,
    }
}
