#!/bin/sh
# One shard of a seeded simulation, run as a Slurm array task or a Kubernetes Indexed Job pod; merge the shards
# with `retrylab merge OUT/shard-*.jsonl` once every task has finished (docs/src/cluster.md).
#
#   shard.sh MODEL SEEDS [SEED]
#
# Environment: OUT (default `results`, a shared folder every task can write), RETRYLAB (default `retrylab`), and
# either Slurm's SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_MIN / SLURM_ARRAY_TASK_COUNT, or Kubernetes'
# JOB_COMPLETION_INDEX (0-based) with SHARDS (the Job's `completions`).
set -eu

if [ $# -lt 2 ]; then
    echo "usage: shard.sh MODEL SEEDS [SEED]" >&2
    exit 2
fi
model=$1
seeds=$2
seed=${3:-0}
out=${OUT:-results}

if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
    k=$((SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-1} + 1))
    n=${SLURM_ARRAY_TASK_COUNT:?SLURM_ARRAY_TASK_COUNT is not set}
elif [ -n "${JOB_COMPLETION_INDEX:-}" ]; then
    k=$((JOB_COMPLETION_INDEX + 1))
    n=${SHARDS:?set SHARDS to the number of completions}
else
    echo "shard.sh: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set" >&2
    exit 2
fi

mkdir -p "$out"
# Written under a temporary name and renamed when complete: a task killed halfway leaves no shard file, so
# `retrylab merge` reports that shard missing instead of merging a partial one.
partial="$out/.shard-$k-of-$n.jsonl.partial"
"${RETRYLAB:-retrylab}" simulate "$model" --seeds "$seeds" --seed "$seed" --shard "$k/$n" \
    --json --traces "$out/traces" > "$partial"
mv "$partial" "$out/shard-$k-of-$n.jsonl"
