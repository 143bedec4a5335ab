defmodule ExBashkit.Sandbox.Target do
  @moduledoc false
  # Which terms name a sandbox, for the functions that take one
  # (`ExBashkit.Tool`, `ExBashkit.MCP`, the shell's `:attach`).

  @doc """
  `target` if it names a sandbox; raises `ArgumentError` naming `option`
  if not. A sandbox is a session, a server (a pid or a `GenServer` name),
  or a struct of yours that implements `ExBashkit.Sandbox`.

      iex> ExBashkit.Sandbox.Target.validate!(self(), :target) == self()
      true
      iex> ExBashkit.Sandbox.Target.validate!("nope", :target)
      ** (ArgumentError) target must be an ExBashkit.Session, an ExBashkit.Server (a pid or a GenServer name) or a struct implementing ExBashkit.Sandbox, got: "nope"
  """
  @spec validate!(term(), atom() | String.t()) :: ExBashkit.Sandbox.t()
  def validate!(pid, _option) when is_pid(pid), do: pid
  def validate!(name, _option) when is_atom(name) and name not in [nil, true, false], do: name
  def validate!({:global, _} = name, _option), do: name
  def validate!({:via, module, _} = name, _option) when is_atom(module), do: name
  def validate!({name, node} = target, _option) when is_atom(name) and is_atom(node), do: target

  def validate!(%_{} = struct, option) do
    if ExBashkit.Sandbox.impl_for(struct), do: struct, else: invalid!(struct, option)
  end

  def validate!(other, option), do: invalid!(other, option)

  defp invalid!(other, option) do
    raise ArgumentError,
          "#{option} must be an ExBashkit.Session, an ExBashkit.Server " <>
            "(a pid or a GenServer name) or a struct implementing ExBashkit.Sandbox, " <>
            "got: #{inspect(other)}"
  end
end
