#!/usr/bin/env bash
# SPIN as a second anchor: the lease-fenced world in Promela (lease_fenced.pml), checked by SPIN's pan, against
# retrylab on models/lease-fenced.toml, each on one core.
#
#   benches/spin/run.sh verify MODEL.pml [-DNAME[=VALUE]...]
#       Build pan (-DSAFETY, partial-order reduction: SPIN's default) for MODEL (a file in benches/spin/, the
#       -D flags go to SPIN's preprocessor) and search the whole state space. Prints pan's summary and one line
#       `verdict: holds|violated|incomplete ...`; exit 0 holds, 1 violated, 3 incomplete, 2 error.
#   benches/spin/run.sh count MODEL.pml [-DNAME[=VALUE]...]
#       The same search with assertions ignored (pan -A) and SPIN's dead-variable elimination off (spin -o2: it
#       merges states that differ only in a variable no statement reads, here a client's outcome payload, which
#       retrylab keeps): prints `states: N`, every reachable state of the world as retrylab counts them, also for a
#       violated model (retrylab's search goes on past a violation too; tests/checker/spin_twin.rs compares the counts).
#   benches/spin/run.sh bench [REPEATS]
#       REPEATS (default 3) runs each of: pan plain, pan -DCOLLAPSE, pan -DHC4, and
#       `retrylab check models/lease-fenced.toml --threads 1 --json`; one row per run (states, wall and CPU seconds,
#       unique states per second of wall time and per CPU second, the 1-minute load average next to it), then the
#       min and median per row kind and retrylab's per-core rate over SPIN's.
#
# Environment: RETRYLAB (default target/release/retrylab: build it with `cargo build --release`), CC (gcc).
# Needs spin (apt-get install spin) and a C compiler.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
retrylab=${RETRYLAB:-$root/target/release/retrylab}
cc=${CC:-gcc}
# pan's run options: a DFS stack deeper than the model's depth (42 here; a truncated search is reported as
# incomplete below), and a hash table of 2^20 slots for ~370k states (the default 2^24 only costs a larger memset).
pan_args=(-m100000 -w20)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

die() {
    echo "run.sh: $*" >&2
    exit 2
}

need() {
    command -v "$1" >/dev/null || die "$1 not found, install with: $2"
}

# build MODEL CFLAGS [SPIN_FLAGS...]: pan for MODEL in $work/pan
build() {
    local model=$1 cflags=$2
    shift 2
    need spin "apt-get install spin"
    need "$cc" "apt-get install gcc"
    [[ -f $here/$model ]] || die "no model $here/$model"
    cp "$here"/*.pml "$work"/
    (cd "$work" && spin "$@" -a "$model" >spin.out 2>&1) || { cat "$work/spin.out" >&2; die "spin -a $model failed"; }
    # -w: pan.c trips gcc's bounds heuristics on _pid-indexed arrays (pan checks every index itself).
    # shellcheck disable=SC2086
    (cd "$work" && "$cc" -w -O2 -DSAFETY $cflags -o pan pan.c) || die "$cc failed on pan.c"
}

# run_pan: search with the built pan; leaves pan's output in $work/pan.out, "wall user sys" in $work/time
run_pan() {
    local TIMEFORMAT='%R %U %S'
    { time (cd "$work" && ./pan "${pan_args[@]}" >pan.out 2>&1); } 2>"$work/time"
}

pan_states() {
    awk '/states, stored/ {print $1}' "$work/pan.out"
}

# property_of "assertion violated (EXPR) ...": the retrylab property (or scenario hook) whose assert that is
property_of() {
    case $1 in
    *"(t_n==0)"*) echo no-duplicate-effect ;;
    *"(t_n>0)"*) echo no-lost-effect ;;
    *"pay[(t_pay-1)]"*) echo no-cross-client-response ;;
    *"fs_pay[t_c]"*) echo consistent-replay ;;
    *"rec_exp"*) echo no-stuck-key ;;
    *"phase[0]==3"*) echo eventually-resolves ;;
    *"violated 0 "*) echo "a REACH_ scenario hook" ;;
    *) echo "an encoding bound" ;;
    esac
}

verify() {
    local model=${1:-}
    [[ -n $model ]] || die "usage: run.sh verify MODEL.pml [-DNAME...]"
    shift
    build "$model" "" "$@"
    run_pan
    grep -E "^pan:|State-vector|states, stored|transitions|elapsed" "$work/pan.out" || true
    local errors
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/pan.out")
    [[ -n $errors ]] || { cat "$work/pan.out" >&2; die "pan reported no result"; }
    if ((errors > 0)); then
        local what
        what=$(grep -m1 -E '^pan:[0-9]+:' "$work/pan.out" | sed 's/^pan:[0-9]*: *//')
        echo "verdict: violated: $(property_of "$what"): $what"
        exit 1
    elif grep -qE "max search depth too small|out of memory" "$work/pan.out"; then
        echo "verdict: incomplete ($(pan_states) states stored)"
        exit 3
    fi
    echo "verdict: holds ($(pan_states) states stored)"
}

count() {
    local model=${1:-}
    [[ -n $model ]] || die "usage: run.sh count MODEL.pml [-DNAME...]"
    shift
    build "$model" "" -o2 "$@"
    pan_args+=(-A)
    run_pan
    grep -qE "max search depth too small|out of memory" "$work/pan.out" && die "pan's search was cut short"
    echo "states: $(pan_states)"
}

load1() {
    cut -d' ' -f1 /proc/loadavg
}

# row CHECKER VARIANT STATES WALL USER SYS LOAD
row() {
    awk -v checker="$1" -v variant="$2" -v states="$3" -v wall="$4" -v user="$5" -v sys="$6" -v load="$7" 'BEGIN {
        cpu = user + sys
        printf "%-9s %-22s %8d %7.3f %7.3f %10.0f %10.0f %6s\n", checker, variant, states, wall, cpu,
            states / wall, states / cpu, load
    }' | tee -a "$work/rows"
}

bench_spin() {
    local variant=$1 cflags=$2 wall user sys states
    build lease_fenced.pml "$cflags"
    local load
    load=$(load1)
    run_pan
    grep -q "errors: 0" "$work/pan.out" || { cat "$work/pan.out" >&2; die "pan found an error in lease_fenced.pml"; }
    read -r wall user sys <"$work/time"
    states=$(pan_states)
    row spin "$variant" "$states" "$wall" "$user" "$sys" "$load"
}

bench_retrylab() {
    [[ -x $retrylab ]] || die "no $retrylab: run cargo build --release (or set RETRYLAB)"
    need jq "apt-get install jq"
    local TIMEFORMAT='%R %U %S' wall user sys states load
    load=$(load1)
    { time "$retrylab" check "$root/models/lease-fenced.toml" --threads 1 --json >"$work/retrylab.json"; } 2>"$work/time"
    [[ $(jq -r .complete "$work/retrylab.json") == true ]] || die "retrylab's search was incomplete"
    read -r wall user sys <"$work/time"
    states=$(jq -r .states "$work/retrylab.json")
    row retrylab "--threads 1" "$states" "$wall" "$user" "$sys" "$load"
}

# summary: min and median of the per-CPU-second rate per (checker, variant), and retrylab's median over SPIN's
summary() {
    echo
    echo "per kind: states/s per CPU second, min / median (and wall-time rate, median)"
    sort -k1,1 -k2,2 "$work/rows" | awk '
        { key = $1 " " $2; if ($2 == "--threads") key = $1 " " $2 " " $3
          n[key]++; cpu[key, n[key]] = $(NF - 1); wall[key, n[key]] = $(NF - 2); order[key] = NR }
        function median(arr, key, count,   i, j, v, tmp) {
            for (i = 1; i <= count; i++) tmp[i] = arr[key, i]
            for (i = 1; i <= count; i++) for (j = i + 1; j <= count; j++) if (tmp[j] < tmp[i]) { v = tmp[i]; tmp[i] = tmp[j]; tmp[j] = v }
            return count % 2 ? tmp[(count + 1) / 2] : (tmp[count / 2] + tmp[count / 2 + 1]) / 2
        }
        END {
            for (key in n) {
                lo = cpu[key, 1]; for (i = 2; i <= n[key]; i++) if (cpu[key, i] < lo) lo = cpu[key, i]
                med[key] = median(cpu, key, n[key])
                printf "  %-32s %10.0f / %10.0f   (wall %10.0f)\n", key, lo, med[key], median(wall, key, n[key])
            }
            ours = med["retrylab --threads 1"]; spin = med["spin plain"]
            if (ours && spin) printf "per core (median per CPU second): retrylab / SPIN plain = %.2f\n", ours / spin
        }'
}

bench() {
    local repeats=${1:-3}
    printf "%-9s %-22s %8s %7s %7s %10s %10s %6s\n" checker variant states wall_s cpu_s "states/s" "st/cpu-s" load1
    for ((run = 1; run <= repeats; run++)); do
        bench_spin plain ""
        bench_spin "-DCOLLAPSE" "-DCOLLAPSE"
        bench_spin "-DHC4 (lossy)" "-DHC4"
        bench_retrylab
    done
    summary
}

case ${1:-} in
verify)
    shift
    verify "$@"
    ;;
count)
    shift
    count "$@"
    ;;
bench)
    shift
    bench "$@"
    ;;
*) die "usage: run.sh verify|count MODEL.pml [-DNAME...] | run.sh bench [REPEATS]" ;;
esac
