# The git commands agents run, on public repositories cloned by real git:
# every read observation and every write sequence runs in the sandbox's
# git and in Debian's git on copies of the same clone, and is compared
# (stdout and exit status; after writes, the repository as real git sees
# it and `fsck --strict`).
#
#   REPOS="/path/a.git /path/b.git ..." MIX_ENV=prod mix run bench/git_corpus.exs
#
# Each entry of REPOS is a git directory to clone from (a bare mirror);
# `name=path` gives it a name. The clones are reshaped so the corpus meets
# what real repositories hold: the 2nd is `gc --aggressive`d, the 3rd
# gets a commit-graph, the 4th `core.abbrev=10`. Optional: ONLY=reads or
# ONLY=writes; SHOW=1 prints every disagreement; OUT=file writes them.
#
# Counted per repository: observations that agree, that our git refused
# (`not supported by the sandbox's git`, exit 128: not wrong), that
# differ while ours failed, and the ones that matter most: **different
# with exit status 0**. Times: ours in the session vs real git through
# `bash -c`, per observation; "slow" counts those over 2× real git and
# over 50 ms.

Code.require_file("../test/support/real_git.ex", __DIR__)

defmodule GitCorpus do
  alias ExBashkit.{Result, Session}
  import ExBashkit.Test.RealGit

  # {placeholder} is one of the repository's facts (see facts/1).
  @reads [
    # Orienting.
    "git status",
    "git status --short --branch",
    "git status --porcelain",
    "git status --porcelain=v2 --branch",
    "git branch",
    "git branch -a",
    "git branch -r",
    "git branch -vv",
    "git branch --show-current",
    "git branch -a --contains HEAD~3",
    "git remote -v",
    "git remote",
    "git remote show origin -n",
    "git config --get remote.origin.url",
    "git config --list --local",
    "git rev-parse HEAD",
    "git rev-parse --short HEAD",
    "git rev-parse --abbrev-ref HEAD",
    "git rev-parse --show-toplevel",
    "git rev-parse --git-dir",
    "git rev-parse --is-inside-work-tree",
    "git rev-parse HEAD~3 HEAD^",
    "git rev-parse 'HEAD^{tree}'",
    "git rev-parse --abbrev-ref '@{upstream}'",
    "git rev-parse --verify -q {tag}^{commit}",
    "git rev-parse --symbolic-full-name HEAD",
    "git rev-list --count HEAD",
    "git rev-list --count {tag}..HEAD",
    "git rev-list -n 5 HEAD",
    "git rev-list --max-count=3 --first-parent HEAD",
    "git rev-list --count --merges HEAD",
    "git stash list",
    "git reflog -3",
    "git ls-remote --heads . | head -5",
    # History.
    "git log --oneline -20",
    "git log -5",
    "git log -3 --format='%h %an %ad %s' --date=short",
    "git log -3 --format='%H%n%P%n%T%n%ae%n%ce%n%at%n%ct'",
    "git log --format='%h %s' -10",
    "git log --pretty=oneline -5",
    "git log --pretty=fuller -2",
    "git log --pretty=medium -2",
    "git log --date=iso -3",
    "git log --date=relative -3 --format='%ad %s'",
    "git log --oneline -5 -- {file}",
    "git log --oneline -5 -- {dir}",
    "git log -3 --format=%h -- {file}",
    "git log --oneline --first-parent -10",
    "git log --merges --oneline -5",
    "git log --no-merges --oneline -5",
    "git log --oneline --since='{date}' | wc -l",
    "git log --oneline --until='{date}' -3",
    "git log --author='{author}' --oneline -5",
    "git log --grep=fix -i --oneline -5",
    "git log --oneline {tag}..HEAD | wc -l",
    "git log --oneline {tag} -3",
    "git log --stat -3",
    "git log --stat --oneline -3",
    "git log --shortstat --oneline -3",
    "git log -p -2",
    "git log -p -1 -- {file}",
    "git log --name-only --format=%h -5",
    "git log --name-status --format=%h -5",
    "git log --reverse --oneline | head -3",
    "git log --oneline -3 {branch}",
    "git log --oneline HEAD..{branch} | wc -l",
    "git log --oneline --all -5",
    "git log --graph --oneline -10",
    "git log -1 --format=%cd --date=short",
    "git log -1 --format='%an <%ae>'",
    "git log --format=%s -1 HEAD~2",
    "git log -n 3 --format='%h%x09%s'",
    "git shortlog -sn HEAD | head -5",
    "git shortlog -sne HEAD | head -3",
    # Commits and objects.
    "git show",
    "git show --stat HEAD",
    "git show HEAD~3",
    "git show --name-only HEAD",
    "git show --name-status HEAD~1",
    "git show -s --format=%s HEAD",
    "git show HEAD:{file} | head -20",
    "git show {tag} --stat | head -30",
    "git show --oneline -s {tag}",
    "git cat-file -t HEAD",
    "git cat-file -p HEAD",
    "git cat-file -p 'HEAD^{tree}' | head",
    "git cat-file -s HEAD:{file}",
    "git cat-file -e HEAD:{file}; echo $?",
    "git cat-file -t {tag}",
    # Differences.
    "git diff",
    "git diff --cached",
    "git diff HEAD~5 HEAD --stat",
    "git diff HEAD~20 HEAD --shortstat",
    "git diff HEAD~1 --name-only",
    "git diff HEAD~3 HEAD -- {file}",
    "git diff --name-status HEAD~10 HEAD",
    "git diff {tag} HEAD --stat | tail -1",
    "git diff HEAD~2 HEAD --stat -- {dir}",
    "git diff HEAD~1 HEAD",
    "git diff --quiet HEAD~1 HEAD; echo $?",
    "git diff HEAD~4..HEAD~2 --name-only",
    # Tags and refs.
    "git tag | wc -l",
    "git tag --sort=-creatordate | head -5",
    "git tag --sort=-v:refname | head -5",
    "git tag -l '{tagglob}' | head -5",
    "git tag --points-at HEAD",
    "git describe --tags",
    "git describe --tags --abbrev=0",
    "git describe --always",
    "git describe --tags HEAD~5",
    "git describe --tags --long",
    "git for-each-ref --count=5 --sort=-creatordate --format='%(refname:short)'",
    "git for-each-ref refs/remotes --format='%(refname)' | head",
    "git for-each-ref --format='%(refname:short) %(objectname:short)' refs/tags | head -5",
    "git show-ref --tags | wc -l",
    "git show-ref --heads",
    "git show-ref {tag}",
    "git merge-base HEAD {branch}",
    "git merge-base --is-ancestor {tag} HEAD; echo $?",
    # Files.
    "git ls-files | wc -l",
    "git ls-files {dir} | head",
    "git ls-files -s {file}",
    "git ls-files --others --exclude-standard",
    "git ls-tree HEAD",
    "git ls-tree -r --name-only HEAD | wc -l",
    "git ls-tree HEAD {dir}/",
    "git ls-tree -r HEAD {dir} | head -5",
    "git ls-tree -l HEAD | head -5",
    "git grep -n fix -- {dir} | head",
    "git grep -c TODO | head -5",
    "git grep -l -i license | head -5",
    "git grep -w -n {word} | head -5",
    "git blame {file} | head -5",
    "git blame -L 1,5 {file}",
    "git blame --porcelain -L 1,2 {file} | head -12",
    "git check-ignore -v _build/x deps/y node_modules/z target/w; echo $?",
    "git count-objects -v | head -2",
    "git name-rev HEAD"
  ]

  # Each runs on fresh copies of the clone, with a fixed identity and
  # dates so both gits make the same commits.
  @writes [
    "echo x >> {file} && git add -A && git commit -q -m edit && git log --oneline -2",
    "echo x >> {file} && git commit -qam edit && git show --stat",
    "git checkout -q -b feature && echo new > new.txt && git add new.txt && git commit -q -m new && git branch",
    "git switch -q -c topic HEAD~3 && git log --oneline -1 && git status --short",
    "git mv {file} moved.txt && git status --short && git commit -q -m mv",
    "git rm -q {file} && git commit -q -m rm && git status --short",
    "echo x >> {file} && git stash -q && git stash list && git stash pop -q && git status --short",
    "git reset -q --hard HEAD~2 && git log --oneline -1",
    "git reset -q --soft HEAD~1 && git status --short && git commit -q -m again",
    "git reset -q HEAD~1 && git status --short | head",
    "git tag v-test && git tag -a v-ann -m annotated && git tag --points-at HEAD",
    "git revert --no-edit HEAD && git log --oneline -2",
    "git commit -q --amend -m amended && git log --format='%s %an' -2",
    "git branch tmp && git branch -d tmp",
    "git checkout -q {tag} && git status | head -1 && git checkout -q - && git status | head -1",
    "echo x >> {file} && git checkout -- {file} && git status --short",
    "echo x >> {file} && git add {file} && git restore --staged {file} && git status --short",
    "mkdir -p junk && echo j > junk/j.txt && git clean -fdq && git status --short",
    "git merge -q --no-edit {branch}; git status --short | head; git log --oneline -1",
    "git cherry-pick HEAD~2; git status --short | head",
    "printf '*.tmp\\n' >> .gitignore && touch a.tmp && git add -A && git commit -q -m ignore && git status --short",
    "git checkout -q -b side HEAD~1 && echo s > side.txt && git add side.txt && git commit -q -m side && git checkout -q - && git merge -q --no-edit side && git log --graph --oneline -3"
  ]

  def run do
    repos =
      (System.get_env("REPOS") || raise("set REPOS to the git directories to clone"))
      |> String.split()
      |> Enum.map(fn entry ->
        case String.split(entry, "=", parts: 2) do
          [name, path] -> {name, path}
          [path] -> {path |> Path.dirname() |> Path.basename(), path}
        end
      end)

    only = System.get_env("ONLY")
    root = Path.join(System.tmp_dir!(), "git_corpus_#{System.unique_integer([:positive])}")
    File.mkdir_p!(root)

    try do
      rows =
        for {{name, source}, index} <- Enum.with_index(repos) do
          clone = clone!(root, name, source, index)
          facts = facts(clone)
          IO.puts(:stderr, "#{name}: #{inspect(facts)}")
          reads = if only in [nil, "reads"], do: reads(clone, facts), else: []
          writes = if only in [nil, "writes"], do: writes(root, clone, facts), else: []
          {name, clone, reads, writes}
        end

      report(rows)
    after
      File.rm_rf!(root)
    end
  end

  # ---- the repositories -------------------------------------------------------

  defp clone!(root, name, source, index) do
    dir = Path.join(root, name)
    # A mirror may lack blobs of other branches: then its default one.
    git!(
      root,
      "git clone -q --no-local #{source} #{dir} 2>/dev/null || " <>
        "(rm -rf #{dir} && git clone -q --no-local --single-branch #{source} #{dir})"
    )

    case index do
      1 -> git!(dir, "git gc -q --aggressive")
      2 -> git!(dir, "git commit-graph write --reachable")
      3 -> git!(dir, "git config core.abbrev 10")
      _ -> :ok
    end

    dir
  end

  defp facts(dir) do
    one = fn script ->
      {out, _} = System.cmd("bash", ["-c", "(#{script}) 2>/dev/null"], cd: dir, env: host_env())
      String.trim(out)
    end

    file =
      one.(
        "git log --format= --name-only -300 | sort | uniq -c | sort -rn | " <>
          "awk '{print $2}' | while read f; do if [ -f \"$f\" ]; then echo \"$f\"; break; fi; done"
      )

    default = one.("git rev-parse --abbrev-ref HEAD")

    branch =
      one.(
        "git for-each-ref refs/remotes --format='%(refname:short)' | " <>
          "grep -v -e '^origin$' -e '/HEAD$' -e '^origin/#{default}$' | head -1"
      )

    tag = one.("git describe --tags --abbrev=0")

    %{
      "file" => file,
      "dir" =>
        case(Path.dirname(file),
          do:
            (
              "." -> one.("git ls-tree -d --name-only HEAD | head -1")
              d -> d
            )
        ),
      "tag" => tag,
      "tagglob" => String.replace(tag, ~r/[0-9].*$/, "") <> "*",
      "branch" => if(branch == "", do: "HEAD~2", else: branch),
      "author" => one.("git log -1 --skip=10 --format=%an"),
      "date" => one.("git log -1 --skip=40 --format=%cs"),
      "word" =>
        one.(
          "git log -1 --format=%s | tr -c 'A-Za-z\\n' ' ' | awk '{for(i=1;i<=NF;i++) if (length($i)>4) {print $i; exit}}'"
        )
    }
  end

  defp fill(template, facts) do
    Regex.replace(~r/\{(\w+)\}/, template, fn whole, key -> Map.get(facts, key, whole) end)
  end

  # ---- running ------------------------------------------------------------------

  defp theirs(dir, script) do
    env = host_env() ++ [{"HOME", dir}, {"GIT_OPTIONAL_LOCKS", "0"} | Enum.to_list(identity())]
    err = dir <> ".stderr"

    {us, {out, code}} =
      :timer.tc(fn -> System.cmd("bash", ["-c", "(#{script}) 2>#{err}"], cd: dir, env: env) end)

    {out, File.read!(err), code, us / 1000}
  after
    File.rm(dir <> ".stderr")
  end

  defp session(dir, access) do
    Session.new(
      git: true,
      cwd: dir,
      env: Map.merge(identity(), %{"HOME" => "/home/user", "TZ" => "UTC"}),
      mounts: [{dir, dir, access}],
      limits: [max_file_bytes: 1_000_000_000]
    )
  end

  defp ours(session, script) do
    {us, answer} = :timer.tc(fn -> Session.exec(session, script, timeout_ms: 600_000) end)

    case answer do
      {:ok, %Result{stdout: out, stderr: err, exit_code: code}} -> {out, err, code, us / 1000}
      {:error, message} -> {"", "error: #{inspect(message)}", -1, us / 1000}
    end
  end

  defp reads(clone, facts) do
    session = session(clone, :read_only)
    # Real git once untimed: a fresh clone's index is refreshed once.
    theirs(clone, "git status")

    for template <- @reads do
      script = fill(template, facts)
      {o_out, o_err, o_code, o_ms} = ours(session, script)
      {t_out, t_err, t_code, t_ms} = theirs(clone, script)
      observation(script, {o_out, o_err, o_code, o_ms}, {t_out, t_err, t_code, t_ms})
    end
  end

  defp writes(root, clone, facts) do
    for template <- @writes do
      script = fill(template, facts)
      a = copy!(root, clone, "theirs")
      b = copy!(root, clone, "ours")

      try do
        {t_out, t_err, t_code, t_ms} = theirs(a, script)
        session = session(b, :read_write)
        {o_out, o_err, o_code, o_ms} = ours(session, script)
        Session.close(session)
        state_same = judged(a) == judged(b)
        {fsck, fsck_code} = fsck(b)

        observation(script, {o_out, o_err, o_code, o_ms}, {t_out, t_err, t_code, t_ms})
        |> Map.update!(:verdict, fn
          :same when not state_same -> :state
          verdict -> verdict
        end)
        |> Map.put(:corrupt, if(fsck_code != 0, do: fsck))
      after
        File.rm_rf!(a)
        File.rm_rf!(b)
      end
    end
  end

  defp copy!(root, clone, prefix) do
    dir = Path.join(root, "#{prefix}_#{System.unique_integer([:positive])}")
    {_, 0} = System.cmd("cp", ["-a", clone, dir])
    dir
  end

  defp judged(dir) do
    {status, _, _, _} = theirs(dir, "git status --porcelain=v2 --branch --untracked-files=all")
    {history, _, _, _} = theirs(dir, "git log --all --format='%H %T %P' && git for-each-ref")

    {files, _, _, _} =
      theirs(
        dir,
        "find . -path ./.git -prune -o \\( -type f -o -type l \\) -print0 | sort -z | xargs -0 -r sha1sum"
      )

    {status, history, files}
  end

  defp fsck(dir) do
    System.cmd("git", ["fsck", "--strict", "--no-progress"],
      cd: dir,
      env: host_env() ++ [{"HOME", dir}],
      stderr_to_stdout: true
    )
  end

  defp observation(script, {o_out, o_err, o_code, o_ms}, {t_out, t_err, t_code, t_ms}) do
    verdict =
      cond do
        o_out == t_out and o_code == t_code -> :same
        # A pipeline's status is its last command's: the message decides.
        o_err =~ "not supported by the sandbox's git" -> :refused
        o_code == 0 -> :wrong
        true -> :failed
      end

    %{
      script: script,
      verdict: verdict,
      ours: {o_out, o_err, o_code},
      theirs: {t_out, t_err, t_code},
      ms: {o_ms, t_ms},
      corrupt: nil
    }
  end

  # ---- the report -----------------------------------------------------------------

  defp report(rows) do
    IO.puts(
      "| repository | commits | reads agree | refused | differ (ours failed) | **wrong, exit 0** | slow | writes agree | refused | differ | corrupt |"
    )

    IO.puts("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    for {name, clone, reads, writes} <- rows do
      commits = clone |> git!("git rev-list --count HEAD") |> String.trim()
      r = Enum.frequencies_by(reads, & &1.verdict)
      w = Enum.frequencies_by(writes, & &1.verdict)
      slow = Enum.count(reads, fn %{ms: {o, t}} -> o > 2 * t and o > 50 end)

      IO.puts(
        "| #{name} | #{commits} | #{r[:same] || 0}/#{length(reads)} | #{r[:refused] || 0} | #{r[:failed] || 0} | " <>
          "#{r[:wrong] || 0} | #{slow} | #{w[:same] || 0}/#{length(writes)} | #{w[:refused] || 0} | " <>
          "#{(w[:failed] || 0) + (w[:wrong] || 0) + (w[:state] || 0)} | #{Enum.count(writes, & &1.corrupt)} |"
      )
    end

    all = Enum.flat_map(rows, fn {_, _, r, w} -> r ++ w end)
    IO.puts("\n#{Enum.count(all, &(&1.verdict == :same))} of #{length(all)} agree overall")

    details =
      for {name, _, reads, writes} <- rows,
          o <- reads ++ writes,
          o.verdict not in [:same, :refused] or o.corrupt do
        {o_out, o_err, o_code} = o.ours
        {t_out, t_err, t_code} = o.theirs
        {o_ms, t_ms} = o.ms

        "### #{name} [#{o.verdict}] #{o.script}\n" <>
          "exit: ours #{o_code} (#{round(o_ms)} ms), real #{t_code} (#{round(t_ms)} ms)\n" <>
          "stderr ours: #{clip(o_err)}\nstderr real: #{clip(t_err)}\n" <>
          clip(unified(t_out, o_out)) <>
          if(o.corrupt, do: "fsck:\n#{clip(o.corrupt)}", else: "")
      end

    slow =
      for {name, _, reads, _} <- rows, %{ms: {o, t}} = r <- reads, o > 2 * t and o > 50 do
        "#{name}: #{r.script}: #{round(o)} ms vs #{round(t)} ms"
      end

    refused =
      for {_, _, reads, writes} <- rows,
          o <- reads ++ writes,
          o.verdict == :refused,
          uniq: true do
        {_, err, _} = o.ours
        reason = err |> String.split("\n") |> Enum.find("", &(&1 =~ "not supported"))
        "#{o.script}: #{reason}"
      end

    text =
      Enum.join(details, "\n") <>
        "\n### refused\n" <>
        Enum.join(refused, "\n") <> "\n### slow\n" <> Enum.join(slow, "\n") <> "\n"

    if path = System.get_env("OUT"), do: File.write!(path, text)
    if System.get_env("SHOW"), do: IO.puts(text)
  end

  # real git's output → ours, as `diff -u` shows it.
  defp unified(real, ours) do
    dir = System.tmp_dir!()

    [a, b] =
      for side <- ["real", "ours"],
          do: Path.join(dir, "corpus_#{side}_#{System.unique_integer([:positive])}")

    File.write!(a, real)
    File.write!(b, ours)
    {diff, _} = System.cmd("diff", ["-u", a, b])
    File.rm(a)
    File.rm(b)
    diff |> String.split("\n") |> Enum.drop(2) |> Enum.join("\n")
  end

  defp clip(text) do
    lines = String.split(text, "\n")
    shown = Enum.take(lines, 40) |> Enum.join("\n")
    if length(lines) > 40, do: shown <> "\n…(#{length(lines)} lines)\n", else: shown
  end
end

GitCorpus.run()
