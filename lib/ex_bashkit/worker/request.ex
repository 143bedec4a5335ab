defmodule ExBashkit.Worker.Request do
  @moduledoc false
  # The frames the VM sends a worker process, one function per row of
  # native/ex_bashkit/crates/protocol/requests.table, its arguments in the
  # table's order. The worker reads each as the protocol crate's
  # `worker::Request` (whose test reads every row of the same table), so a
  # request is defined in that table and that enum, nowhere else.

  @table Path.expand("../../../native/ex_bashkit/crates/protocol/requests.table", __DIR__)
  @external_resource @table

  rows =
    for line <- File.read!(@table) |> String.split("\n"),
        line = String.trim(line),
        line != "" and not String.starts_with?(line, "#") do
      [name, args, answer] = line |> String.split("|", parts: 3) |> Enum.map(&String.trim/1)
      args = for arg <- String.split(args), do: arg |> String.split(":") |> hd()
      {String.to_atom(name), Enum.map(args, &String.to_atom/1), answer}
    end

  for {name, args, answer} <- rows do
    vars = Enum.map(args, &Macro.var(&1, __MODULE__))

    @doc "`{#{inspect(name)}, #{Enum.join(args, ", ")}}`; the worker answers #{answer}."
    @spec unquote(name)(unquote_splicing(Enum.map(args, fn _ -> quote(do: term()) end))) ::
            tuple()
    def unquote(name)(unquote_splicing(vars)), do: {unquote(name), unquote_splicing(vars)}
  end

  @doc "The requests the table defines, with their arities."
  @spec names() :: [{atom(), arity()}]
  def names, do: unquote(for {name, args, _} <- rows, do: {name, length(args)})
end
