defmodule ExBashkit.ReadmeTest do
  use ExUnit.Case, async: true

  # Every `iex>` example in README.md runs here, so the README cannot rot.
  doctest ExBashkit.Readme
end
