//! Every flag and argument of every subcommand says what it is for: a test that walks clap's command tree, so a
//! flag added without a doc comment (an empty line in `--help`) fails the build's tests instead of a user.

use clap::CommandFactory;

/// `command path: --flag` for each argument with no help text, below `command`.
fn missing_help(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
    for arg in command.get_arguments() {
        let help = arg
            .get_help()
            .or(arg.get_long_help())
            .map(|text| text.to_string())
            .unwrap_or_default();
        if help.trim().is_empty() {
            let name = arg
                .get_long()
                .map(|long| format!("--{long}"))
                .unwrap_or_else(|| arg.get_id().to_string());
            missing.push(format!("{path}: {name}"));
        }
    }
    for sub in command.get_subcommands() {
        missing_help(sub, &format!("{path} {}", sub.get_name()), missing);
    }
}

#[test]
fn every_flag_of_every_subcommand_has_a_help_line() {
    let mut command = super::Cli::command();
    command.build();
    let mut missing = Vec::new();
    missing_help(&command, "retrylab", &mut missing);
    assert!(missing.is_empty(), "no help text: {missing:#?}");
    // The walk reaches the subcommands' flags (a walk that saw nothing would pass vacuously).
    let load = command
        .find_subcommand("load")
        .map(|load| load.get_arguments().count());
    assert!(load.is_some_and(|count| count > 10), "{load:?}");
}

/// The help of `--flag` of `subcommand`, as `--help` prints it.
#[cfg(feature = "stack")]
fn help_of(subcommand: &str, flag: &str) -> String {
    let command = super::Cli::command();
    let sub = command.find_subcommand(subcommand).expect("the subcommand");
    let arg = sub
        .get_arguments()
        .find(|arg| arg.get_long() == Some(flag))
        .unwrap_or_else(|| panic!("{subcommand} has no --{flag}"));
    arg.get_help()
        .map(|help| help.to_string())
        .unwrap_or_default()
}

#[cfg(feature = "stack")]
#[test]
fn load_lists_its_strategies_and_proxy_can_choose_its_port() {
    let strategies = help_of("load", "strategy");
    for name in [
        "none",
        "constant",
        "exponential",
        "equal-jitter",
        "full-jitter",
        "decorrelated-capped",
    ] {
        assert!(strategies.contains(name), "{name} in {strategies}");
        assert!(
            name.parse::<retrylab::backoff::Strategy>().is_ok(),
            "{name} is a strategy"
        );
    }
    assert!(help_of("proxy", "listen").contains("loopback"));
}

#[test]
fn the_walk_catches_a_flag_without_help() {
    #[derive(clap::Parser)]
    struct Bare {
        /// Documented.
        #[arg(long)]
        documented: bool,
        #[arg(long)]
        undocumented: bool,
    }
    let mut command = Bare::command();
    command.build();
    let mut missing = Vec::new();
    missing_help(&command, "bare", &mut missing);
    assert_eq!(missing, ["bare: --undocumented"]);
}
