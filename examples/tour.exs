# A tour of ex_bashkit: run with `bash scripts/tour.sh` (or `mix run examples/tour.exs`).
alias ExBashkit.Session

section = fn title -> IO.puts("\n\e[1m== #{title}\e[0m") end
show = fn label, value -> IO.puts("#{label}: #{inspect(value, pretty: true, limit: 20)}") end

section.("One-off scripts: a fresh interpreter per call")
{:ok, result} = ExBashkit.exec("echo 'hello from bashkit' | tr a-z A-Z; exit 3")
show.("ExBashkit.exec/1", result)

section.("A persistent session: env, cwd, functions, files carry over")

session =
  Session.new(
    env: [PROJECT: "demo"],
    cwd: "/work",
    files: %{"/work/data.csv" => "b,2\na,1\nc,3\n"}
  )

{:ok, _} = Session.exec(session, "total() { cut -d, -f2 \"$1\" | paste -sd+ | bc; }")

{:ok, result} =
  Session.exec(session, "echo \"$PROJECT in $(pwd)\"; sort data.csv > sorted.csv; total data.csv")

IO.write(result.stdout)
show.("sorted.csv read back from Elixir", Session.read_file(session, "/work/sorted.csv"))
show.("list_dir /work", Session.list_dir(session, "/work"))
show.("stat /work/data.csv", Session.stat(session, "/work/data.csv"))

section.("bashkit's builtins: text tools and jq, all in-process")

{:ok, result} =
  Session.exec(session, """
  echo '{"users":[{"name":"ada","age":36},{"name":"alan","age":41}]}' > users.json
  jq -r '.users[] | select(.age > 40) | .name' users.json
  seq 1 5 | awk '{ s += $1 } END { print "sum", s }'
  printf 'x=1\\ny=2\\n' | sed 's/=/ -> /' | grep y
  """)

IO.write(result.stdout)

section.("Binary data round-trips byte for byte")
bytes = <<0, 1, 2, 255, 254, 128>>
:ok = Session.write_file(session, "/blob.bin", bytes)
{:ok, result} = Session.exec(session, "cat /blob.bin")
show.("stdout == written bytes", result.stdout == bytes)

section.("Hostile input gets an error, and the session lives on")

for script <- ["f() { f; }; f", "while true; do :; done", String.duplicate("$(", 5000)] do
  {:error, message} = Session.exec(session, script)
  IO.puts("#{String.slice(script, 0, 24)} -> {:error, #{inspect(message)}}")
end

{:ok, result} = Session.exec(session, "echo still here: $PROJECT")
IO.write(result.stdout)

section.("The security boundary: limits, host mounts, network")

host_dir = Path.join(System.tmp_dir!(), "ex_bashkit_tour_#{System.unique_integer([:positive])}")
File.mkdir_p!(host_dir)
File.write!(Path.join(host_dir, "report.txt"), "quarterly numbers\n")

guarded =
  Session.new(
    mounts: [{"/host", host_dir, :read_only}],
    limits: [max_commands: 100, timeout_ms: 1_000, max_stdout_bytes: 64]
  )

{:ok, result} = Session.exec(guarded, "cat /host/report.txt; echo nope > /host/x")
show.("read-only mount", result)
show.("100-command budget", Session.exec(guarded, "for i in $(seq 1000); do :; done"))
{:ok, result} = Session.exec(guarded, "seq 1 100")
show.("64-byte output cap", {result.stdout, result.truncated})
{:ok, result} = Session.exec(guarded, "curl -s https://example.com")
show.("no :allow_net, no network", result.stderr)

show.(
  "/etc is refused as a mount",
  try do
    Session.new(mounts: [{"/etc", "/etc", :read_only}])
  rescue
    e in ArgumentError -> e.message
  end
)

File.rm_rf!(host_dir)

section.("Callbacks into Elixir: custom builtins and a virtual filesystem")

prices = %{"apple" => 3, "pear" => 5}

shop =
  Session.new(
    builtins: %{
      "price" => fn %{args: [item]} ->
        case Map.fetch(prices, item) do
          {:ok, price} -> {:ok, "#{price}\n"}
          :error -> {:error, "price: unknown item #{item}\n"}
        end
      end
    },
    virtual_fs: %{
      "/catalog" => fn
        %{op: :list, path: "/"} -> {:ok, for({item, _} <- prices, do: {item, :file})}
        %{op: :read, path: "/" <> item} -> {:ok, "#{item} costs #{prices[item]}\n"}
        %{op: :stat, path: "/"} -> {:ok, %{type: :dir}}
        %{op: :stat} -> {:ok, %{type: :file}}
        _ -> {:error, :erofs}
      end
    }
  )

{:ok, result} =
  Session.exec(shop, """
  total=0
  for item in $(ls /catalog); do total=$((total + $(price $item))); cat /catalog/$item; done
  echo "total: $total"
  price kiwi; echo "exit $?"
  echo hacked > /catalog/apple
  """)

show.("script using Elixir callbacks", result)

section.("Snapshot and restore: persist a session, resume it elsewhere")

{:ok, _} =
  Session.exec(session, "checkpoint=$(date +%s); echo 'progress: step 3' > /work/state.txt")

{:ok, bytes} = Session.snapshot(session, key: "a secret for the database")
show.("snapshot size (bytes)", byte_size(bytes))

resumed = Session.new()
{:ok, resumed} = Session.restore(resumed, bytes, key: "a secret for the database")
{:ok, result} = Session.exec(resumed, "cat /work/state.txt; total data.csv; pwd")
IO.write(result.stdout)
show.("restore with the wrong key", Session.restore(Session.new(), bytes, key: "guess"))

section.("Sandboxed Python sharing the session's files")

py = Session.new(python: true, files: %{"/in/prices.json" => ~s({"apple": 3, "pear": 5})})

{:ok, result} =
  Session.exec(py, """
  python3 -c "
  import json
  prices = json.loads(open('/in/prices.json').read())
  with open('/out.txt', 'w') as f:
      f.write(f'total={sum(prices.values())}')
  "
  cat /out.txt; echo
  python3 -c "import socket"
  """)

show.("python (Monty)", result)

section.("Real CPython 3.14 in a WebAssembly guest: python: :cpython")

cpy = Session.new(python: :cpython, limits: [timeout_ms: 3_000])
{first_us, :ok} = :timer.tc(&ExBashkit.warm_up/0)
show.("loading the CPython guest, once per VM (ms)", div(first_us, 1000))

{:ok, _} =
  Session.exec(cpy, ~S"""
  mkdir -p /logs
  printf '%s\n' 'GET /api 200 12ms' 'GET /login 500 340ms' 'POST /api 200 8ms' \
    'GET /api 503 1200ms' > /logs/access.log
  """)

{:ok, result} =
  Session.exec(cpy, ~S"""
  python3 -c '
  import json, re, sys
  pattern = re.compile(r"(\w+) (\S+) (\d{3}) (\d+)ms")
  rows = [pattern.match(line).groups() for line in sys.stdin]
  slow = [path for _, path, _, ms in rows if int(ms) > 100]
  errors = sum(1 for _, _, status, _ in rows if status.startswith("5"))
  print("{} requests, {} errors, {:.0%} slow".format(len(rows), errors, len(slow) / len(rows)))
  print(json.dumps({"slow": slow}))
  ' < /logs/access.log
  """)

show.("python (CPython) reading a file bash wrote", result)
{elapsed_us, {:ok, result}} = :timer.tc(fn -> Session.exec(cpy, ~S|python3 -c "print(1)"|) end)
show.("a later python3 call (µs)", {elapsed_us, result.stdout})

{:ok, result} = Session.exec(cpy, ~S|python3 -c "while True: pass"; echo "exit $?"|)
show.("a busy loop, stopped at four fifths of timeout_ms", result)

section.("JavaScript, a code runner, and your tools as functions (code mode)")

js = Session.new(javascript: true, isolation: :process)

{:ok, result} =
  Session.exec(js, """
  echo '[3, 1, 2]' > /tmp/n.json
  node -e 'const n = JSON.parse(require("fs").readFileSync("/tmp/n.json")); console.log(n.sort())'
  """)

show.("node in a worker process (QuickJS-ng)", result.stdout)

show.(
  "ExBashkit.Code.run/2, a fresh worker per run",
  ExBashkit.Code.run("async function execute({a, b}) { return {sum: a + b}; }",
    input: %{a: 2, b: 3}
  )
)

show.(
  "Python's execute, with its line in the error",
  ExBashkit.Code.run("def execute(input):\n    return input['missing']\n", language: :python)
)

show.(
  "validate/2: what a run would refuse, without running it",
  ExBashkit.Code.validate("function execute() { return require('child_process'); }")
)

orders =
  ExBashkit.Tool.new(
    name: "orders.list",
    description: "The orders of a customer.",
    parameters: %{
      "type" => "object",
      "properties" => %{"customer" => %{"type" => "string"}},
      "required" => ["customer"]
    },
    function: fn %{"customer" => c} ->
      {:ok, [%{"customer" => c, "total" => 30}, %{"customer" => c, "total" => 12}]}
    end
  )

show.(
  "one tool, called from bash",
  Session.exec(Session.new(tools: [orders]), "orders list --customer acme | jq -c 'map(.total)'")
)

show.(
  "the same tool, called from the program the model wrote",
  ExBashkit.Code.run(
    "async function execute() { const o = await tools.orders.list({customer: 'acme'}); return o.reduce((s, x) => s + x.total, 0); }",
    tools: [orders]
  )
)

show.("and by the model itself", ExBashkit.Tool.call(orders, %{"customer" => "acme"}))

section.("Live control: streaming output, cancel, and why a script ended")

live = Session.new()
IO.puts("streaming into IO.stream() — each line prints as the script reaches it:")

{:ok, _} =
  Session.exec(live, "for i in 1 2 3; do echo \"  line $i\"; sleep 0.3; done", into: IO.stream())

task = Task.async(fn -> Session.exec(live, "echo working; sleep 60", errors: :struct) end)
Process.sleep(200)
{micros, :ok} = :timer.tc(fn -> Session.cancel(live) end)
show.("cancelled a 60 s sleep (cancel/1 took #{micros} µs)", Task.await(task))

show.(
  "a timeout keeps the output so far, and says why",
  Session.exec(live, "echo step 1; sleep 60", timeout_ms: 1_000, errors: :struct)
)

show.(
  "per-call stdin, args and env, gone afterwards",
  {Session.exec(live, ~S|read -r x; echo "$1 $WHO $x"|,
     stdin: "there\n",
     args: ["hello"],
     env: [WHO: "you"]
   ), Session.exec(live, ~S|echo "[${WHO-}]"|)}
)

section.("Concurrency: 200 sessions sleeping at once hold no threads")

{micros, _} =
  :timer.tc(fn ->
    1..200
    |> Enum.map(fn i ->
      Task.async(fn -> Session.exec(Session.new(), "sleep 1; echo #{i}") end)
    end)
    |> Task.await_many(30_000)
  end)

IO.puts("200 × `sleep 1` finished in #{div(micros, 1000)} ms")

section.("One sandbox per conversation: ExBashkit.Server")

alias ExBashkit.Server
store_dir = Path.join(System.tmp_dir!(), "ex_bashkit_tour_#{System.unique_integer([:positive])}")
store = {ExBashkit.Store.Disk, dir: store_dir, key: "tour key, sixteen bytes or more"}

{:ok, chat} = Server.get_or_start("tour-chat", store: store, idle_after: 50)
{:ok, _} = Server.exec(chat, "mkdir -p /work && cd /work && echo 'draft 1' > plan.md")
Process.sleep(200)
show.("idle for 50 ms, the server hibernated", Server.info(chat).state)
show.("its process now holds (bytes)", Process.info(chat, :memory))

show.(
  "the next call wakes it",
  Server.exec(chat, "pwd; cat plan.md") |> elem(1) |> Map.get(:stdout)
)

:ok = Server.stop(chat)
show.("stopped, its record is on disk", File.ls!(store_dir))
{:ok, chat} = Server.get_or_start("tour-chat", store: store)
show.("started again by id, from the store", Server.read_file(chat, "/work/plan.md"))
:ok = Server.stop(chat, delete: true)
File.rm_rf!(store_dir)

{:ok, hostile} = Server.get_or_start("tour-hostile", isolation: :node)
show.("isolation: :node runs it on a sandbox VM", node(hostile))

show.(
  "…which answers like any server",
  Server.exec(hostile, "echo hi from $(hostname)") |> elem(1) |> Map.get(:stdout)
)

:ok = Server.stop(hostile, delete: true)

section.("ExBashkit.Peer: Elixir code in a fresh VM per call")

{micros, result} =
  :timer.tc(fn -> ExBashkit.Peer.run(~S|IO.puts("hi from #{node()}"); Enum.sum(1..100)|) end)

show.("first run (boots a VM) in #{div(micros, 1000)} ms", result)
Process.sleep(1_000)

{micros, result} =
  :timer.tc(fn -> ExBashkit.Peer.run("defmodule Scratch, do: def(x, do: 42); Scratch.x()") end)

show.("next run (a spare VM was ready) in #{div(micros, 1000)} ms", result)
show.("a clean slate: Scratch is gone", ExBashkit.Peer.run("Code.ensure_loaded?(Scratch)"))
show.("errors come back as values", ExBashkit.Peer.run("1 / 0") |> elem(1) |> elem(1))

show.(
  "standard error is captured too, in order",
  ExBashkit.Peer.run(~S|IO.puts("out"); IO.puts(:stderr, "err"); :done|)
)

show.(
  "timeouts keep partial output",
  ExBashkit.Peer.run(~S|IO.puts("working"); Process.sleep(:infinity)|, timeout: 2_000)
)

section.("This build: its parts, and telemetry")

show.(
  "ExBashkit.features() (config :ex_bashkit, features: [...] builds fewer)",
  ExBashkit.features()
)

show.(
  ":telemetry loaded, so events are emitted (see ExBashkit.Telemetry)",
  ExBashkit.Telemetry.enabled?()
)

section.("Tools for LLM agents: ExBashkit.Tool")

session = Session.new(files: %{"/repo/notes.md" => "# Notes\nTODO: ship it\n"})
tools = ExBashkit.Tool.all(session, max_output_bytes: 120)
IO.puts("tools: #{Enum.map_join(tools, ", ", & &1.name)} (+ ExBashkit.Tool.elixir/1)")
show.("the bash tool's JSON schema", hd(tools).parameters)

for {name, args} <- [
      {"list_dir", %{"path" => "/repo"}},
      {"bash", %{"command" => "cd /repo && grep -n TODO notes.md; seq 1 100000 | tail -c 400"}},
      {"edit_file", %{"path" => "notes.md", "old_string" => "TODO", "new_string" => "DONE"}},
      {"read_file", %{"path" => "notes.md", "offset" => 2}},
      {"bash", %{"command" => "echo working; sleep 5", "timeout_ms" => 1_000}},
      {"bash", %{"cmd" => "ls"}}
    ] do
  {status, text} = ExBashkit.Tool.run(tools, name, args)
  IO.puts("#{name} #{inspect(args)} → #{status}:\n" <> String.replace(text, ~r/^/m, "    "))
end

show.("as an OpenAI tools entry", ExBashkit.Tool.to_openai(hd(tools)) |> Map.keys())
IO.puts("a whole agent loop with a scripted model: mix run examples/agent.exs")

section.("Guardrails: approve before a script runs, and an MCP server")

no_network = fn %{commands: commands, opaque: opaque} ->
  cond do
    opaque -> {:deny, "scripts that build commands at run time need a human"}
    Enum.any?(commands, &(&1.name in ["curl", "wget"])) -> {:deny, "no network tools"}
    true -> :ok
  end
end

guarded = Session.new(approve: no_network)
show.("an allowed script", Session.exec(guarded, "echo fine | tr a-z A-Z"))

show.(
  "a denied one runs nothing, not even its first line",
  Session.exec(guarded, "echo first; curl http://127.0.0.1/")
)

show.("an opaque one", Session.exec(guarded, "cmd=ls; $cmd /"))

[
  ~s({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}),
  ~s({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"cd /tmp && echo hello from a worker process > a.txt && ls"}}}),
  ~s({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/nope"}}}),
  ~s({"jsonrpc":"2.0","id":4,"method":"resources/list"})
]
|> Enum.reduce(ExBashkit.MCP.new(Session.new(isolation: :process)), fn line, mcp ->
  {reply, mcp} = ExBashkit.MCP.handle_json(mcp, line)
  IO.puts("→ #{line}\n← #{String.slice(reply, 0, 160)}")
  mcp
end)

IO.puts(
  "the same over stdio, for Claude Desktop, Cursor or any MCP client: mix ex_bashkit.mcp --mount ./data:/data"
)

section.("An interactive shell on a sandbox")

IO.puts("""
In a terminal:  mix ex_bashkit.shell --cwd /work --limit timeout_ms=10000 --snapshot /tmp/work.snapshot
In IEx:         ExBashkit.Shell.start(server: "conversation-42")   # attach to a running server
Here, fed lines from an IO device as IEx would give them (its prompts are not echoed):
""")

{:ok, io} = StringIO.open("cd /repo\nfor f in *.md; do\n  wc -l \"$f\"\ndone\nexit\n")

fn ->
  Process.group_leader(self(), io) && ExBashkit.Shell.start(attach: session, input: :lines)
end
|> Task.async()
|> Task.await()

{_, transcript} = StringIO.contents(io)
IO.puts(String.replace(transcript, ~r/^/m, "    "))
