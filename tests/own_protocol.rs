//! The "check your own protocol" example gets the verdicts it expects (it also runs as
//! `cargo run --example own_protocol`).

#[path = "../examples/own_protocol.rs"]
#[allow(dead_code)] // its `main`
mod own_protocol;

#[test]
fn the_lock_service_example_gets_its_verdicts() {
    assert!(own_protocol::verdicts_as_expected());
}
