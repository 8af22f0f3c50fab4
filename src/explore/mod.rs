//! `retrylab explore`'s loopback web server: walk any `check::Model` by hand in a browser ([`server`]), and save
//! the walks as trace files ([`traces`]).

pub mod server;
mod traces;
