//! The fault proxy's flags, shared by `retrylab load` (which puts a proxy in front of the service only when a
//! fault can fire) and `retrylab proxy`.

use retrylab::stack::proxy::{Fault, FaultPlan};

#[derive(clap::Args, Debug)]
pub struct FaultArgs {
    /// Drop the response after the service processed the request, with probability N/D (`:BUDGET`: at most
    /// that many).
    #[arg(long, value_name = "N/D[:BUDGET]")]
    pub drop_response: Option<String>,
    /// Send the request twice, N/D[:BUDGET].
    #[arg(long, value_name = "N/D[:BUDGET]")]
    pub duplicate: Option<String>,
    /// Reset the client's connection without forwarding, N/D[:BUDGET].
    #[arg(long, value_name = "N/D[:BUDGET]")]
    pub reset: Option<String>,
    /// Delay the request by --delay-ms, N/D[:BUDGET].
    #[arg(long, value_name = "N/D[:BUDGET]")]
    pub delay: Option<String>,
    /// How long --delay holds a request, in milliseconds (only with --delay; default 50).
    #[arg(long, value_name = "MS")]
    pub delay_ms: Option<u64>,
}

/// `--delay-ms` when --delay is given without it.
pub const DELAY_MS_DEFAULT: u64 = 50;
/// The longest delay: past a client's timeout a delay is a drop, which `--drop-response` says plainly.
pub const DELAY_MS_MAX: u64 = 60_000;

impl FaultArgs {
    /// The plan these flags describe, drawn from `seed`; a malformed flag is named in the error.
    pub fn plan(&self, seed: u64) -> Result<FaultPlan, String> {
        // A delay length without a delay would be silently ignored (or, before, made `load` route through a
        // proxy that did nothing): refuse it.
        let delay_ms = match (&self.delay, self.delay_ms) {
            (None, Some(_)) => return Err("--delay-ms: only with --delay N/D".into()),
            (Some(_), Some(delay_ms)) if delay_ms > DELAY_MS_MAX => {
                return Err(format!(
                    "--delay-ms: {delay_ms} is more than {DELAY_MS_MAX}"
                ))
            }
            (Some(_), delay_ms) => delay_ms.unwrap_or(DELAY_MS_DEFAULT),
            (None, None) => 0,
        };
        Ok(FaultPlan {
            seed,
            reset: fault("reset", &self.reset)?,
            drop_response: fault("drop-response", &self.drop_response)?,
            duplicate: fault("duplicate", &self.duplicate)?,
            delay: fault("delay", &self.delay)?,
            delay_ms,
        })
    }
}

/// A fault flag's `N/D[:BUDGET]` (absent: off).
fn fault(flag: &str, ratio: &Option<String>) -> Result<Fault, String> {
    match ratio {
        None => Ok(Fault::OFF),
        Some(text) => Fault::parse(text).map_err(|e| format!("--{flag}: {e}")),
    }
}
