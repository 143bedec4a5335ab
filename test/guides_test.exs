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
  doctest ExBashkit.Guides.Code
  doctest ExBashkit.Guides.Git
  doctest ExBashkit.Guides.Sqlite
  doctest ExBashkit.Guides.WhichEntryPoint
  doctest ExBashkit.Guides.ForkAndCheckpoint

  test "every guide is doctested here" do
    source = File.read!(__ENV__.file)

    for path <- Path.wildcard(Path.expand("../guides/*.md", __DIR__)) do
      name = path |> Path.basename(".md") |> Macro.camelize()
      assert source =~ "doctest ExBashkit.Guides.#{name}\n", "#{path} is not doctested"
    end
  end
end
