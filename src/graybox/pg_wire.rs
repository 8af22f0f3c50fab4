//! issue 32: see gate.rs
