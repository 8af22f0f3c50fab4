//! What each check sends and the rule of draft-ietf-httpapi-idempotency-key-header it holds the API to, by the
//! draft's section name: one place for `retrylab probe --help` and for the expectation a failure prints, so the
//! two cannot drift apart and a user can look the rule up.

/// The draft every rule below comes from.
pub const DRAFT: &str = "draft-ietf-httpapi-idempotency-key-header";

/// One check: what it does, what it expects, and where the draft says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub check: &'static str,
    /// What the check sends.
    pub sends: &'static str,
    /// What a conforming API does.
    pub expects: &'static str,
    /// The draft's section.
    pub section: &'static str,
}

/// The rules, in `CHECK_NAMES` order.
pub const RULES: [Rule; 7] = [
    Rule {
        check: "concurrent-same-key",
        sends: "N requests with one key at once (every byte but the last first, then all released together)",
        expects: "exactly one execution; the others 409 (or its replay); a request with no answer is not a \
                  duplicate",
        section: "Idempotency Enforcement Scenarios (Concurrent Request: MUST respond with a resource conflict \
                  error) and Error Scenarios (409)",
    },
    Rule {
        check: "replay-after-completion",
        sends: "the same request twice, one after the other",
        expects: "the second gets the first's result, one execution",
        section: "Idempotency Enforcement Scenarios (Retry: SHOULD respond with the result of the previously \
                  completed operation)",
    },
    Rule {
        check: "changed-body",
        sends: "a request, the same JSON with its keys reordered, then a changed body, all with one key",
        expects: "the reordered JSON replayed (a byte-level fingerprint that refuses it is a note, not a \
                  failure); the changed body refused (422 unless --changed-body-status)",
        section: "Uniqueness of Idempotency Key (MUST NOT be reused with a different payload), Idempotency \
                  Fingerprint (a checksum of the entire payload is allowed) and Error Scenarios (422)",
    },
    Rule {
        check: "missing-key",
        sends: "a request without the key header",
        expects: "the declared status (400 unless --missing-key-status), no execution unless that is a success",
        section: "Error Scenarios (a missing Idempotency-Key: SHOULD reply 400)",
    },
    Rule {
        check: "cross-client",
        sends: "one key from two clients (--client-header)",
        expects: "two executions: one client never gets the other's stored response, in any status",
        section: "Security Considerations (a composite key of the client's key and client-specific attributes; \
                  data leaks between clients)",
    },
    Rule {
        check: "timeout-then-retry",
        sends: "a request whose response a proxy drops after the server answered, then the client's retries \
                (with every --header)",
        expects: "the retry gets the stored response (same status class, same body), one execution",
        section: "Idempotency Enforcement Scenarios (Retry: the result of the previously completed operation)",
    },
    Rule {
        check: "expiry",
        sends: "a request, then the same one after --expiry-ms",
        expects: "a new execution once the declared expiry has passed",
        section: "Idempotency Key Validity and Expiry",
    },
];

/// The rule of `check` (every name of `CHECK_NAMES` has one).
pub fn rule(check: &str) -> Option<&'static Rule> {
    RULES.iter().find(|rule| rule.check == check)
}

/// `expected ... (draft ..., section ...)`, for a failure's evidence.
pub fn expectation(check: &str) -> String {
    match rule(check) {
        Some(rule) => format!("expected {} ({DRAFT}, {})", rule.expects, rule.section),
        None => String::new(),
    }
}

/// The checks for `--help`: each name, what it sends, what it expects and the draft's section.
pub fn help_text() -> String {
    let mut text =
        format!("Checks (in this order; --check NAME runs one), each against {DRAFT}:\n");
    for rule in &RULES {
        text.push_str(&format!(
            "  {}\n      sends: {}\n      expects: {}\n      rule: {}\n",
            rule.check, rule.sends, rule.expects, rule.section
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_a_rule_in_order() {
        let names: Vec<&str> = RULES.iter().map(|rule| rule.check).collect();
        assert_eq!(names, super::super::CHECK_NAMES);
        assert!(expectation("changed-body").contains("Idempotency Fingerprint"));
        assert_eq!(expectation("no-such-check"), "");
        assert!(help_text().contains("  expiry\n"));
    }
}
