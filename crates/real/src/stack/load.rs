//! `retrylab load`: retrying clients (`client`) against a service for a bounded time, optionally through the
//! fault proxy, closed-loop (each client starts its next operation when the last one ends) or open-loop (new
//! operations at a fixed rate, in flight at most `IN_FLIGHT_MAX`). Reports requests, operations, successes,
//! duplicates (effects counted by the count endpoint beyond one per operation) and latency percentiles; a
//! duplicate, or most operations giving up, is a failure (`LoadReport::failure`). Keys carry the run's id.

use super::client::{ClientConfig, Operation, OperationOutcome, RetryingClient};
use super::http::{exchange, HttpRequest, Url};
use super::proxy::{FaultPlan, Proxy};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Operations in flight at most in open loop (further ticks are counted as skipped).
pub const IN_FLIGHT_MAX: usize = 1024;
/// The longest run.
pub const DURATION_MAX: Duration = Duration::from_secs(600);
/// The highest open-loop rate: one operation per microsecond. Above 2^31 the tick period rounded to 0 ns and
/// tokio's interval panicked; long before that no loopback service keeps up.
pub const RATE_PER_S_MAX: u32 = 1_000_000;

/// What the report needs of one operation (an `OperationOutcome` holds its key and last body: a run of millions of
/// operations kept them all, 1.42 GB in 5 s).
#[derive(Clone, Copy, Debug)]
struct Done {
    latency_ms: f64,
    succeeded: bool,
    attempts: u64,
}

impl Done {
    fn of(outcome: &OperationOutcome) -> Done {
        Done {
            latency_ms: outcome.elapsed.as_secs_f64() * 1000.0,
            succeeded: outcome.succeeded(),
            attempts: outcome.attempts.len() as u64,
        }
    }
}

#[derive(Clone, Debug)]
pub struct LoadConfig {
    pub url: Url,
    pub count_url: Option<Url>,
    /// Closed loop: the clients. Open loop: ignored.
    pub clients: usize,
    /// Open loop: operations per second (None: closed loop).
    pub rate_per_s: Option<u32>,
    pub duration: Duration,
    /// The client's policy, headers and seed (each client gets `seed + its index`).
    pub client: ClientConfig,
    pub body: String,
    /// Through the fault proxy with this plan (None: straight to the service).
    pub faults: Option<FaultPlan>,
    /// In every key (`RUN-op-...`): runs against one store do not share keys, while the seed still fixes the
    /// keys' order and the jitter (`crate::stack::run_id_from_clock` by default).
    pub run_id: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub mode: String,
    pub run_id: String,
    pub elapsed_s: f64,
    pub operations: u64,
    /// HTTP attempts the clients made.
    pub requests: u64,
    pub succeeded: u64,
    pub gave_up: u64,
    /// Payment effects counted during the run (None: no count endpoint).
    pub effects: Option<u64>,
    /// Effects beyond one per operation made: a lower bound on duplicate executions.
    pub duplicates: Option<u64>,
    pub operations_per_s: f64,
    pub latency_ms_p50: f64,
    pub latency_ms_p90: f64,
    pub latency_ms_p99: f64,
    pub latency_ms_max: f64,
    /// What the proxy did, by action.
    pub proxy_actions: BTreeMap<String, u64>,
    /// Open loop: ticks skipped because `IN_FLIGHT_MAX` operations were in flight.
    pub skipped: u64,
}

impl LoadReport {
    /// Why the run is a failure (exit 1), if it is: a duplicate execution, or a service that did not serve most
    /// operations (an outage is a finding, not a quiet "succeeded 0").
    pub fn failure(&self) -> Option<String> {
        if let Some(duplicates) = self.duplicates.filter(|&d| d > 0) {
            return Some(format!(
                "{duplicates} duplicate execution(s): effects beyond one per operation"
            ));
        }
        if self.operations == 0 {
            return Some("no operation finished within the run".into());
        }
        if self.gave_up * 2 > self.operations {
            return Some(format!(
                "{} of {} operations gave up: the service is unreachable or failing",
                self.gave_up, self.operations
            ));
        }
        None
    }
}

/// A new operation of `client`, its key prefixed with the run's id.
fn operation(client: &RetryingClient, run_id: &str, body: &str) -> Operation {
    let mut operation = client.operation(body);
    operation.key = format!("{run_id}-{}", operation.key);
    operation
}

async fn count(url: &Option<Url>) -> Result<Option<u64>, String> {
    let Some(url) = url else {
        return Ok(None);
    };
    let response = exchange(url, &HttpRequest::get(&url.path), Duration::from_secs(10))
        .await
        .map_err(|e| format!("count endpoint {}: {e}", url.to_text()))?;
    let value: serde_json::Value = serde_json::from_str(response.body.trim())
        .map_err(|_| format!("count endpoint: not JSON: {}", response.body))?;
    Ok(value.get("count").unwrap_or(&value).as_u64())
}

fn client_for(config: &LoadConfig, index: u64) -> Result<Arc<RetryingClient>, String> {
    let mut client = config.client.clone();
    client.seed = client.seed.wrapping_add(index);
    RetryingClient::new(client).map(Arc::new)
}

/// The percentile `p` (0..=100) of sorted values, nearest rank.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub async fn run_load(config: &LoadConfig) -> Result<LoadReport, String> {
    if config.duration > DURATION_MAX || config.duration.is_zero() {
        return Err(format!(
            "the duration must be in 1 s..={} s",
            DURATION_MAX.as_secs()
        ));
    }
    let proxy = match &config.faults {
        Some(plan) => Some(
            Proxy::start(config.url.address, plan.clone(), &config.client.key_header)
                .await
                .map_err(|e| format!("cannot start the proxy: {e}"))?,
        ),
        None => None,
    };
    let target = match &proxy {
        Some(proxy) => Url {
            address: proxy.address,
            authority: proxy.address.to_string(),
            path: config.url.path.clone(),
        },
        None => config.url.clone(),
    };
    let before = count(&config.count_url).await?;
    let started = Instant::now();
    let deadline = started + config.duration;
    let (outcomes, skipped) = match config.rate_per_s {
        None => (closed_loop(config, &target, deadline).await?, 0),
        Some(rate) => open_loop(config, &target, deadline, rate).await?,
    };
    let elapsed_s = started.elapsed().as_secs_f64();
    let after = count(&config.count_url).await?;
    let mut latencies: Vec<f64> = outcomes.iter().map(|o| o.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let operations = outcomes.len() as u64;
    let succeeded = outcomes.iter().filter(|o| o.succeeded).count() as u64;
    let effects = match (before, after) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before)),
        _ => None,
    };
    let proxy_actions: BTreeMap<String, u64> = proxy
        .as_ref()
        .map(|proxy| proxy.action_counts())
        .unwrap_or_default();
    Ok(LoadReport {
        run_id: config.run_id.clone(),
        mode: match config.rate_per_s {
            None => format!("closed loop, {} clients", config.clients),
            Some(rate) => format!("open loop, {rate} operations/s"),
        },
        elapsed_s,
        operations,
        requests: outcomes.iter().map(|o| o.attempts).sum(),
        succeeded,
        gave_up: operations - succeeded,
        effects,
        duplicates: effects.map(|e| e.saturating_sub(operations)),
        operations_per_s: operations as f64 / elapsed_s,
        latency_ms_p50: percentile(&latencies, 50.0),
        latency_ms_p90: percentile(&latencies, 90.0),
        latency_ms_p99: percentile(&latencies, 99.0),
        latency_ms_max: latencies.last().copied().unwrap_or(0.0),
        proxy_actions,
        skipped,
    })
}

async fn closed_loop(
    config: &LoadConfig,
    target: &Url,
    deadline: Instant,
) -> Result<Vec<Done>, String> {
    let mut tasks = Vec::new();
    for index in 0..config.clients {
        let client = client_for(config, index as u64)?;
        let (target, body, run_id) = (target.clone(), config.body.clone(), config.run_id.clone());
        tasks.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            while Instant::now() < deadline {
                let operation = operation(&client, &run_id, &body);
                outcomes.push(Done::of(&client.send(&target, &operation).await));
            }
            outcomes
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.extend(task.await.map_err(|e| format!("a client failed: {e}"))?);
    }
    Ok(outcomes)
}

async fn open_loop(
    config: &LoadConfig,
    target: &Url,
    deadline: Instant,
    rate_per_s: u32,
) -> Result<(Vec<Done>, u64), String> {
    if !(1..=RATE_PER_S_MAX).contains(&rate_per_s) {
        return Err(format!(
            "the rate must be 1..={RATE_PER_S_MAX} operations/s, not {rate_per_s}"
        ));
    }
    let client = client_for(config, 0)?;
    let period_ns = 1_000_000_000 / u64::from(rate_per_s);
    let mut ticker = tokio::time::interval(Duration::from_nanos(period_ns));
    let mut tasks = tokio::task::JoinSet::new();
    let mut outcomes = Vec::new();
    let mut skipped = 0;
    while Instant::now() < deadline {
        ticker.tick().await;
        while let Some(done) = tasks.try_join_next() {
            outcomes.push(done.map_err(|e| format!("an operation failed: {e}"))?);
        }
        if tasks.len() >= IN_FLIGHT_MAX {
            skipped += 1;
            continue;
        }
        let (client, target, body) = (client.clone(), target.clone(), config.body.clone());
        let run_id = config.run_id.clone();
        tasks.spawn(async move {
            let operation = operation(&client, &run_id, &body);
            Done::of(&client.send(&target, &operation).await)
        });
    }
    while let Some(done) = tasks.join_next().await {
        outcomes.push(done.map_err(|e| format!("an operation failed: {e}"))?);
    }
    Ok((outcomes, skipped))
}

#[cfg(test)]
mod tests {
    #[test]
    fn percentiles_by_nearest_rank() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(super::percentile(&sorted, 50.0), 50.0);
        assert_eq!(super::percentile(&sorted, 99.0), 99.0);
        assert_eq!(super::percentile(&sorted, 100.0), 100.0);
        assert_eq!(super::percentile(&[], 50.0), 0.0);
    }
}
