defmodule ExBashkit.Test.RealGit do
  @moduledoc false
  # Debian's git on the host, for the tests that hold the sandbox's git
  # against it: a fixed identity (so both gits make the same commits), an
  # environment free of the machine's config, and a history with what
  # agents meet.

  import ExUnit.Assertions

  # Fixed identities and dates: the same content makes the same commits
  # in both gits, so object names are compared as they are.
  @identity %{
    "GIT_AUTHOR_NAME" => "Ann Author",
    "GIT_AUTHOR_EMAIL" => "ann@example.com",
    "GIT_AUTHOR_DATE" => "1700000000 +0100",
    "GIT_COMMITTER_NAME" => "Cy Committer",
    "GIT_COMMITTER_EMAIL" => "cy@example.com",
    "GIT_COMMITTER_DATE" => "1700003600 -0500"
  }

  @host_env [
    {"GIT_CONFIG_GLOBAL", "/dev/null"},
    {"GIT_CONFIG_NOSYSTEM", "1"},
    {"LC_ALL", "C"},
    {"TZ", "UTC"},
    {"GIT_PAGER", "cat"},
    # Copies may belong to the worker's user (a deployment's layout):
    # real git is told they are safe, as a user's global config would.
    {"GIT_CONFIG_COUNT", "1"},
    {"GIT_CONFIG_KEY_0", "safe.directory"},
    {"GIT_CONFIG_VALUE_0", "*"}
  ]

  @spec identity() :: %{String.t() => String.t()}
  def identity, do: @identity

  @spec host_env() :: [{String.t(), String.t()}]
  def host_env, do: @host_env

  @doc "Runs a bash script of real git in `dir`; flunks unless it succeeds."
  @spec git!(Path.t(), String.t(), map()) :: String.t()
  def git!(dir, script, env \\ %{}) do
    env = @host_env ++ [{"HOME", dir} | Enum.to_list(env)]

    case System.cmd("bash", ["-c", "set -e; " <> script],
           cd: dir,
           env: env,
           stderr_to_stdout: true
         ) do
      {out, 0} -> out
      {out, code} -> flunk("real git failed (#{code}) in #{dir}: #{script}\n#{out}")
    end
  end

  @doc """
  A repository in `dir` with subdirectories, a binary file, an executable,
  a rename, .gitignore with ignored files present, a merge commit,
  lightweight and annotated tags. Dates advance per commit.
  """
  @spec history!(Path.t()) :: Path.t()
  def history!(dir) do
    File.mkdir_p!(dir)

    git!(
      dir,
      """
      git init -q -b main .
      n=0
      commit() { n=$((n+1)); GIT_AUTHOR_DATE="$((1600000000+n*3600)) +0200" GIT_COMMITTER_DATE="$((1600000000+n*3600)) +0200" git commit -q "$@"; }
      printf 'hello\\nworld\\n' > a.txt
      mkdir -p src/lib docs
      printf 'fn main() {\\n    println!("hello");\\n}\\n' > src/main.rs
      printf 'pub fn lib() {}\\n' > src/lib/mod.rs
      printf '*.log\\nbuild/\\n!keep.log\\n' > .gitignore
      head -c 300 /dev/urandom > blob.bin
      printf '#!/bin/sh\\necho run\\n' > run.sh && chmod +x run.sh
      git add -A && commit -m 'first: the project'
      git tag v1
      printf 'one\\ntwo\\nthree\\n' > docs/guide.md
      echo 'hello again' >> a.txt
      git add -A && commit -m 'second: docs' -m 'With a body paragraph.'
      git mv docs/guide.md docs/manual.md && commit -m 'rename the guide'
      git checkout -q -b feature
      echo 'feature line' >> src/lib/mod.rs && git add -A && commit -m 'feature work'
      git checkout -q main
      echo 'main line' >> a.txt && git add -A && commit -m 'main work'
      GIT_AUTHOR_DATE="1600090000 +0200" GIT_COMMITTER_DATE="1600090000 +0200" git merge -q --no-ff -m 'Merge branch feature' feature
      GIT_COMMITTER_DATE="1600095000 +0200" git tag -a v2 -m 'release two'
      for i in 1 2 3 4 5 6; do seq 1 $((i*40)) > numbers.txt; git add numbers.txt; commit -m "numbers $i"; done
      echo 'a log' > debug.log && echo keep > keep.log && mkdir -p build && echo o > build/out.o
      """,
      @identity
    )

    dir
  end
end
