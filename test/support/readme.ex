defmodule ExBashkit.Readme do
  # The README as a module doc, so test/readme_test.exs can run its `iex>`
  # examples as doctests.
  @moduledoc File.read!(Path.expand("../../README.md", __DIR__))
  @external_resource Path.expand("../../README.md", __DIR__)
end
