//! retrylab's timed side: the discrete-event kernel the experiments run on, backoff strategies and retry budgets,
//! line charts with bands (feature `plot`), and atomic file writes for everything the project outputs.

pub mod atomic;
pub mod backoff;
pub mod plot;
pub mod sim;
