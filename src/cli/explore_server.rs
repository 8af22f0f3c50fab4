//! The routes of `retrylab explore`. The server keeps no walk of its own: the page sends its path (a list of
//! actions) with every request and gets back the path's steps and views and the actions enabled at its end, so
//! going back is the page dropping an action, and two tabs never disturb each other.

use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use retrylab::atomic::write_atomic;
use retrylab::check::{self, Kind, Model as _, Verdict};
use retrylab::model::{Action, Property};
use retrylab::report::{explore_path, html, ExploredPath};
use retrylab::spec;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// What every request reads.
pub struct Session {
    pub model: spec::Model,
    /// The model's name in trace file names.
    pub stem: String,
    pub traces: PathBuf,
}

pub fn router(session: Arc<Session>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/path", post(path))
        .route("/api/save", post(save))
        .route("/api/open", post(open))
        .with_state(session)
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

async fn page(State(session): State<Arc<Session>>) -> Html<String> {
    let model = &session.model;
    let names = Property::ALL.map(Property::name);
    let title = format!("retrylab explore: {}", model.path);
    Html(html::explore_page(&title, &model.description, &names))
}

#[derive(Deserialize)]
struct PathRequest {
    actions: Vec<Action>,
}

/// One action enabled at the end of the path, with the line it would add to the timeline.
#[derive(Serialize)]
struct Enabled {
    action: Action,
    text: String,
    fault: bool,
}

#[derive(Serialize)]
struct PathReply {
    path: ExploredPath,
    enabled: Vec<Enabled>,
}

fn diverged(step: usize) -> ApiError {
    ApiError(format!(
        "step {step} is not enabled in this model (the path does not run)"
    ))
}

async fn path(
    State(session): State<Arc<Session>>,
    Json(request): Json<PathRequest>,
) -> Result<Json<PathReply>, ApiError> {
    let world = &session.model.world;
    let path = explore_path(world, &request.actions, None).map_err(diverged)?;
    let run = check::timeline(world, &request.actions).map_err(diverged)?;
    let state = run.last_state();
    let mut actions = Vec::new();
    world.actions(state, &mut actions);
    let enabled = actions
        .into_iter()
        .map(|action| {
            let mut after = state.clone();
            let observed = world.apply(&mut after, &action);
            Enabled {
                text: world.describe_step(state, &action, &after, observed),
                fault: world.is_fault(state, &action),
                action,
            }
        })
        .collect();
    Ok(Json(PathReply { path, enabled }))
}

#[derive(Deserialize)]
struct SaveRequest {
    actions: Vec<Action>,
    /// Empty: the first property the path violates (or the first property, when it violates none).
    property: String,
}

#[derive(Serialize)]
struct SaveReply {
    path: String,
    file_name: String,
    property: String,
    trace: String,
}

async fn save(
    State(session): State<Arc<Session>>,
    Json(request): Json<SaveRequest>,
) -> Result<Json<SaveReply>, ApiError> {
    let model = &session.model;
    let run = check::timeline(&model.world, &request.actions).map_err(diverged)?;
    let property = match request.property.as_str() {
        "" => first_violated(&check::judge_run(&model.world, &run, None)),
        name => Property::by_name(name).ok_or_else(|| {
            ApiError(format!(
                "unknown property '{name}', expected one of: {}",
                Property::ALL.map(Property::name).join(", ")
            ))
        })?,
    };
    let trace = spec::new_trace(model, property.name(), "by-hand", None, run.steps);
    let file_name = format!("{}.by-hand.json", session.stem);
    let file = session.traces.join(&file_name);
    let text = trace.to_json();
    std::fs::create_dir_all(&session.traces)
        .and_then(|()| write_atomic(&file, text.as_bytes()))
        .map_err(|error| ApiError(format!("cannot write {}: {error}", file.display())))?;
    Ok(Json(SaveReply {
        path: file.display().to_string(),
        file_name,
        property: property.name().to_string(),
        trace: text,
    }))
}

/// The safety or liveness property violated earliest on the path (ties: in the world's order), else the first.
fn first_violated(judged: &check::Report<retrylab::model::World>) -> Property {
    judged
        .properties
        .iter()
        .filter(|found| found.kind != Kind::Sometimes && found.verdict == Verdict::Violated)
        .filter_map(|found| Some((found.at_step?, Property::by_name(&found.name)?)))
        .min()
        .map_or(Property::ALL[0], |(_, property)| property)
}

#[derive(Deserialize)]
struct OpenRequest {
    text: String,
}

#[derive(Serialize)]
struct OpenReply {
    actions: Vec<Action>,
}

/// A saved trace of this model's text, to continue from its end.
async fn open(
    State(session): State<Arc<Session>>,
    Json(request): Json<OpenRequest>,
) -> Result<Json<OpenReply>, ApiError> {
    let trace = spec::parse_trace("the trace", &request.text)
        .map_err(|error| ApiError(error.to_string()))?;
    if trace.model_source != session.model.source_text {
        return Err(ApiError(format!(
            "this is a trace of another model text ({}): explore that model to continue it",
            trace.model
        )));
    }
    let actions: Vec<Action> = trace.steps.iter().map(|step| step.action).collect();
    check::timeline(&session.model.world, &actions).map_err(diverged)?;
    Ok(Json(OpenReply { actions }))
}
