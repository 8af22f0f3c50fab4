//! The model-file format (TOML): parse, validate, and report errors with file:line:column and the field.
//! See docs/src/models.md ("Every field") for the user's view of every field.

mod body;
mod error;
mod evidence;
mod json_locate;
mod locate;
mod raw;
mod trace;

pub use error::{field_at, line_column, SpecError};
pub use evidence::{evidence, listed, Evidence, Vacuity};
pub use locate::field_offset;
pub use trace::{new_trace, parse_trace, parse_trace_of, replay, ReplayOutcome, WorldTrace};

use crate::builtin::{
    Body, ClientsConfig, Event, Operation, Provider, QueueConfig, World, WorldError, WorldProperty,
};
use crate::check::Verdict;
use crate::protocol::{Lease, ProtocolConfig};
use raw::RawModel;
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

/// Search bounds a model file may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub states_max: u64,
    pub depth_max: u32,
}

/// A parsed, validated model file.
#[derive(Clone, Debug)]
pub struct ModelFile {
    pub path: String,
    pub source_text: String,
    pub description: String,
    /// Where the design comes from (an article section, a system).
    pub source: String,
    pub world: World,
    /// Declared verdicts (`holds` or `violated`), for the properties the file cares about.
    pub expected: BTreeMap<WorldProperty, Verdict>,
    /// Scenarios the search must reach (evidence that a `holds` is not vacuous).
    pub reached: Vec<Event>,
    pub limits: Limits,
}

impl ModelFile {
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
pub fn load_model(path: &Path) -> Result<ModelFile, SpecError> {
    let name = path.display().to_string();
    let text = crate::input::read_text(path).map_err(|error| match error.position {
        Some((line, column)) => SpecError {
            file: name.clone(),
            line,
            column,
            field: String::new(),
            message: error.message,
        },
        None => SpecError::whole_file(&name, "", &error.message),
    })?;
    parse_model(&name, &text)
}

/// The model files under `path`: the file itself, or every model file below a folder, sorted by path. Below a
/// folder a model file is a `*.toml` that is not TOML of another tool (see `is_model_text`); hidden folders and
/// build caches (a `CACHEDIR.TAG`, as in cargo's `target/`) are not entered, so `check .` in a repository works.
pub fn model_files(path: &Path) -> Result<Vec<std::path::PathBuf>, SpecError> {
    let name = path.display().to_string();
    let metadata = std::fs::metadata(path)
        .map_err(|error| SpecError::whole_file(&name, "", &format!("cannot read: {error}")))?;
    if !metadata.is_dir() {
        // A file, or something that is not one (a FIFO, a device): reading it says which.
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
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if entry_path.is_dir() {
                if !hidden && !entry_path.join("CACHEDIR.TAG").exists() {
                    folders.push(entry_path);
                }
            } else if entry_path
                .extension()
                .is_some_and(|extension| extension == "toml")
                // A file that cannot be read (a FIFO, a device, not UTF-8) is kept: checking it says why.
                && crate::input::read_text(&entry_path).map_or(true, |text| is_model_text(&text))
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
            "no model files here (a model file is a *.toml with a [clients] or [expect] table; other TOML, such as Cargo.toml, is skipped)",
        ));
    }
    Ok(files)
}

/// Whether a `*.toml` found in a folder is meant as a model file: TOML with none of a model's tables (Cargo.toml,
/// rustfmt.toml) is another tool's and skipped; anything else, broken TOML included, is checked, so a model with
/// a typo is reported rather than passed over.
pub fn is_model_text(text: &str) -> bool {
    const MODEL_TABLES: [&str; 9] = [
        "clients",
        "expect",
        "protocol",
        "broker",
        "consumer",
        "servers",
        "faults",
        "limits",
        "description",
    ];
    match text.parse::<toml::Table>() {
        Ok(table) => MODEL_TABLES.iter().any(|name| table.contains_key(*name)),
        Err(_) => true,
    }
}

/// Parse a model file's text; `file` names it in errors.
pub fn parse_model(file: &str, text: &str) -> Result<ModelFile, SpecError> {
    let raw: RawModel = toml::from_str(text).map_err(|error| toml_error(file, text, &error))?;
    let fail = |spanned_start: usize, field: &str, message: &str| {
        SpecError::at(file, text, spanned_start, field, message)
    };
    check_tables(&raw).map_err(|(at, field, message)| fail(at, field, message))?;
    let raw_protocol = raw
        .protocol
        .as_ref()
        .map(|protocol| protocol.get_ref())
        .cloned()
        .unwrap_or_default();
    let protocol_config =
        protocol_config(&raw_protocol).map_err(|(at, field, message)| fail(at, field, message))?;
    let clients =
        clients_config(&raw.clients).map_err(|(at, field, message)| fail(at, &field, &message))?;
    let (clients, bodies) = clients;
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
        .clients(clients)
        .processes(processes)
        .faults(raw.faults)
        .bodies(bodies);
    if let Some(queue) = queue {
        builder = builder.queue(queue);
    }
    let world = builder
        .build()
        .map_err(|error| world_error(file, text, error))?;
    let (expected, reached) = expectations(file, text, &raw.expect)?;

    Ok(ModelFile {
        path: file.to_string(),
        source_text: text.to_string(),
        description: raw.description,
        source: raw.source.unwrap_or_default(),
        world,
        expected,
        reached,
        limits: Limits {
            states_max: raw.limits.states_max,
            depth_max: raw.limits.depth_max,
        },
    })
}

/// A located error found after deserialisation: byte offset, field, what is allowed.
type Located<F = &'static str, M = &'static str> = (usize, F, M);

/// A TOML or serde error, located. serde's "missing field" has no span of its own: it is placed at the end of
/// the table that lacks the field (where it would be added) and says what that table needs.
fn toml_error(file: &str, text: &str, error: &toml::de::Error) -> SpecError {
    let offset = error.span().map_or(0, |span| span.start);
    let message = error.message().trim();
    if let Some(missing) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        // serde's span is the table's: a `[header]`'s, or for the top level the keys before the first header.
        // A file with no top-level keys starts with its first header, whose span is then the top level's too:
        // the top level's own required fields are never blamed on that table.
        let top_level = matches!(missing, "description" | "clients" | "expect");
        let header = error.span().filter(|span| {
            !top_level
                && text
                    .get(span.start..)
                    .is_some_and(|rest| rest.starts_with('['))
        });
        let (field, at) = match header {
            Some(span) => (
                format!("{}.{missing}", field_at(text, span.start)),
                span.end,
            ),
            // `description` belongs before the first table; a missing table can go at the end.
            None if missing == "description" => (missing.to_string(), 0),
            None => (missing.to_string(), text.len()),
        };
        let table = field.rsplit_once('.').map_or("", |(table, _)| table);
        let what = locate::required_fields(table);
        let kind = if table.is_empty() && missing != "description" {
            "table"
        } else {
            "field"
        };
        return SpecError::at(file, text, at, &field, &format!("missing {kind}: {what}"));
    }
    let message = if message.is_empty() {
        // toml leaves the message empty when the text ends where a value was due (`key =` on the last line).
        "a value is missing here (a string, number, boolean, array or table)"
    } else {
        message
    };
    SpecError::at(file, text, offset, &field_at(text, offset), message)
}

/// The tables that exclude each other: a queue model ([broker]) configures [consumer], never [protocol].
fn check_tables(raw: &RawModel) -> Result<(), Located> {
    if let (Some(_), Some(protocol)) = (&raw.broker, &raw.protocol) {
        return Err((
            protocol.span().start,
            "protocol",
            "a queue model ([broker]) configures its consumer in [consumer], not [protocol]",
        ));
    }
    if let (None, Some(consumer)) = (&raw.broker, &raw.consumer) {
        return Err((
            consumer.span().start,
            "consumer",
            "[consumer] belongs to a queue model: add a [broker] table",
        ));
    }
    Ok(())
}

/// `[protocol]`: the lease and fencing, checked against each other here, where their spans are.
fn protocol_config(raw_protocol: &raw::RawProtocol) -> Result<ProtocolConfig, Located> {
    let lease = match &raw_protocol.lease_ms {
        None => Lease::None,
        Some(ms) if *ms.get_ref() == 0 => {
            return Err((
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
        return Err((
            spanned.span().start,
            "protocol.fencing",
            "fencing without a lease is contradictory: nothing can take a claim over, so there is nothing to fence (set protocol.lease-ms)",
        ));
    }
    Ok(ProtocolConfig {
        claim: raw_protocol.claim.claim(),
        lease,
        fencing,
        fingerprint: raw_protocol.fingerprint,
    })
}

/// `[clients]` and its operations, with the distinct bodies they send.
fn clients_config(
    raw_clients: &raw::RawClients,
) -> Result<(ClientsConfig, Vec<Body>), Located<String, String>> {
    let own =
        |(at, field, message): Located<&'static str, String>| (at, field.to_string(), message);
    let count = positive(
        &raw_clients.count,
        "clients.count",
        ClientsConfig::COUNT_MAX,
    )
    .map_err(own)?;
    let attempts_max =
        positive(&raw_clients.attempts_max, "clients.max-attempts", 15).map_err(own)?;
    let operations_at = raw_clients.count.span().start;
    if raw_clients.operations.is_empty() || raw_clients.operations.len() > 8 {
        return Err((
            operations_at,
            "clients.operations".to_string(),
            format!(
                "between 1 and 8 [[clients.operations]] per client (found {})",
                raw_clients.operations.len()
            ),
        ));
    }
    let mut bodies: Vec<Body> = Vec::new();
    let mut operations: Vec<Operation> = Vec::new();
    for (index, operation) in raw_clients.operations.iter().enumerate() {
        let field = format!("clients.operations[{}]", index + 1);
        let (raw_text, value) = body::operation_body(operation)
            .map_err(|(at, inner, message)| (at, format!("{field}.{inner}"), message))?;
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
        let key = match &operation.get_ref().same_key_as {
            None => index as u8 + 1,
            Some(other) => {
                let target = *other.get_ref();
                if target == 0 || target as usize > index {
                    return Err((
                        other.span().start,
                        format!("{field}.same-key-as"),
                        format!("must name an earlier operation, 1 to {index} (found {target})"),
                    ));
                }
                operations[target as usize - 1].key
            }
        };
        operations.push(Operation {
            body: body as u8,
            key,
        });
    }
    let clients = ClientsConfig {
        count,
        attempts_max,
        key_policy: raw_clients.key_policy,
        operations,
    };
    Ok((clients, bodies))
}

/// `[expect]`: the declared verdicts (at least one) and the scenarios the search must reach.
fn expectations(
    file: &str,
    text: &str,
    raw_expect: &raw::RawExpect,
) -> Result<(BTreeMap<WorldProperty, Verdict>, Vec<Event>), SpecError> {
    let mut expected = BTreeMap::new();
    for (property, verdict) in raw_expect.verdicts() {
        if let Some(verdict) = verdict {
            expected.insert(property, *verdict);
        }
    }
    if expected.is_empty() {
        return Err(SpecError::at(
            file,
            text,
            field_offset(text, "expect").unwrap_or(0),
            "expect",
            &format!(
                "declare at least one property as \"holds\" or \"violated\" (one of: {})",
                WorldProperty::names()
            ),
        ));
    }
    let mut reached = Vec::new();
    for name in &raw_expect.reached {
        let event = Event::scenario_by_name(name.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = Event::scenarios().map(Event::scenario_name).collect();
            SpecError::at(
                file,
                text,
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
    Ok((expected, reached))
}

/// A world the builder refused, at the field it names (or the nearest table written; the file's start when
/// neither is written).
fn world_error(file: &str, text: &str, error: WorldError) -> SpecError {
    let at = field_offset(text, error.field).unwrap_or(0);
    SpecError::at(file, text, at, error.field, &error.message)
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
