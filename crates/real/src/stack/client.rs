//! The real retrying client: reqwest plus `crate::backoff`. One idempotency key per logical operation, made
//! when the operation is made (before the first attempt), so every retry carries the same key; retries on what
//! can succeed later (no response, 5xx, 409 in flight, 429), never on a definite 4xx; waits the backoff's delay
//! and at least the server's Retry-After; stops at the policy's attempts and deadline. Keys and jitter come
//! from seeded ChaCha8 generators, so a run's keys and delays are its seed's.

use super::http::Url;
use crate::backoff::{Decision, Failure, RetryPolicy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub policy: RetryPolicy,
    /// One attempt's time limit (the client "times out" and retries).
    pub attempt_timeout: Duration,
    /// `Idempotency-Key`.
    pub key_header: String,
    /// `(X-Client-Id, its value)`, or none.
    pub client: Option<(String, String)>,
    /// Seeds the keys and the jitter.
    pub seed: u64,
}

/// One logical operation: its key was made before any attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    pub key: String,
    pub body: String,
}

/// What one attempt got.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    pub status: Option<u16>,
    pub error: Option<String>,
    pub retry_after_ms: Option<f64>,
}

/// What an operation came to.
#[derive(Clone, Debug, PartialEq)]
pub struct OperationOutcome {
    pub key: String,
    pub attempts: Vec<Attempt>,
    /// The last response's status and body, when the last attempt got one.
    pub response: Option<(u16, String)>,
    /// Why the client stopped retrying, when it did not get a final answer.
    pub gave_up: Option<String>,
    pub elapsed: Duration,
}

impl OperationOutcome {
    /// The operation got a 2xx.
    pub fn succeeded(&self) -> bool {
        self.response
            .as_ref()
            .is_some_and(|(status, _)| (200..300).contains(status))
    }
}

pub struct RetryingClient {
    http: reqwest::Client,
    config: ClientConfig,
    /// Sent with every attempt (an API's authentication, say), before the key and the client headers.
    headers: Vec<(String, String)>,
    keys: Mutex<ChaCha8Rng>,
    jitter: Mutex<ChaCha8Rng>,
}

/// Whether a status may succeed if retried with the same key.
pub fn retryable_status(status: u16) -> bool {
    status >= 500 || status == 409 || status == 429
}

/// Retry-After in seconds (integer or decimal), as milliseconds; an HTTP date is not understood (ignored).
pub fn retry_after_ms(value: &str) -> Option<f64> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then_some(seconds * 1000.0)
}

impl RetryingClient {
    pub fn new(config: ClientConfig) -> Result<RetryingClient, String> {
        let http = reqwest::Client::builder()
            .timeout(config.attempt_timeout)
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        Ok(RetryingClient {
            http,
            headers: Vec::new(),
            keys: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
            // Another stream of the same seed: keys and delays do not shift each other.
            jitter: Mutex::new(ChaCha8Rng::seed_from_u64(
                config.seed ^ 0x6a09_e667_f3bc_c908,
            )),
            config,
        })
    }

    /// The client with `headers` on every attempt.
    pub fn with_headers(mut self, headers: Vec<(String, String)>) -> RetryingClient {
        self.headers = headers;
        self
    }

    /// A new logical operation, with its key (made now, once).
    pub fn operation(&self, body: &str) -> Operation {
        let key: u64 = self.keys.lock().expect("the key generator's lock").random();
        Operation {
            key: format!("op-{key:016x}"),
            body: body.to_string(),
        }
    }

    async fn attempt(&self, url: &Url, operation: &Operation) -> (Attempt, Option<(u16, String)>) {
        let mut request = self.http.post(url.to_text());
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request = request
            .header(&self.config.key_header, &operation.key)
            .header("content-type", "application/json")
            .body(operation.body.clone());
        if let Some((name, value)) = &self.config.client {
            request = request.header(name, value);
        }
        let sent = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .and_then(retry_after_ms);
            let body = body_sample(response).await?;
            Ok::<_, reqwest::Error>((status, retry_after, body))
        }
        .await;
        match sent {
            Ok((status, retry_after_ms, body)) => (
                Attempt {
                    status: Some(status),
                    error: None,
                    retry_after_ms,
                },
                Some((status, body)),
            ),
            Err(error) => (
                Attempt {
                    status: None,
                    error: Some(error_chain(&error)),
                    retry_after_ms: None,
                },
                None,
            ),
        }
    }

    /// Send the operation until it gets a final answer or the policy gives up.
    pub async fn send(&self, url: &Url, operation: &Operation) -> OperationOutcome {
        let started = Instant::now();
        let mut backoff = self.config.policy.backoff.start();
        let mut attempts = Vec::new();
        loop {
            let (attempt, response) = self.attempt(url, operation).await;
            let retry_after = attempt.retry_after_ms;
            let retry = attempt.status.is_none_or(retryable_status);
            attempts.push(attempt);
            if !retry {
                return outcome(operation, attempts, response, None, started);
            }
            let failure = Failure {
                attempt_count: attempts.len() as u32,
                elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
                retry_after_ms: retry_after,
            };
            let decision = {
                let mut jitter = self.jitter.lock().expect("the jitter generator's lock");
                self.config
                    .policy
                    .on_failure(&mut backoff, &failure, &mut *jitter)
            };
            match decision {
                Decision::Retry { delay_ms, .. } => {
                    tokio::time::sleep(Duration::from_secs_f64(delay_ms / 1000.0)).await;
                }
                Decision::GiveUp(reason) => {
                    let why = format!("{reason:?}");
                    return outcome(operation, attempts, response, Some(why), started);
                }
            }
        }
    }
}

fn outcome(
    operation: &Operation,
    attempts: Vec<Attempt>,
    response: Option<(u16, String)>,
    gave_up: Option<String>,
    started: Instant,
) -> OperationOutcome {
    OperationOutcome {
        key: operation.key.clone(),
        attempts,
        response,
        gave_up,
        elapsed: started.elapsed(),
    }
}

/// The most of a response body an outcome keeps: a payment's answer is a few hundred bytes, and a service that
/// answers gigabytes must not make the client hold them (the rest is read and dropped, within the attempt's
/// timeout, so the connection ends cleanly).
pub const BODY_KEPT_BYTES: usize = 64 << 10;

/// The first `BODY_KEPT_BYTES` of the body, as text.
async fn body_sample(mut response: reqwest::Response) -> Result<String, reqwest::Error> {
    let mut kept = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = BODY_KEPT_BYTES - kept.len();
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok(String::from_utf8_lossy(&kept).into_owned())
}

/// An error with its causes, on one line (reqwest's own message is only the outermost).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_retried() {
        for status in [500, 502, 503, 409, 429] {
            assert!(retryable_status(status), "{status}");
        }
        for status in [200, 201, 400, 404, 422] {
            assert!(!retryable_status(status), "{status}");
        }
        assert_eq!(retry_after_ms("2"), Some(2000.0));
        assert_eq!(retry_after_ms("0.5"), Some(500.0));
        assert_eq!(retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(retry_after_ms("-1"), None);
    }
}
