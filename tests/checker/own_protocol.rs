//! The "check your own protocol" example gets the verdicts it expects (it also runs as
//! `cargo run --example own_protocol`), and its model can be walked by hand in the explorer's server, which
//! knows nothing of it but the `Model` trait: the page's requests are driven here over HTTP, as the page sends
//! them.

#[cfg(feature = "cli")]
use crate::explore_support;
#[path = "../../examples/own_protocol.rs"]
#[allow(dead_code)] // its `main`
#[allow(clippy::module_inception)] // the example, in the module of its test
mod own_protocol;

#[test]
fn the_lock_service_example_gets_its_verdicts() {
    assert!(own_protocol::verdicts_as_expected());
}

/// The explorer's server needs the `cli` feature (axum).
#[cfg(feature = "cli")]
mod by_hand {
    use super::{explore_support, own_protocol};
    use explore_support::{post, request};
    use serde_json::{json, Value};

    /// Serve the lock service (fenced or not); its `host:port`.
    fn start(fencing: bool, traces: &std::path::Path) -> String {
        explore_support::start(own_protocol::explorer(fencing, traces))
    }

    /// Take the enabled action whose text is `text` (the default `describe_step`: the action's debug form), at the end of `choices`.
    fn take(host: &str, choices: &mut Vec<u64>, text: &str) -> Value {
        let reply = post(host, "/api/path", json!({ "actions": choices }));
        let offered: Vec<&str> = reply["enabled"]
            .as_array()
            .unwrap()
            .iter()
            .map(|choice| choice["text"].as_str().unwrap())
            .collect();
        let index = offered
            .iter()
            .position(|offer| *offer == text)
            .unwrap_or_else(|| panic!("'{text}' is not among {offered:?}"));
        choices.push(index as u64);
        post(host, "/api/path", json!({ "actions": choices }))
    }

    /// The counterexample by hand: C0 takes the lease, is paused past it, C1 takes it and writes, C0 wakes and
    /// writes. The steps' violations, as the page shows them.
    fn stale_write_walk(host: &str) -> (Vec<u64>, Vec<Value>) {
        let mut choices = Vec::new();
        let mut reply = Value::Null;
        for text in ["Acquire(0)", "Expire", "Acquire(1)", "Write(1)", "Write(0)"] {
            reply = take(host, &mut choices, text);
        }
        let steps = reply["path"]["steps"].as_array().unwrap().clone();
        (choices, steps)
    }

    #[test]
    fn your_own_model_is_walked_by_hand_through_the_explorers_server() {
        let traces = tempfile::tempdir().unwrap();
        let unfenced = start(false, traces.path());
        let (status, page) = request(&unfenced, "GET", "/", &json!(null));
        assert_eq!(status, 200);
        assert!(page.contains("own protocol: a lock service"));
        assert!(page.contains("<div id=\"traces\">"), "save and open shown");
        assert!(
            page.contains("<option value=\"no stale write\">"),
            "the page offers the properties"
        );

        let (choices, steps) = stale_write_walk(&unfenced);
        assert_eq!(steps.len(), 5);
        let violated: Vec<&Value> = steps.iter().map(|step| &step["violated"]).collect();
        assert_eq!(
            violated[..4],
            [&json!([]); 4],
            "nothing broken before the stale write"
        );
        assert_eq!(violated[4], &json!(["no stale write"]));
        // The lease expiring is the walk's one fault.
        let faults: Vec<bool> = steps
            .iter()
            .map(|s| s["fault"].as_bool().unwrap())
            .collect();
        assert_eq!(faults, [false, true, false, false, false]);

        // The twin: the same walk on the fenced design breaks nothing (the stale write is refused).
        let fenced = start(true, traces.path());
        let (_, fenced_steps) = stale_write_walk(&fenced);
        assert!(fenced_steps
            .iter()
            .all(|step| step["violated"] == json!([])));

        // A choice that is not an enabled action's index is refused at its step.
        let (status, text) = request(
            &unfenced,
            "POST",
            "/api/path",
            &json!({ "actions": [0, 99] }),
        );
        assert_eq!(status, 400);
        assert!(text.contains("step 2 is not enabled"), "{text}");

        // Saved as a trace file, deciding the property it violates; opened again, it gives the same choices.
        let saved = post(
            &unfenced,
            "/api/save",
            json!({ "actions": choices, "property": "" }),
        );
        assert_eq!(saved["property"], "no stale write");
        let file = traces
            .path()
            .join("lock-service-fencing-false.by-hand.json");
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(saved["trace"].as_str().unwrap(), text);
        assert!(text.contains("\"found_by\": \"by-hand\""), "{text}");
        let opened = post(&unfenced, "/api/open", json!({ "text": text }));
        assert_eq!(opened["actions"], json!(choices));
        // The fenced design's server refuses a trace of the other text.
        let (status, refusal) = request(&fenced, "POST", "/api/open", &json!({ "text": text }));
        assert_eq!(status, 400);
        assert!(refusal.contains("another model text"), "{refusal}");
        // An unknown property is refused with the known ones named.
        let (status, refusal) = request(
            &unfenced,
            "POST",
            "/api/save",
            &json!({ "actions": choices, "property": "no such" }),
        );
        assert_eq!(status, 400);
        assert!(
            refusal.contains("expected one of: no stale write, every client writes"),
            "{refusal}"
        );
    }

    /// Issue 31 item 8: a DNS-rebinding page reaches the server under its own host name, and a page of another
    /// origin has no token. Both are refused; the twins (this host, this token) are served.
    #[test]
    fn only_this_servers_host_and_token_are_served() {
        use explore_support::{page_token, raw_request};
        let traces = tempfile::tempdir().unwrap();
        let host = start(false, traces.path());
        let port = host.rsplit_once(':').unwrap().1;
        let save = json!({ "actions": [], "property": "" });
        for foreign in [
            format!("rebound.example.com:{port}"),
            format!("127.0.0.1:{}", port.parse::<u16>().unwrap().wrapping_add(1)),
            "127.0.0.1".to_string(),
            String::new(),
        ] {
            let (status, text) = raw_request(&host, &foreign, None, "GET", "/", &Value::Null);
            assert_eq!(status, 403, "Host '{foreign}': {text}");
            let (status, _) = raw_request(
                &host,
                &foreign,
                None,
                "POST",
                "/api/path",
                &json!({ "actions": [] }),
            );
            assert_eq!(status, 403, "Host '{foreign}'");
        }
        for own in [
            host.clone(),
            format!("localhost:{port}"),
            format!("127.9.9.9:{port}"),
        ] {
            let (status, text) = raw_request(
                &host,
                &own,
                None,
                "POST",
                "/api/path",
                &json!({ "actions": [] }),
            );
            assert_eq!(status, 200, "Host '{own}': {text}");
        }
        let (status, text) = raw_request(&host, &host, None, "POST", "/api/save", &save);
        assert_eq!(status, 403, "{text}");
        assert!(text.contains("token"), "{text}");
        let (status, _) = raw_request(&host, &host, Some("0123"), "POST", "/api/save", &save);
        assert_eq!(status, 403, "a wrong token");
        let token = page_token(&host);
        assert_eq!(token.len(), 32);
        let (status, text) = raw_request(&host, &host, Some(&token), "POST", "/api/save", &save);
        assert_eq!(status, 200, "{text}");
        // Another run, another token.
        assert_ne!(page_token(&start(false, traces.path())), token);
    }
}
