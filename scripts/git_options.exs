# Writes the table of options real git has, per command, that the
# sandbox's git reads to tell an option git does not have (git's usage
# error, exit 129) from one git has and the sandbox does not (refused,
# exit 128). Run with a real git on the PATH:
#
#     elixir scripts/git_options.exs
#
# Commands built on git's option parser list their options in `-h`;
# `log`, `show`, `diff` and `rev-list` take the revision and diff options,
# listed below from git's documentation (git-log(1), git-diff(1)), and
# `shortlog` and `blame` take them beside their own.

out = "native/ex_bashkit/crates/git/src/commands/git_options.txt"

parse_options =
  ~w(
  add rm mv commit status branch checkout switch reset restore merge tag
  describe shortlog blame ls-files merge-base grep cat-file clean init clone
  fetch pull push ls-remote remote ls-tree show-ref count-objects check-ignore
  name-rev for-each-ref cherry-pick revert
) ++
    [
      "remote add",
      "remote remove",
      "remote rename",
      "remote get-url",
      "remote set-url",
      "stash push",
      "stash pop",
      "stash apply",
      "stash drop",
      "stash show",
      "stash clear",
      "stash list",
      "stash branch"
    ]

# The revision walk's and the diff machinery's options (revision.c,
# diff.c), as git-log(1), git-diff(1) and git-rev-list(1) document them.
revision_and_diff = ~w(
  -p -u -s -z -n -S -G -O -L -M -C -B -D -R -U -W -w -b -a -i -E -F -P -m -c -t -g
  -0 -1 -2 -3 -4 -5 -6 -7 -8 -9 -l --cc --dd --patch --no-patch --patch-with-raw
  --patch-with-stat --raw --stat --stat-width --stat-name-width --stat-graph-width
  --stat-count --numstat --shortstat --dirstat --dirstat-by-file --cumulative --summary
  --name-only --name-status --submodule --color --no-color --color-moved
  --no-color-moved --color-moved-ws --no-color-moved-ws --word-diff --word-diff-regex
  --color-words --no-renames --rename-empty --no-rename-empty --check --ws-error-highlight
  --full-index --binary --abbrev --no-abbrev --break-rewrites --find-renames --find-copies
  --find-copies-harder --irreversible-delete --diff-filter --find-object --pickaxe-all
  --pickaxe-regex --skip-to --rotate-to --relative --no-relative --text
  --ignore-cr-at-eol --ignore-space-at-eol --ignore-space-change --ignore-all-space
  --ignore-blank-lines --ignore-matching-lines --inter-hunk-context --function-context
  --exit-code --quiet --ext-diff --no-ext-diff --textconv --no-textconv
  --ignore-submodules --src-prefix --dst-prefix --no-prefix --default-prefix
  --line-prefix --ita-invisible-in-index --ita-visible-in-index --minimal --patience
  --histogram --anchored --diff-algorithm --unified --output --output-indicator-new
  --output-indicator-old --output-indicator-context --indent-heuristic
  --no-indent-heuristic --diff-merges --no-diff-merges --combined-all-paths
  --remerge-diff --oneline --pretty --format --abbrev-commit --no-abbrev-commit
  --encoding --expand-tabs --no-expand-tabs --notes --no-notes --show-notes
  --show-notes-by-default --standard-notes --no-standard-notes --show-signature
  --relative-date --date --parents --children --left-right --graph --show-linear-break
  --max-count --skip --since --after --since-as-filter --until --before --max-age
  --min-age --author --committer --grep-reflog --grep --all-match --invert-grep
  --regexp-ignore-case --basic-regexp --extended-regexp --fixed-strings --perl-regexp
  --remove-empty --merges --no-merges --min-parents --max-parents --no-min-parents
  --no-max-parents --first-parent --exclude-first-parent-only --not --all --branches
  --tags --remotes --glob --exclude --exclude-hidden --reflog --alternate-refs
  --single-worktree --ignore-missing --bisect --stdin --cherry-mark --cherry-pick
  --left-only --right-only --cherry --walk-reflogs --merge --boundary --simplify-by-decoration
  --full-history --dense --sparse --simplify-merges --ancestry-path --no-walk --do-walk
  --topo-order --date-order --author-date-order --reverse --objects --in-commit-order
  --objects-edge --objects-edge-aggressive --indexed-objects --unpacked --object-names
  --no-object-names --filter --no-filter --filter-provided-objects --filter-print-omitted
  --missing --exclude-promisor-objects --count --timestamp --header --no-commit-id
  --follow --decorate --no-decorate --decorate-refs --decorate-refs-exclude
  --clear-decorations --source --use-mailmap --no-mailmap --mailmap --full-diff
  --log-size --no-merges --clear-decorations --show-pulls --mailmap --cached --staged
  --no-index --merge-base --base --ours --theirs --ignore-other-worktrees
)

options = fn help ->
  ~r/^\s+(?:(-[^-\s,]+)(?:, )?)?(--(?:\[no-\])?[a-z0-9][a-z0-9-]*)?/m
  |> Regex.scan(help)
  |> Enum.flat_map(fn
    [_, short] ->
      [short]

    [_, short, long] ->
      name = String.replace(long, "[no-]", "")

      negated =
        if String.contains?(long, "[no-]"), do: [String.replace(name, "--", "--no-")], else: []

      Enum.reject([short, name | negated], &(&1 == ""))

    _ ->
      []
  end)
  # `-w[<w>[,<i1>...` and the like: the option is its first two characters.
  |> Enum.map(
    &(Regex.run(~r/^-[^-]/, &1)
      |> then(fn
        [s] -> s
        nil -> &1
      end))
  )
end

scratch = Path.join(System.tmp_dir!(), "git_options_#{System.unique_integer([:positive])}")
{_, 0} = System.cmd("git", ["init", "-q", scratch])

help = fn command ->
  {text, _} =
    System.cmd("git", String.split(command) ++ ["-h"], cd: scratch, stderr_to_stdout: true)

  text
end

# `shortlog` and `blame` read the revision walk's options too (`--no-merges`,
# `--date`) beside the ones their `-h` lists.
walking = ~w(shortlog blame)

lines =
  Enum.map(parse_options, fn command ->
    extra = if command in walking, do: revision_and_diff, else: []
    {command, options.(help.(command)) ++ extra}
  end) ++
    Enum.map(~w(log show diff rev-list reflog), fn command ->
      {command, revision_and_diff}
    end)

File.rm_rf!(scratch)

# The commands themselves: one git has and the sandbox's has not is
# refused (exit 128), any other is git's "not a git command" (exit 1).
{commands, 0} = System.cmd("git", ["--list-cmds=main"])
lines = [{"(commands)", String.split(commands)} | lines]

text =
  lines
  |> Enum.map(fn {command, opts} ->
    "#{command}: #{opts |> Enum.uniq() |> Enum.sort() |> Enum.join(" ")}\n"
  end)
  |> Enum.join()

{version, 0} = System.cmd("git", ["--version"])

File.write!(
  out,
  "# Options real git has, per command (#{String.trim(version)}), written by\n" <>
    "# scripts/git_options.exs. The sandbox's git refuses those it has not\n" <>
    "# built with exit 128, and any other with git's usage error.\n" <> text
)

IO.puts("wrote #{out} (#{length(lines)} commands)")
