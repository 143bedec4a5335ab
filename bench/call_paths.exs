# What one call costs on each path a script takes into the library:
# exec in the VM (bare, with one builtin call, with :approve), through a
# server, through the bash tool, and in a worker. One VM, each figure
# after a tenth as many warm-up calls (BenchSupport.sorted_samples_ns/2);
# prints "figure<TAB>p50 µs<TAB>p90 µs" lines.
# Made to compare two commits: run it alternately in a checkout of each
# (issue 31's before and after, in bench/README.md).
#
#   MIX_ENV=prod mix run bench/call_paths.exs

Code.require_file("support.exs", __DIR__)

alias ExBashkit.{Server, Session, Tool}

samples = &BenchSupport.sorted_samples_ns/2

row = fn label, sorted ->
  at = fn p -> Enum.at(sorted, div(length(sorted) * p, 100)) / 1000 end
  IO.puts("#{label}\t#{Float.round(at.(50), 1)}\t#{Float.round(at.(90), 1)}")
end

ok = %{"ok" => fn _ -> {:ok, ""} end}

vm = Session.new()
row.("vm exec true", samples.(2000, fn -> {:ok, _} = Session.exec(vm, "true") end))

builtin = Session.new(builtins: ok)
row.("vm exec one builtin call", samples.(3000, fn -> {:ok, _} = Session.exec(builtin, "ok") end))

per_call =
  samples.(100, fn -> {:ok, _} = Session.exec(builtin, "for i in $(seq 100); do ok; done") end)

row.("vm 100 builtin calls, per call", Enum.map(per_call, &div(&1, 100)))

approved = Session.new(approve: fn _ -> :ok end)
row.("vm exec true, approve", samples.(3000, fn -> {:ok, _} = Session.exec(approved, "true") end))

{:ok, server} = Server.start(id: {:call_paths, System.unique_integer()})
row.("Server.exec true", samples.(3000, fn -> {:ok, _} = Server.exec(server, "true") end))

tool = Tool.bash(Session.new())

row.(
  "Tool.call bash true",
  samples.(3000, fn -> {:ok, _} = Tool.call(tool, %{"command" => "true"}) end)
)

worker = Session.new(isolation: :process, builtins: ok)
row.("process exec true", samples.(3000, fn -> {:ok, _} = Session.exec(worker, "true") end))

row.(
  "process exec one builtin call",
  samples.(2000, fn -> {:ok, _} = Session.exec(worker, "ok") end)
)
