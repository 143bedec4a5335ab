#!/usr/bin/env bash
# The main job: a tour of ex_bashkit (sessions, files, hostile input, peers).
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
mix run examples/tour.exs
