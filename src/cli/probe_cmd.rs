//! `retrylab probe URL`: the idempotency checks against a live API on loopback. Exit 0 every check passed (or
//! was n/a), 1 a check failed, 2 bad input or the API unreachable.

use super::{EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use retrylab::stack::http::Url;
use retrylab::stack::probe::{exit_code, run_checks, table, ProbeConfig};
use std::time::Duration;

/// `probe --help`'s headings: black-box and gray-box flags grouped by what they are about, so a newcomer can
/// scan them (the provider, consumer and MySQL gates add to the same groups).
pub(super) const SERVICE: &str = "The service";
pub(super) const STORES: &str = "Its stores and effects";
pub(super) const EXPLORE: &str = "What to explore";
pub(super) const BLACK: &str = "Black-box only (without --exec)";
pub(super) const OUTPUT: &str = "Output";

#[derive(clap::Args, Debug)]
#[command(after_help = retrylab::stack::probe::rules::help_text())]
pub struct ProbeArgs {
    /// The endpoint that takes the idempotent POST, e.g. http://127.0.0.1:8080/payments (loopback only).
    pub url: String,
    /// The header carrying the idempotency key.
    #[arg(long, default_value = "Idempotency-Key", help_heading = SERVICE)]
    pub key_header: String,
    /// A GET endpoint answering the number of effects (`{"count": N}` or a bare number); without it the
    /// checks judge from responses alone. `retrylab serve`'s is URL/count.
    #[arg(long, value_name = "URL", help_heading = STORES)]
    pub count_url: Option<String>,
    /// The two client identities, `A,B` (black-box); with --exec, the number of same-key requests (2 or 3).
    #[arg(long, default_value = "probe-a,probe-b", help_heading = EXPLORE)]
    pub clients: String,
    /// The header naming the client; `none`: the API has no client identity (cross-client is n/a).
    #[arg(long, default_value = "X-Client-Id", help_heading = BLACK)]
    pub client_header: String,
    /// Another header for every request, `NAME:VALUE` (repeatable), the retries of timeout-then-retry included.
    #[arg(long = "header", value_name = "NAME:VALUE", help_heading = SERVICE)]
    pub headers: Vec<String>,
    /// The request body, a JSON object.
    #[arg(long, default_value = r#"{"amount":500,"currency":"RUB"}"#, help_heading = SERVICE)]
    pub body: String,
    /// Requests sent together with one key.
    #[arg(long, default_value_t = 20, help_heading = BLACK)]
    pub concurrency: usize,
    /// Rounds of the concurrent check, each with its own key (it fails if any round does).
    #[arg(long, default_value_t = 3, help_heading = BLACK)]
    pub rounds: usize,
    /// The API's declared answer to a request without a key.
    #[arg(long, default_value_t = 400, help_heading = BLACK)]
    pub missing_key_status: u16,
    /// The API's declared answer to a key reused with another body.
    #[arg(long, default_value_t = 422, help_heading = BLACK)]
    pub changed_body_status: u16,
    /// The API's declared key expiry: the expiry check waits it out (at most 120000); without it, n/a.
    #[arg(long, help_heading = BLACK)]
    pub expiry_ms: Option<u64>,
    /// Each request's time limit.
    #[arg(long, default_value_t = 5000, help_heading = SERVICE)]
    pub timeout_ms: u64,
    /// Part of every key (default: from the clock, so runs do not share keys).
    #[arg(long, help_heading = EXPLORE)]
    pub run_id: Option<String>,
    /// Seeds the retrying client's jitter and the proxy.
    #[arg(long, default_value_t = 0, help_heading = BLACK)]
    pub seed: u64,
    /// Run only this check (repeatable); the checks are listed below.
    #[arg(long = "check", value_name = "NAME", help_heading = EXPLORE)]
    pub checks: Vec<String>,
    /// One JSON object per check per line: check, result (pass|fail|n/a), evidence, reproduce.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
    /// The gray-box checks' flags (`--exec` and what goes with it).
    #[command(flatten)]
    pub graybox: Box<super::graybox_args::GrayboxArgs>,
}

fn config(args: &ProbeArgs) -> Result<ProbeConfig, String> {
    let url = Url::parse(&args.url)?;
    let count_url = match &args.count_url {
        Some(text) => {
            let count = Url::parse(text).map_err(|e| format!("--count-url: {e}"))?;
            if count.address != url.address {
                return Err(format!(
                    "--count-url {text}: must be on the same server as {}",
                    args.url
                ));
            }
            Some(count)
        }
        None => None,
    };
    let clients = match args.clients.split_once(',') {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => [a.to_string(), b.to_string()],
        _ => return Err(format!("--clients {}: expected A,B", args.clients)),
    };
    let mut headers = Vec::new();
    for header in &args.headers {
        match header.split_once(':') {
            Some((name, value)) if !name.trim().is_empty() => {
                headers.push((name.trim().to_string(), value.trim().to_string()))
            }
            _ => return Err(format!("--header {header}: expected NAME:VALUE")),
        }
    }
    let run_id = args
        .run_id
        .clone()
        .unwrap_or_else(retrylab::stack::run_id_from_clock);
    if args.timeout_ms == 0 || args.timeout_ms > 60_000 {
        return Err("--timeout-ms: must be in 1..=60000".into());
    }
    Ok(ProbeConfig {
        url,
        count_url,
        key_header: args.key_header.clone(),
        client_header: (args.client_header != "none").then(|| args.client_header.clone()),
        clients,
        headers,
        body: args.body.clone(),
        concurrency: args.concurrency,
        rounds: args.rounds,
        missing_key_status: args.missing_key_status,
        changed_body_status: args.changed_body_status,
        expiry_ms: args.expiry_ms,
        timeout: Duration::from_millis(args.timeout_ms),
        run_id,
        seed: args.seed,
        only: args.checks.clone(),
    })
}

pub fn run(args: &ProbeArgs) -> i32 {
    if args.graybox.exec.is_some() {
        return super::graybox_args::run(args, &args.graybox);
    }
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
    if !args.json {
        errln!(
            "probing {} (run {}, {} concurrent requests x {} round(s))",
            config.url.to_text(),
            config.run_id,
            config.concurrency,
            config.rounds
        );
    }
    let results = match runtime.block_on(run_checks(&config)) {
        Ok(results) => results,
        Err(error) => {
            errln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    print_results(
        &results,
        args.json,
        &table(&results),
        exit_code(&results) != 0,
    )
}

/// Print a probe's results (one JSON line each, or the table) and give the exit code: 1 when one failed.
pub(super) fn print_results<T: serde::Serialize>(
    results: &[T],
    json: bool,
    table: &str,
    failed: bool,
) -> i32 {
    if json {
        for result in results {
            outln!(
                "{}",
                serde_json::to_string(result).expect("a result serialises")
            );
        }
    } else {
        for line in table.lines() {
            outln!("{line}");
        }
    }
    if failed {
        EXIT_MISMATCH
    } else {
        EXIT_OK
    }
}
