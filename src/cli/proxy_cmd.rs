//! `retrylab proxy UPSTREAM`: the seeded fault-injecting proxy on its own, in front of a loopback service, until
//! Ctrl-C or SIGTERM; then its record (what it did to each request) as JSON lines, on stdout or `--record FILE`.
//! The first stdout line is its address.

use super::load_cmd::fault;
use super::{EXIT_BAD_INPUT, EXIT_OK};
use retrylab::stack::http::Url;
use retrylab::stack::proxy::{FaultPlan, Proxy};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ProxyArgs {
    /// The service, e.g. http://127.0.0.1:8080 (loopback only; the path is ignored).
    pub upstream: String,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Drop the response after the upstream processed the request, N/D[:BUDGET].
    #[arg(long, value_name = "N/D[:BUDGET]")]
    pub drop_response: Option<String>,
    /// Send the request twice, N/D[:BUDGET].
    #[arg(long, value_name = "N/D[:BUDGET]")]
    pub duplicate: Option<String>,
    /// Reset the client's connection without forwarding, N/D[:BUDGET].
    #[arg(long, value_name = "N/D[:BUDGET]")]
    pub reset: Option<String>,
    /// Delay by --delay-ms, N/D[:BUDGET].
    #[arg(long, value_name = "N/D[:BUDGET]")]
    pub delay: Option<String>,
    #[arg(long, default_value_t = 50)]
    pub delay_ms: u64,
    /// The header whose value the record keeps.
    #[arg(long, default_value = "Idempotency-Key")]
    pub key_header: String,
    /// Write the record here instead of stdout.
    #[arg(long)]
    pub record: Option<PathBuf>,
}

fn plan(args: &ProxyArgs) -> Result<FaultPlan, String> {
    Ok(FaultPlan {
        seed: args.seed,
        reset: fault("reset", &args.reset)?,
        drop_response: fault("drop-response", &args.drop_response)?,
        duplicate: fault("duplicate", &args.duplicate)?,
        delay: fault("delay", &args.delay)?,
        delay_ms: args.delay_ms,
    })
}

pub fn run(args: &ProxyArgs) -> i32 {
    let upstream = match Url::parse(&args.upstream) {
        Ok(url) => url,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let plan = match plan(args) {
        Ok(plan) => plan,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let runtime = match super::stack_runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let record = runtime.block_on(async {
        let shutdown = super::serve_cmd::shutdown_signal()
            .map_err(|e| format!("cannot handle signals: {e}"))?;
        let proxy = Proxy::start(upstream.address, plan.clone(), &args.key_header)
            .await
            .map_err(|e| format!("cannot listen: {e}"))?;
        outln!("listening on http://{}", proxy.address);
        errln!(
            "proxy to {} with {}; stop with Ctrl-C",
            upstream.to_text(),
            serde_json::to_string(&plan).unwrap_or_default()
        );
        shutdown.await;
        Ok::<_, String>(proxy.record())
    });
    let record = match record {
        Ok(record) => record,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let lines: Vec<String> = record
        .iter()
        .map(|event| serde_json::to_string(event).expect("an event serialises"))
        .collect();
    match &args.record {
        Some(path) => {
            if let Err(error) =
                retrylab::atomic::write_atomic(path, (lines.join("\n") + "\n").as_bytes())
            {
                errln!("error: --record {}: {error}", path.display());
                return EXIT_BAD_INPUT;
            }
        }
        None => lines.iter().for_each(|line| outln!("{line}")),
    }
    EXIT_OK
}
