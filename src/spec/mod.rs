//! The model-file format (TOML): parse, validate, and report errors with file:line:column and the field.
//! See README.md "Writing a model file" for the user's view of every field.

mod error;
mod raw;
mod trace;

pub use error::{field_at, line_column, SpecError};
pub use trace::{new_trace, parse_trace, replay, ReplayOutcome, WorldTrace};

use crate::check::Verdict;
use crate::model::{
    Body, ClientsConfig, Event, Operation, Property, Provider, QueueConfig, World, WorldError,
};
use crate::protocol::{self, Lease, ProtocolConfig};
use raw::{RawModel, RawOperation};
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

/// Search bounds a model file may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_states: u64,
    pub max_depth: u32,
}

/// A parsed, validated model file.
#[derive(Clone, Debug)]
pub struct Model {
    pub path: String,
    pub source_text: String,
    pub description: String,
    /// Where the design comes from (an article section, a system).
    pub source: String,
    pub world: World,
    /// Declared verdicts (`holds` or `violated`), for the properties the file cares about.
    pub expected: BTreeMap<Property, Verdict>,
    /// Scenarios the search must reach (evidence that a `holds` is not vacuous).
    pub reached: Vec<Event>,
    pub limits: Limits,
}

impl Model {
    /// What the file declares, by property name (for `check::Report::compare`).
    pub fn expected(&self) -> crate::check::Expected {
        crate::check::Expected {
            verdicts: self
                .expected
                .iter()
                .map(|(property, verdict)| (property.name().to_string(), *verdict))
                .collect(),
            reached: self
                .reached
                .iter()
                .map(|scenario| scenario.scenario_name().to_string())
                .collect(),
        }
    }
}

/// Read and parse a model file.
pub fn load_model(path: &Path) -> Result<Model, SpecError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|error| SpecError::whole_file(&name, "", &format!("cannot read: {error}")))?;
    parse_model(&name, &text)
}

/// The model files under `path`: the file itself, or every `*.toml` below a folder, sorted by path.
pub fn model_files(path: &Path) -> Result<Vec<std::path::PathBuf>, SpecError> {
    let name = path.display().to_string();
    let metadata = std::fs::metadata(path)
        .map_err(|error| SpecError::whole_file(&name, "", &format!("cannot read: {error}")))?;
    if metadata.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut folders = vec![path.to_path_buf()];
    // Bounded walk: a model folder is small; stop rather than follow a link loop.
    let mut visited_folders = 0usize;
    while let Some(folder) = folders.pop() {
        visited_folders += 1;
        if visited_folders > 10_000 {
            return Err(SpecError::whole_file(
                &name,
                "",
                "more than 10000 folders below this path",
            ));
        }
        let entries = std::fs::read_dir(&folder).map_err(|error| {
            SpecError::whole_file(
                &folder.display().to_string(),
                "",
                &format!("cannot read: {error}"),
            )
        })?;
        for entry in entries.flatten() {
            let entry_path = entry.path();
            if entry_path.is_dir() {
                folders.push(entry_path);
            } else if entry_path
                .extension()
                .is_some_and(|extension| extension == "toml")
            {
                files.push(entry_path);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(SpecError::whole_file(
            &name,
            "",
            "no *.toml model files here",
        ));
    }
    Ok(files)
}

/// Parse a model file's text; `file` names it in errors.
pub fn parse_model(file: &str, text: &str) -> Result<Model, SpecError> {
    let raw: RawModel = toml::from_str(text).map_err(|error| {
        let offset = error.span().map_or(0, |span| span.start);
        let field = field_at(text, offset);
        SpecError::at(file, text, offset, &field, error.message())
    })?;
    let fail = |spanned_start: usize, field: &str, message: &str| {
        SpecError::at(file, text, spanned_start, field, message)
    };

    // Queue models take their consumer from [consumer]; [protocol] describes the HTTP server.
    if let (Some(_), Some(protocol)) = (&raw.broker, &raw.protocol) {
        return Err(fail(
            protocol.span().start,
            "protocol",
            "a queue model ([broker]) configures its consumer in [consumer], not [protocol]",
        ));
    }
    if let (None, Some(consumer)) = (&raw.broker, &raw.consumer) {
        return Err(fail(
            consumer.span().start,
            "consumer",
            "[consumer] belongs to a queue model: add a [broker] table",
        ));
    }
    let raw_protocol = raw
        .protocol
        .as_ref()
        .map(|protocol| protocol.get_ref())
        .cloned()
        .unwrap_or_default();

    // Protocol.
    let lease = match &raw_protocol.lease_ms {
        None => Lease::None,
        Some(ms) if *ms.get_ref() == 0 => {
            return Err(fail(
                ms.span().start,
                "protocol.lease-ms",
                "must be at least 1 (omit it for no lease)",
            ))
        }
        Some(ms) => Lease::Ms(*ms.get_ref()),
    };
    let fencing = raw_protocol
        .fencing
        .as_ref()
        .is_some_and(|fencing| *fencing.get_ref());
    if let Some(spanned) = raw_protocol
        .fencing
        .as_ref()
        .filter(|_| fencing && lease == Lease::None)
    {
        return Err(fail(
            spanned.span().start,
            "protocol.fencing",
            "fencing without a lease is contradictory: nothing can take a claim over, so there is nothing to fence (set protocol.lease-ms)",
        ));
    }
    let protocol_config = ProtocolConfig {
        claim: raw_protocol.claim.claim(),
        lease,
        fencing,
        fingerprint: raw_protocol.fingerprint,
    };

    // Clients and their operations.
    let count = positive(&raw.clients.count, "clients.count", 8)
        .map_err(|(at, field, message)| fail(at, field, &message))?;
    let max_attempts = positive(&raw.clients.max_attempts, "clients.max-attempts", 15)
        .map_err(|(at, field, message)| fail(at, field, &message))?;
    if raw.clients.operations.is_empty() {
        return Err(fail(
            raw.clients.count.span().start,
            "clients.operations",
            "at least one operation is needed",
        ));
    }
    if raw.clients.operations.len() > 8 {
        return Err(fail(
            raw.clients.count.span().start,
            "clients.operations",
            "at most 8 operations per client",
        ));
    }
    let mut bodies: Vec<Body> = Vec::new();
    let mut operations = Vec::new();
    for (index, operation) in raw.clients.operations.iter().enumerate() {
        let field = format!("clients.operations[{}]", index + 1);
        let (raw_text, value) =
            operation_body(operation).map_err(|(at, message)| fail(at, &field, &message))?;
        let body = match bodies.iter().position(|seen| seen.text == raw_text) {
            Some(found) => found,
            None => {
                bodies.push(Body {
                    text: raw_text,
                    json: value,
                });
                bodies.len() - 1
            }
        };
        let key = match &operation.same_key_as {
            None => index as u8 + 1,
            Some(other) => {
                let target = *other.get_ref();
                if target == 0 || target as usize > index {
                    return Err(fail(
                        other.span().start,
                        &format!("{field}.same-key-as"),
                        "must name an earlier operation (1-based)",
                    ));
                }
                operations
                    .get(target as usize - 1)
                    .map_or(target, |op: &Operation| op.key)
            }
        };
        operations.push(Operation {
            body: body as u8,
            key,
        });
    }
    let processes = positive(&raw.servers.processes, "servers.processes", 4)
        .map_err(|(at, field, message)| fail(at, field, &message))?;

    let queue = queue_config(&raw).map_err(|(at, field, message)| fail(at, field, &message))?;
    let provider = match (&raw.consumer, queue) {
        (Some(consumer), _) => consumer.get_ref().external_effect,
        (None, Some(_)) => Provider::None,
        (None, None) => raw_protocol.provider,
    };

    let mut builder = World::builder()
        .protocol(protocol_config)
        .key_scope(raw_protocol.key_scope)
        .key_store(raw_protocol.key_store)
        .on_error(raw_protocol.on_error)
        .provider(provider)
        .clients(ClientsConfig {
            count,
            max_attempts,
            key_policy: raw.clients.key_policy,
            operations,
        })
        .processes(processes)
        .faults(raw.faults)
        .bodies(bodies);
    if let Some(queue) = queue {
        builder = builder.queue(queue);
    }
    let world = builder
        .build()
        .map_err(|error| world_error(file, text, &raw, error))?;

    // Expectations.
    let mut expected = BTreeMap::new();
    for (name, verdict) in raw.expect.verdicts() {
        if let Some(verdict) = verdict {
            let property =
                Property::by_name(name).expect("raw expect fields are the property names");
            expected.insert(property, *verdict);
        }
    }
    if expected.is_empty() {
        return Err(SpecError::whole_file(
            file,
            "expect",
            "declare at least one property as \"holds\" or \"violated\"",
        ));
    }
    let mut reached = Vec::new();
    for name in &raw.expect.reached {
        let event = Event::scenario_by_name(name.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = Event::SCENARIOS
                .iter()
                .map(|event| event.scenario_name())
                .collect();
            fail(
                name.span().start,
                "expect.reached",
                &format!(
                    "unknown scenario '{}', expected one of: {}",
                    name.get_ref(),
                    known.join(", ")
                ),
            )
        })?;
        reached.push(event);
    }

    Ok(Model {
        path: file.to_string(),
        source_text: text.to_string(),
        description: raw.description,
        source: raw.source.unwrap_or_default(),
        world,
        expected,
        reached,
        limits: Limits {
            max_states: raw.limits.max_states,
            max_depth: raw.limits.max_depth,
        },
    })
}

/// A world the builder refused, located in the file when the field has one place there.
fn world_error(file: &str, text: &str, raw: &RawModel, error: WorldError) -> SpecError {
    let at = match error.field {
        "clients.max-attempts" => Some(raw.clients.max_attempts.span().start),
        "clients.count" => Some(raw.clients.count.span().start),
        "servers.processes" => Some(raw.servers.processes.span().start),
        _ => None,
    };
    match at {
        Some(at) => SpecError::at(file, text, at, error.field, &error.message),
        None => SpecError::whole_file(file, error.field, &error.message),
    }
}

/// The queue knobs (checked against the rest of the file by the world builder); `None` without a `[broker]`
/// table.
fn queue_config(raw: &RawModel) -> Result<Option<QueueConfig>, (usize, &'static str, String)> {
    let Some(broker) = &raw.broker else {
        return Ok(None);
    };
    if broker.get_ref().dedup_window_ms == Some(0) {
        return Err((
            broker.span().start,
            "broker.dedup-window-ms",
            "must be at least 1 (omit it when the broker has no window)".to_string(),
        ));
    }
    let consumer = raw
        .consumer
        .as_ref()
        .map(|consumer| consumer.get_ref())
        .cloned()
        .unwrap_or_default();
    Ok(Some(QueueConfig {
        producer: broker.get_ref().producer,
        producer_dedup: broker.get_ref().producer_dedup,
        inbox: consumer.inbox,
        dedup_key: consumer.dedup_key,
    }))
}

/// A count that must be between 1 and `max`.
fn positive(
    value: &Spanned<u8>,
    field: &'static str,
    max: u8,
) -> Result<u8, (usize, &'static str, String)> {
    let number = *value.get_ref();
    if number == 0 || number > max {
        return Err((
            value.span().start,
            field,
            format!("must be between 1 and {max} (found {number})"),
        ));
    }
    Ok(number)
}

/// The body as written (its raw text) and as JSON.
fn operation_body(
    operation: &RawOperation,
) -> Result<(String, serde_json::Value), (usize, String)> {
    match (&operation.body, &operation.body_json) {
        (Some(table), None) => {
            let value = serde_json::to_value(table.get_ref()).map_err(|error| {
                (
                    table.span().start,
                    format!("cannot convert to JSON: {error}"),
                )
            })?;
            Ok((protocol::canonical_json(&value), value))
        }
        (None, Some(text)) => {
            let value: serde_json::Value = serde_json::from_str(text.get_ref())
                .map_err(|error| (text.span().start, format!("body-json is not JSON: {error}")))?;
            Ok((text.get_ref().clone(), value))
        }
        (Some(table), Some(_)) => Err((
            table.span().start,
            "give either body or body-json, not both".to_string(),
        )),
        (None, None) => Err((
            operation.span_hint,
            "missing body (a table) or body-json (a string)".to_string(),
        )),
    }
}
