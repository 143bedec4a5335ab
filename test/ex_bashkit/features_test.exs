defmodule ExBashkit.FeaturesTest do
  # Cargo features (issue 17): what this build has, and how a session that
  # asks for a part a build left out is refused. This suite runs on the
  # default build (every feature); the refusal is checked against the
  # feature lists a smaller build would report. test/precompiled_test.exs
  # checks that a configured feature set reaches cargo.
  use ExBashkit.Case, async: true

  alias ExBashkit.Session.Options.Capabilities

  test "the default build has every part" do
    assert ExBashkit.features() == [
             :python,
             :cpython,
             :jq,
             :network,
             :mounts,
             :javascript,
             :git,
             :sqlite
           ]

    {:ok, %{stdout: "1\n"}} = ExBashkit.exec(~S(echo '{"a":1}' | jq .a))
  end

  test "asking for a part a build lacks raises, naming the option and how to add it" do
    minimal = fn -> [] end

    for {option, feature} <- [python: :python, allow_net: :network, mounts: :mounts] do
      error =
        assert_raise ArgumentError, fn ->
          Capabilities.require_features!([{option, true}], minimal)
        end

      assert error.message =~
               "#{inspect(option)} needs the #{inspect(feature)} part of ex_bashkit"

      assert error.message =~ "config :ex_bashkit, features: [...]"
    end

    error =
      assert_raise ArgumentError, fn ->
        Capabilities.require_features!([cpython: true], minimal)
      end

    assert error.message =~ "python: :cpython needs the :cpython part of ex_bashkit"

    assert Capabilities.require_features!([python: true, mounts: false], fn -> [:python] end) ==
             :ok

    assert Capabilities.require_features!([python: false], fn -> raise "not asked" end) == :ok
  end
end
