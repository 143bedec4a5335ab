defmodule ExBashkit.OptionsTest do
  use ExUnit.Case, async: true

  alias ExBashkit.Options

  @schema [
    count: [type: :pos_integer, default: 3, doc: "how many."],
    cap: [type: {:or, [:non_neg_integer, {:in, [:infinity]}]}, default: 10_000, doc: "a cap."],
    flag: [type: :boolean, default: false, doc: "a `flag that wraps`."],
    env: [type: :env, default: %{A: 1}, doc: "variables."],
    name: [type: {:custom, &String.upcase/1}, default: "x", doc: "a name."]
  ]

  test "every key comes back, defaults normalized like given values" do
    assert Options.validate!([], @schema, "f/1") ==
             %{count: 3, cap: 10_000, flag: false, env: [{"A", "1"}], name: "X"}

    assert %{count: 7, cap: :infinity, flag: true, env: [{"B", "b"}], name: "Y"} =
             Options.validate!(
               [count: 7, cap: :infinity, flag: true, env: [B: "b"], name: "y"],
               @schema,
               "f/1"
             )
  end

  test "errors name the option, what it must be, and the function" do
    for {opts, message} <- [
          {[count: 0], ":count must be a positive integer, got: 0"},
          {[cap: -1], ":cap must be a non-negative integer or :infinity, got: -1"},
          {[flag: :yes], ":flag must be a boolean, got: :yes"},
          {[env: "A=1"], ":env must be a map or keyword list, got: \"A=1\""},
          {:nope, "f/1 expects a keyword list of options, got: :nope"},
          {[{"count", 1}], "f/1 expects a keyword list of options"},
          {[other: 1, more: 2, other: 3],
           "unknown option :other for f/1 (unknown keys [:other, :more]); " <>
             "expected one of: [:count, :cap, :flag, :env, :name]"}
        ] do
      error = assert_raise ArgumentError, fn -> Options.validate!(opts, @schema, "f/1") end
      assert String.starts_with?(Exception.message(error), message), Exception.message(error)
    end
  end

  test "docs list every option with its default, code spans never split" do
    docs = Options.docs(@schema)
    assert docs =~ "  * `:count` — how many. Default: `3`."
    assert docs =~ "Default: `10_000`."
    assert docs =~ "`flag that wraps`"
    assert docs =~ "Default: `%{A: 1}`."
    # Empty and nil defaults go unsaid.
    assert Options.docs(x: [type: :any, default: [], doc: "x."], y: [type: :any, doc: "y."]) ==
             "  * `:x` — x.\n  * `:y` — y."

    assert length(String.split(docs, "\n  * ")) == length(@schema)
  end
end
