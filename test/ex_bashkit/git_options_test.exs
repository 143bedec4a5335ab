defmodule ExBashkit.GitOptionsTest do
  # Options the sandbox's git answered wrongly with exit status 0 (parsed
  # and ignored, or misread): each now prints what real git prints on the
  # same repository, or is refused before anything runs.
  use ExBashkit.Case, async: true

  @moduletag :git

  import ExBashkit.Test.RealGit

  setup_all do
    root = Path.join(System.tmp_dir!(), unique_name("ex_bashkit_git_options"))
    on_exit(fn -> File.rm_rf!(root) end)
    %{repo: history!(Path.join(root, "repo"))}
  end

  # `script` run by real git on one copy of the repository and by the
  # sandbox on another, mounted read-write: what each printed.
  defp on_copies(ctx, name, script) do
    for side <- [:real, :sandbox] do
      dir = Path.join(Path.dirname(ctx.repo), "#{name}_#{side}")
      {_, 0} = System.cmd("cp", ["-a", ctx.repo, dir])

      case side do
        :real ->
          env = host_env() ++ [{"HOME", dir} | Enum.to_list(identity())]
          {out, 0} = System.cmd("bash", ["-c", script], cd: dir, env: env)
          out

        :sandbox ->
          session =
            Session.new(
              git: true,
              cwd: "/repo",
              env: identity(),
              mounts: [{"/repo", dir, :read_write}]
            )

          run(session, script).stdout
      end
    end
  end

  # A session on a repository of the test's own, at /repo.
  defp session_on(dir, access \\ :read_only) do
    Session.new(git: true, cwd: "/repo", env: identity(), mounts: [{"/repo", dir, access}])
  end

  # A directory beside the shared repository, for one test's copy.
  defp beside(ctx, name), do: Path.join(Path.dirname(ctx.repo), name)

  defp session(ctx) do
    Session.new(
      git: true,
      cwd: "/repo",
      env: identity(),
      mounts: [{"/repo", ctx.repo, :read_only}]
    )
  end

  for command <- [
        "git log --merges --oneline",
        "git log --no-merges --oneline",
        "git log --no-merges --format=%s -n 2",
        "git diff HEAD~2 HEAD --shortstat",
        "git diff HEAD~1 HEAD --shortstat -- docs",
        "git cat-file -p 'HEAD^{tree}'",
        "git rev-parse 'HEAD^{tree}' 'HEAD~1^{tree}'",
        "git describe --tags --abbrev=0",
        "git describe --tags --abbrev=0 HEAD~1",
        # The revision walk: ranges, filters, dates, paths.
        "git log --oneline --all",
        "git log --oneline main..feature",
        "git log --oneline feature..main",
        "git log --oneline main...feature",
        "git log --oneline ^feature main",
        "git log --oneline --first-parent",
        "git log --format=%s --since=2020-09-13",
        "git log --format=%s --since=1600010000 --until=1600050000",
        "git log --format=%s --since='3 days ago'",
        "git log --format=%s --author=Ann --grep=numbers -n 2",
        "git log --format=%s -i --grep=MERGE",
        "git log --format=%s --grep=numbers --invert-grep",
        "git log --format=%s --grep=numbers --grep=docs",
        "git log --format=%s --skip=2 -n 3",
        "git log --format=%s --min-parents=2",
        "git log --oneline -- a.txt",
        "git log --oneline -- src",
        "git log --oneline a.txt",
        "git log --oneline --first-parent -- src",
        "git log --format='%h %ad' --date=iso -n 2",
        "git log --format='%ad|%cd' --date=short -n 2",
        "git log --format='%ad' --date=rfc -n 1",
        "git log --format='%ad %at' --date=raw -n 1",
        "git log --format='%ar %cr %aD' -n 1",
        "git log --date=iso-strict -n 1",
        "git log --abbrev-commit -n 1",
        "git log --oneline --name-status -n 3",
        "git log --oneline --name-only -n 3",
        "git log --format=%s --shortstat -n 2",
        "git log --oneline --stat -n 2",
        "git shortlog -s -n --all",
        "git shortlog -s main..feature",
        # Listings of trees, commits and refs.
        "git ls-tree HEAD",
        "git ls-tree -r HEAD",
        "git ls-tree -r -t HEAD",
        "git ls-tree -r --name-only HEAD",
        "git ls-tree -d HEAD",
        "git ls-tree -r -d HEAD",
        "git ls-tree -l HEAD",
        "git ls-tree HEAD src",
        "git ls-tree HEAD src/",
        "git ls-tree -r HEAD src",
        "git ls-tree -t HEAD src/lib/mod.rs",
        "git ls-tree HEAD~3 docs/",
        "git ls-tree 'HEAD^{tree}' --object-only",
        "git rev-list HEAD",
        "git rev-list --count HEAD",
        "git rev-list --all --count",
        "git rev-list main..feature",
        "git rev-list --reverse -n 3 HEAD",
        "git rev-list --first-parent --count HEAD",
        "git rev-list HEAD -- docs",
        "git show-ref",
        "git show-ref --tags -d",
        "git show-ref --heads -s",
        "git show-ref main",
        "git show-ref --verify refs/heads/main",
        "git for-each-ref",
        "git for-each-ref refs/tags",
        "git for-each-ref --format='%(refname:short) %(objectname:short) %(objecttype)'",
        "git for-each-ref --sort=-creatordate --format='%(refname) %(creatordate:iso)'",
        "git for-each-ref --sort=-committerdate --count=2 refs/heads --format='%(HEAD) %(refname:short) %(subject) %(authorname) %(committerdate:relative)'",
        "git for-each-ref --format='%(refname:strip=2) %(*objectname) %(taggername) %(taggeremail)' refs/tags",
        "git tag --sort=-creatordate",
        "git tag --sort=version:refname",
        "git tag -l --sort=-taggerdate --format='%(refname:short) %(subject)'",
        "git branch --sort=-committerdate",
        "git branch -a --sort=refname",
        "git reflog",
        "git reflog -n 3",
        "git reflog show main",
        "git check-ignore debug.log a.txt build/out.o keep.log build nothing.log || echo exit $?",
        "git check-ignore a.txt || echo exit $?",
        "git check-ignore -q debug.log && echo ignored",
        # git's commit formats: the message indented, blank lines too.
        "git log",
        "git log --pretty=oneline -n 3",
        "git log --pretty=short -n 4",
        "git log --pretty=full -n 2",
        "git log --pretty=fuller --date=iso -n 2",
        "git show -s --oneline v2",
        "git show -s --format=%s v2",
        "git show -s --pretty=fuller v2",
        "git show --stat v2",
        # Objects named by a path in a tree, and tags peeled to a kind.
        "git cat-file -s HEAD:a.txt",
        "git cat-file -e HEAD:src/main.rs && echo present",
        "git cat-file -p HEAD:src",
        "git rev-parse HEAD:src HEAD~1:a.txt 'v2^{tag}' 'v2^{object}' 'v2^{commit}'",
        "git show --format=%s --stat HEAD~1",
        "git show --format=format:%s --stat HEAD~1",
        "git show --format= --stat HEAD~1",
        "git log --format= --name-only -n 3",
        "git log --format= --stat -n 2",
        "git check-ignore -v debug.log build/out.o keep.log a.txt || echo exit $?",
        "git check-ignore -v -n debug.log nothing.txt",
        # Lists filtered by what their refs reach.
        "git tag --contains v1",
        "git tag --contains HEAD~3 --sort=-creatordate",
        "git tag --no-contains v2",
        "git tag --merged",
        "git tag --merged feature",
        "git tag --no-merged feature",
        "git tag --points-at v2",
        "git tag --points-at HEAD~7 -l 'v*'",
        "git branch --contains HEAD~6",
        "git branch --contains",
        "git branch --merged",
        "git branch --no-merged",
        "git branch -a --contains feature -v",
        "git rev-parse --symbolic-full-name HEAD main v1 HEAD~1 feature",
        # Dates in strftime's formats, and log.date.
        "git log --date='format:%Y-%m-%d %H:%M:%S %a %A %b %B %e %j %p %I %l %k %u %w %U %W %y %C' --format=%ad -n 3",
        "git log --date='format:%c|%D|%F|%T|%R|%r|%x|%X|%z|%Z|%s|%%|%n%t.' --format=%cd -n 2",
        "git -c log.date=iso log -n 2",
        "git -c log.date=short log --format='%ad %cd' -n 2",
        "git -c 'log.date=format:%d/%m/%Y' show -s HEAD",
        "git for-each-ref --format='%(refname) %(creatordate:format:%Y%m%d %H%M)' refs/tags",
        # shortlog takes the revision walk's filters.
        "git shortlog -s -n --no-merges HEAD",
        "git shortlog --merges HEAD",
        "git shortlog -s --grep=numbers --until=1600030000 HEAD",
        # Settings given with -c before the command.
        "git -c core.abbrev=12 log --oneline -n 2",
        "git -c a.b=c config --get a.b",
        "git -c user.name=Zed config user.name"
      ] do
    test "#{command} prints what real git prints", ctx do
      expected = git!(ctx.repo, unquote(command))
      assert %Result{exit_code: 0, stdout: ^expected} = run(session(ctx), unquote(command))
    end
  end

  test "revisions git would not read are not misread", ctx do
    for revision <- ["HEAD^{blob}", "HEAD^{/no such message}", "HEAD~1x", "HEAD^x", "HEAD^{nope}"] do
      assert %Result{exit_code: 128, stderr: stderr} =
               run(session(ctx), "git rev-parse '#{revision}'")

      assert stderr =~ "ambiguous argument '#{revision}'", revision
    end
  end

  test "options git has and the sandbox's git does not are refused, never ignored", ctx do
    session = session(ctx)

    for {command, option} <- [
          {"git log --since='next tuesday'",
           "--since=next tuesday (a date this git does not read)"},
          {"git log --date=human -n 1", "--date=human"},
          {"git log --follow -Shello -- a.txt", "--follow with -S or -G"},
          {"git log --decorate=full --oneline", "--decorate=full"},
          {"git log -L1,2:a.txt", "-L1,2:a.txt"},
          {"git log --pickaxe-all -Shello --oneline", "--pickaxe-all"},
          {"git diff -W HEAD~1", "-W"},
          {"git diff --dirstat HEAD~1", "--dirstat"},
          {"git diff -w HEAD~1", "-w"},
          {"git branch -c copy", "-c"},
          {"git status --ignored", "--ignored"},
          {"git add -n .", "-n"},
          {"git stash push --keep-index", "--keep-index"},
          {"git log --format=%N -n 1", "the --format placeholder %N"},
          {"git log --format=raw -n 1", "--format=raw"},
          {"git remote show origin",
           "remote show without -n (asking the remote); git remote show -n NAME shows what the repository knows"},
          {"git commit --fixup HEAD", "--fixup"},
          {"git clean -fdx", "-fdx"}
        ] do
      assert %Result{exit_code: 128, stdout: "", stderr: stderr} = run(session, command)
      assert stderr == "fatal: not supported by the sandbox's git: #{option}\n", command
    end
  end

  test "options git does not have get git's usage error", ctx do
    session = session(ctx)

    for {command, code, message} <- [
          {"git status --bogus", 129, "error: unknown option `bogus'"},
          {"git add -Z x", 129, "error: unknown switch `Z'"},
          {"git diff --bogus", 129, "error: invalid option: --bogus"},
          {"git log --bogus", 128, "fatal: unrecognized argument: --bogus"}
        ] do
      assert %Result{exit_code: ^code, stdout: "", stderr: stderr} = run(session, command)
      assert stderr =~ message, command
      real = System.cmd("bash", ["-c", command <> " 2>&1"], cd: ctx.repo, env: host_env())
      assert {real_out, ^code} = real
      assert real_out =~ message, command
    end
  end

  # ---- every option git has, walked ------------------------------------------

  # The commands that only read, with operands that give each something to
  # show; every option real git's help lists for them is tried alone.
  @walked %{
    "status" => "",
    "log" => "-n 3",
    "show" => "HEAD~1",
    "diff" => "HEAD~3 HEAD",
    "branch" => "",
    "tag" => "",
    "describe" => "--tags",
    "shortlog" => "HEAD",
    "ls-files" => "",
    "merge-base" => "HEAD feature",
    "grep" => "-I hello",
    "cat-file" => "-p HEAD",
    "blame" => "a.txt",
    "ls-tree" => "HEAD",
    "rev-list" => "HEAD",
    "show-ref" => "",
    "for-each-ref" => "",
    "reflog" => "",
    "check-ignore" => "debug.log a.txt build/out.o keep.log build",
    "name-rev" => "HEAD~2",
    "count-objects" => ""
  }

  defp git_options do
    "native/ex_bashkit/crates/git/src/commands/git_options.txt"
    |> File.read!()
    |> String.split("\n", trim: true)
    |> Enum.reject(&String.starts_with?(&1, "#"))
    |> Map.new(fn line ->
      [command, options] = String.split(line, ": ", parts: 2)
      {command, String.split(options, " ")}
    end)
  end

  defp real_git(dir, command) do
    # Standard input closed: `shortlog` without a revision reads it.
    System.cmd("bash", ["-c", command <> " 2>/dev/null </dev/null"],
      cd: dir,
      env: host_env() ++ [{"GIT_OPTIONAL_LOCKS", "0"}, {"HOME", dir}]
    )
  end

  @tag timeout: 600_000
  test "every option git has: refused, or what real git prints", ctx do
    session = session(ctx)
    table = git_options()

    results =
      for {command, operands} <- @walked,
          option <- Map.fetch!(table, command),
          option not in ["", "-h"] do
        line = "git #{command} #{option} #{operands}"
        ours = run(session, line)

        case ours do
          %Result{exit_code: code} when code in [128, 129] and ours.stdout == "" ->
            :refused

          %Result{exit_code: code, stdout: stdout} ->
            case real_git(ctx.repo, line) do
              {^stdout, ^code} -> :agreed
              {real, real_code} -> {:wrong, line, {code, stdout}, {real_code, real}}
            end
        end
      end

    wrong = for {:wrong, line, ours, real} <- results, do: {line, ours, real}

    assert Enum.map(wrong, &elem(&1, 0)) == [],
           inspect(wrong, limit: :infinity, printable_limit: 400)

    # The walk tries hundreds of options; a good share of them work.
    assert Enum.count(results, &(&1 == :agreed)) >= 40
  end

  # ---- abbreviated names, as git sizes them ------------------------------------

  @tag timeout: 300_000
  test "abbreviated object names grow with the repository, as git's do", ctx do
    # More than 2^14 packed objects: git abbreviates to 8 digits.
    dir = beside(ctx, "many")
    File.mkdir_p!(dir)

    stream =
      Enum.map_join(1..17_000, fn i ->
        data = "object #{i}\n"
        "blob\nmark :#{i}\ndata #{byte_size(data)}\n#{data}\n"
      end) <>
        "commit refs/heads/main\nmark :17001\ncommitter A <a@b> 1700000000 +0000\ndata 4\nmany\n" <>
        Enum.map_join(1..17_000, fn i -> "M 100644 :#{i} f/#{i}\n" end) <> "\n"

    File.write!(Path.join(dir, "stream"), stream)

    git!(
      dir,
      """
      git init -q -b main . && git fast-import --quiet < stream && rm stream
      git reset -q --hard && git repack -a -d -q
      echo more > f/1 && git commit -qam 'one more'
      """,
      identity()
    )

    session = session_on(dir)

    for command <- [
          "git log --oneline",
          "git log --format='%h %t %p'",
          "git rev-parse --short HEAD",
          "git rev-parse --short=4 HEAD",
          "git show HEAD",
          "git describe --always"
        ] do
      {expected, 0} = real_git(dir, command)
      assert %Result{exit_code: 0, stdout: ^expected} = run(session, command), command
    end

    [short | _] = String.split(git!(dir, "git rev-parse --short HEAD"))
    assert String.length(short) == 8
  end

  test "branch -vv shows each branch's upstream, as git does", ctx do
    dir = beside(ctx, "cloned")

    git!(Path.dirname(dir), "git clone -q --no-local #{ctx.repo} #{dir}", identity())

    git!(
      dir,
      """
      git checkout -q -b ahead origin/main && echo x >> a.txt && git commit -qam ahead
      git checkout -q -b behind origin/feature && git reset -q --hard HEAD~1
      git checkout -q -b plain
      """,
      identity()
    )

    session = session_on(dir)

    for command <- [
          "git branch -vv",
          "git branch -v",
          "git branch -a",
          "git branch --list 'a*'",
          "git tag -l 'v*'",
          "git rev-parse --abbrev-ref HEAD origin/main HEAD~1",
          "git merge-base --is-ancestor HEAD~1 HEAD; echo $?",
          "git merge-base --is-ancestor HEAD HEAD~1; echo $?"
        ] do
      {expected, 0} = real_git(dir, command)
      assert %Result{stdout: ^expected} = run(session, command), command
    end
  end

  @tag timeout: 300_000
  test "describe names every commit as git does, past ten candidate tags", ctx do
    dir = beside(ctx, "tagged")
    File.mkdir_p!(dir)

    # Branches merged back, more than ten tags (lightweight and annotated,
    # two on one commit), commits sharing a second.
    git!(
      dir,
      """
      git init -q -b main .
      n=0
      c() { n=$((n+1)); GIT_COMMITTER_DATE="$((1600000000 + n / 2 * 60)) +0000" git commit -q --allow-empty -m "c$n"; }
      for i in $(seq 1 6); do c; done
      git tag -a v0.1 -m one; git tag light0
      for r in 1 2 3 4 5 6; do
        git checkout -q -b side$r
        c; c; git tag side-tag$r
        git checkout -q main
        c; git tag -a v0.$((r+1)) -m "r$r"
        GIT_COMMITTER_DATE="$((1600100000 + r * 60)) +0000" git merge -q --no-ff -m "merge $r" side$r
        c
      done
      git tag -a v1.0 -m a; GIT_COMMITTER_DATE=1600200000 git tag -a v1.0-final -m b
      c; c
      """,
      identity()
    )

    session = session_on(dir)

    script =
      "for c in $(git rev-list --all); do " <>
        "git describe $c; git describe --tags $c; git describe --tags --abbrev=0 $c; " <>
        "git describe --tags --match 'side*' $c; git describe --long --always $c; done 2>&1"

    {expected, 0} = System.cmd("bash", ["-c", script], cd: dir, env: host_env())
    assert %Result{stdout: ^expected} = run(session, script)
  end

  test "messages, stats and hunks print as real git prints them", ctx do
    script = """
    message=$(printf 'a title  \n\n\nbody line   \n\n  indented\n\n\n')
    git commit -q --allow-empty --cleanup=verbatim -m "$message"
    git log -n 1 && git log -n 1 --pretty=short && git show -s --pretty=full
    deep=a/very/long/directory/name/that/goes/on/and/on
    mkdir -p $deep && seq 1 200 > $deep/with_a_long_file_name.txt
    head -c 100 /dev/zero > zeros.bin && seq 1 7 > short.txt
    git add -A && git commit -q -m stat && git show --stat --format=%s && git diff --stat HEAD~2
    printf 'fn a() {\n    1\n}\n\nfn c() {\n    3\n}\n' > s.rs && git add s.rs && git commit -q -m s
    printf 'fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n\nfn c() {\n    3\n}\n' > s.rs
    git diff && git diff --stat
    """

    [real, ours] = on_copies(ctx, "formats", script)
    assert ours == real
    assert real =~ "    a title\n    \n    \n    body line\n"
    assert real =~ " .../that/goes/on/and/on/with_a_long_file_name.txt  | 200 "
  end

  # The commit-graph file real git wrote for `repo`, then the committer
  # date of `commit` in it (its CDAT entry) set to `time`: git reads
  # dates from the graph, so what it orders by date then follows the file.
  defp write_commit_graph!(repo, args \\ []) do
    {_, 0} = System.cmd("git", ["commit-graph", "write", "--reachable" | args], cd: repo)
  end

  defp set_graph_date!(repo, commit, time) do
    {oid, 0} = System.cmd("git", ["rev-parse", commit], cd: repo)
    oid = oid |> String.trim() |> Base.decode16!(case: :lower)
    path = Path.join(repo, ".git/objects/info/commit-graph")
    graph = File.read!(path)
    <<"CGPH", 1, 1, chunks, _bases, _::binary>> = graph

    offsets =
      Map.new(0..(chunks - 1), fn i ->
        <<id::binary-4, offset::64>> = binary_part(graph, 8 + i * 12, 12)
        {id, offset}
      end)

    <<count::32>> = binary_part(graph, offsets["OIDF"] + 255 * 4, 4)
    at = Enum.find(0..(count - 1), &(binary_part(graph, offsets["OIDL"] + &1 * 20, 20) == oid))
    date = offsets["CDAT"] + at * 36 + 32
    File.chmod!(path, 0o644)

    File.write!(
      path,
      [
        binary_part(graph, 0, date),
        <<time::32>>,
        binary_part(graph, date + 4, byte_size(graph) - date - 4)
      ]
    )
  end

  @walks """
  git log --oneline && git -c core.commitGraph=false log --oneline
  git rev-list --count HEAD && git rev-list HEAD~2 && git describe --tags
  git merge-base main feature && git branch --contains HEAD~7 && git log --oneline -3 -- a.txt
  git tag --contains feature && git log --oneline main..feature && git log --oneline feature..main
  """

  test "a commit-graph real git wrote is read as git reads it: dates and parents from the file",
       ctx do
    src = beside(ctx, "graph_src")
    {_, 0} = System.cmd("cp", ["-a", ctx.repo, src])
    write_commit_graph!(src)
    # "feature work" dated after "main work" in the graph only.
    set_graph_date!(src, "feature", 1_600_000_000 + 9 * 3600)
    [real, ours] = on_copies(%{ctx | repo: src}, "graph_read", @walks)
    assert ours == real
    # The graph's date, not the commit's, ordered real git's log.
    {count, 0} = System.cmd("git", ["rev-list", "--count", "HEAD"], cd: src)
    count = count |> String.trim() |> String.to_integer()

    [with_graph, without] =
      real |> String.split("\n") |> Enum.take(2 * count) |> Enum.chunk_every(count)

    assert Enum.sort(with_graph) == Enum.sort(without) and with_graph != without
  end

  test "refs are listed by name without reading their objects; a missing one fails where read",
       ctx do
    src = beside(ctx, "broken_ref")
    {_, 0} = System.cmd("cp", ["-a", ctx.repo, src])

    File.write!(
      Path.join(src, ".git/refs/tags/broken"),
      String.duplicate("1234567890", 4) <> "\n"
    )

    script = """
    git tag && git tag --sort=-v:refname && git for-each-ref --format='%(refname:short) %(objectname:short)'
    git for-each-ref --format='%(objecttype) %(refname)' refs/tags || echo "exit $?"
    git tag --sort=-creatordate || echo "exit $?"
    """

    [real, ours] = on_copies(%{ctx | repo: src}, "broken_ref", script)
    assert ours == real
    assert real =~ "broken\nv1\nv2\n" and real =~ "exit 128\nexit 128\n"
  end

  test "a split commit-graph chain, one gone stale, and one that is not git's format", ctx do
    src = beside(ctx, "graph_chain")
    {_, 0} = System.cmd("cp", ["-a", ctx.repo, src])
    write_commit_graph!(src, ["--split"])

    git!(
      src,
      "echo more >> a.txt && git commit -qam more && git commit-graph write --reachable --split=no-merge",
      identity()
    )

    git!(src, "echo stale >> a.txt && git commit -qam 'not in the graph'", identity())
    assert File.ls!(Path.join(src, ".git/objects/info/commit-graphs")) |> length() == 3
    [real, ours] = on_copies(%{ctx | repo: src}, "graph_chain", @walks)
    assert ours == real

    bad = beside(ctx, "graph_bad")
    {_, 0} = System.cmd("cp", ["-a", ctx.repo, bad])
    File.write!(Path.join(bad, ".git/objects/info/commit-graph"), :binary.copy("CGPH", 4096))
    [real, ours] = on_copies(%{ctx | repo: bad}, "graph_bad", @walks)
    assert ours == real
  end

  test "renames of edited files are found, named and blamed as real git finds them", ctx do
    script = """
    seq 1 40 > src/numbers.rs && git add -A && git commit -q -m 'numbers'
    git mv src/numbers.rs src/counting.rs && echo 41 >> src/counting.rs
    mkdir -p lib2 && git mv src/lib/mod.rs lib2/mod.rs && echo '// moved' >> lib2/mod.rs
    git add -A && git commit -m 'rename and edit'
    git show --stat && git show && git log --name-status --format=%s -n 1
    git diff HEAD~1 HEAD --stat && git diff --name-status HEAD~2 HEAD
    git blame src/counting.rs | tail -3
    """

    [real, ours] = on_copies(ctx, "renames", script)
    assert ours == real
    assert real =~ "{src/lib => lib2}/mod.rs"
    assert real =~ ~r/R0[0-9]{2}\tsrc\/numbers.rs\tsrc\/counting.rs/
  end

  test "blame's ranges and porcelain, name-rev and count-objects print as real git's", ctx do
    script = """
    printf 'first line of a subject\\nwrapped onto a second\\n\\nbody\\n' > msg
    { seq 1 30; echo; echo '# heading'; seq 31 60; } > notes.txt
    git add notes.txt && git commit -q -F msg && rm msg
    git log -n 1 --format='%s|%b' && git log --oneline -n 1 | cut -d' ' -f2-
    sed -i 's/^12$/twelve/; s/^45$/forty-five/' notes.txt && git commit -qam 'edit notes'
    f=$(printf 'caf\\303\\251 notes.txt')
    git mv notes.txt "$f" && echo 61 >> "$f" && git commit -qam 'rename notes'
    git blame -L 10,14 "$f"; git blame -L /heading/,+2 -L 40,+3 -n -f "$f"
    git blame -L '/^#/,/^4/' -s -e "$f"; git blame -L 58,-3 -l -t "$f"
    git blame --porcelain -L 11,13 "$f"; git blame --line-porcelain -L 44,46 "$f"
    git blame --porcelain -L 62,63 "$f"
    git blame -L 99 "$f"; echo "exit $?"; git blame -L 0,3 "$f"; echo "exit $?"
    git blame HEAD~1 -- notes.txt | tail -3; git blame -b --root -L 1,2 "$f"
    git name-rev HEAD HEAD~1 HEAD~3 v1 $(git rev-parse HEAD~2); git name-rev --tags HEAD~4
    git name-rev --name-only --tags HEAD~5; git name-rev --refs='v*' --exclude='*2' HEAD~6
    git count-objects; git count-objects -v
    """

    [real, ours] = on_copies(ctx, "blame_ranges", script)
    assert ours == real
    assert real =~ "first line of a subject wrapped onto a second|body\n"
    assert real =~ "summary first line of a subject\n"
    assert real =~ "filename \"caf\\303\\251 notes.txt\"\n"
    assert real =~ "exit 128"
    assert real =~ ~r/count: \d+\n/
  end

  test ".mailmap names authors as real git names them; tabs in messages are expanded", ctx do
    script = """
    printf 'Proper Ann <proper@example.com> <ann@example.com>\\n<cy@new.example> Cy Committer <cy@example.com>\\n' > .mailmap
    printf 'title\\n\\n\\tindented\\tby tabs\\n  x\\ty\\n' > msg
    git add .mailmap && git commit -q -F msg && rm msg
    git log -n 2 && git log -n 1 --pretty=fuller && git log -n 1 --no-use-mailmap
    git log -n 1 --format='%an|%aN|%aE|%aL|%cN|%cE|%cL'
    git log --oneline --author='Proper Ann' -n 2; git log --oneline --author='Ann Author' -n 2
    git -c log.mailmap=false log -n 1 | head -3; git show -s HEAD~1
    git shortlog -sne HEAD; git blame -L 1,2 a.txt; git blame --porcelain -L 1,1 a.txt
    """

    [real, ours] = on_copies(ctx, "mailmap", script)
    assert ours == real
    assert real =~ "Author: Proper Ann <proper@example.com>\n"
    assert real =~ "            indented        by tabs\n"
    assert real =~ "author Proper Ann\nauthor-mail <proper@example.com>\n"
  end

  # A branch and main each change a different end of numbers.txt.
  @diverged """
    git checkout -q -b side HEAD~2 && { echo one; tail -n +2 numbers.txt; } > n && mv n numbers.txt
    git commit -q -am side && git checkout -q main && echo end >> numbers.txt && git commit -q -am main
  """

  test "show of a merge prints its combined diff when it is empty, refuses it otherwise", ctx do
    script = """
    #{@diverged}
    git merge -q --no-edit side && git show && git show --oneline && git show --format=%s HEAD
    git checkout -q -b other HEAD~1 && echo theirs > numbers.txt && git commit -qam theirs
    git checkout -q main && git merge -q other; echo resolved > numbers.txt
    git commit -qam resolved && git show --stat | tail -2 && git show HEAD~1 | tail -3
    """

    [real, ours] = on_copies(ctx, "merge_show", script)
    assert ours == real
    assert real =~ "Merge branch 'side'\n\n"

    # The sandbox's copy, where the resolved merge is HEAD.
    copy = beside(ctx, "merge_show_sandbox")

    session = session_on(copy)

    assert %Result{exit_code: 128, stderr: "fatal: not supported by the sandbox's git: the" <> _} =
             run(session, "git show HEAD")
  end

  test "paths past ASCII or with quotes, tabs and spaces print quoted as real git's", ctx do
    script = """
    cafe=$(printf 'caf\\303\\251.txt')
    echo x > "$cafe" && echo z > 'q"uote.txt' && echo s > 'sp ace.txt'
    git add -A && git commit -m odd && git show --stat --format= && git log --name-status -n 1 --format=
    git mv "$cafe" "$(printf 'caf\\303\\251 moved.txt')" && echo more >> 'q"uote.txt' && touch "$(printf 'n\\303\\251w')" 'new one'
    git status; git status --short; git status --porcelain; git status --porcelain=v2
    git diff; git diff --cached; git diff --stat; git diff --cached --name-status
    git ls-files; git ls-files -s | cut -f2; git ls-tree HEAD | cut -f2; git grep -n z -- '*.txt'; git clean -n
    git commit -qm moved && git show --stat --format= && git -c core.quotePath=false ls-files
    """

    [real, ours] = on_copies(ctx, "quoting", script)
    assert ours == real
    assert real =~ ~s(?? "new one"\n)
    assert real =~ ~s(diff --git "a/q\\"uote.txt" "b/q\\"uote.txt"\n)
    assert real =~ ~s(R  "caf\\303\\251.txt" -> "caf\\303\\251 moved.txt")

    # A tab in a name: the sandbox makes no such file, but reads one a
    # repository real git made has.
    dir = beside(ctx, "quoting_tab")
    File.mkdir_p!(dir)

    git!(
      dir,
      "git init -q -b main && printf 'y\\n' > \"$(printf 'tab\\tname.txt')\" && git add -A && git commit -q -m tab",
      identity()
    )

    reads = "git ls-files; git ls-tree HEAD; git show --stat --format=; git log -p --format=%s"
    {expected, 0} = System.cmd("bash", ["-c", reads], cd: dir, env: host_env())
    assert expected =~ ~s("tab\\tname.txt")

    session = session_on(dir)

    assert %Result{stdout: ^expected} = run(session, reads)
  end

  test "remote lists and remote show -n print what real git prints", ctx do
    # Made by real git: the sandbox's shell writes nothing under .git.
    dir = beside(ctx, "remotes")
    File.mkdir_p!(dir)

    git!(
      dir,
      """
      git init -q -b main && git commit -q --allow-empty -m one && git commit -q --allow-empty -m two
      git remote add upstream https://example.com/up.git && git remote add fork https://example.com/f.git
      git config --add remote.fork.pushurl https://example.com/p1.git
      git config --add remote.fork.pushurl https://example.com/p2.git
      git config remote.fork.push 'refs/heads/main:refs/heads/up'
      git config --add remote.fork.push '+refs/heads/b:refs/heads/c'
      git config branch.main.remote fork && git config branch.main.merge refs/heads/dev
      git config --add branch.main.merge refs/heads/dev2 && git config branch.topic.remote fork
      git config branch.topic.merge refs/heads/t && git config branch.topic.rebase true
      git update-ref refs/remotes/fork/dev HEAD && git update-ref refs/remotes/fork/t HEAD~1
      """,
      identity()
    )

    reads =
      "git remote; git remote -v; git remote show; git remote show -n fork upstream; " <>
        "git remote show -n nowhere"

    {expected, 0} = System.cmd("bash", ["-c", reads], cd: dir, env: host_env())
    assert expected =~ "fork\nupstream\n"
    assert expected =~ "    topic rebases onto remote t\n"
    assert expected =~ "  Remote branches: (status not queried)\n    dev\n    t\n"

    session = session_on(dir)

    assert %Result{stdout: ^expected} = run(session, reads)
  end

  test "decorations, --numstat, and a stat before a patch print as real git's", ctx do
    script = """
    git tag -a v9 -m nine HEAD~1 && git tag light HEAD~2 && git branch topic HEAD~1
    git log --oneline --decorate -5; git log --decorate -2; git log --format='%h%d|%D' -4 --all
    git checkout -q HEAD~1 && git log --oneline --decorate -2 && git checkout -q main
    git -c log.decorate=short log --oneline -2; git log --graph --oneline --decorate -4
    git log --numstat -3; git diff HEAD~3 --numstat; git log --stat -p -2; git show --numstat --stat
    git log --format=%s --stat -p -1; git diff HEAD~2 --name-only --stat -p
    """

    [real, ours] = on_copies(ctx, "decorate", script)
    assert ours == real
    assert real =~ "(HEAD -> main"
    assert real =~ "tag: v9"
    assert real =~ "\n---\n"
  end

  test "log --follow follows a file through its renames as real git follows it", ctx do
    script = """
    seq 1 30 > src/story.txt && git add -A && git commit -qm 'story'
    echo 31 >> src/story.txt && git commit -qam 'story grows'
    git mv src/story.txt docs/tale.txt && echo 32 >> docs/tale.txt && git commit -qam 'move the story'
    git mv docs/tale.txt tale.txt && git commit -qm 'move it again'
    git rm -q tale.txt && git commit -qm 'drop it' && seq 1 32 > tale.txt && git add tale.txt && git commit -qm 'back'
    sed -i 's/^5$/five/' tale.txt && git commit -qam 'edit the tale'
    git log --follow --oneline -- tale.txt; git log --oneline -- tale.txt; git log --follow --stat -- tale.txt
    git log --follow --name-status --format=%s tale.txt; git log --follow -p -2 -- tale.txt
    git log --follow --format=%s -n 3 -- tale.txt; git log --follow --format=%s --skip 2 -n 2 -- tale.txt
    git log --follow --format=%s --reverse -- tale.txt; git log --follow --format=%s --reverse -n 6 -- tale.txt
    git log --follow --format=%s --first-parent -- tale.txt; git log --follow --format=%s -- docs
    git log --follow --format=%s -- docs/manual.md; git log --follow --format=%s --all -- src/main.rs
    git -c log.follow=true log --format=%s -- tale.txt; git -c log.follow=true log --no-follow --format=%s -- tale.txt
    git -c diff.renames=false log --follow --format=%s -- tale.txt; git log --follow --format=%s --author=nobody -- tale.txt
    git log --follow --oneline -- a.txt numbers.txt; echo "exit $?"; git log --follow --oneline; echo "exit $?"
    cp a.txt a-copy.txt && echo copied >> a-copy.txt && cp docs/manual.md manual2.md && git add -A && git commit -qm 'copies'
    git log --follow --name-status --format=%s -- a-copy.txt; git log --follow -p --format=%s -- manual2.md
    git log --follow --stat --format=%s -2 -- a-copy.txt; git -c diff.renames=false log --follow --format=%s -- manual2.md
    """

    [real, ours] = on_copies(ctx, "follow", script)
    assert ours == real
    assert real =~ ~r/R0[0-9]{2}\tsrc\/story.txt\tdocs\/tale.txt/
    assert real =~ "exit 128\nexit 128\n"
    assert real =~ ~r/C0[0-9]{2}\ta.txt\ta-copy.txt/
    assert real =~ "copy from docs/manual.md"
  end

  test "-U, --inter-hunk-context, -M, --no-renames, their settings, and --first-parent merges print as real git's",
       ctx do
    script = """
    seq 1 60 > long.txt && git add long.txt && git commit -qm 'long'
    sed -i 's/^10$/ten/; s/^18$/eighteen/; s/^40$/forty/' long.txt && git commit -qam 'three edits'
    git diff -U1 HEAD~1; git diff -U0 HEAD~1 HEAD; git diff --unified=5 HEAD~1 --stat
    git diff -U HEAD~1 HEAD; git diff -U2 --inter-hunk-context=3 HEAD~1 HEAD
    git log -U1 -1 --format=%s; git show -U0 --format=%s; git show --unified=2 HEAD~1 --format=%s -- numbers.txt
    git -c diff.context=1 diff HEAD~1; git -c diff.context=0 log -p -1 --format=%s
    git -c diff.interHunkContext=4 diff -U1 HEAD~1
    git diff --no-renames --name-status HEAD~11 HEAD; git diff -M --stat HEAD~11 HEAD
    git -c diff.renames=false diff --name-status HEAD~11 HEAD; git -c diff.renames=false show --stat HEAD~10
    git -c diff.renames=false diff -M --name-status HEAD~11 HEAD; git log --no-renames --stat --format=%s -1 HEAD~10
    git log --first-parent --stat --format=%s -8; git log --first-parent --name-status --format=%s -- src
    git log --first-parent -p --format=%s -1 HEAD~8; git log --first-parent --oneline -Sfeature
    git show -s --format=%s HEAD~1 -- numbers.txt; git show -s --format=%s HEAD~1 -- long.txt
    git show --stat --format=%s HEAD~8 -- src; git show --format=%s HEAD~8 -- a.txt; git show --format=%s v1 -- a.txt
    """

    [real, ours] = on_copies(ctx, "context_lines", script)
    assert ours == real
    assert real =~ "@@ -10 +10 @@"
    assert real =~ "Merge branch feature\n\nM\tsrc/lib/mod.rs"
  end

  test "status pairs a file moved and edited as a rename, with its likeness, as real git does",
       ctx do
    script = """
    git mv src/main.rs src/app.rs && echo '// more' >> src/app.rs && git add src/app.rs
    git rm -q --cached numbers.txt && mv numbers.txt counted.txt && git add counted.txt
    echo 'again' >> src/app.rs
    git status; git status --short; git status --porcelain=v2 --branch
    git -c status.renames=false status --short; git -c diff.renames=false status --porcelain=v2
    git -c diff.renames=false -c status.renames=true status --short
    git commit -qm 'moved and edited' && git show --stat --format=%s
    """

    [real, ours] = on_copies(ctx, "status_renames", script)
    assert ours == real
    assert real =~ "renamed:    src/main.rs -> src/app.rs"
    assert real =~ ~r/ R[0-9]{2} src\/app.rs\tsrc\/main.rs/
  end

  test "log -S and -G find the commits real git's pickaxe finds", ctx do
    script = """
    echo 'needle one' >> a.txt && git commit -qam 'add a needle'
    echo 'needle two' >> src/main.rs && git commit -qam 'another needle'
    sed -i 's/needle one/NEEDLE one/' a.txt && git commit -qam 'case only'
    git mv src/main.rs src/moved.rs && git commit -qm 'move it'
    git log -Sneedle --oneline; git log -Sneedle --oneline -1 --skip=1; git log -i -Sneedle --stat
    git log -G'needle (one|two)' --oneline; git log -Gneedle -p -1 -- a.txt; git log -S4 --oneline -- numbers.txt
    git log -Snothing-like-this --oneline; echo "exit $?"
    """

    [real, ours] = on_copies(ctx, "pickaxe", script)
    assert ours == real
    assert real =~ "another needle"
  end

  test "cherry-pick and revert make the commits real git makes", ctx do
    script = """
    git revert --no-edit HEAD && git log --format='%an|%s|%b' -1
    git revert --no-edit HEAD && git log --format=%s -1
    git checkout -q -b side HEAD~4 && echo s > side.txt && git add side.txt
    GIT_AUTHOR_NAME=Sid git commit -q -m 'side file' && git checkout -q main
    git cherry-pick side && git log --format='%an %ad|%cn|%s' -2 && git status --short
    """

    [real, ours] = on_copies(ctx, "picking", script)
    assert ours == real
    assert real =~ "Reapply \""
  end

  # What is left while a merge, cherry-pick or revert waits, as git shows it.
  @waiting "git status; git status --porcelain=v2; ls .git | grep -E '^(CHERRY|REVERT|MERGE)_'; cat .git/MERGE_MSG"

  test "a cherry-pick with nothing left to commit stops as git's does, until skipped or committed",
       ctx do
    script = """
    echo n > new.txt && git add new.txt && git commit -qm new && echo z >> a.txt && git commit -qam z
    git cherry-pick HEAD~1 2> ../pick_err; echo "exit $?"; cat ../pick_err
    #{@waiting}
    git cherry-pick HEAD~1 2> ../pick_err; cat ../pick_err; git merge HEAD~2 2>&1; git cherry-pick --skip; #{@waiting}
    git cherry-pick --skip 2>&1; git cherry-pick HEAD~1 > /dev/null 2>&1
    git commit --allow-empty --no-edit && git log --format='%an|%s' -2 && git reflog -1
    git cherry-pick --abort 2>&1; git revert --skip 2>&1; git cherry-pick --quit; echo "exit $?"
    """

    [real, ours] = on_copies(ctx, "pick_empty", script)
    assert ours == real
    assert real =~ "You are currently cherry-picking commit"
    assert real =~ "commit (cherry-pick)"
  end

  @conflicting """
    git checkout -q -b other HEAD~1 && echo theirs > numbers.txt && git commit -qam theirs
    git checkout -q main && echo ours > numbers.txt && git commit -qam ours
  """

  test "a cherry-pick or revert that conflicts stops as git's does; --continue, --abort and --quit end it",
       ctx do
    script = """
    #{@conflicting}
    git cherry-pick other 2>&1; echo "exit $?"
    #{@waiting}; git diff HEAD; cat numbers.txt
    git cherry-pick other 2>&1; git revert --no-edit HEAD 2>&1; git merge other 2>&1; git commit -m x 2>/dev/null
    git cherry-pick --continue 2>/dev/null; echo resolved > numbers.txt && git add numbers.txt && #{@waiting}
    git cherry-pick --continue && git log --format='%an|%s|%b' -1 && git reflog -1 && git status --short
    echo local >> a.txt && git cherry-pick other 2>&1; git cherry-pick --abort && git status --short
    git checkout -q a.txt && git cherry-pick other > /dev/null 2>&1; git cherry-pick --quit; #{@waiting}
    git reset -q --hard && git revert --no-edit HEAD~1 2>&1; #{@waiting}; git revert --abort; git status
    """

    [real, ours] = on_copies(ctx, "pick_conflict", script)
    assert ours == real
    assert real =~ "error: could not apply"
    assert real =~ "error: could not revert"
    assert real =~ "Unmerged paths:"
  end

  test "NAME@{N} and @{-N} name what the reflog says, as real git reads them", ctx do
    script = """
    git checkout -q -b x HEAD~2 && git commit -q --allow-empty -m e && git checkout -q main
    git rev-parse HEAD@{1} @{1} x@{0} x@{1} @{-1} HEAD@{2}~1 main@{0}^
    git log --oneline -1 @{-1}; git rev-parse x@{5} 2>&1; git rev-parse HEAD@{99} 2>&1
    git reset -q --soft HEAD~2 && git merge HEAD@{1} && git status --short
    """

    [real, ours] = on_copies(ctx, "reflog_revisions", script)
    assert ours == real
    assert real =~ "log for 'x' only has 2 entries"
    assert real =~ "Fast-forward"
  end

  test "revisions in each form gitrevisions(7) gives name what real git's name", ctx do
    # Parent shorthands, peels, message searches (git 2.47's walk order),
    # ranges as rev-parse prints them (tags unpeeled), the index's stages,
    # paths from a subdirectory, describe's output, reflog dates.
    script = """
    git rev-parse HEAD^! HEAD^@ HEAD^- HEAD~2^-1 v2^{} v2^{tag} v2^0 'v2^{tree}' 'HEAD^{/first}'
    git rev-parse ':/second' ':/!-numbers' 'HEAD~3^{/^main}' ':/^Merge' 'HEAD^{/}'
    git rev-parse v1..v2 v2...feature ^v1 ..feature feature..
    git rev-parse --short HEAD~1; git rev-parse --verify HEAD~1..HEAD; echo "verify $?"
    git rev-parse --verify -q nope; echo "quiet $?"
    git rev-parse :a.txt :0:a.txt HEAD:src/main.rs 'HEAD:src' HEAD~1:numbers.txt
    cd src && git rev-parse HEAD:./main.rs :./main.rs HEAD:../a.txt; cd ..
    git log --oneline v1..feature; git log --oneline feature...main; git log --oneline HEAD~2^!
    git log --oneline 'HEAD~6^@'
    git diff --stat v1...feature; git diff --stat HEAD~1^!; git diff --stat HEAD~2..
    git show -s --format=%s ':/rename'; git show HEAD:docs; git show 'v2^{tree}'
    git show HEAD~1:numbers.txt | tail -1
    git rev-parse "$(git describe HEAD~2)"; git log -1 --format=%s "$(git describe --tags HEAD~2)"
    git rev-parse HEAD@{0} 'main@{now}' 'HEAD@{1.year.ago}' 2>/dev/null
    git show :nope 2>&1; git show HEAD:nope 2>&1
    git checkout -q -b c HEAD~1 && echo x > numbers.txt && git commit -qam c
    git merge main >/dev/null 2>&1; git rev-parse :1:numbers.txt :2:numbers.txt :3:numbers.txt
    """

    [real, ours] = on_copies(ctx, "revision_forms", script)
    assert ours == real
    assert real =~ "verify 128"
    assert real =~ "tree v2^{tree}"
    assert real =~ "does not exist (neither on disk nor in the index)"
  end

  test "diff --diff-filter keeps the kinds of change real git's keeps, in every form", ctx do
    script = """
    git mv a.txt moved.txt; git rm -q numbers.txt; echo n > new.txt; echo m >> src/main.rs
    rm run.sh; ln -s src/main.rs run.sh; git add -A
    for f in A D M R T AM d ad 'M*' '*' Ad Dd 'a*' ''; do
      echo "== $f"; git diff --cached --name-status --diff-filter=$f; echo "rc $?"
    done
    git diff --cached --stat --diff-filter=R; git diff --cached --numstat --diff-filter=am
    git diff HEAD~1 HEAD --name-only --diff-filter=a; git diff --cached -p --diff-filter=D
    git diff --cached --quiet --diff-filter=C; echo "quiet $?"
    git diff --cached --exit-code --diff-filter=M >/dev/null; echo "exit $?"
    git diff --diff-filter=Q 2>&1; echo "rc $?"; git diff --diff-filter=aZ* 2>&1; echo "rc $?"
    """

    [real, ours] = on_copies(ctx, "diff_filter", script)
    assert ours == real
    assert real =~ "T\trun.sh"
    assert real =~ "unknown change class 'Q'"
  end

  test "rm -n names what would go and changes nothing; --ignore-unmatch passes over a pathspec that matches nothing",
       ctx do
    script = """
    git rm -n a.txt; git status --short; git rm -n -r src; git rm -n -q -r docs; git status --short
    echo x >> numbers.txt; git rm -n numbers.txt 2>&1; echo "rc $?"
    git rm --cached --ignore-unmatch nope a.txt; git status --short
    git rm --ignore-unmatch nope; echo "rc $?"; git rm -n nope 2>&1; echo "rc $?"
    """

    [real, ours] = on_copies(ctx, "rm_dry", script)
    assert ours == real
    assert real =~ "rm 'src/main.rs'"
  end

  test "init names the first branch as real git does: -b, init.defaultBranch, else master with git's hint",
       ctx do
    script = """
    git init x 2>&1 >/dev/null; git -C x status | head -1
    git -c init.defaultBranch=trunk init y 2>&1 >/dev/null; git -C y status | head -1
    git init -q z 2>&1; git -C z status | head -1; git init -b dev w 2>&1 >/dev/null
    git -C w status | head -1; git -c advice.defaultBranchName=false init v 2>&1 >/dev/null
    git init x 2>&1 >/dev/null; git -C x status | head -1
    """

    [real, ours] = on_copies(ctx, "init_branch", script)
    assert ours == real
    assert real =~ "hint: Using 'master' as the name for the initial branch."
    assert real =~ "On branch trunk"
  end

  test "BRANCH@{upstream} and @{push} name what real git's name, for each push.default", ctx do
    src = beside(ctx, "push_src")
    {_, 0} = System.cmd("cp", ["-a", ctx.repo, src])

    git!(src, """
    git remote add origin /nowhere && git update-ref refs/remotes/origin/main HEAD~1
    git update-ref refs/remotes/origin/other HEAD~2
    git config branch.main.remote origin && git config branch.main.merge refs/heads/main
    git remote add fork /elsewhere && git update-ref refs/remotes/fork/main HEAD~3
    """)

    script = """
    git rev-parse @{push} @{u} main@{push} HEAD@{upstream} main@{u}~1
    git -c push.default=current rev-parse @{push}; git -c push.default=upstream rev-parse @{push}
    git -c remote.pushDefault=origin rev-parse @{push}; git log --oneline -1 @{push}~2
    git config branch.main.merge refs/heads/other
    git -c push.default=upstream rev-parse @{push}; git -c push.default=current rev-parse @{push}
    git -c push.default=matching rev-parse @{push} @{u}
    git config branch.main.merge refs/heads/main
    git config remote.pushDefault fork && git -c push.default=current rev-parse @{push}
    git rev-parse @{push} 2>&1; echo "simple $?"
    git config branch.main.pushRemote origin && git rev-parse @{push}
    git -c remote.pushdefault=origin -c branch.main.pushremote=fork rev-parse @{push} 2>&1
    echo "triangular $?"
    git -c push.default=nothing rev-parse @{push} 2>&1; git log -1 v1@{u} 2>&1
    git branch lone && git rev-parse lone@{upstream} 2>&1; git rev-parse origin/main@{u} 2>&1
    git rev-parse --verify -q HEAD~1 @{u} 2>&1; git checkout -q --detach && git show @{u} 2>&1
    echo "end $?"
    """

    [real, ours] = on_copies(%{ctx | repo: src}, "push_dest", script)
    assert ours == real
    assert length(String.split(real, "\n", trim: true)) == 25
    assert real =~ "cannot resolve 'simple' push to a single destination"
  end

  test "grep from a subdirectory, -h, -o, -q, -L and --full-name print what real git's grep prints",
       ctx do
    script = """
    git grep -n hello; git grep -o -n 'l[a-z]*' -- a.txt src; git grep -o -v hello -- a.txt
    git grep -o -c l -- a.txt; git grep -h -n fn; git grep -h -c fn; git grep -H -l fn
    git grep -L hello; git grep -q hello; echo "q $?"; git grep -q nowhere; echo "q $?"
    git grep -o 'x*' -- a.txt; git grep -o -i 'HELLO' -- a.txt
    cd src && git grep -n fn; git grep -c fn -- ../a.txt .; git grep --full-name -l fn
    git grep -L hello; git grep -n hello -- ..; cd ..
    cd src/lib && git grep -l fn; cd ../..
    """

    [real, ours] = on_copies(ctx, "grep_forms", script)
    assert ours == real
    assert real =~ "main.rs:1:fn main() {"
    assert real =~ "../a.txt:"
    assert real =~ "q 0\nq 1"
  end

  test "tag -n, --abbrev=N, --stat=W,N and rev-list --oneline print what real git prints", ctx do
    script = """
    git tag -a v3 -m 'three' -m 'a body' HEAD~2 && git tag averyveryverylongname HEAD~1
    git tag -n; git tag -n3; git tag -n0; git tag -n2 -l 'v*'; git tag -n --format='%(refname)'
    git for-each-ref --format='%(refname:short)|%(contents:lines=2)|' refs/tags
    git log --oneline --abbrev=12 -3; git log --format='%h %p %t' --abbrev=4 -2
    git diff --abbrev=10 HEAD~1 | head -2; git show --abbrev=9 --oneline -s HEAD
    git rev-list --oneline -4 HEAD; git rev-list --oneline --no-abbrev-commit -2 HEAD
    git rev-list --abbrev-commit --abbrev=11 -2 HEAD; git rev-list --oneline --reverse v1..v2
    git diff --stat=40 v1 HEAD; git log --stat=50,10 -3 --format=%s; git show --stat=30 HEAD~6
    git diff --stat=x HEAD~1 2>&1; echo "stat $?"
    """

    [real, ours] = on_copies(ctx, "tag_lines", script)
    assert ours == real
    assert real =~ ~r/v3 +three\n    \n    a body\n/
    assert real =~ "averyveryverylongname numbers 5"
    assert real =~ "invalid --stat value: x\nstat 129"
  end

  test "ls-files and ls-tree from a subdirectory list and name what real git's list and name",
       ctx do
    script = """
    cd src && git ls-files; git ls-files --full-name; git ls-files -s main.rs; git ls-files ../a.txt
    git ls-tree HEAD; git ls-tree HEAD .; git ls-tree HEAD lib; git ls-tree HEAD ../a.txt
    git ls-tree HEAD .. ; git ls-tree -r HEAD lib; git ls-tree --full-name -r HEAD
    git ls-tree --full-tree HEAD src; cd lib && git ls-tree -t -r --name-only HEAD
    git ls-tree HEAD ../main.rs mod.rs; git ls-files -- ../main.rs .; cd ../..
    git log --oneline --format=%s -2; git log --format=%s --oneline -2
    git log --oneline --pretty=short -1; git show --oneline --format='%h %s' -s HEAD
    """

    [real, ours] = on_copies(ctx, "listing_below", script)
    assert ours == real
    assert real =~ "../a.txt"
    assert real =~ "\tsrc/lib/mod.rs"
  end

  test "status and clean with paths and from a subdirectory see and remove what real git's do",
       ctx do
    script = """
    echo new >> src/main.rs; echo x > src/new.txt; echo y > top.txt; echo z >> a.txt
    mkdir -p src/fresh && echo f > src/fresh/f.txt && git mv docs/manual.md src/manual.md
    echo d > docs/draft.txt
    git status --short -- src; git status --short a.txt top.txt; git status -- docs
    git status --porcelain=v2 -- src/main.rs; git status --short -- nowhere; git status -- nowhere
    cd src && git status --short .; git status --short -- ..; git status -uall --short .
    git status; git clean -n; git clean -nd; git clean -n ..; git clean -n new.txt; cd ..
    cd src && git clean -fd -- fresh; git status --short; cd ..
    cd src && git rm -q --cached nope 2>&1; git add nope 2>&1; git rm -q .. 2>&1; cd ..
    """

    [real, ours] = on_copies(ctx, "status_paths", script)
    assert ours == real
    assert real =~ "Would remove new.txt\n"
    assert real =~ "Would remove ../docs/\n"
    assert real =~ "Removing fresh/\n"
    assert real =~ "pathspec 'nope' did not match any files"
  end

  test "clean -d sees and removes empty directories as real git's does; a path outside the work tree is git's error",
       ctx do
    script = """
    echo '*.log' > .gitignore; mkdir -p e1 e2/e3 src/e4 ig u/e5 ig2/sub
    touch ig/a.log u/x ig2/sub/b.log
    git clean -nd; git clean -n; cd src && git clean -nd; git clean -nd e4 ../e1; cd ..
    git clean -n .. 2>&1; git status --short .. 2>&1; git log --oneline -- .. 2>&1
    git add .. 2>&1; git ls-files .. 2>&1; git diff -- .. 2>&1; echo "outside $?"
    git clean -fd; find . -path ./.git -prune -o -print | sort
    """

    [real, ours] = on_copies(ctx, "clean_empty", script)
    # Each names its own work tree's top.
    assert ours == String.replace(real, beside(ctx, "clean_empty_real"), "/repo")
    assert real =~ "Would remove e2/\n"
    assert real =~ "Removing u/\n"
    assert real =~ "'..' is outside repository at"
  end

  test "commit PATH… commits those paths as the work tree has them and leaves the rest staged, as real git does",
       ctx do
    script = """
    echo a1 >> a.txt; echo m1 >> src/main.rs; echo new > new.txt; git add src/main.rs new.txt
    echo m2 >> src/main.rs
    git commit -m 'only a' a.txt; git status --short; git log --stat -1 --format=%s
    git commit -m 'only main' -- src/main.rs; git status --short; git show --stat --format=%s HEAD | cat
    git diff --cached --stat; git diff --stat
    cd src && echo m3 >> main.rs && git commit -qm 'from src' . && cd ..; git log --name-status -1 --format=%s
    git rm -q --cached new.txt; echo more >> docs/manual.md; rm run.sh
    git commit -m 'docs and run' docs run.sh; git status --short; git log --name-status -1 --format=%s
    git commit -m nothing a.txt; echo "exit $?"
    git commit -m nowhere nope.txt 2>&1; echo "exit $?"
    git commit -m untracked new.txt 2>&1; echo "exit $?"
    git commit -a -m both a.txt 2>&1; echo "exit $?"
    git add new.txt; echo x >> a.txt; git commit -qm 'new and a' new.txt a.txt; git log --name-status -1 --format=%s; git status --short
    """

    [real, ours] = on_copies(ctx, "partial_commit", script)
    assert ours == real
    assert real =~ "MM src/main.rs"
    assert real =~ "did not match any file(s) known to git"
  end

  test "merge and cherry-pick follow a file one side renamed, as merge-ort does", ctx do
    script = """
    git checkout -q -b ren HEAD~1 && git mv numbers.txt renamed.txt && git commit -qm rename
    git checkout -q main && echo tail >> numbers.txt && git commit -qam 'edit numbers'
    git merge --no-edit ren && git log --stat -1 --format=%s && git status --short && tail -2 renamed.txt
    git reset -q --hard HEAD~1 && git cherry-pick ren && git status --short && git ls-files | grep -c numbers
    git reset -q --hard HEAD~1 && git checkout -q -b r2 HEAD~1 && sed -i '1s/.*/theirs/' numbers.txt
    git mv numbers.txt moved.txt && git commit -qam 'rename and edit' && git checkout -q main
    sed -i '1s/.*/ours/' numbers.txt && git commit -qam 'edit first' && git merge r2 2>&1; echo "exit $?"
    git status; head -7 moved.txt; git ls-files -s | grep -E 'moved|numbers'; git merge --abort
    git checkout -q r2 && git merge main 2>&1; head -7 moved.txt; git merge --abort; git status --short
    """

    [real, ours] = on_copies(ctx, "merge_renames", script)
    assert ours == real
    assert real =~ "<<<<<<< HEAD:numbers.txt"
    assert real =~ "r2:moved.txt"
  end

  test "mv moves files and directories, into a directory when it is one, as real git does", ctx do
    script = """
    mkdir -p d/s && echo 1 > d/a && echo 2 > d/s/b && git add d && git commit -qm d
    git mv -v d e && git mv -n e/a e/s && git mv e/a a.txt e/s 2>&1; git mv e/a a.txt e/s
    git status --short; mkdir empty; git mv empty z 2>&1; git mv nothere z 2>&1; git mv -v e q
    git mv q/s q/a && git status --short && git mv numbers.txt q/a/a 2>&1; echo u > u; git mv u v 2>&1
    git mv 2>&1 | head -1; git mv -n q r; git ls-files -s q | cut -c 50-
    """

    [real, ours] = on_copies(ctx, "mv_dirs", script)
    assert ours == real
    assert real =~ "Renaming d/s/b to e/s/b"
    assert real =~ "fatal: source directory is empty"
  end

  test "a reset ends a waiting merge and its conflicts, as git's does", ctx do
    script = """
    #{@conflicting}
    echo staged > new.txt && git add new.txt && git merge other 2>&1; echo "exit $?"; git reset -q new.txt
    rm new.txt; git merge other 2>&1; #{@waiting}; git reset -q --soft HEAD 2>&1; git reset -q --hard
    #{@waiting}; git merge other > /dev/null 2>&1; git reset -q numbers.txt; git status --short
    git reset -q; #{@waiting}; git merge --abort 2>&1; echo "exit $?"
    """

    [real, ours] = on_copies(ctx, "merge_reset", script)
    assert ours == real
    assert real =~ "Cannot do a soft reset in the middle of a merge."
  end

  test "diff of the index refuses while paths are unmerged; diff against HEAD shows them", ctx do
    dir = beside(ctx, "diff_unmerged")
    {_, 0} = System.cmd("cp", ["-a", ctx.repo, dir])
    git!(dir, String.trim(@conflicting) <> "\ngit merge other || true", identity())
    session = session_on(dir)

    for command <- ["git diff", "git diff --cached", "git diff --stat -- numbers.txt"] do
      assert %Result{
               exit_code: 128,
               stderr: "fatal: not supported by the sandbox's git: diff" <> _
             } = run(session, command)
    end

    for command <- ["git diff HEAD", "git diff HEAD~2 -- a.txt numbers.txt"] do
      {real, 0} = real_git(dir, command)
      assert run(session, command).stdout == real
    end

    assert %Result{exit_code: 128, stderr: "fatal: ambiguous argument 'nothere'" <> _} =
             run(session, "git diff nothere")
  end

  test "grep names the binary files that match, as real git does", ctx do
    script = """
    printf 'hello\\0world\\nhello there\\n' > data.bin && git add data.bin && git commit -q -m bin
    git grep -n hello; git grep -c hello; git grep -l hello; git grep -v -c zzz
    git grep -I -n hello; git grep -n nothing-here; echo "exit $?"
    """

    [real, ours] = on_copies(ctx, "grep_binary", script)
    assert ours == real
    assert real =~ "Binary file data.bin matches\n"
  end

  test "a quiet merge still says which files it merged, as real git does", ctx do
    script = """
    #{@diverged}
    git merge -q --no-edit side && git log --oneline -1 && git rev-list --count -n 3 HEAD
    """

    [real, ours] = on_copies(ctx, "quiet_merge", script)
    assert ours == real
    assert real =~ "Auto-merging numbers.txt\n"
  end

  test "hunk headers and binary files follow .gitattributes, as in real git", ctx do
    script = """
    printf '*.ex diff=elixir\\n*.dat binary\\n' > .gitattributes
    { echo 'defmodule A do'; echo '  def one do'; seq 1 10 | sed 's/^/    /'; echo '  end'; echo 'end'; } > a.ex
    echo x > b.dat && cp a.ex plain.txt && git add -A && git commit -q -m attributes
    for f in a.ex plain.txt; do sed 's/    9/    nine/' $f > t && mv t $f; done
    echo y >> b.dat && git diff && git diff --stat && git commit -q -am edit && git show --format=%s
    """

    [real, ours] = on_copies(ctx, "attributes", script)
    assert ours == real
    assert real =~ "@@ def one do\n"
    assert real =~ "Binary files a/b.dat and b/b.dat differ"
  end

  test "a merge that depends on a directory one side moved is refused, untouched", ctx do
    setup = """
    git checkout -q -b moved && git mv src lib && git commit -q -m moved
    git checkout -q main && echo '// new' > src/extra.rs && git add src && git commit -q -m extra
    """

    real_dir = beside(ctx, "rename_merge_real")
    ours_dir = beside(ctx, "rename_merge_sandbox")
    {_, 0} = System.cmd("cp", ["-a", ctx.repo, real_dir])
    git!(real_dir, setup, identity())
    {_, 0} = System.cmd("cp", ["-a", real_dir, ours_dir])
    # Real git stops: the file main added belongs, it reckons, where the
    # other side moved its directory.
    {merged, 1} =
      System.cmd("git", ["merge", "--no-edit", "moved"],
        cd: real_dir,
        env: host_env() ++ [{"HOME", real_dir} | Enum.to_list(identity())]
      )

    assert merged =~ "CONFLICT (file location)"

    session =
      Session.new(
        git: true,
        cwd: "/repo",
        env: identity(),
        mounts: [{"/repo", ours_dir, :read_write}]
      )

    head = run(session, "git rev-parse HEAD").stdout
    status = run(session, "git status --porcelain").stdout

    assert %Result{exit_code: 128, stderr: stderr} = run(session, "git merge --no-edit moved")

    assert stderr ==
             "fatal: not supported by the sandbox's git: a merge across renames (src/main.rs => lib/main.rs)\n"

    assert %Result{stdout: ^head} = run(session, "git rev-parse HEAD")

    assert %Result{stdout: ^status} = run(session, "git status --porcelain")
  end

  test "@{upstream} and checkout - name what real git names", ctx do
    script = """
    git config branch.main.remote . && git config branch.main.merge refs/heads/feature
    git rev-parse --abbrev-ref '@{u}' && git rev-parse '@{upstream}' 'main@{u}'
    git checkout -q feature && git checkout -q - && git branch --show-current
    git switch -q - && git branch --show-current
    git checkout -q v1 && git checkout -q - && git status | head -1
    """

    [real, ours] = on_copies(ctx, "previous", script)
    assert ours == real
    assert real =~ "feature\n"
  end

  test "git -c settings hold for that command alone, as in real git", ctx do
    script = """
    exec 2>&1
    unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
    echo more >> a.txt
    git -c user.name=Zed -c user.email=zed@example.com commit -qam 'by Zed'; echo "commit: $?"
    git log -1 --format='%H %an <%ae> %cn'
    git -c foo=bar status; echo "status: $?"
    git -c .x=1 status; echo "status: $?"
    git config --get user.name; echo "config: $?"
    """

    [real, ours] = on_copies(ctx, "c", script)
    assert ours == real
    assert real =~ "commit: 0"
    assert real =~ "Zed <zed@example.com> Zed"

    assert %Result{exit_code: 128, stderr: "fatal: not supported by the sandbox's git: " <> _} =
             run(session(ctx), "git -c user.name status")

    assert %Result{exit_code: 128, stderr: "fatal: not supported by the sandbox's git: --bare\n"} =
             run(session(ctx), "git --bare status")
  end

  test "rm keeps what it would lose unless forced; pull merges only as asked, as git does", ctx do
    script = """
    exec 2>&1
    echo more >> a.txt
    git rm -q a.txt; echo "rm: $?"
    git rm -q --cached a.txt; echo "rm --cached: $?"
    git reset -q a.txt
    echo staged >> src/main.rs && git add src/main.rs
    git rm -q src/main.rs; echo "rm staged: $?"
    git rm -q -f src/main.rs run.sh; echo "rm -f: $?"
    git status --porcelain
    """

    [real, ours] = on_copies(ctx, "rm", script)
    assert ours == real
    assert real =~ "rm: 1"
    assert real =~ "rm -f: 0"

    session = session(ctx)

    assert %Result{
             exit_code: 128,
             stderr: "fatal: not supported by the sandbox's git: --rebase\n"
           } = run(session, "git pull --rebase")
  end
end
