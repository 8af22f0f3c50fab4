//! `retrylab probe URL`: black-box conformance of a live API's idempotency. Each check sends a handful of
//! requests with a key of its own (`probe-<run>-<check>`), judges what came back (and the count endpoint's
//! effects, when there is one), and reports pass, fail or n/a with its evidence and a `curl` sequence that
//! reproduces it; a failure cites the rule of draft-ietf-httpapi-idempotency-key-header it holds the API to
//! (`rules`). Only the URL given (and its count endpoint) is contacted, on loopback; every request has a
//! timeout and each check a fixed number of requests. The probe assumes nothing else uses the API meanwhile
//! (effects are counted as differences).

mod checks;
mod concurrent;
mod curl;
pub mod evidence;
pub mod rules;

use super::http::{exchange, HttpError, HttpRequest, HttpResponse, Url};
use serde::Serialize;
use std::time::Duration;

pub use checks::{judge_changed_body, judge_cross_client, judge_retry, run_checks};
pub use concurrent::{judge_round, Round};

/// The checks, in the order they run and print.
pub const CHECK_NAMES: [&str; 7] = [
    "concurrent-same-key",
    "replay-after-completion",
    "changed-body",
    "missing-key",
    "cross-client",
    "timeout-then-retry",
    "expiry",
];

/// The longest declared expiry the probe waits out.
pub const EXPIRY_MS_MAX: u64 = 120_000;
/// Concurrent requests at most.
pub const CONCURRENCY_MAX: usize = 256;

#[derive(Clone, Debug)]
pub struct ProbeConfig {
    pub url: Url,
    /// `GET` it for `{"count": N}` (or a bare number); none: judged from responses alone.
    pub count_url: Option<Url>,
    pub key_header: String,
    /// The header naming the client; none: cross-client is n/a.
    pub client_header: Option<String>,
    /// The two client identities.
    pub clients: [String; 2],
    /// Sent with every request (`--header NAME:VALUE`).
    pub headers: Vec<(String, String)>,
    /// A JSON object.
    pub body: String,
    pub concurrency: usize,
    /// Rounds of the concurrent check (each with its own key).
    pub rounds: usize,
    pub missing_key_status: u16,
    pub changed_body_status: u16,
    pub expiry_ms: Option<u64>,
    pub timeout: Duration,
    /// In every key: runs against the same API do not see each other's keys.
    pub run_id: String,
    /// Seeds the timeout-then-retry client's jitter and the proxy.
    pub seed: u64,
    /// Run only these checks (empty: all).
    pub only: Vec<String>,
}

/// `pass`, `fail` or `n/a`: what one probe check found on the running stack (not the checker's `check::Verdict`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ProbeVerdict {
    #[serde(rename = "pass")]
    Pass,
    #[serde(rename = "fail")]
    Fail,
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl ProbeVerdict {
    pub fn name(self) -> &'static str {
        match self {
            ProbeVerdict::Pass => "pass",
            ProbeVerdict::Fail => "fail",
            ProbeVerdict::NotApplicable => "n/a",
        }
    }
}

/// One check's line of `--json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    pub check: String,
    pub result: ProbeVerdict,
    pub evidence: String,
    /// A shell sequence of `curl` commands (lines) that does what the check did, with a fresh key.
    pub reproduce: String,
}

/// Why the probe could not run (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{0} is unreachable: {1}")]
    Unreachable(String, HttpError),
    #[error("the count endpoint {0}: {1}")]
    Count(String, String),
    #[error("{0}")]
    BadInput(String),
}

impl ProbeConfig {
    /// Refuse what the checks cannot use, before any request.
    pub fn validate(&self) -> Result<(), ProbeError> {
        let bad = |why: String| Err(ProbeError::BadInput(why));
        match serde_json::from_str::<serde_json::Value>(&self.body) {
            Ok(serde_json::Value::Object(_)) => {}
            _ => return bad(format!("--body: '{}' is not a JSON object", self.body)),
        }
        if self.concurrency < 2 || self.concurrency > CONCURRENCY_MAX {
            return bad(format!(
                "--concurrency: {} is not in 2..={CONCURRENCY_MAX}",
                self.concurrency
            ));
        }
        if self.rounds == 0 || self.rounds > 10 {
            return bad(format!("--rounds: {} is not in 1..=10", self.rounds));
        }
        if self.expiry_ms.is_some_and(|ms| ms > EXPIRY_MS_MAX) {
            return bad(format!("--expiry-ms: at most {EXPIRY_MS_MAX}"));
        }
        if self.clients[0] == self.clients[1] {
            return bad("--clients: the two identities must differ".into());
        }
        if let Some(unknown) = self
            .only
            .iter()
            .find(|c| !CHECK_NAMES.contains(&c.as_str()))
        {
            return bad(format!(
                "--check: unknown check '{unknown}'; expected one of {}",
                CHECK_NAMES.join(", ")
            ));
        }
        Ok(())
    }

    fn key(&self, check: &str) -> String {
        format!("probe-{}-{check}", self.run_id)
    }

    /// A POST with the configured headers, a key and a client (either may be left out).
    fn post(&self, key: Option<&str>, client: Option<&str>, body: &str) -> HttpRequest {
        let mut headers = self.headers.clone();
        if let Some(key) = key {
            headers.push((self.key_header.clone(), key.to_string()));
        }
        if let (Some(name), Some(client)) = (&self.client_header, client) {
            headers.push((name.clone(), client.to_string()));
        }
        HttpRequest::post(&self.url.path, headers, body)
    }

    async fn send(&self, request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        exchange(&self.url, request, self.timeout).await
    }

    /// The effects counted now (None: no count endpoint).
    async fn count(&self) -> Result<Option<u64>, ProbeError> {
        let Some(url) = &self.count_url else {
            return Ok(None);
        };
        count_at(url, self.timeout)
            .await
            .map(Some)
            .map_err(|why| ProbeError::Count(url.to_text(), why))
    }
}

/// `GET` a count endpoint: `{"count": N}` or a bare number. The black-box probe and the gray-box probe's
/// `--count-url` both read effects this way.
pub async fn count_at(url: &Url, timeout: Duration) -> Result<u64, String> {
    let response = exchange(url, &HttpRequest::get(&url.path), timeout)
        .await
        .map_err(|error| error.to_string())?;
    if response.status != 200 {
        return Err(format!("answered {}", response.status));
    }
    let value: serde_json::Value = serde_json::from_str(response.body.trim())
        .map_err(|_| format!("not JSON: {}", response.body))?;
    value
        .get("count")
        .unwrap_or(&value)
        .as_u64()
        .ok_or_else(|| format!("no count in {}", response.body))
}

/// Whether a status is a success.
fn ok(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The results as a table (check, result, evidence; the reproduction under each failure).
pub fn table(results: &[CheckResult]) -> String {
    let mut text = format!("{:<25} {:<6} evidence\n", "check", "result");
    for result in results {
        text.push_str(&format!(
            "{:<25} {:<6} {}\n",
            result.check,
            result.result.name(),
            result.evidence
        ));
        if result.result == ProbeVerdict::Fail {
            text.push_str("    reproduce:\n");
            for line in result.reproduce.lines() {
                text.push_str(&format!("      {line}\n"));
            }
        }
    }
    text
}

/// 0 every check passed (or was n/a), 1 one failed.
pub fn exit_code(results: &[CheckResult]) -> i32 {
    if results.iter().any(|r| r.result == ProbeVerdict::Fail) {
        1
    } else {
        0
    }
}
