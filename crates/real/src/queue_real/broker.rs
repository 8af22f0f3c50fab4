//! NATS JetStream as the queue world's broker (`async-nats`): a stream with a duplicate window (the producer
//! dedup by `Nats-Msg-Id`) and one durable pull consumer shared by every consumer process (a work queue), with
//! explicit acks, an ack wait that plays the visibility timeout and a max-deliver that plays the maximum receive
//! count. Its calls are blocking: each runs as a task on the broker's own runtime, driven by a thread of its own
//! (so the client's connection is served between calls too: in-progress acks go out while the caller sleeps),
//! and the store calls around them (the `postgres` crate blocks on a runtime of its own) never run inside one.

use super::consumer::Delivery;
use super::relay::{Published, Publisher};
use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, AckKind};
use futures_util::StreamExt;
use std::future::Future;
use std::time::Duration;

/// The header that carries the event id (given at the event's creation), apart from the dedup id.
pub const EVENT_ID_HEADER: &str = "Event-Id";

/// How long a JetStream API call (create a stream, a consumer's info, an ack's confirmation) may take. The
/// client's default, 5 s, was once exceeded in CI by a grid of six cells on a loaded two-core machine ("jetstream
/// request timed out"): a slow answer is not what these runs measure, a missing one is.
const API_TIMEOUT: Duration = Duration::from_secs(60);

/// A current-thread runtime driven by a thread of its own, until dropped.
struct Runtime {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Runtime {
    fn start() -> Result<Runtime, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(text)?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("nats-client".to_string())
            .spawn(move || {
                let _ = runtime.block_on(stopped);
            })
            .map_err(text)?;
        Ok(Runtime {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Run `future` on the runtime and wait for its result.
    fn run<T: Send + 'static>(&self, future: impl Future<Output = T> + Send + 'static) -> T {
        let (done, result) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = done.send(future.await);
        });
        result
            .recv()
            .expect("the broker's runtime runs until the broker is dropped")
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A connection to a JetStream server.
pub struct Broker {
    runtime: Runtime,
    client: async_nats::Client,
    context: jetstream::Context,
}

/// A queue's settings: the broker knobs a queue model's timing maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueOptions {
    /// JetStream's `duplicate_window` (at least 100 ms).
    pub duplicate_window: Duration,
    /// The consumer's `ack_wait`: a delivery not acked by then is redelivered (the visibility timeout).
    pub ack_wait: Duration,
    /// The consumer's `max_deliver` (the maximum receive count).
    pub max_deliver: i64,
}

/// A stream with its subject and its pull consumer.
pub struct Queue<'a> {
    broker: &'a Broker,
    stream: String,
    subject: String,
    consumer: jetstream::consumer::PullConsumer,
}

/// A delivery and the broker's handle on it (to ack it, or to say the consumer is still at work).
pub struct Received {
    pub delivery: Delivery,
    pub message: jetstream::Message,
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

impl Broker {
    pub fn connect(url: &str) -> Result<Broker, String> {
        let runtime = Runtime::start()?;
        let address = url.to_string();
        let (client, context) = runtime
            .run(async move {
                let client = async_nats::connect(address).await.map_err(text)?;
                let mut context = jetstream::new(client.clone());
                context.set_timeout(API_TIMEOUT);
                Ok::<_, String>((client, context))
            })
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        Ok(Broker {
            runtime,
            client,
            context,
        })
    }

    /// A new stream `name` (subject `<name>.events`, in memory) and its durable pull consumer.
    pub fn queue(&self, name: &str, options: QueueOptions) -> Result<Queue<'_>, String> {
        let subject = format!("{name}.events");
        let stream_config = jetstream::stream::Config {
            name: name.to_string(),
            subjects: vec![subject.clone()],
            storage: jetstream::stream::StorageType::Memory,
            duplicate_window: options.duplicate_window,
            ..Default::default()
        };
        let consumer_config = pull::Config {
            durable_name: Some("consumers".to_string()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: options.ack_wait,
            max_deliver: options.max_deliver,
            ..Default::default()
        };
        let context = self.context.clone();
        let consumer = self
            .runtime
            .run(async move {
                let stream = context.create_stream(stream_config).await.map_err(text)?;
                stream.create_consumer(consumer_config).await.map_err(text)
            })
            .map_err(|e| format!("creating stream {name} and its consumer: {e}"))?;
        Ok(Queue {
            broker: self,
            stream: name.to_string(),
            subject,
            consumer,
        })
    }
}

impl Queue<'_> {
    /// Publish an event and wait for the broker's answer (stored, or recognised as a duplicate).
    pub fn publish(
        &self,
        event_id: &str,
        message_id: Option<&str>,
        body: &str,
    ) -> Result<Published, String> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(EVENT_ID_HEADER, event_id);
        if let Some(id) = message_id {
            headers.insert(async_nats::header::NATS_MESSAGE_ID, id);
        }
        let context = self.broker.context.clone();
        let subject = self.subject.clone();
        let payload = body.to_string().into();
        let event = event_id.to_string();
        let ack = self.broker.runtime.run(async move {
            context
                .publish_with_headers(subject, headers, payload)
                .await
                .map_err(|e| format!("publishing {event}: {e}"))?
                .await
                .map_err(|e| format!("publishing {event}, the broker's answer: {e}"))
        })?;
        Ok(Published {
            sequence: ack.sequence,
            duplicate: ack.duplicate,
        })
    }

    /// The next delivery, waiting up to `wait` for one (a redelivery only comes once its ack wait is over).
    pub fn fetch(&self, wait: Duration) -> Result<Option<Received>, String> {
        let consumer = self.consumer.clone();
        let message = self
            .broker
            .runtime
            .run(async move {
                let mut batch = consumer
                    .batch()
                    .max_messages(1)
                    .expires(wait)
                    .messages()
                    .await
                    .map_err(text)?;
                batch.next().await.transpose().map_err(text)
            })
            .map_err(|e| format!("fetching a delivery: {e}"))?;
        let Some(message) = message else {
            return Ok(None);
        };
        let info = message.info().map_err(text)?;
        let event_id = message
            .headers
            .as_ref()
            .and_then(|headers| headers.get(EVENT_ID_HEADER))
            .map(|value| value.as_str().to_string())
            .ok_or_else(|| format!("a message without {EVENT_ID_HEADER}"))?;
        let delivery = Delivery {
            event_id,
            stream_sequence: info.stream_sequence,
            consumer_sequence: info.consumer_sequence,
            delivered: info.delivered as u64,
            body: String::from_utf8_lossy(&message.payload).into_owned(),
        };
        Ok(Some(Received { delivery, message }))
    }

    /// Ack a delivery and wait for the broker to confirm it (the message is then deleted for the consumer).
    pub fn ack(&self, message: &jetstream::Message) -> Result<(), String> {
        let message = message.clone();
        self.broker
            .runtime
            .run(async move { message.double_ack().await })
            .map_err(|e| format!("acking a delivery: {e}"))
    }

    /// Tell the broker the delivery's consumer is still at work: its ack wait starts again (`+WPI`).
    pub fn in_progress(&self, message: &jetstream::Message) -> Result<(), String> {
        let message = message.clone();
        let client = self.broker.client.clone();
        self.broker
            .runtime
            .run(async move {
                message.ack_with(AckKind::Progress).await?;
                // Flushed, so the broker has it before the caller's next step.
                client.flush().await.map_err(|e| e.into())
            })
            .map_err(|e: async_nats::Error| text(e))
    }

    /// Messages the consumer still has to take: not delivered yet, or delivered and neither acked nor given up
    /// (a crashed or unacked delivery waits there for its redelivery).
    pub fn outstanding(&self) -> Result<u64, String> {
        let consumer = self.consumer.clone();
        self.broker
            .runtime
            .run(async move { consumer.get_info().await })
            .map(|info| info.num_pending + info.num_ack_pending as u64)
            .map_err(|e| format!("asking the consumer's pending count: {e}"))
    }

    /// Remove the stream (and its consumer).
    pub fn delete(self) -> Result<(), String> {
        let context = self.broker.context.clone();
        let stream = self.stream.clone();
        self.broker
            .runtime
            .run(async move { context.delete_stream(stream).await })
            .map(drop)
            .map_err(|e| format!("deleting stream {}: {e}", self.stream))
    }
}

impl Publisher for Queue<'_> {
    fn publish(
        &mut self,
        event_id: &str,
        message_id: Option<&str>,
        body: &str,
    ) -> Result<Published, String> {
        Queue::publish(self, event_id, message_id, body)
    }
}
