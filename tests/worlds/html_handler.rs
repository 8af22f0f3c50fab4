//! The trace explorer's page for your own handler: `report::html::trace_page` takes any `check::Model`, so a
//! handler's counterexample gets the same page as a model file's, its panels drawn from the handler world's state
//! view (the store's rows, the effects, the processes).

use retrylab::check::Model;
use retrylab::handler::{Handler, HandlerFaults, HandlerWorld, Reply, Request, Store, StoreError};
use retrylab::report::html::{trace_page, PageText};

/// Looks the key up, then pays and records it: a retry racing the original pays twice.
struct CheckThenPay;

impl Handler for CheckThenPay {
    async fn handle<S: Store>(&self, db: &mut S, req: &Request) -> Reply {
        let pay = async {
            if let Some(done) = db.get("keys", &req.key).await? {
                return Ok(Reply::new(200, done));
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

fn world() -> HandlerWorld<CheckThenPay> {
    let faults = HandlerFaults {
        early_timeouts: 1,
        ..HandlerFaults::default()
    };
    HandlerWorld::new(CheckThenPay, 1, r#"{"amount":500}"#)
        .processes(2)
        .faults(faults)
}

fn page(
    world: &HandlerWorld<CheckThenPay>,
    path: &[<HandlerWorld<CheckThenPay> as Model>::Action],
) -> String {
    let text = PageText {
        title: "check-then-pay",
        subtitle: "a retry racing the original",
        svg: None,
        replay_command: Some("cargo test --test worlds html_handler::"),
    };
    trace_page(world, path, None, &text).expect("the counterexample runs")
}

#[test]
fn a_handler_counterexample_page_shows_the_second_payment_at_its_last_step() {
    let world = world();
    let report = world.checker().bfs();
    let path = report
        .counterexample("no-duplicate-effect")
        .expect("check-then-pay pays twice");
    let whole = page(&world, path);
    // Both payments, for the same operation, in the effects panel; the store's record beside them.
    assert!(whole.contains("payments #1"), "{whole}");
    assert!(whole.contains("payments #2"), "{whole}");
    assert!(whole.contains("keys[k0]"), "{whole}");
    assert!(
        whole.contains("cargo test --test worlds html_handler::"),
        "{whole}"
    );
    // Its twin: one step short of the end, the second payment is not committed yet, so no state shows it.
    let short = page(&world, &path[..path.len() - 1]);
    assert!(short.contains("payments #1"), "{short}");
    assert!(!short.contains("payments #2"), "{short}");
}
