pub mod backoff;
pub mod protocol;
pub mod real;
