pub mod backoff;
pub mod plot;
pub mod protocol;
pub mod real;
pub mod sim;
