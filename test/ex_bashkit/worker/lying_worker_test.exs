defmodule ExBashkit.LyingWorkerTest do
  # A compromised worker, for real: the probe worker (test builds only,
  # native/ex_bashkit/crates/core/src/probes/lie_probe.rs) speaks the protocol
  # honestly until a script runs `lie FILE`, which writes FILE's bytes,
  # forged frames, to the VM's pipe, as code that took over the
  # interpreter could. For each forgery: the caller is answered with
  # reason :protocol (the violation, not its deadline, ended the job),
  # nothing of the forgery reaches it, no process of the host crashes,
  # the worker is gone, the host's memory does not grow past 64 MB, and a
  # bystander session answers throughout.
  use ExBashkit.Case, async: false

  alias ExBashkit.Test.{Memory, Probe}
  alias ExBashkit.Worker.Protocol

  import Bitwise, only: [<<<: 2]

  @moduletag timeout: 900_000

  @timeout_ms 5_000
  # How far past its deadline a caller may be answered (the contract).
  @margin_ms 250
  @max_growth_kb 64 * 1024
  # Frame 10,000 against frame 1,000: what may be left behind.
  @leak_bounds [
    erts_bytes: 16 * 1024 * 1024,
    native_bytes: 16 * 1024 * 1024,
    atoms: 100,
    processes: 10,
    ports: 10,
    workers: 0
  ]

  setup_all do
    probe = Probe.build!()
    put_config(:worker_executable, probe)

    bystander = Session.new(isolation: :process)
    assert {:ok, %{stdout: "ok\n"}} = Session.exec(bystander, "echo ok")
    %{bystander: bystander}
  end

  defp frame(payload), do: <<byte_size(payload)::32, payload::binary>>
  defp term(term), do: frame(:erlang.term_to_binary(term))

  # What a script cost: {wall_us, cpu_us, peak_memory_bytes,
  # file_bytes_written, commands, runs}.
  @stats {10, 8, 4096, 0, 1, 1}
  @ran {:ok, {"", "", 0, false, [], @stats}}

  defp call(id),
    do: term({:call, id, {:builtin, "x"}, %{args: [], stdin: "", env: %{}, cwd: "/"}})

  # name, the forged bytes for the lie's job id, `lie` arguments after the
  # file, session options
  defp forgeries do
    [
      {"bytes that are no term", fn _id -> frame(<<1, 2, 3, 4, 5>>) end},
      {"a term naming an atom the VM lacks",
       fn _id -> frame(<<131, 104, 2, 119, 17, "no_such_atom_zzzz", 97, 1>>) end},
      {"bytes after the term", &frame(:erlang.term_to_binary({:started, &1}) <> "xx")},
      {"a compressed term",
       fn id ->
         frame(
           :erlang.term_to_binary({:chunk, id, :stdout, :binary.copy("a", 100_000)},
             compressed: 9
           )
         )
       end},
      {"a done whose outcome is no outcome", &term({:done, &1, {:ok, 5}, true})},
      {"a done whose exit code is text",
       &term({:done, &1, {:ok, {"", "", "0", false, [], @stats}}, true})},
      {"a done whose exit code is out of range",
       &term({:done, &1, {:ok, {"", "", 1_000_000, false, [], @stats}}, true})},
      {"a done with an unknown reason",
       &term({:done, &1, {:error, {:boom, nil, "m", "", ""}}, true})},
      {"a done with an unknown limit",
       &term({:done, &1, {:error, {:limit, :no_such_limit, "m", "", ""}}, true})},
      {"a done whose output is past the caps",
       &term({:done, &1, {:ok, {:binary.copy("a", 1_048_577), "", 0, false, [], @stats}}, true})},
      {"a done whose usable flag is not a boolean", &term({:done, &1, @ran, :yes})},
      {"a started whose id is text", fn _id -> term({:started, "1"}) end},
      {"a started whose id is a pid", fn _id -> term({:started, self()}) end},
      {"a started for an id never issued", fn _id -> term({:started, 999}) end},
      {"a done for an id never issued", fn _id -> term({:done, 999, @ran, true}) end},
      {"a chunk that is a number", &term({:chunk, &1, :stdout, 5})},
      {"a chunk on no stream", &term({:chunk, &1, :stdin, "x"})},
      {"an answer to no file request", fn _id -> term({:fs, 7, {:ok, "x"}}) end},
      {"an answer to no cancel", fn _id -> term({:cancelled, 7, true}) end},
      {"stats nobody asked for", fn _id -> term({:stats, 7, @stats}) end},
      {"a done whose stats are negative",
       &term({:done, &1, {:ok, {"", "", 0, false, [], {1, -5, 0, 0, 0, 1}}}, true})},
      {"a second :new", fn _id -> term({:new, {:ok, {[], [], 1}}}) end},
      {"a call whose arguments are numbers",
       fn _id -> term({:call, 1, {:builtin, "x"}, %{args: [1]}}) end},
      {"a call of no known kind", fn _id -> term({:call, 1, {:shell, "x"}, %{}}) end},
      {"a request to the network without :allow_net",
       fn _id ->
         request = %{
           method: "GET",
           url: "http://127.0.0.1/",
           headers: [],
           body: nil,
           timeout_ms: 1,
           max_bytes: 1
         }

         term({:http, 1, request})
       end},
      {"an event nobody knows", &term({:hello, &1})},
      {"a term that is no tuple", &term([:started, &1])},
      {"a frame header of 2 GiB, then 1.5 GiB of it", fn _id -> <<0x8000_0000::32>> end,
       ["1", "#{3 <<< 29}"]},
      {"a result of 1 GiB", fn _id -> <<(1 <<< 30) + 64::32, 131, 104, 4>> end,
       ["1", "#{1 <<< 30}"]},
      {"2 GiB of output in 1 MiB chunks",
       &term({:chunk, &1, :stdout, :binary.copy("a", 1 <<< 20)}), ["2048"]},
      {"a call of a builtin the session does not have", fn _id -> call(1) end},
      # The builtin exists and never answers: the calls pile up to the cap.
      {"100,000 callback calls", fn _id -> Enum.map_join(1..100_000, &call/1) end, ["1"],
       [
         limits: [max_file_bytes: 64_000_000, max_fs_bytes: 128_000_000],
         builtins: %{"x" => fn _ -> Process.sleep(:infinity) end}
       ]}
    ]
  end

  # Runs `lie` with `forgery` in a fresh isolated session, from a process
  # of its own; returns what its caller got and the host's peak memory
  # growth meanwhile.
  defp lie(forge, args \\ ["1"], opts \\ []) do
    session =
      Session.new(
        [isolation: :process, limits: [timeout_ms: @timeout_ms]]
        |> Keyword.merge(opts, fn
          :limits, a, b -> Keyword.merge(a, b)
          _, _, b -> b
        end)
      )

    os_pid = Session.info(session).os_pid
    assert is_integer(os_pid)
    # The owner numbers jobs and requests alike: the write below takes the
    # next id, the lie's script the one after it.
    %ExBashkit.Worker{pid: owner} = session.resource
    id = :sys.get_state(owner).next + 1
    :ok = Session.write_file(session, "/frames", forge.(id))
    script = Enum.join(["lie /frames" | args], " ")

    # A caller never answered fails here: its answer comes at the latest
    # at the deadline plus the margin, so ten times that is no answer.
    {outcome, growth_kb} =
      Memory.peak_growth_kb(fn ->
        caller = Task.async(fn -> Session.exec(session, script, errors: :struct) end)
        Task.await(caller, 10 * (@timeout_ms + @margin_ms))
      end)

    %{session: session, os_pid: os_pid, outcome: outcome, growth_kb: growth_kb}
  end

  defp assert_held(run, bystander, name) do
    assert run.growth_kb <= @max_growth_kb, "#{name}: the host grew by #{run.growth_kb} KiB"
    assert wait_until(fn -> not process?(run.os_pid) end), "#{name}: the worker lives on"
    assert Session.info(run.session).os_pid == nil, "#{name}: the session still has a worker"
    assert {:ok, %{stdout: "ok\n"}} = Session.exec(bystander, "echo ok"), name
  end

  test "every forgery kills the worker and answers its caller with an error",
       %{bystander: bystander} do
    for {name, forge, args, opts} <- Enum.map(forgeries(), &pad/1) do
      kills = ExBashkit.stats().workers.kills.protocol
      run = lie(forge, args, opts)

      error =
        case run.outcome do
          {:error, %ExBashkit.Error{reason: :protocol} = error} -> error
          other -> flunk("#{name}: #{inspect(other, limit: 5, printable_limit: 100)}")
        end

      assert error.message =~ "broke the protocol"
      assert_held(run, bystander, name)
      assert ExBashkit.stats().workers.kills.protocol == kills + 1, name
    end
  end

  defp pad({name, forgery}), do: {name, forgery, ["1"], []}
  defp pad({name, forgery, args}), do: {name, forgery, args, []}
  defp pad(full), do: full

  test "a forged but well-formed answer ends the job; anything after it is a violation",
       %{bystander: bystander} do
    forge = fn id ->
      term({:done, id, {:ok, {"forged\n", "", 0, false, [], @stats}}, true}) <>
        term({:chunk, id, :stdout, "late"})
    end

    run = lie(forge)
    # The caller gets what an honest worker could have answered, nothing else.
    assert {:ok, %Result{stdout: "forged\n", exit_code: 0}} = run.outcome
    assert_held(run, bystander, "frames after done")
  end

  test "a violation reaches telemetry with what was wrong, never the frame's bytes" do
    forward_telemetry([[:ex_bashkit, :worker, :protocol_violation]])
    run = lie(&term({:done, &1, {:ok, "secret-bytes"}, true}))
    assert {:error, %ExBashkit.Error{reason: :protocol}} = run.outcome

    os_pid = run.os_pid

    assert_receive {:telemetry, [:ex_bashkit, :worker, :protocol_violation], %{count: 1},
                    %{os_pid: ^os_pid, why: why}}

    assert why =~ "answer"
    refute why =~ "secret-bytes"
  end

  describe "an honest worker keeps inside the host's bounds" do
    test "a mounted file larger than :max_file_bytes is refused by read_file, in both modes" do
      dir = host_dir!("bounds")
      File.write!(Path.join(dir, "big.bin"), :binary.copy("x", 200_000))

      for isolation <- [:process, :none] do
        session =
          Session.new(
            isolation: isolation,
            mounts: [{"/m", dir, :read_only}],
            allowed_mount_paths: [dir],
            limits: [max_file_bytes: 100_000]
          )

        assert {:error, message} = Session.read_file(session, "/m/big.bin")
        assert message =~ "limit :max_file_bytes"
        # Still a working session: nothing was sent past the bound.
        assert {:ok, %{stdout: "200000\n"}} = Session.exec(session, "wc -c < /m/big.bin")
      end
    end

    test "a callback carrying more than :max_file_bytes fails its command, not the worker" do
      count = fn %{stdin: stdin} -> {:ok, "#{byte_size(stdin)}\n"} end

      session =
        Session.new(
          isolation: :process,
          builtins: %{"count" => count},
          limits: [max_file_bytes: 100_000]
        )

      os_pid = Session.info(session).os_pid
      assert %Result{stdout: "50000\n"} = run(session, "head -c 50000 /dev/zero | count")
      result = run(session, "head -c 200000 /dev/zero | count")
      assert result.exit_code == 1
      assert result.stderr =~ "limit :max_file_bytes"
      assert Session.info(session).os_pid == os_pid
      assert %Result{stdout: "still\n"} = run(session, "echo still")
    end
  end

  test "a caller waiting on a worker whose owner crashed is answered" do
    session = Session.new(isolation: :process, limits: [timeout_ms: 2_000])
    %ExBashkit.Worker{pid: owner} = session.resource
    parent = self()

    script =
      Task.async(fn -> Session.exec(session, "echo started; sleep 10", stream_to: parent) end)

    # Once the script runs, a snapshot waits behind it.
    assert_receive {:ex_bashkit, _, {:stdout, "started\n"}}, 5_000
    snapshot = Task.async(fn -> Session.snapshot(session) end)
    assert wait_until(fn -> map_size(:sys.get_state(owner).jobs) == 2 end)
    Process.exit(owner, :kill)
    assert {:error, _} = Task.await(snapshot, 1_000)
    assert {:error, _} = Task.await(script, 20_000)
    assert {:error, _} = Session.exec(session, "echo hi")
  end

  test "what a worker answers is checked against what was asked" do
    caps = {10, 10}
    assert Protocol.outcome(:exec, {:ok, {"out", "", 0, false, [], @stats}}, caps)
    assert Protocol.outcome(:exec, {:ok, {"out", "", 0, false, [{"rm", "denied"}], @stats}}, caps)
    refute Protocol.outcome(:exec, {:ok, {"much too long", "", 0, false, [], @stats}}, caps)
    # Denials: {name, reason} pairs, no more than a script reports.
    refute Protocol.outcome(:exec, {:ok, {"", "", 0, false, [{:rm, "denied"}], @stats}}, caps)
    refute Protocol.outcome(:exec, {:ok, {"", "", 0, false, :none, @stats}}, caps)
    many = List.duplicate({"rm", "denied"}, 101)
    refute Protocol.outcome(:exec, {:ok, {"", "", 0, false, many, @stats}}, caps)
    refute Protocol.outcome(:exec, {:ok, {"", "", 0, false}}, caps)
    # Stats: six non-negative integers.
    refute Protocol.outcome(:exec, {:ok, {"", "", 0, false, [], {10, -1, 0, 0, 1, 1}}}, caps)
    refute Protocol.outcome(:exec, {:ok, {"", "", 0, false, [], {10, 8, 0, 0, "1", 1}}}, caps)
    refute Protocol.outcome(:exec, {:ok, {"", "", 0, false, [], {10, 8, 0, 1, 1}}}, caps)
    refute Protocol.outcome(:exec, {:ok, {"", "", 0, false, [], nil}}, caps)
    refute Protocol.outcome(:exec, {:ok, "snapshot"}, caps)
    # Every limit an honest worker can name, the VM-wide budget included.
    for limit <- [nil, :memory_budget_bytes | ExBashkit.Session.Options.Limits.keys()] do
      assert Protocol.outcome(:exec, {:error, {:limit, limit, "m", "", ""}}, caps)
    end

    refute Protocol.outcome(:exec, {:error, {:limit, :no_such_limit, "m", "", ""}}, caps)
    # A code run's outcome: the value's JSON within the stdout cap, or an
    # error in the library's words.
    ran = {"out", "", 0, false, [], @stats}
    error = %{kind: :exception, name: "TypeError", message: "bad", line: 3}
    assert Protocol.outcome(:run_code, {:ok, {:code, ran, {:value, "[1]"}}}, caps)
    assert Protocol.outcome(:run_code, {:ok, {:code, ran, {:error, error}}}, caps)
    assert Protocol.outcome(:run_code, {:ok, {:code, ran, nil}}, caps)
    assert Protocol.outcome(:run_code, {:error, {:timeout, :timeout_ms, "m", "", ""}}, caps)
    refute Protocol.outcome(:run_code, {:ok, {:code, ran, {:value, "[1, 2, 3, 4, 5]"}}}, caps)
    refute Protocol.outcome(:run_code, {:ok, {:code, ran, {:value, ~c"[1]"}}}, caps)

    refute Protocol.outcome(
             :run_code,
             {:ok, {:code, ran, {:error, %{error | kind: :busy}}}},
             caps
           )

    refute Protocol.outcome(:run_code, {:ok, {:code, ran, {:error, %{error | line: 0}}}}, caps)

    refute Protocol.outcome(
             :run_code,
             {:ok, {:code, ran, {:error, %{error | message: "much too long"}}}},
             caps
           )

    refute Protocol.outcome(:run_code, {:ok, ran}, caps)
    refute Protocol.outcome(:exec, {:ok, {:code, ran, nil}}, caps)
    assert Protocol.outcome(:snapshot, {:ok, "snapshot"}, caps)
    refute Protocol.outcome(:snapshot, {:ok, :ok}, caps)
    assert Protocol.outcome(:restore, {:ok, :ok}, caps)
    assert Protocol.outcome(:restore, {:error, "why"}, caps)
    refute Protocol.outcome(:restore, {:error, :why}, caps)

    assert Protocol.fs_result(:stat, {:ok, {:file, 3, 0o644, 1_700_000_000}})
    refute Protocol.fs_result(:stat, {:ok, {:file, 3}})
    refute Protocol.fs_result(:stat, {:ok, {:not_a_kind, 3, 0o644, 0}})
    refute Protocol.fs_result(:stat, {:ok, {:file, -1, 0o644, 0}})
    refute Protocol.fs_result(:stat, {:ok, {:file, 3, 0o777777, 0}})
    assert Protocol.fs_result(:read_file, {:ok, "content"})
    refute Protocol.fs_result(:read_file, {:ok, ~c"content"})
    assert Protocol.fs_result(:list_dir, {:ok, [{"a", :dir, 0, 0o755, 0}]})
    refute Protocol.fs_result(:list_dir, {:ok, [{"a", :dir}]})
    refute Protocol.fs_result(:list_dir, {:ok, [{"a", :dir, 3}]})
    assert Protocol.fs_result(:mkdir, :ok)
    refute Protocol.fs_result(:read_file, :ok)
  end

  test "a frame is refused by its announced size, before its bytes are kept" do
    assert {:violation, why} = Protocol.feed(Protocol.inbox(), <<0x8000_0000::32, 0, 0>>, 1_000)
    assert why =~ "2147483648 bytes"
    assert {:ok, [], inbox} = Protocol.feed(Protocol.inbox(), <<0, 0>>, 1_000)
    assert {:violation, _} = Protocol.feed(inbox, <<4, 0>>, 1_000)
  end

  test "a large frame may not hold more terms than any event" do
    many = :erlang.term_to_binary({:done, 1, {:ok, List.duplicate(1, 500_000)}, true})
    assert byte_size(many) > 64 * 1024
    assert {:violation, why} = Protocol.decode(many)
    assert why =~ "more terms"

    large = :erlang.term_to_binary({:done, 1, {:ok, :binary.copy("a", 5_000_000)}, true})
    assert {:ok, {:done, 1, {:ok, _}, true}} = Protocol.decode(large)
  end

  describe "random frames (seeded)" do
    @tag :random_frames
    test "10,000 random frames decode to a known event or a violation, never a crash" do
      :rand.seed(:exsss, {41, 41, 41})

      for _ <- 1..10_000 do
        payload = random_payload(1)

        case Protocol.decode(payload) do
          {:ok, event} ->
            assert elem(event, 0) in [
                     :new,
                     :started,
                     :chunk,
                     :call,
                     :done,
                     :fs,
                     :cancelled,
                     :stats,
                     :http
                   ]

          {:violation, why} ->
            assert is_binary(why)
        end
      end
    end

    test "framing reassembles frames however the pipe splits them" do
      :rand.seed(:exsss, {7, 7, 7})

      for _ <- 1..200 do
        payloads = for _ <- 1..:rand.uniform(8), do: :crypto.strong_rand_bytes(:rand.uniform(300))
        stream = Enum.map_join(payloads, &frame/1)
        assert reassemble(stream) == payloads
      end
    end

    test "10,000 random frames, each to a worker of its own: callers answered, the host unharmed",
         %{bystander: bystander} do
      :rand.seed(:exsss, {43, 43, 43})

      run_frame = fn n ->
        run = lie(&frame(random_payload(&1)))

        case run.outcome do
          {:ok, %Result{}} -> :ok
          {:error, %ExBashkit.Error{}} -> :ok
        end

        assert run.growth_kb <= @max_growth_kb,
               "frame #{n}: the host grew by #{run.growth_kb} KiB"

        Session.close(run.session)
        assert wait_until(fn -> not process?(run.os_pid) end), "frame #{n}: the worker lives on"
        if rem(n, 1_000) == 0, do: assert({:ok, _} = Session.exec(bystander, "echo ok"))
      end

      # What is left behind is counted where the frames' handling could
      # leave it: the bytes ERTS's allocators hold for the VM, the bytes
      # this library's native code holds, and atoms, processes, ports and
      # workers. These are exact; the VM's resident set is not (its
      # allocators return and retake tens of megabytes either way, as the
      # tests before this one left them), so it is bounded per frame
      # above, not here. Counted from the 1,001st frame on, after the
      # first thousand settled what the tests before left; a leak of 8 KB
      # per frame in either kind of memory fails (checked by injecting one).
      Enum.each(1..1_000, run_frame)
      before = footprint()
      Enum.each(1_001..10_000, run_frame)
      assert {:ok, %{stdout: "ok\n"}} = Session.exec(bystander, "echo ok")
      after_ = footprint()

      for {key, bound} <- @leak_bounds do
        assert after_[key] - before[key] <= bound,
               "frames 1,001 to 10,000 left #{after_[key] - before[key]} of #{key} behind " <>
                 "(#{inspect(before)} -> #{inspect(after_)})"
      end
    end
  end

  # Collected first, every process, so that what is counted is what is
  # still referenced.
  defp footprint do
    Enum.each(Process.list(), &:erlang.garbage_collect/1)
    stats = ExBashkit.stats()

    %{
      erts_bytes: :erlang.memory(:total),
      native_bytes: stats.live_bytes,
      atoms: :erlang.system_info(:atom_count),
      processes: :erlang.system_info(:process_count),
      ports: :erlang.system_info(:port_count),
      workers: stats.workers.count
    }
  end

  defp reassemble(stream) do
    {frames, inbox} =
      stream
      |> random_splits()
      |> Enum.reduce({[], Protocol.inbox()}, fn part, {done, inbox} ->
        {:ok, frames, inbox} = Protocol.feed(inbox, part, 1_000_000)
        {done ++ frames, inbox}
      end)

    assert inbox == Protocol.inbox()
    frames
  end

  defp random_splits(<<>>), do: []

  defp random_splits(bytes) do
    n = min(:rand.uniform(40), byte_size(bytes))
    <<part::binary-size(n), rest::binary>> = bytes
    [part | random_splits(rest)]
  end

  # A mutation of a real event, garbled bytes, or a random term.
  defp random_payload(id) do
    case :rand.uniform(4) do
      1 -> :erlang.term_to_binary(mutate(template(id)))
      2 -> garble(:erlang.term_to_binary(template(id)))
      3 -> :erlang.term_to_binary(random_term(3))
      4 -> :crypto.strong_rand_bytes(:rand.uniform(64))
    end
  end

  defp template(id) do
    Enum.random([
      {:started, id},
      {:chunk, id, :stdout, "out"},
      {:done, id, @ran, true},
      {:done, id, {:error, {:timeout, :timeout_ms, "m", "", ""}}, true},
      {:fs, 2, {:ok, "content"}},
      {:cancelled, 2, true},
      {:stats, 2, @stats},
      {:call, 1, {:builtin, "b"}, %{args: ["a"], stdin: "", env: %{"K" => "V"}, cwd: "/"}},
      {:call, 1, {:fs, "/m"}, %{op: :write, path: "/m/f", data: "d"}},
      {:http, 1,
       %{method: "GET", url: "http://x/", headers: [], body: nil, timeout_ms: 5, max_bytes: 9}},
      {:new, {:ok, {[seccomp: :ok], [], 1}}}
    ])
  end

  defp mutate(tuple) when is_tuple(tuple) do
    i = :rand.uniform(tuple_size(tuple)) - 1

    put_elem(
      tuple,
      i,
      if(:rand.uniform(2) == 1, do: random_term(2), else: mutate(elem(tuple, i)))
    )
  end

  defp mutate(_leaf), do: random_term(2)

  defp garble(bytes) do
    i = :rand.uniform(byte_size(bytes)) - 1
    <<head::binary-size(i), _, tail::binary>> = bytes
    Enum.random([head <> <<:rand.uniform(256) - 1>> <> tail, head, head <> tail])
  end

  defp random_term(0), do: Enum.random([1, -1, 0, 1 <<< 70, 1.5, :ok, nil, "", "x", []])

  defp random_term(depth) do
    case :rand.uniform(8) do
      1 -> :rand.uniform(1 <<< 64) - (1 <<< 63)
      2 -> Enum.random([:ok, :error, :stdout, :stderr, :done, true, false, nil, :file])
      3 -> :crypto.strong_rand_bytes(:rand.uniform(16))
      4 -> List.to_tuple(for _ <- 1..:rand.uniform(4), do: random_term(depth - 1))
      5 -> for _ <- 1..:rand.uniform(3), do: random_term(depth - 1)
      6 -> Map.new(1..:rand.uniform(3), fn _ -> {random_term(0), random_term(depth - 1)} end)
      7 -> 1
      8 -> random_term(0)
    end
  end
end
