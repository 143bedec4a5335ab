defmodule ExBashkit.Test.LoudInspect do
  @moduledoc false
  # A term whose Inspect ignores every option and prints 5,000 bytes: error
  # text built from it must still be cut to the reply cap. (In test/support
  # so that the implementation is consolidated with the protocol.)
  defstruct []

  defimpl Inspect do
    def inspect(_value, _opts), do: String.duplicate("A", 5_000)
  end
end
