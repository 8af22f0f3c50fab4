//! `retrylab proxy UPSTREAM`: the seeded fault-injecting proxy on its own, in front of a loopback service, until
//! Ctrl-C or SIGTERM; then its record (what it did to each request) as JSON lines, on stdout or `--record FILE`.
//! The first stdout line is its address. `--record FILE` is tried for writing before the proxy listens (a run
//! must not end in an unwritable record), and the record taken at the stop includes the requests still in flight.

use super::fault_args::FaultArgs;
use super::{EXIT_BAD_INPUT, EXIT_OK};
use retrylab::stack::http::{loopback_address, Url};
use retrylab::stack::proxy::Proxy;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ProxyArgs {
    /// The service, e.g. http://127.0.0.1:8080 (loopback only; the path is ignored).
    pub upstream: String,
    /// Where to listen: a loopback address and port (127.0.0.0/8 or ::1); port 0 picks a free one. The address
    /// is the first line printed.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR:PORT")]
    pub listen: String,
    /// Seeds the faults: the 1st, 2nd, ... request's fate is a function of the seed alone.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub faults: FaultArgs,
    /// The header whose value the record keeps.
    #[arg(long, default_value = "Idempotency-Key")]
    pub key_header: String,
    /// Write the record here instead of stdout.
    #[arg(long)]
    pub record: Option<PathBuf>,
}

pub fn run(args: &ProxyArgs) -> i32 {
    let upstream = match Url::parse(&args.upstream) {
        Ok(url) => url,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let listen = match loopback_address(&args.listen) {
        Ok(address) => address,
        Err(message) => {
            errln!("error: --listen {}: {message}", args.listen);
            return EXIT_BAD_INPUT;
        }
    };
    let plan = match args.faults.plan(args.seed) {
        Ok(plan) => plan,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(path) = &args.record {
        if let Err(message) = check_writable(path) {
            errln!("error: --record {}: {message}", path.display());
            return EXIT_BAD_INPUT;
        }
    }
    let runtime = match super::stack_runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let record = runtime.block_on(async {
        let shutdown = super::serve_cmd::shutdown_signal()
            .map_err(|e| format!("cannot handle signals: {e}"))?;
        let proxy = Proxy::start_on(listen, upstream.address, plan.clone(), &args.key_header)
            .await
            .map_err(|e| format!("--listen {}: cannot listen: {e}", args.listen))?;
        outln!("listening on http://{}", proxy.address);
        errln!(
            "proxy to {} with {}; stop with Ctrl-C",
            upstream.to_text(),
            serde_json::to_string(&plan).unwrap_or_default()
        );
        shutdown.await;
        let not_kept = proxy.events_not_kept();
        if not_kept > 0 {
            errln!("the record keeps the first events only: {not_kept} more were not kept");
        }
        Ok::<_, String>(proxy.record())
    });
    let record = match record {
        Ok(record) => record,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    write_record(&record, args.record.as_deref())
}

/// The proxy's record as JSON lines, into the `--record` file (atomically) or on stdout.
fn write_record<E: serde::Serialize>(record: &[E], path: Option<&std::path::Path>) -> i32 {
    let lines: Vec<String> = record
        .iter()
        .map(|event| serde_json::to_string(event).expect("an event serialises"))
        .collect();
    match path {
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

/// Whether the record can be written where asked: a temporary file in its folder (where the atomic write puts
/// its own), and not a folder itself.
fn check_writable(path: &std::path::Path) -> Result<(), String> {
    if path.is_dir() {
        return Err("is a folder".into());
    }
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    tempfile::NamedTempFile::new_in(folder)
        .map(drop)
        .map_err(|error| format!("cannot write in {}: {error}", folder.display()))
}
