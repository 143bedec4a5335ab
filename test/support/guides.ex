defmodule ExBashkit.Guides do
  @moduledoc false
  # Each guide in guides/ as a module doc, so test/guides_test.exs runs its
  # `iex>` examples as doctests.

  for path <- Path.wildcard(Path.expand("../../guides/*.md", __DIR__)) do
    name = path |> Path.basename(".md") |> Macro.camelize()

    defmodule Module.concat(__MODULE__, name) do
      @moduledoc File.read!(path)
      @external_resource path
    end
  end
end
