//! The README's "Check your own handler" example, compiled and run here so that it cannot drift: the lines
//! between the markers are the code block of the README and of the book's handler chapter
//! (`docs/src/handler.md`), word for word, but for the `should_panic` line (in the README the test fails, which
//! is its point).

// README example: begin
// $ cargo add --dev retrylab --path ../retrylab        (then: cargo test --test pay)
// tests/pay.rs
use retrylab::handler::{Handler, HandlerFaults, HandlerWorld, Reply, Request, Store, StoreError};

/// Looks the key up, then pays and records it: nothing holds the key between the look and the payment.
struct CheckThenPay;

impl Handler for CheckThenPay {
    async fn handle<S: Store>(&self, db: &mut S, req: &Request) -> Reply {
        let pay = async {
            if let Some(done) = db.get("keys", &req.key).await? {
                return Ok(Reply::new(200, done)); // a retry: replay the stored response
            }
            db.begin().await?;
            let id = db.insert_effect("payments", &req.body).await?;
            let done = format!("{{\"payment\":{id}}}");
            db.insert_if_absent("keys", &req.key, &done).await?;
            db.commit().await?;
            Ok::<_, StoreError>(Reply::new(201, done))
        };
        pay.await.unwrap_or_else(|_| Reply::new(500, "{}"))
    }
}

#[test]
#[should_panic(expected = "no-duplicate-effect is violated")]
fn a_retry_racing_the_original_pays_once() {
    // One client that may time out once too early, two server processes, the network and store as modelled.
    let faults = HandlerFaults {
        early_timeouts: 1,
        ..HandlerFaults::default()
    };
    let world = HandlerWorld::new(CheckThenPay, 1, r#"{"amount":500}"#)
        .processes(2)
        .faults(faults);
    world.assert_holds("no-duplicate-effect");
}
// README example: end

/// What the failing test prints: the counterexample step by step, ending at the duplicate, and how to replay it.
#[test]
fn the_failure_prints_the_shortest_counterexample_and_the_replay_command() {
    let panic = std::panic::catch_unwind(a_retry_racing_the_original_pays_once).unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    println!("{message}");
    assert!(message.contains("the shortest counterexample"), "{message}");
    assert!(message.contains("sends attempt 1"), "{message}");
    assert!(message.contains("times out"), "{message}");
    let last_step = message.lines().rev().nth(1).unwrap();
    assert!(last_step.ends_with("<-- DUPLICATE EFFECT"), "{message}");
    assert!(
        message.ends_with(
            "replay: cargo test --test worlds -- \
             readme_handler::the_failure_prints_the_shortest_counterexample_and_the_replay_command --exact"
        ),
        "{message}"
    );
    // The output the README and the chapter show (their elided and replay lines aside) is this output.
    for (name, text) in DOCS {
        for shown in block(text, "```text\n").lines() {
            if !shown.trim_start().starts_with("...") && !shown.starts_with("replay:") {
                assert!(
                    message.lines().any(|line| line == shown),
                    "{name} shows {shown:?}"
                );
            }
        }
    }
}

/// The files that show the example, each in its section "## Check your own handler".
const DOCS: [(&str, &str); 2] = [
    ("README.md", include_str!("../../README.md")),
    (
        "docs/src/handler.md",
        include_str!("../../docs/src/handler.md"),
    ),
];

/// The first block opening with `fence` in the text's "Check your own handler" section.
fn block(text: &str, fence: &str) -> String {
    let section = &text[text.find("## Check your own handler").expect("the section")..];
    let start = section.find(fence).expect("the block") + fence.len();
    let end = start + section[start..].find("```").expect("the block's end");
    section[start..end].to_string()
}

#[test]
fn the_readme_example_is_this_file() {
    let this = include_str!("readme_handler.rs");
    let begin =
        this.find("// README example: begin\n").unwrap() + "// README example: begin\n".len();
    let end = this.find("// README example: end").unwrap();
    let code: String = this[begin..end]
        .lines()
        .filter(|line| !line.contains("should_panic"))
        .map(|line| format!("{line}\n"))
        .collect();
    for (name, text) in DOCS {
        assert_eq!(
            block(text, "```rust\n"),
            code,
            "{name} and tests/worlds/readme_handler.rs differ"
        );
    }
    assert!(
        code.lines().count() <= 60,
        "the README promises at most 60 lines"
    );
}
