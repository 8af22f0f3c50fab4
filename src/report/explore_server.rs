//! The walk-by-hand server behind `retrylab explore`, for any `check::Model`: the page `html::explore_page`
//! draws and the routes it calls. The server keeps no walk: the page sends its path with every request, each
//! step as the index of the chosen action among the actions enabled there (in the model's own deterministic
//! order, so no model has to make its actions serialisable), and gets back the path's steps and views and the
//! actions enabled at its end. Going back is the page dropping an index, and two tabs never disturb each other.
//! Saving and opening a walk go through [`Traces`]: [`TraceFiles`] writes the project's trace files (what
//! `retrylab replay` takes for a model file); without one, the page's save and open say so.
//!
//! ```no_run
//! # fn demo<M: retrylab::check::Model + Send + 'static>(model: M) -> Result<(), String> {
//! use retrylab::loopback::loopback_address;
//! use retrylab::report::explore_server::{serve, Explorer};
//! let explorer = Explorer::new(model, "my protocol", "two clients, one lossy link");
//! serve(explorer, loopback_address("127.0.0.1:0")?, |url| println!("listening on {url}"))
//! # }
//! ```

use super::{explore_run, html, ExploredPath};
use crate::check::{self, Model};
use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;

pub use super::explore_traces::{decidable_properties, first_violated, TraceFiles};

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

/// The routes: `/` (the page), `POST /api/path`, `/api/save`, `/api/open`.
pub fn router<M: Model + Send + 'static>(explorer: Arc<Explorer<M>>) -> Router {
    Router::new()
        .route("/", get(page::<M>))
        .route("/api/path", post(path::<M>))
        .route("/api/save", post(save::<M>))
        .route("/api/open", post(open::<M>))
        .with_state(explorer)
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
        axum::serve(listener, router(Arc::new(explorer)))
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

async fn page<M: Model>(State(explorer): State<Arc<Explorer<M>>>) -> Html<String> {
    let names = explorer
        .traces
        .as_ref()
        .map(|traces| traces.properties(&explorer.model));
    Html(html::explore_page(
        &explorer.title,
        &explorer.subtitle,
        names.as_deref(),
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
