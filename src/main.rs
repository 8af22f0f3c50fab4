fn main() {
    std::process::exit(retrylab::cli::main());
}
