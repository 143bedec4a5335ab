defmodule ExBashkit.GrammarDepthTest do
  # Every nesting and chaining form of the grammar, 10^3, 10^4 and 10^5
  # deep, in a VM of its own: a stack overflow there kills that VM and
  # fails this test, instead of killing the suite. Each script must be
  # answered, with a result or {:error, _}. A 150 KB `time time … true`
  # once aborted the VM this way: bashkit's parser recursed once per
  # `time`, unlimited.
  use ExUnit.Case, async: true

  alias ExBashkit.Test.ChildVM

  @moduletag timeout: 600_000

  # Prefixes: `time time … true`.
  @prefixes ["time", "time -p", "!", "coproc", "command", "builtin", "exec", "eval", "env"]

  # {name, lead, open, inner, close, tail}: lead <> open^n <> inner <> close^n <> tail.
  @nested [
    {"subshell", "", "(", "true", ")", ""},
    {"group", "", "{ ", "true", "; }", ""},
    {"command substitution", "echo ", "$(echo ", "x", ")", ""},
    {"quoted substitution", "echo ", ~S|"$(echo |, "x", ~S|)"|, ""},
    {"backquotes in substitutions", "echo ", "$(echo `echo ", "x", "`)", ""},
    {"process substitution", "cat ", "<(cat ", "/dev/null", ")", ""},
    {"output substitution", "echo x ", ">(cat ", "", ")", ""},
    {"arithmetic", "echo ", "$((", "1", "))", ""},
    {"arithmetic parens", "echo $((", "(", "1", ")", "))"},
    {"arithmetic command", "(( ", "(", "1", ")", " ))"},
    {"old arithmetic", "echo ", "$[", "1", "]", ""},
    {"if", "", "if true; then ", "true", "; fi", ""},
    {"while", "", "while false; do ", "true", "; done", ""},
    {"until", "", "until true; do ", "true", "; done", ""},
    {"for", "", "for x in 1; do ", "true", "; done", ""},
    {"c for", "", "for ((i=0;i<1;i++)); do ", "true", "; done", ""},
    {"select", "", "select x in 1; do ", "break", "; done", ""},
    {"case", "", "case x in x) ", "true", ";; esac", ""},
    {"function", "", "f() { ", "true", "; }", ""},
    {"function keyword", "", "function f { ", "true", "; }", ""},
    {"conditional parens", "[[ ", "( ", "x", " )", " ]]"},
    {"default expansion", "echo ", "${x:-", "y", "}", ""},
    {"brace expansion", "echo ", "{a,", "b", "}", ""},
    {"extglob", "shopt -s extglob; echo ", "+(", "x", ")", ""},
    {"time group", "", "time { ", "true", "; }", ""},
    {"time if", "", "time if true; then ", "true", "; fi", ""},
    {"negated subshell", "", "! (", "true", ")", ""},
    {"array subscripts", "a[0]=1; echo ", "${a[", "0", "]}", ""}
  ]

  # {name, lead, link, last}: lead <> link^n <> last.
  @chains [
    {"and list", "", "true && ", "true"},
    {"or list", "", "false || ", "true"},
    {"pipeline", "", "true | ", "true"},
    {"time pipeline", "", "true | time ", "true"},
    {"sequence", "", "true; ", "true"},
    {"background", "", "true & ", "wait"},
    {"redirections", "true", " >/dev/null", ""},
    {"assignments", "", "a=1 ", "true"},
    {"words", "echo ", ~S|"a"'b'|, ""},
    {"arithmetic sum", "echo $((", "1+", "1))"},
    {"arithmetic unary minus", "echo $((", "- ", "1))"},
    {"arithmetic not", "echo $((", "!", "1))"},
    {"arithmetic complement", "echo $((", "~", "1))"},
    {"arithmetic assignment", "echo $((", "x=", "1))"},
    {"arithmetic power", "echo $((", "1**", "1))"},
    {"conditional not", "[[ ", "! ", "x ]]"},
    {"conditional and", "[[ x", " && x", " ]]"},
    {"test not", "[ ", "! ", "x ]"},
    {"case patterns", "case x in ", "a|", "x) true;; esac"},
    {"heredocs", "", "cat <<E\nE\n", "true"},
    {"line continuations", "echo ", "\\\n", "x"}
  ]

  defp forms do
    prefixes =
      for p <- @prefixes, do: {"prefix #{p}", &(String.duplicate(p <> " ", &1) <> "true")}

    nested =
      for {name, lead, open, inner, close, tail} <- @nested do
        {name,
         &(lead <> String.duplicate(open, &1) <> inner <> String.duplicate(close, &1) <> tail)}
      end

    chains =
      for {name, lead, link, last} <- @chains do
        {name, &(lead <> String.duplicate(link, &1) <> last)}
      end

    ternary =
      {"arithmetic ternary",
       &("echo $((" <> String.duplicate("1?", &1) <> "1" <> String.duplicate(":1", &1) <> "))")}

    prefixes ++ nested ++ chains ++ [ternary] ++ runtime_recursion()
  end

  # Recursion that happens while the script runs, not while it parses.
  defp runtime_recursion do
    [
      {"recursive function", fn _ -> "f() { f; }; f" end},
      {"recursive source", fn _ -> "echo 'source /r.sh' > /r.sh; source /r.sh" end},
      {"eval building eval", fn _ -> ~S|e='eval "$e"'; eval "$e"| end},
      {"alias loop", fn _ -> "shopt -s expand_aliases; alias a='a a'; a" end}
    ]
  end

  test "no form of the grammar, at any depth, takes the VM down" do
    depths = [1_000, 10_000, 100_000]

    forms =
      for {name, build} <- forms(), depth <- depths, do: {"#{name} x#{depth}", build.(depth)}

    dir = ExBashkit.Case.tmp_path("ex_bashkit_grammar")

    File.mkdir_p!(dir)
    on_exit(fn -> File.rm_rf!(dir) end)

    scripts =
      for {{name, script}, index} <- Enum.with_index(forms) do
        path = Path.join(dir, "#{index}.sh")
        File.write!(path, script)
        {name, path}
      end

    # One VM runs them all, saying what it starts before it starts it.
    code = """
    for {name, path} <- #{inspect(scripts, limit: :infinity)} do
      IO.puts("start " <> name)
      answer =
        case ExBashkit.exec(File.read!(path), limits: [timeout_ms: 2_000]) do
          {:ok, %ExBashkit.Result{}} -> "result"
          {:error, message} when is_binary(message) -> "error"
        end
      IO.puts("done " <> answer)
    end
    IO.puts("all answered")
    """

    {output, status} = ChildVM.run(code, 500_000)
    started = for "start " <> name <- String.split(output, "\n"), do: name

    assert status == 0 and output =~ "all answered",
           "the VM ended with status #{status} while running #{List.last(started)}:\n" <>
             String.slice(output, -2_000, 2_000)

    assert length(started) == length(scripts)
  end
end
