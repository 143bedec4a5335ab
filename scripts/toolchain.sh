# Sourced by scripts/tour.sh and scripts/test.sh: makes sure Elixir/OTP (from
# Debian) and Rust are there, and sets a UTF-8 locale for Elixir.
set -euo pipefail

export LANG=C.UTF-8 LC_ALL=C.UTF-8
export PATH="$HOME/.cargo/bin:$PATH"

# tmux drives the interactive shell's tests through a real terminal.
missing=""
if ! command -v mix >/dev/null 2>&1 || ! command -v erlc >/dev/null 2>&1; then
  missing="elixir erlang-dev erlang-nox"
fi
if [ "${EX_BASHKIT_NEED_TMUX:-0}" = 1 ] && ! command -v tmux >/dev/null 2>&1; then
  missing="$missing tmux"
fi
# Real Node: what the sandbox's `node` is checked against (javascript_test.exs),
# and real npm, which installs the packages it loads (javascript_packages_test.exs).
if [ "${EX_BASHKIT_NEED_NODE:-0}" = 1 ] && ! command -v node >/dev/null 2>&1; then
  missing="$missing nodejs"
fi
if [ "${EX_BASHKIT_NEED_NODE:-0}" = 1 ] && ! command -v npm >/dev/null 2>&1; then
  missing="$missing npm"
fi
# Real git: what the sandbox's `git` is checked against (git_test.exs).
if [ "${EX_BASHKIT_NEED_GIT:-0}" = 1 ] && ! command -v git >/dev/null 2>&1; then
  missing="$missing git"
fi
# Real sqlite3: what the sandbox's `sqlite3` is checked against (sqlite_test.exs).
if [ "${EX_BASHKIT_NEED_SQLITE:-0}" = 1 ] && ! command -v sqlite3 >/dev/null 2>&1; then
  missing="$missing sqlite3"
fi
if [ -n "$missing" ]; then
  echo "==> installing from Debian:$missing" | tr -s ' '
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust (https://rustup.rs) first" >&2
  exit 1
fi
