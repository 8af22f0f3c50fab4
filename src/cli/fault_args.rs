//! The fault proxy's flags, shared by `retrylab load` (which puts a proxy in front of the service when any is
//! given) and `retrylab proxy`.

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
    #[arg(long, default_value_t = 50)]
    pub delay_ms: u64,
}

impl FaultArgs {
    /// The plan these flags describe, drawn from `seed`; a malformed flag is named in the error.
    pub fn plan(&self, seed: u64) -> Result<FaultPlan, String> {
        Ok(FaultPlan {
            seed,
            reset: fault("reset", &self.reset)?,
            drop_response: fault("drop-response", &self.drop_response)?,
            duplicate: fault("duplicate", &self.duplicate)?,
            delay: fault("delay", &self.delay)?,
            delay_ms: self.delay_ms,
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
