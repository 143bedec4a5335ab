defmodule ExBashkit.Test.Capabilities do
  @moduledoc false
  # Builtins given by name, as a server that travels needs them.

  defmodule Shout do
    @moduledoc false
    @behaviour ExBashkit.Builtin
    @impl true
    def call(suffix, %{args: args}),
      do: {:ok, [Enum.map_join(args, " ", &String.upcase/1), suffix || "", "\n"]}
  end

  @doc "A builtin as `{module, function, args}`: joins its args with `sep`."
  def join(%{args: args}, sep), do: {:ok, [Enum.join(args, sep), "\n"]}

  @doc "A builtin as `&Module.function/1`: the node it runs on."
  def where(_call), do: {:ok, "#{node()}\n"}

  defmodule PlainStore do
    @moduledoc false
    # A store of the three required callbacks only: no fencing.
    @behaviour ExBashkit.Store
    @impl true
    def put(_opts, _id, _record), do: :ok
    @impl true
    def fetch(_opts, _id), do: :error
    @impl true
    def delete(_opts, _id), do: :ok
  end

  defmodule FailingStore do
    @moduledoc false
    # A store whose writes fail: what a server must survive.
    @behaviour ExBashkit.Store
    @impl true
    def put(_opts, _id, _record), do: raise("disk on fire")
    @impl true
    def fetch(_opts, _id), do: :error
    @impl true
    def delete(_opts, _id), do: :ok
  end

  defmodule FullStore do
    @moduledoc false
    # A store that refuses writes with an error, as a full disk would.
    @behaviour ExBashkit.Store
    @impl true
    def put(_opts, _id, _record), do: {:error, "disk full"}
    @impl true
    def fetch(_opts, _id), do: :error
    @impl true
    def delete(_opts, _id), do: :ok
  end
end
