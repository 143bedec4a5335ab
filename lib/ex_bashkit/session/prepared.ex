defmodule ExBashkit.Session.Prepared do
  @moduledoc false
  # `Session.new()` without options, made a hand-over: the defaults are
  # validated once per configuration and kept in `:persistent_term`, and
  # the NIF keeps a few interpreters built with them ahead of need (its
  # `prepared.rs`), refilled on a thread of its own. The defaults depend
  # on the configuration's `:isolation` and `:max_timeout_ms`, so a change
  # to either prepares anew; `:prepared_sessions` says how many are kept
  # ready (0: none).

  alias ExBashkit.Native
  alias ExBashkit.Session.Options

  @default_capacity 4

  @doc """
  The validated default options, and the generation of the interpreters
  prepared with them (`nil` when none are: an isolated default, or a
  capacity of 0).
  """
  @spec defaults() :: {map(), pos_integer() | nil}
  def defaults do
    key = configuration()

    case :persistent_term.get(__MODULE__, nil) do
      {^key, options, generation} -> {options, generation}
      _ -> :global.trans({__MODULE__, :prepare}, fn -> prepare(key) end, [node()])
    end
  end

  defp configuration do
    {Application.get_env(:ex_bashkit, :isolation),
     Application.get_env(:ex_bashkit, :max_timeout_ms),
     Application.get_env(:ex_bashkit, :prepared_sessions, @default_capacity)}
  end

  # Under a lock, so that the options the NIF prepares with and the
  # generation callers ask for are always those of the last writer.
  defp prepare({_, _, capacity} = key) do
    case :persistent_term.get(__MODULE__, nil) do
      {^key, options, generation} ->
        {options, generation}

      _ ->
        options = Options.validate!([])
        capacity = if preparable?(options, capacity), do: capacity, else: 0
        generation = :erlang.unique_integer([:positive])
        # Also with a capacity of 0, to free what was prepared before.
        :ok = Native.session_prepare(generation, options.native, capacity)
        generation = if capacity > 0, do: generation
        :persistent_term.put(__MODULE__, {key, options, generation})
        {options, generation}
    end
  end

  defp preparable?(options, capacity) do
    unless is_integer(capacity) and capacity >= 0 do
      raise ArgumentError,
            "config :ex_bashkit, :prepared_sessions must be a non-negative integer, " <>
              "got: #{inspect(capacity)}"
    end

    capacity > 0 and options.isolation == :none and
      ExBashkit.Interpreter.InVM.light?(options.native)
  end
end
