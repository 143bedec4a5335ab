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
        "git describe --tags --abbrev=0 HEAD~1"
      ] do
    test "#{command} prints what real git prints", ctx do
      expected = git!(ctx.repo, unquote(command))
      assert %Result{exit_code: 0, stdout: ^expected} = run(session(ctx), unquote(command))
    end
  end

  test "revisions git would not read are not misread", ctx do
    for revision <- ["HEAD^{blob}", "HEAD^{/first}", "HEAD~1x", "HEAD^x"] do
      assert %Result{exit_code: 128, stderr: stderr} =
               run(session(ctx), "git rev-parse '#{revision}'")

      assert stderr =~ "ambiguous argument '#{revision}'", revision
    end
  end

  test "options git has and the sandbox's git does not are refused, never ignored", ctx do
    session = session(ctx)

    for {command, option} <- [
          {"git log --since=2020-01-01", "--since=2020-01-01"},
          {"git log --date=iso -n 1", "--date=iso"},
          {"git log --first-parent --oneline", "--first-parent"},
          {"git log -L1,2:a.txt", "-L1,2:a.txt"},
          {"git log -Shello --oneline", "-S"},
          {"git diff -U1 HEAD~1", "-U1"},
          {"git diff --numstat HEAD~1", "--numstat"},
          {"git tag --sort=-creatordate", "--sort=-creatordate"},
          {"git branch -vv", "-vv"},
          {"git branch -v -v", "-vv"},
          {"git branch --merged", "--merged"}
        ] do
      assert %Result{exit_code: 128, stdout: "", stderr: stderr} = run(session, command)
      assert stderr == "fatal: not supported by the sandbox's git: #{option}\n", command
    end
  end
end
