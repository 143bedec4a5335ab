#!/usr/bin/env bash
# Sourced by scripts/test.sh (and run in the Debian 13 chroot): makes a Python
# venv with the official MCP SDK, the client test/ex_bashkit/mcp/stdio_test.exs
# drives `mix ex_bashkit.mcp` with, and exports its python as
# EX_BASHKIT_MCP_PYTHON. Installs python3-venv from Debian when missing.
# Usage: source scripts/mcp_client.sh [VENV_DIR]
mcp_venv="${1:-_build/mcp_client}"
mcp_sdk="mcp==2.3.0"

if ! "$mcp_venv/bin/python" -c "import mcp" >/dev/null 2>&1; then
  echo "==> the MCP client for the tests: $mcp_sdk in $mcp_venv"
  if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  rm -rf "$mcp_venv"
  python3 -m venv "$mcp_venv"
  "$mcp_venv/bin/pip" install -q --disable-pip-version-check "$mcp_sdk"
fi
EX_BASHKIT_MCP_PYTHON="$(cd "$mcp_venv" && pwd)/bin/python"
export EX_BASHKIT_MCP_PYTHON
