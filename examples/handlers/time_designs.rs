//! The designs where time passing at rest and fairness decide the verdict (issue 33, "time"): a lease compared
//! in the wrong unit, a queue consumer slower than its visibility timeout, a sweeper that frees completed keys.
//! Each broken design beside its fix, with the public report it comes from in its file's docs.

use super::{faults, Visit, BODY, HOLDS, VIOLATED};
use super::{powertools_java_1281 as java_1281, sweeper, visibility_timeout};
use retrylab::handler::{HandlerWorld, RecordsIn};

/// Every design of this file with its world and declared verdicts.
pub fn designs(visit: &mut impl Visit) {
    let (dup, resolves, stuck) = ("no-duplicate-effect", "eventually-resolves", "no-stuck-key");
    let keys = || RecordsIn::Table("keys".to_string());
    let java = |seconds: bool| {
        HandlerWorld::new(java_1281::InProgressExpiry { seconds }, 1, BODY)
            .faults(faults(|f| f.crashes = 1))
            .records(keys(), java_1281::in_progress)
            .expiries(keys(), java_1281::expiry_ms)
    };
    visit.design(
        "powertools-java-1281-seconds-vs-ms",
        java(true),
        &[(dup, HOLDS), (resolves, VIOLATED), (stuck, VIOLATED)],
        &["crash-after-claim"],
    );
    visit.design(
        "powertools-java-1281-seconds-vs-ms-fixed",
        java(false),
        &[(dup, HOLDS), (resolves, HOLDS), (stuck, HOLDS)],
        &["crash-after-claim"],
    );
    let consumer = |inbox: bool| {
        HandlerWorld::new(visibility_timeout::Consumer { inbox }, 1, BODY)
            .processes(2)
            .attempts_max(5) // enough for an early timeout besides the 409s of a hidden message
            .faults(faults(|f| {
                (f.pauses, f.early_timeouts, f.crashes) = (1, 1, u8::from(inbox))
            }))
    };
    visit.design(
        "laravel-19969-visibility-timeout",
        consumer(false),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "laravel-19969-visibility-timeout-fixed",
        consumer(true),
        &[(dup, HOLDS), (resolves, HOLDS)],
        &["slow-owner", "parallel-retry"],
    );
    let swept = |by_age: bool| {
        HandlerWorld::new(sweeper::Claims, 1, BODY)
            .attempts_max(5)
            // The bug needs a lost response and a pause; the fix is shown a crash and a pause (a lost response
            // on top can land on the last of a patient client's bounded polls: `world::time::POLLS_MAX`).
            .faults(faults(|f| {
                (f.pauses, f.drop_responses, f.crashes) = (1, u8::from(by_age), u8::from(!by_age))
            }))
            .records(keys(), java_1281::in_progress)
            .expiries(keys(), java_1281::expiry_ms)
            .worker(sweeper::Sweeper { by_age }, 1)
    };
    visit.design(
        "sidekiq-unique-jobs-738-sweeper",
        swept(true),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "sidekiq-unique-jobs-738-sweeper-fixed",
        swept(false),
        &[(dup, HOLDS), (resolves, HOLDS), (stuck, HOLDS)],
        &["crash-after-claim", "slow-owner"],
    );
}
