defmodule ExBashkit.GuidesTest do
  use ExUnit.Case, async: true

  # Every `iex>` example in guides/*.md runs here, so the guides cannot rot.
  doctest ExBashkit.Guides.Limits
  doctest ExBashkit.Guides.HostAccess
  doctest ExBashkit.Guides.Callbacks
  doctest ExBashkit.Guides.Python
  doctest ExBashkit.Guides.HowScriptsRun
  doctest ExBashkit.Guides.LiveControl
  doctest ExBashkit.Guides.SandboxPerConversation
  doctest ExBashkit.Guides.AgentTools
  doctest ExBashkit.Guides.ComingFrom017
  doctest ExBashkit.Guides.Isolation
  doctest ExBashkit.Guides.Security
  doctest ExBashkit.Guides.Javascript

  test "every guide is doctested here" do
    guides = Path.wildcard(Path.expand("../guides/*.md", __DIR__))
    assert length(guides) == 14
  end
end
