#!/usr/bin/env bash
# The regression gate: the hot-path figures of two commits, measured
# interleaved on this machine, and each figure's ratio.
#
#   bash bench/compare.sh A [B]        (B defaults to HEAD; ROUNDS=5)
#
# Each commit gets a worktree of its own with a target/ of its own, kept
# between runs (under $EX_BASHKIT_COMPARE_DIR, default ../ex_bashkit_compare
# beside this checkout), seeded from this checkout's target/ the first time
# so that only what differs is compiled. Then ROUNDS rounds, each running
# bench/gate.exs (this checkout's, the same file for both sides) once per
# figure per side (ONLY=a,b to pick figures), the side going first
# alternating between rounds, so a machine that grows busier weighs on
# both. A figure's cell is the median of its round
# values and their range; the ratio is B's median over A's. bench/README.md
# ("The regression gate") says how to read it.
set -euo pipefail
cd "$(dirname "$0")/.."
here="$PWD"
source scripts/toolchain.sh

if [ $# -lt 1 ]; then
  echo "usage: bash bench/compare.sh A [B]" >&2
  exit 2
fi
a=$(git rev-parse --short=10 "$1^{commit}")
b=$(git rev-parse --short=10 "${2:-HEAD}^{commit}")
rounds="${ROUNDS:-5}"
base="${EX_BASHKIT_COMPARE_DIR:-$here/../ex_bashkit_compare}"
mkdir -p "$base"
base="$(cd "$base" && pwd)"
gate="$here/bench/gate.exs"

prepare() {
  local rev="$1" dir="$base/$1"
  if [ ! -d "$dir" ]; then
    git worktree add --detach --force "$dir" "$rev" >/dev/null
  fi
  if [ ! -d "$dir/native/ex_bashkit/target" ] && [ -d "$here/native/ex_bashkit/target" ]; then
    # Each seed is a whole target/ (gigabytes): refuse to fill the disk,
    # which stops every other job on the machine too.
    local need free
    need=$(du -sk "$here/native/ex_bashkit/target" | cut -f1)
    free=$(df -Pk "$base" | awk 'NR == 2 { print $4 }')
    if [ "$free" -lt $((need * 2)) ]; then
      echo "bench/compare.sh: seeding $rev's target/ needs $((need / 1048576)) GiB and leaves" \
        "less than as much free; remove worktrees no longer compared:" >&2
      git worktree list | grep "$base" >&2 || true
      echo "(git worktree remove --force DIR)" >&2
      exit 1
    fi
    echo "==> $rev: seeding its target/ from this checkout's" >&2
    cp -a "$here/native/ex_bashkit/target" "$dir/native/ex_bashkit/target"
  fi
  echo "==> $rev: building (MIX_ENV=prod, from source)" >&2
  (cd "$dir" && EX_BASHKIT_BUILD=1 MIX_ENV=prod mix compile >/dev/null)
}

prepare "$a"
prepare "$b"

# Each figure in a VM of its own, both sides of it one after the other: a
# figure measured after others in one VM paid for what they left running
# (snapshot + restore read 1.46x f3db684's after exec_worker's spare
# workers, and 1.08x alone).
figures="${ONLY:-$(cd "$base/$b" && LIST=1 MIX_ENV=prod mix run "$gate")}"
results="$base/results-$a-$b-$(date +%s).tsv"
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then order="$a $b"; else order="$b $a"; fi
  echo "==> round $round of $rounds: $order" >&2
  for figure in ${figures//,/ }; do
    for rev in $order; do
      (cd "$base/$rev" && ONLY="$figure" MIX_ENV=prod mix run "$gate") |
        while IFS=$'\t' read -r name value; do
          printf '%s\t%s\t%s\t%s\n' "$rev" "$round" "$name" "$value"
        done >>"$results"
    done
  done
done

elixir "$here/bench/compare_summary.exs" "$results" "$a" "$b"
