//! Four bug reports that live in the request a client sends, each next to its fix, written with the world's
//! request hook (`HandlerWorld::requests`) and reactions (`HandlerWorld::react`):
//!
//! - an API key rotated between two attempts, the server scoping its records by the API key instead of the
//!   principal behind it: <https://github.com/RamaAditya49/titen/issues/104>;
//! - a 400 cached under the idempotency key, so the retry with the corrected body gets the stale 400 for ever
//!   (the fix: only a request that passed validation claims the key; Stripe saves no result for one that
//!   failed it): <https://github.com/KanishJebaMathewM/Truxify/issues/2869>;
//! - an agent that mints a new idempotency key for every call of its payment tool, so a retried call is a new
//!   payment (the fix: the key comes from the agent's plan step, the same on every retry):
//!   <https://github.com/square/square-mcp-server/issues/31>;
//! - a server that ignores the client's `Idempotency-Key` (every POST creates; the fix keys on the key and the
//!   acting principal): <https://github.com/ulsklyc/yuvomi/issues/822>.

use retrylab::handler::designs::article::Article;
use retrylab::handler::designs::common::*;
use retrylab::handler::{Attempt, Handler, Reply, Request, Store, StoreError};

/// The account behind an API key (`acct-1.v2` belongs to `acct-1`): what the server's key table says, here
/// the key's prefix.
fn principal_of(api_key: &str) -> &str {
    api_key
        .split_once('.')
        .map_or(api_key, |(principal, _)| principal)
}

/// The article's design with the record scoped by what the request authenticates as: the API key itself
/// (`by_principal: false`, titen #104) or the account it belongs to.
pub struct ScopedByCredential {
    pub by_principal: bool,
}

impl Handler for ScopedByCredential {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let Some(api_key) = request.header("authorization") else {
            return Reply::new(401, "{}");
        };
        // Review (#104): scoping by the credential makes a rotated key a stranger to its own retries.
        let scope = if self.by_principal {
            principal_of(api_key)
        } else {
            api_key
        };
        let scoped = Request {
            client: scope.to_string(),
            ..request.clone()
        };
        Article.handle(db, &scoped).await
    }
}

/// A client whose API key is rotated after its first attempt: `acct-N.v1`, then `acct-N.v2`.
pub fn rotating_api_key(attempt: &Attempt) -> Request {
    let version = if attempt.attempt == 1 { 1 } else { 2 };
    let api_key = format!("acct-{}.v{version}", attempt.client);
    attempt.request().with_header("authorization", api_key)
}

/// The first attempt's body fails validation; the client fixes it after a 400 and keeps it fixed.
pub const INVALID_BODY: &str = "{\"amount\":0,\"currency\":\"RUB\"}";
pub const FIXED_BODY: &str = "{\"amount\":500,\"currency\":\"RUB\"}";

fn valid(body: &str) -> bool {
    !body.contains("\"amount\":0")
}

/// Fix the body after a 400 and retry with the same key.
pub fn fix_after_400(attempt: &Attempt) -> Request {
    let request = attempt.request();
    if attempt.statuses.contains(&400) {
        Request {
            body: FIXED_BODY.to_string(),
            ..request
        }
    } else {
        request
    }
}

const REJECTED: &str = "400";
const INVALID: &str = "{\"error\":\"amount must be positive\"}";

/// Claim, pay and complete in one transaction. `cache_rejections`: validation runs after the claim and its
/// 400 becomes the key's stored answer (Truxify #2869); otherwise a request that fails validation is answered
/// 400 before it touches the key.
pub struct Validates {
    pub cache_rejections: bool,
}

impl Handler for Validates {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(validate_and_pay(db, request, self.cache_rejections).await)
    }
}

async fn validate_and_pay<S: Store>(
    db: &mut S,
    request: &Request,
    cache_rejections: bool,
) -> Result<Reply, StoreError> {
    if !cache_rejections && !valid(&request.body) {
        return Ok(Reply::new(400, INVALID));
    }
    let key = record_key(request);
    db.begin().await?;
    if !db.insert_if_absent("keys", &key, IN_PROGRESS).await? {
        let row = db.get("keys", &key).await?;
        db.commit().await?;
        return Ok(match row.as_deref() {
            Some(REJECTED) => Reply::new(400, INVALID),
            other => answer_existing(other),
        });
    }
    if !valid(&request.body) {
        // Review (#2869): the rejection is stored under the key; the corrected retry will be answered with it.
        db.update("keys", &key, REJECTED, None).await?;
        db.commit().await?;
        return Ok(Reply::new(400, INVALID));
    }
    let payment = db.insert_effect("payments", &request.body).await?;
    let done = completed(payment);
    db.update("keys", &key, &done, None).await?;
    db.commit().await?;
    Ok(Reply::new(201, done))
}

/// An agent's payment tool that mints a key per call (square-mcp-server #31): every retry is a new request.
pub fn agent_mints_key(attempt: &Attempt) -> Request {
    Request {
        key: format!("tool-call-{}", attempt.attempt),
        ..attempt.request()
    }
}

/// The fix: the key names the agent's plan step (the operation), whatever the call.
pub fn agent_keys_plan_step(attempt: &Attempt) -> Request {
    Request {
        key: format!("plan-step-{}", attempt.op),
        ..attempt.request()
    }
}

/// Every request carries the acting user, as an authenticated session would.
pub fn with_actor(attempt: &Attempt) -> Request {
    let actor = format!("user-{}", attempt.client);
    attempt.request().with_header("x-actor", actor)
}

/// Creates on every POST; the `Idempotency-Key` the client sends is never read (yuvomi #822).
pub struct IgnoresIdempotencyKey;

impl Handler for IgnoresIdempotencyKey {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let create = async {
            db.begin().await?;
            let task = db.insert_effect("tasks", &request.body).await?;
            db.commit().await?;
            Ok::<_, StoreError>(Reply::new(201, completed(task)))
        };
        or_500(create.await)
    }
}

/// The fix (yuvomi v2.25.0): the key, scoped by the acting user, claims the creation (the article's design).
pub struct KeyedByActor;

impl Handler for KeyedByActor {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let Some(actor) = request.header("x-actor") else {
            return Reply::new(401, "{}");
        };
        let scoped = Request {
            client: actor.to_string(),
            ..request.clone()
        };
        Article.handle(db, &scoped).await
    }
}

/// A 400 is retried (the client fixes its body); every other status as by default.
fn retry_400(code: u16) -> retrylab::handler::Reaction {
    match code {
        400 => retrylab::handler::Reaction::Retry,
        other => retrylab::handler::Reaction::default_for(other),
    }
}

/// The four designs and their fixes, in a world with one lost response (a retry must happen).
pub fn catalogue(visit: &mut impl super::Visit) {
    use retrylab::check::Verdict::{Holds, Violated};
    use retrylab::handler::{HandlerFaults, HandlerWorld};
    let (dup, resolves) = ("no-duplicate-effect", "eventually-resolves");
    let lost = HandlerFaults {
        drop_responses: 1,
        ..HandlerFaults::default()
    };
    let body = FIXED_BODY;
    let rotated = |by_principal| {
        HandlerWorld::new(ScopedByCredential { by_principal }, 1, body)
            .requests(rotating_api_key)
            .faults(lost)
    };
    visit.design(
        "titen-104-api-key-rotated",
        rotated(false),
        &[(dup, Violated)],
        &[],
    );
    visit.design(
        "titen-104-api-key-rotated-fixed",
        rotated(true),
        &[(dup, Holds), (resolves, Holds)],
        &["lost-response", "request-changed", "replay"],
    );
    let fixing = |cache_rejections| {
        HandlerWorld::new(Validates { cache_rejections }, 1, INVALID_BODY)
            .requests(fix_after_400)
            .react(retry_400)
            .faults(lost)
    };
    visit.design(
        "truxify-2869-cached-400",
        fixing(true),
        &[(dup, Holds), (resolves, Violated)],
        &["client-error-retried", "request-changed"],
    );
    visit.design(
        "truxify-2869-cached-400-fixed",
        fixing(false),
        &[(dup, Holds), (resolves, Holds)],
        &[
            "client-error-retried",
            "request-changed",
            "lost-response",
            "replay",
        ],
    );
    let agent = HandlerWorld::new(Article, 1, body).faults(lost);
    visit.design(
        "square-mcp-31-agent-key-per-call",
        agent.requests(agent_mints_key),
        &[(dup, Violated)],
        &[],
    );
    visit.design(
        "square-mcp-31-agent-key-per-call-fixed",
        HandlerWorld::new(Article, 1, body)
            .faults(lost)
            .requests(agent_keys_plan_step),
        &[(dup, Holds), (resolves, Holds)],
        &["lost-response", "replay"],
    );
    visit.design(
        "yuvomi-822-key-ignored",
        HandlerWorld::new(IgnoresIdempotencyKey, 1, body)
            .requests(with_actor)
            .faults(lost),
        &[(dup, Violated)],
        &[],
    );
    visit.design(
        "yuvomi-822-key-ignored-fixed",
        HandlerWorld::new(KeyedByActor, 1, body)
            .requests(with_actor)
            .faults(lost),
        &[(dup, Holds), (resolves, Holds)],
        &["lost-response", "replay"],
    );
}
