#!/usr/bin/env bash
# The aws-jitter experiment against a plain CPython model of it (aws_occ.py: the same world and grid), each as a
# whole process, charts included for retrylab:
#
#   benches/python/run.sh [REPEATS]
#
# REPEATS (default 3) rounds, each one Python run then five retrylab runs (a Python run takes ~13 s, a retrylab
# run ~0.15 s); prints every wall time, the medians, and `ratio: X`, Python's median over retrylab's.
#
# Environment: AWS_JITTER (default target/release/aws-jitter: build it with `cargo build --release`), PYTHON
# (default python3).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
aws_jitter=${AWS_JITTER:-$root/target/release/aws-jitter}
python=${PYTHON:-python3}
repeats=${1:-3}
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: REPEATS must be a positive integer, got '$repeats'" >&2; exit 2; }
[[ -x $aws_jitter ]] || { echo "run.sh: $aws_jitter not found: cargo build --release" >&2; exit 2; }
command -v "$python" >/dev/null || { echo "run.sh: $python not found" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Wall seconds of one command, its output discarded.
wall() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN {print b - a}'
}

python_s=()
rust_s=()
for round in $(seq "$repeats"); do
    s=$(wall "$python" "$here/aws_occ.py")
    python_s+=("$s")
    printf 'round %d python   %.3f s\n' "$round" "$s"
    for _ in 1 2 3 4 5; do
        s=$(wall "$aws_jitter" --post-only --clients 150,190 --runs 100 --out "$out/aws")
        rust_s+=("$s")
        printf 'round %d retrylab %.3f s\n' "$round" "$s"
    done
done

median() {
    printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
python_median=$(median "${python_s[@]}")
rust_median=$(median "${rust_s[@]}")
printf 'python median %.3f s (%d runs), retrylab median %.3f s (%d runs)\n' \
    "$python_median" "${#python_s[@]}" "$rust_median" "${#rust_s[@]}"
awk -v p="$python_median" -v r="$rust_median" 'BEGIN {printf "ratio: %.1f\n", p / r}'
