//! A claim an experiment makes about its world, judged on the experiment's own data: the
//! statement, the criterion that turns its vague words into thresholds, the verdict and the
//! numbers behind it. A reader can then disagree with a threshold rather than with a hidden
//! judgement, and a test can assert the verdict.

use serde::{Deserialize, Serialize};

use super::table::{Align, Markdown};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimVerdict {
    Reproduced,
    #[serde(rename = "partly-reproduced")]
    Partly,
    NotReproduced,
    /// The grid lacks the cells the claim needs.
    NotTested,
}

impl ClaimVerdict {
    pub fn label(&self) -> &'static str {
        match self {
            ClaimVerdict::Reproduced => "reproduced",
            ClaimVerdict::Partly => "partly reproduced",
            ClaimVerdict::NotReproduced => "not reproduced",
            ClaimVerdict::NotTested => "not tested (grid too small)",
        }
    }

    /// Reproduced when `holds`, not reproduced otherwise.
    pub fn of(holds: bool) -> ClaimVerdict {
        if holds {
            ClaimVerdict::Reproduced
        } else {
            ClaimVerdict::NotReproduced
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub statement: String,
    pub verdict: ClaimVerdict,
    pub criterion: String,
    pub evidence: String,
}

impl Claim {
    pub fn new(
        statement: impl Into<String>,
        criterion: impl Into<String>,
        verdict: ClaimVerdict,
        evidence: impl Into<String>,
    ) -> Self {
        Claim {
            statement: statement.into(),
            verdict,
            criterion: criterion.into(),
            evidence: evidence.into(),
        }
    }

    /// A claim whose cells are not in the grid.
    pub fn not_tested(statement: impl Into<String>, criterion: impl Into<String>) -> Self {
        Claim::new(statement, criterion, ClaimVerdict::NotTested, "")
    }
}

/// The verdict of the claim whose statement starts with `prefix` (for tests and the index).
pub fn verdict_of(claims: &[Claim], prefix: &str) -> Option<ClaimVerdict> {
    claims
        .iter()
        .find(|claim| claim.statement.starts_with(prefix))
        .map(|claim| claim.verdict)
}

/// The claims as a Markdown table (claim, verdict, criterion, evidence).
pub fn markdown_table(claims: &[Claim]) -> String {
    let mut table = Markdown::new(
        ["claim", "verdict", "criterion", "evidence"].map(|title| (title, Align::Text)),
    );
    for claim in claims {
        table.row([
            claim.statement.clone(),
            format!("**{}**", claim.verdict.label()),
            claim.criterion.clone(),
            claim.evidence.clone(),
        ]);
    }
    table.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_round_trip_through_csv_and_render_as_a_table() {
        let claims = vec![
            Claim::new("A | B.", "x >= 1", ClaimVerdict::Reproduced, "x = 2, y = 3"),
            Claim::not_tested("C.", "needs the 100-client cells"),
        ];
        let text = super::super::table::csv_text(&claims).unwrap();
        assert!(text.starts_with("statement,verdict,criterion,evidence\n"));
        assert!(text.contains(",reproduced,") && text.contains(",not-tested,"));
        let read: Vec<Claim> = csv::Reader::from_reader(text.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(read, claims);
        let table = markdown_table(&claims);
        assert!(table.contains("| A \\| B. | **reproduced** |"), "{table}");
        assert_eq!(verdict_of(&claims, "C"), Some(ClaimVerdict::NotTested));
        assert_eq!(verdict_of(&claims, "D"), None);
    }
}
