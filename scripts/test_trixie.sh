#!/usr/bin/env bash
# The Elixir suite again on Debian 13's Elixir 1.18 / OTP 27 (what most
# users run; scripts/test.sh runs it on Debian 12's 1.14 / 25), in a
# debootstrap chroot kept between runs. The chroot sees this checkout, the
# Rust toolchain and the NIF library scripts/test.sh built at the same
# paths, so nothing is rebuilt; its own _build is _build_trixie.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
root="${EX_BASHKIT_TRIXIE_ROOT:-/var/cache/ex_bashkit-trixie}"
# gcc: cargo links a build script if anything in the shared target/ must
# be built again (it should not).
# python3-venv: the MCP SDK the MCP server's tests use (scripts/mcp_client.sh).
packages="elixir erlang-dev erlang-nox erlang-inets tmux procps gcc libc6-dev ca-certificates python3-venv nodejs git sqlite3"

if [ ! -x "$root/usr/bin/elixir" ] || [ "$(cat "$root/.ex_bashkit_packages" 2>/dev/null)" != "$packages" ]; then
  echo "==> Debian 13 (trixie) chroot in $root"
  if ! command -v debootstrap >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  # A chroot made by an older version of this script only lacks packages.
  if [ ! -x "$root/usr/bin/elixir" ]; then
    rm -rf "$root"
    debootstrap --variant=minbase trixie "$root" >/dev/null
  fi
  chroot "$root" apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive chroot "$root" \
    apt-get install -y -qq --no-install-recommends $packages >/dev/null
  echo "$packages" >"$root/.ex_bashkit_packages"
fi
cp /etc/hosts /etc/resolv.conf "$root/etc/" 2>/dev/null || true
# The host's trusted CAs (a proxy's own, say), for pip in the chroot.
ca_bundle=""
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/host-ca-certificates.crt"
  ca_bundle=/etc/ssl/host-ca-certificates.crt
fi

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R -l "${mounted[i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
# Stopped (scripts/test.sh stops it when a check beside it fails): the
# mounts still go.
trap 'exit 143' TERM INT
bind() {
  mkdir -p "$root$1"
  mount --rbind "$1" "$root$1"
  mounted+=("$root$1")
}
mount -t proc proc "$root/proc"
mounted+=("$root/proc")
bind /dev
# Workers make cgroups of their own (native/ex_bashkit/crates/jail/src/cgroup.rs).
bind /sys
bind "$repo"
# The npm packages the JavaScript tests installed on the host (real npm;
# javascript_packages_test.exs), loaded again from here.
if [ -d /tmp/ex_bashkit_npm ]; then bind /tmp/ex_bashkit_npm; fi
# The lockfile and tarballs the npm install tests serve (made by real npm).
if [ -d /tmp/ex_bashkit_npm_install ]; then bind /tmp/ex_bashkit_npm_install; fi
# The wheels the pip install tests serve (fetched by real pip).
if [ -d /tmp/ex_bashkit_wheels ]; then bind /tmp/ex_bashkit_wheels; fi
bind "$HOME/.cargo"
bind "$HOME/.rustup"

echo "==> on $(chroot "$root" elixir --short-version 2>/dev/null || echo '?') / OTP $(chroot "$root" erl -noshell -eval 'io:put_chars(erlang:system_info(otp_release)), halt().')"
chroot "$root" /usr/bin/env -i \
  HOME="$HOME" PATH="$HOME/.cargo/bin:/usr/local/bin:/usr/bin:/bin" \
  LANG=C.UTF-8 LC_ALL=C.UTF-8 MIX_ENV=test MIX_BUILD_ROOT="$repo/_build_trixie" \
  EX_BASHKIT_NEED_TMUX=1 EX_BASHKIT_NEED_MCP_CLIENT=1 CI="${CI:-}" \
  ${ca_bundle:+PIP_CERT="$ca_bundle"} ${PIP_INDEX_URL:+PIP_INDEX_URL="$PIP_INDEX_URL"} \
  bash -c "cd '$repo' && source scripts/mcp_client.sh _build_trixie/mcp_client &&
           echo '==> mix compile --warnings-as-errors (Elixir 1.18)' &&
           mix compile --warnings-as-errors && echo '==> mix test (Elixir 1.18)' && mix test"
