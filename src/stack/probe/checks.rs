//! The probe's checks, one function each: requests, then a verdict with its evidence and reproduction.

use super::curl;
use super::{ok, CheckResult, ProbeConfig, ProbeError, Verdict, CHECK_NAMES};
use crate::backoff::{Backoff, RetryAfter, RetryPolicy, Strategy};
use crate::stack::client::{ClientConfig, Operation, RetryingClient};
use crate::stack::http::{HttpError, HttpResponse, Url};
use crate::stack::proxy::{Action, Fault, FaultPlan, Proxy};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::Barrier;

/// Run the checks (all, or `config.only`), in `CHECK_NAMES` order. An unreachable API is an error (exit 2),
/// found before any check.
pub async fn run_checks(config: &ProbeConfig) -> Result<Vec<CheckResult>, ProbeError> {
    config.validate()?;
    TcpStream::connect(config.url.address).await.map_err(|e| {
        ProbeError::Unreachable(
            config.url.to_text(),
            HttpError::Connect(config.url.address, e),
        )
    })?;
    config.count().await?;
    let mut results = Vec::new();
    for name in CHECK_NAMES {
        if !config.only.is_empty() && !config.only.iter().any(|c| c == name) {
            continue;
        }
        let (result, evidence, steps) = match name {
            "concurrent-same-key" => concurrent_same_key(config).await?,
            "replay-after-completion" => replay_after_completion(config).await?,
            "changed-body" => changed_body(config).await?,
            "missing-key" => missing_key(config).await?,
            "cross-client" => cross_client(config).await?,
            "timeout-then-retry" => timeout_then_retry(config).await?,
            "expiry" => expiry(config).await?,
            _ => unreachable!("CHECK_NAMES are matched above"),
        };
        let reproduce = if result == Verdict::NotApplicable {
            String::new()
        } else {
            steps
        };
        results.push(CheckResult {
            check: name.to_string(),
            result,
            evidence,
            reproduce,
        });
    }
    Ok(results)
}

type Checked = Result<(Verdict, String, String), ProbeError>;

fn verdict(pass: bool) -> Verdict {
    if pass {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

/// The count's change, as evidence ("count +1") and whether it is `expected` (true without a count endpoint).
fn delta(before: Option<u64>, after: Option<u64>, expected: i64) -> (String, bool) {
    match (before, after) {
        (Some(before), Some(after)) => {
            let change = after as i64 - before as i64;
            (format!("; count {change:+}"), change == expected)
        }
        _ => (String::new(), true),
    }
}

/// A response or the reason there was none, for evidence.
fn shown(response: &Result<HttpResponse, HttpError>) -> String {
    match response {
        Ok(r) => format!("{} {}", r.status, r.body.trim()),
        Err(error) => format!("no response ({error})"),
    }
}

/// Statuses with how often each came, in status order ("201 x1, 409 x19").
fn tally(statuses: &[String]) -> String {
    let mut sorted = statuses.to_vec();
    sorted.sort();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let same = sorted[i..].iter().take_while(|s| **s == sorted[i]).count();
        parts.push(format!("{} x{same}", sorted[i]));
        i += same;
    }
    parts.join(", ")
}

/// One round of N requests with one key on N open connections: every byte but the last written first, then
/// all released by one barrier, so the server gets them within microseconds of each other.
async fn concurrent_round(config: &ProbeConfig, key: &str) -> Vec<Result<HttpResponse, HttpError>> {
    let request = config
        .post(Some(key), Some(&config.clients[0]), &config.body)
        .encode(&config.url.authority);
    let barrier = Arc::new(Barrier::new(config.concurrency));
    let mut tasks = Vec::new();
    for _ in 0..config.concurrency {
        let (request, barrier, address, timeout) = (
            request.clone(),
            barrier.clone(),
            config.url.address,
            config.timeout,
        );
        tasks.push(tokio::spawn(async move {
            let connected = TcpStream::connect(address).await;
            let sent = async {
                let mut stream = connected.map_err(|e| HttpError::Connect(address, e))?;
                stream.set_nodelay(true)?;
                let (head, last) = request.split_at(request.len() - 1);
                stream.write_all(head).await?;
                Ok::<_, HttpError>((stream, last.to_vec()))
            }
            .await;
            // Every task reaches the barrier, connected or not, so none waits forever.
            barrier.wait().await;
            let (mut stream, last) = sent?;
            let exchange = async {
                stream.write_all(&last).await?;
                crate::stack::http::read_response(&mut stream).await
            };
            tokio::time::timeout(timeout, exchange)
                .await
                .map_err(|_| HttpError::Timeout(timeout))?
        }));
    }
    let mut responses = Vec::new();
    for task in tasks {
        responses.push(task.await.unwrap_or(Err(HttpError::Closed)));
    }
    responses
}

async fn concurrent_same_key(config: &ProbeConfig) -> Checked {
    let n = config.concurrency;
    let mut evidence = Vec::new();
    let mut pass = true;
    for round in 1..=config.rounds {
        let key = config.key(&format!("concurrent-{round}"));
        let before = config.count().await?;
        let responses = concurrent_round(config, &key).await;
        let after = config.count().await?;
        let statuses: Vec<String> = responses
            .iter()
            .map(|r| {
                r.as_ref()
                    .map_or("none".to_string(), |r| r.status.to_string())
            })
            .collect();
        let mut executed: Vec<&str> = responses
            .iter()
            .flatten()
            .filter(|r| ok(r.status))
            .map(|r| r.body.as_str())
            .collect();
        executed.sort();
        executed.dedup();
        let others_wait = responses.iter().all(|r| {
            r.as_ref()
                .is_ok_and(|r| ok(r.status) || r.status == 409 || r.status == 429)
        });
        let (count_text, count_ok) = delta(before, after, 1);
        let round_pass = executed.len() == 1 && others_wait && count_ok;
        pass &= round_pass;
        evidence.push(format!(
            "{n} concurrent requests with one key: {} different success bodies ({}){count_text}",
            executed.len(),
            tally(&statuses)
        ));
        if !round_pass {
            break;
        }
    }
    // curl cannot hold its last byte back: bursts of background curls overlap less than the probe's (against
    // select-then-insert on SQLite, 10 bursts gave 13 payments for 10 keys, 3 gave none extra), so the sequence
    // repeats the burst, each with a fresh key, at least ten times.
    let burst = format!(
        "for round in $(seq {}); do {}; for i in $(seq {n}); do {} & done; wait; done",
        config.rounds.max(10),
        curl::fresh_key(),
        curl::post(config, Some("$KEY"), Some(&config.clients[0]), &config.body)
    );
    let text = evidence.join("; then ");
    let expectation = if pass {
        ""
    } else {
        "; expected exactly one execution, the others 409 or its replay"
    };
    Ok((
        verdict(pass),
        format!("{text}{expectation}"),
        curl::sequence(config, false, vec![burst]),
    ))
}

async fn replay_after_completion(config: &ProbeConfig) -> Checked {
    let key = config.key("replay");
    let request = config.post(Some(&key), Some(&config.clients[0]), &config.body);
    let before = config.count().await?;
    let first = config.send(&request).await;
    let second = config.send(&request).await;
    let after = config.count().await?;
    let (count_text, count_ok) = delta(before, after, 1);
    let pass = match (&first, &second) {
        (Ok(a), Ok(b)) => {
            ok(a.status) && b.body == a.body && (b.status == a.status || ok(b.status)) && count_ok
        }
        _ => false,
    };
    let evidence = format!(
        "first: {}; again with the same key: {}{count_text}",
        shown(&first),
        shown(&second)
    );
    let step = curl::post(config, Some("$KEY"), Some(&config.clients[0]), &config.body);
    Ok((
        verdict(pass),
        evidence,
        curl::sequence(config, true, vec![step.clone(), step]),
    ))
}

/// The same JSON object with its keys in reverse order and spaces: another byte string, the same request.
pub fn reserialised(body: &str) -> String {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(body) else {
        return body.to_string();
    };
    let parts: Vec<String> = fields
        .iter()
        .rev()
        .map(|(name, value)| format!("{}: {}", Value::String(name.clone()), value))
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

/// The same object with its first number plus one (or a field added): a different request.
pub fn changed(body: &str) -> String {
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(body) else {
        return body.to_string();
    };
    let number = fields.iter_mut().find(|(_, v)| v.is_i64() || v.is_u64());
    match number {
        Some((_, value)) => *value = Value::from(value.as_i64().unwrap_or(0) + 1),
        None => {
            fields.insert("probe_changed".into(), Value::Bool(true));
        }
    }
    Value::Object(fields).to_string()
}

async fn changed_body(config: &ProbeConfig) -> Checked {
    let key = config.key("changed-body");
    let client = Some(config.clients[0].as_str());
    let (same, other) = (reserialised(&config.body), changed(&config.body));
    let before = config.count().await?;
    let first = config
        .send(&config.post(Some(&key), client, &config.body))
        .await;
    let again = config.send(&config.post(Some(&key), client, &same)).await;
    let different = config.send(&config.post(Some(&key), client, &other)).await;
    let after = config.count().await?;
    let (count_text, count_ok) = delta(before, after, 1);
    let (replayed, refused) = match (&first, &again, &different) {
        (Ok(a), Ok(b), Ok(c)) => (
            ok(a.status) && ok(b.status) && b.body == a.body,
            c.status == config.changed_body_status,
        ),
        _ => (false, false),
    };
    let mut problems = Vec::new();
    if !replayed {
        problems.push("the same JSON re-serialised was not replayed");
    }
    if !refused {
        problems.push("the changed body was not refused");
    }
    let evidence = format!(
        "first: {}; same key, same JSON re-serialised ({same}): {}; same key, changed body ({other}): {} \
         (expected {}){count_text}{}",
        shown(&first),
        shown(&again),
        shown(&different),
        config.changed_body_status,
        if problems.is_empty() { String::new() } else { format!(": {}", problems.join("; ")) }
    );
    let steps = vec![
        curl::post(config, Some("$KEY"), client, &config.body),
        curl::post(config, Some("$KEY"), client, &same),
        curl::post(config, Some("$KEY"), client, &other),
    ];
    Ok((
        verdict(replayed && refused && count_ok),
        evidence,
        curl::sequence(config, true, steps),
    ))
}

async fn missing_key(config: &ProbeConfig) -> Checked {
    let before = config.count().await?;
    let response = config
        .send(&config.post(None, Some(&config.clients[0]), &config.body))
        .await;
    let after = config.count().await?;
    let declared = config.missing_key_status;
    let (count_text, count_ok) = delta(before, after, if ok(declared) { 1 } else { 0 });
    let pass = response.as_ref().is_ok_and(|r| r.status == declared) && count_ok;
    let evidence = format!(
        "no {} header: {} (declared {declared}){count_text}",
        config.key_header,
        shown(&response)
    );
    let step = curl::post(config, None, Some(&config.clients[0]), &config.body);
    Ok((
        verdict(pass),
        evidence,
        curl::sequence(config, false, vec![step]),
    ))
}

async fn cross_client(config: &ProbeConfig) -> Checked {
    let Some(header) = &config.client_header else {
        return Ok((
            Verdict::NotApplicable,
            "no client header configured".into(),
            String::new(),
        ));
    };
    let key = config.key("cross-client");
    let [a, b] = &config.clients;
    let before = config.count().await?;
    let first = config
        .send(&config.post(Some(&key), Some(a), &config.body))
        .await;
    let second = config
        .send(&config.post(Some(&key), Some(b), &config.body))
        .await;
    let after = config.count().await?;
    let (count_text, count_ok) = delta(before, after, 2);
    let (pass, why) = match (&first, &second) {
        (Ok(ra), Ok(rb)) if ok(ra.status) && ok(rb.status) && rb.body == ra.body => {
            (false, format!(": {b} got {a}'s response"))
        }
        (Ok(ra), Ok(rb)) if ok(ra.status) && !ok(rb.status) => {
            (false, format!(": {b} was refused over {a}'s key"))
        }
        (Ok(ra), Ok(rb)) if ok(ra.status) && ok(rb.status) => (count_ok, String::new()),
        _ => (false, ": no success to compare".into()),
    };
    let evidence = format!(
        "{header} {a}: {}; {header} {b}, the same key: {}{count_text}{why}",
        shown(&first),
        shown(&second)
    );
    let steps = vec![
        curl::post(config, Some("$KEY"), Some(a), &config.body),
        curl::post(config, Some("$KEY"), Some(b), &config.body),
    ];
    Ok((verdict(pass), evidence, curl::sequence(config, true, steps)))
}

/// The client of timeout-then-retry: four attempts, full jitter from 50 ms, Retry-After honoured up to 5 s.
fn probe_client(config: &ProbeConfig) -> Result<RetryingClient, ProbeError> {
    let backoff = Backoff::new(Strategy::FullJitter, 50.0, 1000.0)
        .map_err(|e| ProbeError::BadInput(e.to_string()))?;
    RetryingClient::new(ClientConfig {
        policy: RetryPolicy {
            backoff,
            attempts_max: Some(4),
            deadline_ms: Some(30_000.0),
            retry_after: RetryAfter::Honour {
                wait_ms_max: 5_000.0,
            },
        },
        attempt_timeout: config.timeout,
        key_header: config.key_header.clone(),
        client: config
            .client_header
            .clone()
            .map(|h| (h, config.clients[0].clone())),
        seed: config.seed,
    })
    .map_err(ProbeError::BadInput)
}

async fn timeout_then_retry(config: &ProbeConfig) -> Checked {
    let plan = FaultPlan {
        drop_response: Fault::first(1),
        ..FaultPlan::none(config.seed)
    };
    let proxy = Proxy::start(config.url.address, plan, &config.key_header)
        .await
        .map_err(|e| ProbeError::BadInput(format!("cannot start the proxy: {e}")))?;
    let through = Url {
        address: proxy.address,
        authority: proxy.address.to_string(),
        path: config.url.path.clone(),
    };
    let client = probe_client(config)?;
    let operation = Operation {
        key: config.key("timeout-then-retry"),
        body: config.body.clone(),
    };
    let before = config.count().await?;
    let outcome = client.send(&through, &operation).await;
    let after = config.count().await?;
    let record = proxy.record();
    let dropped = record.first().filter(|e| e.action == Action::DropResponse);
    let dropped_text = dropped.map_or("nothing dropped".to_string(), |e| {
        format!(
            "{} {}",
            e.upstream_statuses
                .first()
                .map_or("none".into(), |s| s.to_string()),
            e.upstream_body.as_deref().unwrap_or("").trim()
        )
    });
    let (count_text, count_ok) = delta(before, after, 1);
    let last = outcome
        .response
        .as_ref()
        .map_or("no response".to_string(), |(s, b)| {
            format!("{s} {}", b.trim())
        });
    let same_effect = match (
        dropped.and_then(|e| e.upstream_body.as_deref()),
        &outcome.response,
    ) {
        (Some(lost), Some((status, body))) => ok(*status) && body == lost,
        _ => false,
    };
    let pass = outcome.succeeded() && same_effect && count_ok;
    let evidence = format!(
        "the proxy dropped the first response after the server answered {dropped_text}; the client retried \
         with the same key ({} attempts) and got {last}{count_text}{}",
        outcome.attempts.len(),
        if pass { "" } else { ": the retry was not the same execution" }
    );
    let step = curl::post(config, Some("$KEY"), Some(&config.clients[0]), &config.body);
    let steps = vec![
        format!("{step} > /dev/null   # the response is lost on the way back"),
        step,
    ];
    Ok((verdict(pass), evidence, curl::sequence(config, true, steps)))
}

async fn expiry(config: &ProbeConfig) -> Checked {
    let Some(expiry_ms) = config.expiry_ms else {
        return Ok((
            Verdict::NotApplicable,
            "no --expiry-ms declared".into(),
            String::new(),
        ));
    };
    let key = config.key("expiry");
    let request = config.post(Some(&key), Some(&config.clients[0]), &config.body);
    let first = config.send(&request).await;
    let before = config.count().await?;
    // Past the declared expiry, with a margin for the server's own timer.
    let wait = Duration::from_millis(expiry_ms + 500);
    tokio::time::sleep(wait).await;
    let second = config.send(&request).await;
    let after = config.count().await?;
    let (count_text, count_ok) = delta(before, after, 1);
    let pass = match (&first, &second) {
        (Ok(a), Ok(b)) => ok(a.status) && ok(b.status) && b.body != a.body && count_ok,
        _ => false,
    };
    let evidence = format!(
        "first: {}; after {} ms: {} (expected a new execution){count_text}",
        shown(&first),
        wait.as_millis(),
        shown(&second)
    );
    let step = curl::post(config, Some("$KEY"), Some(&config.clients[0]), &config.body);
    let steps = vec![step.clone(), format!("sleep {}", wait.as_secs_f64()), step];
    Ok((verdict(pass), evidence, curl::sequence(config, true, steps)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_reserialised_and_changed() {
        let body = r#"{"amount":500,"currency":"RUB"}"#;
        assert_eq!(
            reserialised(body),
            r#"{ "currency": "RUB", "amount": 500 }"#
        );
        assert_eq!(changed(body), r#"{"amount":501,"currency":"RUB"}"#);
        assert_eq!(changed(r#"{"a":"x"}"#), r#"{"a":"x","probe_changed":true}"#);
        assert_eq!(
            tally(&["409".into(), "201".into(), "409".into()]),
            "201 x1, 409 x2"
        );
    }
}
