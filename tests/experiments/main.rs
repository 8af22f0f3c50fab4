//! The experiments: backoff's properties, the AWS post's claims, the experiment binaries (deterministic whatever
//! the thread count, bad flags exit 2, an unwritable `--out` refused first), their claims on shorter worlds, and
//! the committed results index. The binaries' tests need features `cli` and `plot`. One test binary for the area;
//! each file is a module (`cargo test --test experiments storms_budget::`).

#[path = "../storms_support/mod.rs"]
mod storms_support;

mod aws_jitter_claims;
#[cfg(all(feature = "cli", feature = "plot"))]
mod aws_jitter_cli;
mod backoff_props;
#[cfg(all(feature = "cli", feature = "plot"))]
mod dedup_window;
mod experiments_index;
#[cfg(all(feature = "cli", feature = "plot"))]
mod experiments_out;
#[cfg(all(feature = "cli", feature = "plot"))]
mod storms_budget;
#[cfg(all(feature = "cli", feature = "plot"))]
mod storms_layers;
#[cfg(all(feature = "cli", feature = "plot"))]
mod storms_metastability;
#[cfg(all(feature = "cli", feature = "plot"))]
mod storms_safety;
