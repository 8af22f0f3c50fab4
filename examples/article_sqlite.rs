//! The article's run against real SQLite: `cargo run --release --example article_sqlite`.
//!
//! Five parallel requests with one key, a repeat, a changed body; prints what the article prints. The handler is
//! the library's (`retrylab::handler::designs::Article`), the one the model checker explores.

use retrylab::handler::designs::ArticleKnobs;
use retrylab::real::article::run_article;
use std::process::ExitCode;

fn main() -> ExitCode {
    let folder = match tempfile::tempdir() {
        Ok(folder) => folder,
        Err(error) => {
            eprintln!("article_sqlite: cannot make a temporary folder: {error}");
            return ExitCode::from(2);
        }
    };
    let db_path = folder.path().join("idem.db");
    match run_article(&db_path, ArticleKnobs::ARTICLE) {
        Ok(run) => {
            println!("{:?}", run.parallel_codes);
            println!("({}, {})", run.repeat.status, run.repeat.body);
            println!("({}, {})", run.changed_body.status, run.changed_body.body);
            println!("payments: {}", run.payment_count);
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("article_sqlite: {error}");
            ExitCode::from(1)
        }
    }
}
