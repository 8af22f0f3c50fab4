pub mod protocol;
pub mod real;
