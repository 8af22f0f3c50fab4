pub mod backoff;
pub mod protocol;
