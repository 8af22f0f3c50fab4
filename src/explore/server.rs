//! The walk-by-hand server behind `retrylab explore`, for any `check::Model`: the page `html::explore_page`
//! draws and the routes it calls. The server keeps no walk: the page sends its path with every request, each
//! step as the index of the chosen action among the actions enabled there (in the model's own deterministic
//! order, so no model has to make its actions serialisable), and gets back the path's steps and views and the
//! actions enabled at its end. Going back is the page dropping an index, and two tabs never disturb each other.
//! Saving and opening a walk go through [`Traces`]: [`TraceFiles`] writes the project's trace files (what
//! `retrylab replay` takes for a model file); without one, the page's save and open say so.
//!
//! Only this server's own page may drive it ([`Guard`]): every request must name a loopback host with the served
//! port in its `Host` header (a DNS-rebinding page names its own host, and is refused before it can read the
//! model), and a save (the one route that writes a file) must carry the per-run token written into the page.
//!
//! ```no_run
//! # fn demo<M: retrylab::check::Model + Send + 'static>(model: M) -> Result<(), String> {
//! use retrylab::loopback::loopback_address;
//! use retrylab::report::explore_server::{serve, Explorer};
//! let explorer = Explorer::new(model, "my protocol", "two clients, one lossy link");
//! serve(explorer, loopback_address("127.0.0.1:0")?, |url| println!("listening on {url}"))
//! # }
//! ```

use crate::check::{self, Model};
use crate::report::{explore_run, html, ExploredPath};
use axum::extract::{Json, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;

pub use super::traces::{decidable_properties, first_violated, TraceFiles};

/// A model served for walking by hand.
pub struct Explorer<M: Model> {
    pub model: M,
    pub title: String,
    /// One line under the title.
    pub subtitle: String,
    /// What the page's save and open use; `None`: they answer that this explorer keeps no traces.
    pub traces: Option<Box<dyn Traces<M>>>,
}

impl<M: Model> Explorer<M> {
    /// An explorer of `model` that keeps no traces (see [`Explorer::with_traces`]).
    pub fn new(model: M, title: &str, subtitle: &str) -> Explorer<M> {
        Explorer {
            model,
            title: title.to_string(),
            subtitle: subtitle.to_string(),
            traces: None,
        }
    }

    pub fn with_traces(mut self, traces: impl Traces<M> + 'static) -> Explorer<M> {
        self.traces = Some(Box::new(traces));
        self
    }
}

/// Where the page's saved walks go and how one comes back.
pub trait Traces<M: Model>: Send + Sync {
    /// The property names the page offers to decide a saved walk (an empty choice: [`first_violated`]).
    fn properties(&self, model: &M) -> Vec<String> {
        decidable_properties(model)
    }

    /// Save a path (which runs) as deciding `property` (empty: the first it violates).
    fn save(&self, model: &M, run: &check::Run<M>, property: &str) -> Result<Saved, String>;

    /// A saved walk's actions, from the text of its file (they are checked to run by the caller).
    fn open(&self, model: &M, text: &str) -> Result<Vec<M::Action>, String>;
}

/// What saving wrote.
#[derive(Clone, Debug, Serialize)]
pub struct Saved {
    /// Where the file is, as the page shows it.
    pub path: String,
    pub file_name: String,
    pub property: String,
    /// The file's text (the page offers it as a download too).
    pub trace: String,
}

/// The header carrying the per-run token that a save must present.
pub const TOKEN_HEADER: &str = "x-retrylab-token";

/// Who may use a served explorer: requests whose `Host` is loopback with `port`, and for a save the `token`.
#[derive(Clone, Debug)]
pub struct Guard {
    pub port: u16,
    pub token: String,
}

impl Guard {
    /// A guard for `port` with a fresh token: 128 bits from the operating system's generator. A secret has to
    /// be unpredictable; it is never explored, hashed or written to a file, only into the served page.
    pub fn new(port: u16) -> Guard {
        let bits: u128 = rand::random();
        Guard {
            port,
            token: format!("{bits:032x}"),
        }
    }

    /// Whether a `Host` header names this server: a loopback host (`localhost`, 127.0.0.0/8, `[::1]`) and the
    /// served port (a missing port is 80, as a browser omits it).
    pub fn host_allowed(&self, host: &str) -> bool {
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) if !port.contains(']') => (name, port.parse::<u16>().ok()),
            _ => (host, Some(80)),
        };
        port == Some(self.port) && crate::loopback::host_is_loopback(name)
    }
}

/// The routes: `/` (the page), `POST /api/path`, `/api/save`, `/api/open`, behind `guard`.
pub fn router<M: Model + Send + 'static>(explorer: Arc<Explorer<M>>, guard: Guard) -> Router {
    Router::new()
        .route("/", get(page::<M>))
        .route("/api/path", post(path::<M>))
        .route("/api/save", post(save::<M>))
        .route("/api/open", post(open::<M>))
        .layer(axum::middleware::from_fn_with_state(guard.clone(), guarded))
        .layer(axum::Extension(guard))
        .with_state(explorer)
}

/// 403 with one line.
fn forbidden(message: String) -> Response {
    (StatusCode::FORBIDDEN, message).into_response()
}

/// The guard in front of every route: the Host check, then the token for a save.
async fn guarded(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if !guard.host_allowed(host) {
        return forbidden(format!(
            "Host '{host}' is not this server's (a loopback host with port {})",
            guard.port
        ));
    }
    if request.uri().path() == "/api/save" && !token_matches(headers, &guard.token) {
        return forbidden(format!(
            "a save needs this run's token in {TOKEN_HEADER} (the served page sends it)"
        ));
    }
    next.run(request).await
}

/// The token compared without stopping at the first difference (no timing hint of a prefix).
fn token_matches(headers: &HeaderMap, token: &str) -> bool {
    let given = headers
        .get(TOKEN_HEADER)
        .map(|value| value.as_bytes())
        .unwrap_or_default();
    given.len() == token.len()
        && given
            .iter()
            .zip(token.as_bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Serve `explorer` on `address` (a loopback one: `loopback::loopback_address`) until the process stops; `listening` gets the URL
/// once the port is bound (port 0 picks a free one).
pub fn serve<M: Model + Send + 'static>(
    explorer: Explorer<M>,
    address: SocketAddr,
    listening: impl FnOnce(&str),
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|error| format!("cannot start the server's runtime: {error}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| format!("--listen {address}: cannot listen: {error}"))?;
        let bound = listener.local_addr().unwrap_or(address);
        listening(&format!("http://{bound}/"));
        axum::serve(
            listener,
            router(Arc::new(explorer), Guard::new(bound.port())),
        )
        .await
        .map_err(|error| format!("the server stopped: {error}"))
    })
}

/// The actions of a path given as choices (each an index into the actions enabled at its step), or `Err(step)`:
/// the 1-based step whose choice is not an enabled action's index.
pub fn actions_of<M: Model>(model: &M, choices: &[usize]) -> Result<Vec<M::Action>, usize> {
    follow(model, choices, |&choice, enabled| {
        let action = enabled.get(choice)?;
        Some((action.clone(), action.clone()))
    })
}

/// The choices of a path given as actions, or `Err(step)`: the 1-based step whose action is not enabled.
pub fn choices_of<M: Model>(model: &M, actions: &[M::Action]) -> Result<Vec<usize>, usize> {
    follow(model, actions, |action, enabled| {
        let choice = enabled.iter().position(|a| a == action)?;
        Some((action.clone(), choice))
    })
}

/// Walk a path from the initial state, one step per item of `path`: `pick` turns the item and the actions
/// enabled there into the action to take and what to collect, or `None` (then `Err` of the 1-based step).
fn follow<M: Model, I, T>(
    model: &M,
    path: &[I],
    mut pick: impl FnMut(&I, &[M::Action]) -> Option<(M::Action, T)>,
) -> Result<Vec<T>, usize> {
    let mut state = model.init_state();
    let mut enabled = Vec::new();
    let mut collected = Vec::with_capacity(path.len());
    for (index, item) in path.iter().enumerate() {
        enabled.clear();
        model.actions(&state, &mut enabled);
        let (action, value) = pick(item, &enabled).ok_or(index + 1)?;
        model.apply(&mut state, &action);
        collected.push(value);
    }
    Ok(collected)
}

/// A request the page got wrong or a path that does not run: 400 with one line.
struct ApiError(String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Body {
            error: String,
        }
        (StatusCode::BAD_REQUEST, Json(Body { error: self.0 })).into_response()
    }
}

fn diverged(step: usize) -> ApiError {
    ApiError(format!(
        "step {step} is not enabled in this model (the path does not run)"
    ))
}

fn no_traces() -> ApiError {
    ApiError(
        "this explorer keeps no traces (its model was served without a trace store)".to_string(),
    )
}

async fn page<M: Model>(
    State(explorer): State<Arc<Explorer<M>>>,
    axum::Extension(guard): axum::Extension<Guard>,
) -> Html<String> {
    let names = explorer
        .traces
        .as_ref()
        .map(|traces| traces.properties(&explorer.model));
    Html(html::explore_page(
        &explorer.title,
        &explorer.subtitle,
        names.as_deref(),
        &guard.token,
    ))
}

/// A path as the page sends it: the choice at each step.
#[derive(Deserialize)]
struct PathRequest {
    actions: Vec<usize>,
}

/// One action enabled at the end of the path, with the line it would add to the timeline.
#[derive(Serialize)]
struct Enabled {
    /// What the page sends back to take it: its index.
    action: usize,
    text: String,
    fault: bool,
}

#[derive(Serialize)]
struct PathReply {
    path: ExploredPath,
    enabled: Vec<Enabled>,
}

async fn path<M: Model>(
    State(explorer): State<Arc<Explorer<M>>>,
    Json(request): Json<PathRequest>,
) -> Result<Json<PathReply>, ApiError> {
    let model = &explorer.model;
    let actions = actions_of(model, &request.actions).map_err(diverged)?;
    let run = check::timeline(model, &actions).map_err(diverged)?;
    let path = explore_run(model, &run, None);
    let state = run.last_state();
    let mut enabled = Vec::new();
    model.actions(state, &mut enabled);
    let enabled = enabled
        .into_iter()
        .enumerate()
        .map(|(index, action)| {
            let mut after = state.clone();
            let observed = model.apply(&mut after, &action);
            Enabled {
                action: index,
                text: model.describe_step(state, &action, &after, observed),
                fault: model.is_fault(state, &action),
            }
        })
        .collect();
    Ok(Json(PathReply { path, enabled }))
}

#[derive(Deserialize)]
struct SaveRequest {
    actions: Vec<usize>,
    /// Empty: the first property the path violates (or the first property, when it violates none).
    property: String,
}

async fn save<M: Model>(
    State(explorer): State<Arc<Explorer<M>>>,
    Json(request): Json<SaveRequest>,
) -> Result<Json<Saved>, ApiError> {
    let traces = explorer.traces.as_ref().ok_or_else(no_traces)?;
    let model = &explorer.model;
    let actions = actions_of(model, &request.actions).map_err(diverged)?;
    let run = check::timeline(model, &actions).map_err(diverged)?;
    let names = traces.properties(model);
    if !request.property.is_empty() && !names.contains(&request.property) {
        return Err(ApiError(format!(
            "unknown property '{}', expected one of: {}",
            request.property,
            names.join(", ")
        )));
    }
    traces
        .save(model, &run, &request.property)
        .map(Json)
        .map_err(ApiError)
}

#[derive(Deserialize)]
struct OpenRequest {
    text: String,
}

#[derive(Serialize)]
struct OpenReply {
    actions: Vec<usize>,
}

/// A saved walk of this model, to continue from its end.
async fn open<M: Model>(
    State(explorer): State<Arc<Explorer<M>>>,
    Json(request): Json<OpenRequest>,
) -> Result<Json<OpenReply>, ApiError> {
    let traces = explorer.traces.as_ref().ok_or_else(no_traces)?;
    let actions = traces
        .open(&explorer.model, &request.text)
        .map_err(ApiError)?;
    let actions = choices_of(&explorer.model, &actions).map_err(diverged)?;
    Ok(Json(OpenReply { actions }))
}
