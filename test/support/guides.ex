defmodule ExBashkit.Guides do
  @moduledoc false
  # Each guide in guides/ as a module doc, so test/guides_test.exs runs its
  # `iex>` examples as doctests.

  @guides Path.wildcard(Path.expand("../../guides/*.md", __DIR__))

  # A guide added or removed recompiles this module (edits are tracked by
  # @external_resource).
  def __mix_recompile__?,
    do: Path.wildcard(Path.expand("../../guides/*.md", __DIR__)) != @guides

  for path <- @guides do
    name = path |> Path.basename(".md") |> Macro.camelize()

    defmodule Module.concat(__MODULE__, name) do
      @moduledoc File.read!(path)
      @external_resource path
    end
  end
end
