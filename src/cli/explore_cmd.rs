//! `retrylab explore MODEL --listen 127.0.0.1:PORT`: serve the walk-by-hand page on loopback until stopped
//! (`report::explore_server`, which any model can use). Only loopback addresses are accepted: the page runs
//! the model for whoever reaches it, and nobody else should. Port 0 picks a free port; the address is the
//! first line printed, for people and for tests.

use super::{names, ExploreArgs, EXIT_BAD_INPUT};
use retrylab::loopback::loopback_address;
use retrylab::report::explore_server::{serve, Explorer, TraceFiles};
use retrylab::spec;

pub fn run(args: &ExploreArgs) -> i32 {
    let address = match loopback_address(&args.listen) {
        Ok(address) => address,
        Err(message) => {
            errln!("error: --listen {}: {message}", args.listen);
            return EXIT_BAD_INPUT;
        }
    };
    let model = match spec::load_model(&args.model) {
        Ok(model) => model,
        Err(error) => {
            errln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    // Saved walks are trace files of the model file's text: `retrylab replay` takes them.
    let traces = TraceFiles {
        model: model.path.clone(),
        model_source: model.source_text.clone(),
        folder: args.traces.clone(),
        stem: names::unique_names(&[model.path.as_str()]).remove(0).stem,
    };
    let title = format!("retrylab explore: {}", model.path);
    let path = model.path.clone();
    let explorer = Explorer::new(model.world, &title, &model.description).with_traces(traces);
    let served = serve(explorer, address, |url| {
        // The one stdout line (a reader that takes it and closes the pipe must not stop the server: a write to
        // a closed stdout ends the command); the rest is for people, on stderr.
        outln!("listening on {url}");
        errln!("exploring {path} by hand; stop with Ctrl-C");
    });
    match served {
        Ok(()) => super::EXIT_OK,
        Err(error) => {
            errln!("error: {error}");
            EXIT_BAD_INPUT
        }
    }
}
