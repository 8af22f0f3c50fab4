//! The handler machinery's tests that run on real stores as well as the simulated one: a handler run call by
//! call, background workers and `scan`, named call faults. They live beside the stores they use.

mod lost;
mod machinery;
mod workers;
