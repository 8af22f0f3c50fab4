//! Checking your own protocol: a lock service with leases, and storage that may or may not check the lock's
//! fencing token (Kleppmann, "How to do distributed locking", 2016). A client takes the lease and is paused until
//! it expires (a fault); the other takes the lease and writes; the first wakes and writes too. Without fencing
//! its stale write overwrites the newer one. `cargo run --example own_protocol` (exit 0: verdicts as expected);
//! `cargo run --example own_protocol -- --explore 127.0.0.1:0` walks the unfenced design by hand in the browser.

use retrylab::check::{timeline, Model, Property, Verdict};
#[cfg(feature = "cli")]
use retrylab::{
    loopback::loopback_address,
    report::explore_server::{serve, Explorer, TraceFiles},
};

// What a step did, as bits of a `u8`. A stale write: storage accepted a write older than one it already has.
const STALE_WRITE: u8 = 1;
const LEASE_EXPIRED: u8 = 2;
const STALE_REFUSED: u8 = 4;
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct State {
    /// Per client: the fencing token it was given (0: none yet), and whether it has written.
    token: [u8; 2],
    done: [bool; 2],
    /// Who holds the lease now, and how many tokens were issued (the next one is `issued + 1`).
    holder: Option<usize>,
    issued: u8,
    storage_token: u8, // the newest token storage has accepted a write with
    expired: bool,
}

// Serialisable only so that walks saved from the explorer are trace files (the explorer needs no more).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Action {
    Acquire(usize),
    Write(usize),
    Expire, // a fault: the holder is paused past its lease
}
pub struct LockService {
    fencing: bool, // storage refuses a token older than the newest it has seen
}

impl Model for LockService {
    type State = State;
    type Action = Action;
    type Obs = u8;

    fn init_state(&self) -> State {
        State::default()
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        for client in 0..2 {
            if s.token[client] == 0 && s.holder.is_none() {
                out.push(Action::Acquire(client));
            } else if s.token[client] > 0 && !s.done[client] {
                out.push(Action::Write(client));
            }
        }
        if s.holder.is_some() && !s.expired {
            out.push(Action::Expire);
        }
    }

    fn apply(&self, s: &mut State, action: &Action) -> u8 {
        match *action {
            Action::Acquire(client) => {
                s.issued += 1;
                (s.token[client], s.holder) = (s.issued, Some(client));
                0
            }
            Action::Expire => {
                (s.holder, s.expired) = (None, true); // at most once
                LEASE_EXPIRED
            }
            Action::Write(client) => {
                s.done[client] = true;
                s.holder = s.holder.filter(|holder| *holder != client); // written: release
                let stale = s.token[client] < s.storage_token;
                if stale && self.fencing {
                    return STALE_REFUSED;
                }
                s.storage_token = s.storage_token.max(s.token[client]);
                u8::from(stale) * STALE_WRITE
            }
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always_unobserved("no stale write", STALE_WRITE),
            Property::eventually("every client writes", |_, s: &State| s.done == [true; 2]),
            Property::sometimes_observed("lease expired while held", LEASE_EXPIRED),
            Property::sometimes_observed("stale write refused", STALE_REFUSED),
        ]
    }

    fn is_fault(&self, _state: &State, action: &Action) -> bool {
        *action == Action::Expire
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    #[cfg(feature = "cli")]
    if let [flag, listen] = args.as_slice() {
        if flag == "--explore" {
            std::process::exit(explore(listen));
        }
    }
    if !args.is_empty() {
        eprintln!("usage: own_protocol [--explore 127.0.0.1:PORT]");
        std::process::exit(2);
    }
    std::process::exit(if verdicts_as_expected() { 0 } else { 1 });
}

/// The walk-by-hand explorer of the lock service (saved walks go to `target/retrylab/traces`).
#[cfg(feature = "cli")]
pub fn explorer(fencing: bool, traces: &std::path::Path) -> Explorer<LockService> {
    let source = format!("lock service, fencing = {fencing}");
    Explorer::new(
        LockService { fencing },
        "own protocol: a lock service",
        &source,
    )
    .with_traces(TraceFiles {
        model: "own_protocol".to_string(),
        model_source: source.clone(),
        folder: traces.to_path_buf(),
        stem: format!("lock-service-fencing-{fencing}"),
    })
}

#[cfg(feature = "cli")]
fn explore(listen: &str) -> i32 {
    let traces = std::path::Path::new("target/retrylab/traces");
    let served = loopback_address(listen).and_then(|address| {
        serve(explorer(false, traces), address, |url| {
            println!("listening on {url}")
        })
    });
    served.map_or_else(
        |error| {
            eprintln!("error: {error}");
            2
        },
        |()| 0,
    )
}

pub fn verdicts_as_expected() -> bool {
    let mut as_expected = true;
    for (fencing, expected) in [(true, Verdict::Holds), (false, Verdict::Violated)] {
        let model = LockService { fencing };
        let report = model.checker().threads(2).bfs();
        println!("fencing = {fencing}: {} states", report.states);
        for property in &report.properties {
            println!("  {:<26} {}", property.name, property.verdict.name());
        }
        as_expected &= report.verdict("no stale write") == expected;
        as_expected &= report.verdict("every client writes") == Verdict::Holds;
        as_expected &= report.reached("lease expired while held");
        as_expected &= report.reached("stale write refused") == fencing;
        if let Some(path) = report.counterexample("no stale write") {
            println!("  shortest counterexample:");
            for step in timeline(&model, path).expect("a found path replays").steps {
                println!("    {}. {}", step.step, step.text);
            }
        }
    }
    as_expected
}
