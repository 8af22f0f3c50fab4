//! The probe's checks, one function each: requests, then a verdict with its evidence and reproduction.

use super::concurrent::concurrent_same_key;
use super::curl;
use super::evidence::{one_line, shown};
use super::rules::expectation;
use super::{ok, CheckResult, ProbeConfig, ProbeError, ProbeVerdict, CHECK_NAMES};
use crate::backoff::{Backoff, RetryAfter, RetryPolicy, Strategy};
use crate::stack::answer;
use crate::stack::client::{ClientConfig, Operation, RetryingClient};
use crate::stack::http::{HttpError, HttpResponse, Url};
use crate::stack::proxy::{Action, Fault, FaultPlan, Proxy};
use serde_json::Value;
use std::time::Duration;
use tokio::net::TcpStream;

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
        let reproduce = if result == ProbeVerdict::NotApplicable {
            String::new()
        } else {
            steps
        };
        // A failure says what a conforming API does and where the draft says so.
        let evidence = if result == ProbeVerdict::Fail {
            with_expectation(evidence, name)
        } else {
            evidence
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

type Checked = Result<(ProbeVerdict, String, String), ProbeError>;

fn verdict(pass: bool) -> ProbeVerdict {
    if pass {
        ProbeVerdict::Pass
    } else {
        ProbeVerdict::Fail
    }
}

/// The evidence with the check's expectation and the draft's rule, unless it already has them.
fn with_expectation(evidence: String, check: &str) -> String {
    let expected = expectation(check);
    if expected.is_empty() || evidence.contains(&expected) {
        evidence
    } else {
        format!("{evidence}; {expected}")
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

async fn replay_after_completion(config: &ProbeConfig) -> Checked {
    let key = config.key("replay");
    let request = config.post(Some(&key), Some(&config.clients[0]), &config.body);
    let before = config.count().await?;
    let first = config.send(&request).await;
    let second = config.send(&request).await;
    let after = config.count().await?;
    let (count_text, count_ok) = delta(before, after, 1);
    let (pass, note) = match (&first, &second) {
        (Ok(a), Ok(b)) => {
            let same = answer::compare(&a.body, &b.body);
            let pass =
                ok(a.status) && same.same() && (b.status == a.status || ok(b.status)) && count_ok;
            (pass, if pass { same.note() } else { "" })
        }
        _ => (false, ""),
    };
    let evidence = format!(
        "first: {}; again with the same key: {}{count_text}{note}",
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
    let declared = config.changed_body_status;
    let judged = judge_changed_body(&first, &again, &different, declared);
    let evidence = format!(
        "first: {}; same key, same JSON re-serialised ({same}): {}; same key, changed body ({other}): {} \
         (expected {declared}){count_text}{}",
        shown(&first),
        shown(&again),
        shown(&different),
        judged.remark
    );
    let steps = vec![
        curl::post(config, Some("$KEY"), client, &config.body),
        curl::post(config, Some("$KEY"), client, &same),
        curl::post(config, Some("$KEY"), client, &other),
    ];
    Ok((
        verdict(judged.pass && count_ok),
        evidence,
        curl::sequence(config, true, steps),
    ))
}

/// changed-body's verdict on its three responses (the count aside), and the remark that explains it.
pub struct ChangedBody {
    pub pass: bool,
    /// "", ": the changed body was not refused", or "; note: ..." for a byte-level fingerprint.
    pub remark: String,
}

/// The first request must succeed and the changed body be refused with `declared`. The same JSON with its keys
/// reordered should be replayed; refused with `declared` it shows a fingerprint of the body's bytes, which the
/// draft allows (Idempotency Fingerprint: "checksum of the entire request payload"): a note, not a failure.
pub fn judge_changed_body(
    first: &Result<HttpResponse, HttpError>,
    again: &Result<HttpResponse, HttpError>,
    different: &Result<HttpResponse, HttpError>,
    declared: u16,
) -> ChangedBody {
    let (Ok(a), Ok(b), Ok(c)) = (first, again, different) else {
        return ChangedBody {
            pass: false,
            remark: ": a request got no answer".into(),
        };
    };
    let replayed = ok(b.status) && answer::compare(&a.body, &b.body).same();
    let bytes_fingerprint = b.status == declared;
    let mut problems = Vec::new();
    if !ok(a.status) {
        problems.push("the first request did not succeed");
    }
    if !replayed && !bytes_fingerprint {
        problems.push("the same JSON re-serialised was neither replayed nor refused as changed");
    }
    if c.status != declared {
        problems.push("the changed body was not refused");
    }
    let mut remark = if problems.is_empty() {
        String::new()
    } else {
        format!(": {}", problems.join("; "))
    };
    if bytes_fingerprint && !replayed {
        remark.push_str(&format!(
            "; note: the same JSON with its keys reordered was refused like a changed body ({declared}): this \
             API fingerprints the body's bytes, which the draft allows (Idempotency Fingerprint); its clients \
             must resend the exact bytes"
        ));
    }
    ChangedBody {
        pass: problems.is_empty(),
        remark,
    }
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
            ProbeVerdict::NotApplicable,
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
    let (pass, why) = judge_cross_client(&first, &second, a, b);
    let pass = pass && count_ok;
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

/// cross-client's verdict on A's and B's responses (the count aside), with what happened named. B getting A's
/// stored response is a leak whatever its status (a 409 carrying A's payment leaks it as surely as a 200); B
/// refused without A's response is a key scoped globally rather than per client.
pub fn judge_cross_client(
    first: &Result<HttpResponse, HttpError>,
    second: &Result<HttpResponse, HttpError>,
    a: &str,
    b: &str,
) -> (bool, String) {
    let (Ok(ra), Ok(rb)) = (first, second) else {
        return (false, ": a request got no answer".into());
    };
    if !ok(ra.status) {
        return (false, format!(": {a}'s request did not succeed"));
    }
    let stored = ra.body.trim();
    let leaked = answer::compare(stored, rb.body.trim()).same()
        || (stored.len() > 2 && rb.body.contains(stored));
    if leaked {
        return (
            false,
            format!(": {a}'s stored response leaked to {b} (in a {})", rb.status),
        );
    }
    if !ok(rb.status) {
        return (
            false,
            format!(
                ": {b} was refused ({}) over {a}'s key: the key is not scoped per client",
                rb.status
            ),
        );
    }
    (true, String::new())
}

/// The client of timeout-then-retry: four attempts, full jitter from 50 ms, Retry-After honoured up to 5 s.
/// It sends every `--header` too: an API that authenticates would otherwise see the retry as anonymous.
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
    .map(|client| client.with_headers(config.headers.clone()))
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
    let stored = dropped.and_then(|e| {
        let status = *e.upstream_statuses.first()?;
        Some((status, e.upstream_body.clone()?))
    });
    let dropped_text = stored
        .as_ref()
        .map_or("nothing dropped".to_string(), |(s, b)| {
            format!("{s} {}", one_line(b))
        });
    let (count_text, count_ok) = delta(before, after, 1);
    let last = outcome
        .response
        .as_ref()
        .map_or("no answer".to_string(), |(s, b)| {
            format!("{s} {}", one_line(b))
        });
    let got = outcome.response.as_ref().map(|(s, b)| (*s, b.as_str()));
    let (same, why) = judge_retry(stored.as_ref().map(|(s, b)| (*s, b.as_str())), got);
    let pass = same && count_ok;
    let evidence = format!(
        "the proxy dropped the first response after the server answered {dropped_text}; the client retried \
         with the same key ({} attempts) and got {last}{count_text}{why}",
        outcome.attempts.len(),
    );
    let step = curl::post(config, Some("$KEY"), Some(&config.clients[0]), &config.body);
    let steps = vec![
        format!("{step} > /dev/null   # the response is lost on the way back"),
        step,
    ];
    Ok((verdict(pass), evidence, curl::sequence(config, true, steps)))
}

/// timeout-then-retry's verdict on the stored (dropped) response and what the retry finally got, with what
/// happened named: the same body in another status is a status that differs from the stored one, not a second
/// execution; another success body is a second execution.
pub fn judge_retry(stored: Option<(u16, &str)>, got: Option<(u16, &str)>) -> (bool, String) {
    let Some((stored_status, stored_body)) = stored else {
        return (
            false,
            ": the server did not answer the first request, so nothing was lost".into(),
        );
    };
    let Some((status, body)) = got else {
        return (false, ": the retry got no answer".into());
    };
    let stored_body = stored_body.trim();
    let same_body =
        body.trim() == stored_body || (stored_body.len() > 2 && body.contains(stored_body));
    match (same_body, ok(status)) {
        (true, true) => (true, String::new()),
        (true, false) => (
            false,
            format!(
                ": the retry's status differs from the stored one ({stored_status} stored, {status} on the \
                 retry, with the same payment)"
            ),
        ),
        (false, true) => (
            false,
            ": the retry was executed again (another success body than the stored one)".into(),
        ),
        (false, false) => (false, format!(": the retry got {status}, not the stored response")),
    }
}

async fn expiry(config: &ProbeConfig) -> Checked {
    let Some(expiry_ms) = config.expiry_ms else {
        return Ok((
            ProbeVerdict::NotApplicable,
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
        (Ok(a), Ok(b)) => {
            ok(a.status) && ok(b.status) && !answer::compare(&a.body, &b.body).same() && count_ok
        }
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
    }

    fn answer(status: u16, body: &str) -> Result<HttpResponse, HttpError> {
        Ok(HttpResponse {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        })
    }

    #[test]
    fn what_happened_is_named() {
        let paid = answer(201, r#"{"payment":1}"#);
        // A's stored response in B's 409 is a leak, not a refusal; B refused without it is a global scope.
        let leak = judge_cross_client(&paid, &answer(409, r#"{"payment":1}"#), "a", "b");
        assert_eq!(
            leak,
            (false, ": a's stored response leaked to b (in a 409)".into())
        );
        let refused = judge_cross_client(&paid, &answer(409, "{}"), "a", "b");
        assert!(
            !refused.0 && refused.1.contains("not scoped per client"),
            "{refused:?}"
        );
        assert!(judge_cross_client(&paid, &answer(201, r#"{"payment":2}"#), "a", "b").0);
        // The retry's 409 with the stored payment: its status differs; another success body: executed again.
        let stored = Some((201, r#"{"payment":1}"#));
        let status = judge_retry(stored, Some((409, r#"{"payment":1}"#)));
        assert!(
            !status.0
                && status
                    .1
                    .contains("the retry's status differs from the stored one")
        );
        let again = judge_retry(stored, Some((201, r#"{"payment":2}"#)));
        assert!(!again.0 && again.1.contains("executed again"), "{again:?}");
        assert!(judge_retry(stored, Some((200, r#"{"payment":1}"#))).0);
    }

    #[test]
    fn a_byte_level_fingerprint_is_a_note() {
        let first = answer(201, r#"{"payment":1}"#);
        let bytes = judge_changed_body(&first, &answer(422, "{}"), &answer(422, "{}"), 422);
        assert!(
            bytes.pass && bytes.remark.contains("note: the same JSON"),
            "{}",
            bytes.remark
        );
        // The twins: a changed body replayed fails; a reordered body executed again fails.
        let replayed = judge_changed_body(&first, &first, &first, 422);
        assert!(!replayed.pass && replayed.remark.contains("changed body was not refused"));
        let twice = judge_changed_body(
            &first,
            &answer(201, r#"{"payment":2}"#),
            &answer(422, "{}"),
            422,
        );
        assert!(!twice.pass, "{}", twice.remark);
    }
}
