//! The one way to make a world: set the knobs, then `build()` checks them together. A model file goes through
//! it (`crate::spec`, which reports errors with their place in the file first), and so does a test that wants a
//! world's twin: `world.to_builder().fencing(false).build()`.

use super::config::{Body, ClientsConfig, Faults, Operation};
use super::world::{Http, Queue, World, WorldOf};
use crate::protocol::queue::COPY_DELIVERY_BASE;
use crate::protocol::{
    self, Claim, Fingerprint, FingerprintPolicy, KeyPolicy, KeyScope, KeyStore, Lease, OnError,
    ProtocolConfig, Provider, QueueConfig,
};

/// Why a world cannot be built: the knob (by its model-file name) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct WorldError {
    pub field: &'static str,
    pub message: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> Result<(), WorldError> {
    Err(WorldError {
        field,
        message: message.into(),
    })
}

/// A count that must be between 1 and `max`.
fn within(field: &'static str, value: usize, max: usize) -> Result<(), WorldError> {
    if value == 0 || value > max {
        return invalid(
            field,
            format!("must be between 1 and {max} (found {value})"),
        );
    }
    Ok(())
}

/// The knobs of a world, unchecked. Without `queue` it builds the idempotency-key world; with it, the queue
/// world, whose consumer takes no HTTP knob (claim, lease, fencing, key scope, key store, on-error).
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorldBuilder {
    protocol: ProtocolConfig,
    key_scope: KeyScope,
    key_store: KeyStore,
    on_error: OnError,
    queue: Option<QueueConfig>,
    provider: Provider,
    clients: ClientsConfig,
    processes: u8,
    faults: Faults,
    bodies: Vec<Body>,
}

impl Default for WorldBuilder {
    /// The article's design with one client, one process and no faults; operations and bodies still to give.
    fn default() -> Self {
        WorldBuilder {
            protocol: ProtocolConfig::ARTICLE,
            key_scope: KeyScope::PerClient,
            key_store: KeyStore::SameDatabase,
            on_error: OnError::DeleteKey,
            queue: None,
            provider: Provider::None,
            clients: ClientsConfig {
                count: 1,
                attempts_max: 1,
                key_policy: KeyPolicy::PerOperation,
                operations: Vec::new(),
            },
            processes: 1,
            faults: Faults::default(),
            bodies: Vec::new(),
        }
    }
}

impl World {
    pub fn builder() -> WorldBuilder {
        WorldBuilder::default()
    }

    /// A builder holding this world's knobs.
    pub fn to_builder(&self) -> WorldBuilder {
        match self {
            World::Http(world) => {
                let http = world.server;
                WorldBuilder {
                    protocol: http.protocol,
                    key_scope: http.key_scope,
                    key_store: http.key_store,
                    on_error: http.on_error,
                    ..WorldBuilder::shared(world)
                }
            }
            World::Queue(world) => WorldBuilder {
                queue: Some(world.server.config),
                ..WorldBuilder::shared(world)
            },
        }
    }
}

impl WorldBuilder {
    fn shared<S>(world: &WorldOf<S>) -> WorldBuilder {
        WorldBuilder {
            provider: world.provider,
            clients: world.clients.clone(),
            processes: world.processes,
            faults: world.faults,
            bodies: world.bodies.clone(),
            ..WorldBuilder::default()
        }
    }

    pub fn protocol(mut self, protocol: ProtocolConfig) -> Self {
        self.protocol = protocol;
        self
    }

    pub fn claim(mut self, claim: Claim) -> Self {
        self.protocol.claim = claim;
        self
    }

    pub fn lease(mut self, lease: Lease) -> Self {
        self.protocol.lease = lease;
        self
    }

    pub fn fencing(mut self, fencing: bool) -> Self {
        self.protocol.fencing = fencing;
        self
    }

    pub fn fingerprint(mut self, fingerprint: FingerprintPolicy) -> Self {
        self.protocol.fingerprint = fingerprint;
        self
    }

    pub fn key_scope(mut self, key_scope: KeyScope) -> Self {
        self.key_scope = key_scope;
        self
    }

    pub fn key_store(mut self, key_store: KeyStore) -> Self {
        self.key_store = key_store;
        self
    }

    pub fn on_error(mut self, on_error: OnError) -> Self {
        self.on_error = on_error;
        self
    }

    /// Make it a queue world with these broker and consumer knobs.
    pub fn queue(mut self, queue: QueueConfig) -> Self {
        self.queue = Some(queue);
        self
    }

    /// The external call inside the operation (a queue consumer's `external-effect`).
    pub fn provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    pub fn clients(mut self, clients: ClientsConfig) -> Self {
        self.clients = clients;
        self
    }

    pub fn client_count(mut self, count: u8) -> Self {
        self.clients.count = count;
        self
    }

    pub fn attempts_max(mut self, attempts_max: u8) -> Self {
        self.clients.attempts_max = attempts_max;
        self
    }

    pub fn processes(mut self, processes: u8) -> Self {
        self.processes = processes;
        self
    }

    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// The distinct bodies; operations refer to them by index.
    pub fn bodies(mut self, bodies: Vec<Body>) -> Self {
        self.bodies = bodies;
        self
    }

    /// Check the knobs together and make the world.
    pub fn build(self) -> Result<World, WorldError> {
        self.check_shared()?;
        if self.protocol.fencing && self.protocol.lease == Lease::None {
            invalid(
                "protocol.fencing",
                "fencing without a lease is contradictory: nothing can take a claim over, so there is nothing to fence (set protocol.lease-ms)",
            )?;
        }
        match self.queue {
            None => {
                self.check_http()?;
                Ok(World::Http(self.world(Http {
                    protocol: self.protocol,
                    key_scope: self.key_scope,
                    key_store: self.key_store,
                    on_error: self.on_error,
                })))
            }
            Some(config) => {
                self.check_queue()?;
                Ok(World::Queue(self.world(Queue { config })))
            }
        }
    }

    /// The shared parts with `server`, bodies interned.
    fn world<S>(&self, server: S) -> WorldOf<S> {
        let (fingerprints, body_classes) = self.interned_bodies();
        WorldOf {
            clients: self.clients.clone(),
            processes: self.processes,
            faults: self.faults,
            provider: self.provider,
            bodies: self.bodies.clone(),
            body_classes,
            fingerprints,
            server,
        }
    }

    fn check_shared(&self) -> Result<(), WorldError> {
        let clients = &self.clients;
        within(
            "clients.count",
            clients.count.into(),
            ClientsConfig::COUNT_MAX.into(),
        )?;
        within("clients.max-attempts", clients.attempts_max.into(), 15)?;
        within("clients.operations", clients.operations.len(), 8)?;
        within("servers.processes", self.processes.into(), 4)?;
        let bodies = self.bodies.len();
        if let Some(Operation { body, .. }) = clients
            .operations
            .iter()
            .find(|operation| operation.body as usize >= bodies)
        {
            invalid(
                "clients.operations",
                format!("body {body} does not exist ({bodies} bodies)"),
            )?;
        }
        Ok(())
    }

    fn check_http(&self) -> Result<(), WorldError> {
        let queue_faults = [
            ("faults.republishes", self.faults.republishes),
            ("faults.window-expiries", self.faults.window_expiries),
            ("faults.producer-restarts", self.faults.producer_restarts),
        ];
        if let Some((field, _)) = queue_faults.iter().find(|(_, budget)| *budget > 0) {
            invalid(
                field,
                "only a queue model ([broker]) republishes events: must be 0 (or absent) in an HTTP model",
            )?;
        }
        Ok(())
    }

    fn check_queue(&self) -> Result<(), WorldError> {
        let http_knobs = (self.protocol, self.key_scope, self.key_store, self.on_error);
        let defaults = WorldBuilder::default();
        if http_knobs
            != (
                defaults.protocol,
                defaults.key_scope,
                defaults.key_store,
                defaults.on_error,
            )
        {
            invalid(
                "protocol",
                "a queue world's consumer takes no HTTP knob (claim, lease, fencing, fingerprint, key scope, key store, on-error)",
            )?;
        }
        if self.clients.key_policy != KeyPolicy::PerOperation {
            invalid(
                "clients.key-policy",
                "must be \"per-operation\" (or absent) in a queue model, which keys its inbox by consumer.dedup-key (\"delivery-number\" is the per-attempt key)",
            )?;
        }
        if self.clients.attempts_max >= COPY_DELIVERY_BASE {
            invalid(
                "clients.max-attempts",
                format!(
                    "a queue model allows at most {} deliveries (the broker's maximum receive count)",
                    COPY_DELIVERY_BASE - 1
                ),
            )?;
        }
        if self.faults.handler_errors > 0 {
            invalid(
                "faults.handler-errors",
                "must be 0 (or absent) in a queue model: its consumer does not fail with a 500; use crashes",
            )?;
        }
        if self.faults.republishes > 4 {
            invalid(
                "faults.republishes",
                format!(
                    "must be between 0 and 4 (found {})",
                    self.faults.republishes
                ),
            )?;
        }
        Ok(())
    }

    /// Each body's interned fingerprint under the fingerprint policy, and its semantic class (equal normalised
    /// JSON). The state stores these small indexes instead of 32-byte hashes.
    fn interned_bodies(&self) -> (Vec<u8>, Vec<u8>) {
        let prints: Vec<Fingerprint> = self
            .bodies
            .iter()
            .map(|body| {
                protocol::fingerprint(self.protocol.fingerprint, body.text.as_bytes(), &body.json)
            })
            .collect();
        let canonical: Vec<String> = self
            .bodies
            .iter()
            .map(|body| protocol::canonical_json(&body.json))
            .collect();
        (intern(&prints), intern(&canonical))
    }
}

/// Each item's index among the distinct items, in order of first appearance.
fn intern<T: PartialEq>(items: &[T]) -> Vec<u8> {
    let mut distinct: Vec<&T> = Vec::new();
    items
        .iter()
        .map(
            |item| match distinct.iter().position(|seen| *seen == item) {
                Some(index) => index as u8,
                None => {
                    distinct.push(item);
                    (distinct.len() - 1) as u8
                }
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_model;

    fn load(name: &str) -> World {
        let path = crate::repository_file("models").join(name);
        load_model(&path).expect("a shipped model").world
    }

    #[test]
    fn a_world_rebuilt_from_its_builder_is_itself() {
        for name in ["lease-fenced.toml", "queue-inbox-same-transaction.toml"] {
            let world = load(name);
            assert_eq!(world.to_builder().build().as_ref(), Ok(&world), "{name}");
        }
    }

    #[test]
    fn the_builder_refuses_what_no_world_can_be() {
        let http = load("lease-fenced.toml");
        let field = |builder: WorldBuilder| builder.build().expect_err("refused").field;
        assert_eq!(
            field(http.to_builder().lease(Lease::None)),
            "protocol.fencing"
        );
        let republishes = Faults {
            republishes: 1,
            ..http.faults()
        };
        assert_eq!(
            field(http.to_builder().faults(republishes)),
            "faults.republishes"
        );
        assert_eq!(field(http.to_builder().processes(0)), "servers.processes");
        let queue = load("queue-inbox-same-transaction.toml");
        assert_eq!(
            field(queue.to_builder().key_scope(KeyScope::Global)),
            "protocol"
        );
        assert_eq!(
            field(queue.to_builder().attempts_max(COPY_DELIVERY_BASE)),
            "clients.max-attempts"
        );
    }

    #[test]
    fn a_changed_fingerprint_policy_recomputes_the_fingerprints() {
        let world = load("raw-fingerprint-reserialised.toml");
        let normalized = world
            .to_builder()
            .fingerprint(FingerprintPolicy::Normalized)
            .build()
            .unwrap();
        let World::Http(raw) = &world else {
            panic!("an HTTP model")
        };
        let World::Http(normalized) = &normalized else {
            panic!("an HTTP model")
        };
        // The re-serialised body differs byte for byte, not as JSON.
        assert_ne!(raw.fingerprints[0], raw.fingerprints[1]);
        assert_eq!(normalized.fingerprints[0], normalized.fingerprints[1]);
    }
}
