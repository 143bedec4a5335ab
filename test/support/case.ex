defmodule ExBashkit.Case do
  @moduledoc false
  # The ExUnit case template of this suite: `use ExBashkit.Case, async: true`.

  use ExUnit.CaseTemplate

  alias ExBashkit.{Result, Session}

  using do
    quote do
      import ExBashkit.Case
      alias ExBashkit.{Result, Session}
    end
  end

  @doc "Runs `script`, which must not fail at the interpreter level."
  @spec run(Session.t(), String.t()) :: Result.t()
  def run(session, script) do
    {:ok, %Result{} = result} = Session.exec(session, script)
    result
  end

  @doc """
  Polls `check` every 10 ms, by default for at most 30 s: it answers as soon
  as `check` holds, and a loaded machine may take seconds to get there.
  """
  @spec wait_until((() -> boolean()), non_neg_integer()) :: boolean()
  def wait_until(check, attempts \\ 3_000) do
    cond do
      check.() -> true
      attempts == 0 -> false
      true -> Process.sleep(10) && wait_until(check, attempts - 1)
    end
  end

  @doc """
  Waits until no interpreter thread of this VM is held by a runaway (a
  frozen script holds its thread for good: those are not waited for).
  Earlier tests' runaways go on for seconds after their tests end, and a
  script started beside one waits for it.
  """
  @spec await_no_runaways() :: true
  def await_no_runaways do
    ExUnit.Assertions.assert(
      wait_until(
        fn ->
          stats = ExBashkit.stats()
          stats.hogged <= stats.frozen_scripts
        end,
        12_000
      ),
      "runaways of earlier tests still hold interpreter threads after 120 s"
    )
  end

  @doc """
  Whether `os_pid` names a live process (not a zombie, not a thread of
  another one). Pids wrap fast (threads take them too, and `pid_max` may
  be 32768), so a test that waits on a pid also checks what it names.
  """
  @spec process?(integer() | String.t()) :: boolean()
  def process?(os_pid) do
    with {:ok, status} <- File.read("/proc/#{os_pid}/status"),
         [_, tgid] <- Regex.run(~r/^Tgid:\s+(\d+)$/m, status),
         [_, state] <- Regex.run(~r/^State:\s+(\S)/m, status) do
      tgid == to_string(os_pid) and state != "Z"
    else
      _ -> false
    end
  end

  @doc """
  A session (`ExBashkit.Session.new(opts)`) whose shell has `hog`, a
  function whose body never yields: `[[ a && … ]]` with `terms` terms
  (30,000 by default, 150 KB: ~4–6 s of work bashkit cannot interrupt on
  this 2-core machine at idle, growing as `terms^1.85`). Run it with
  `hog_command/0`, giving the deadline to that call (`timeout_ms:` of
  `exec/3`): the session's own must leave room to define the function.

  Defined by one call and run by another, nothing is parsed when the run
  starts but its one word, so a deadline always finds the script inside
  the work. A script holding the body is parsed first, and on a loaded
  machine a deadline passed during that parse: given to `exec/3` or
  sourced, 150 KB is parsed on another thread (a yield); run from a file,
  it is parsed inline, but the parser looks at the deadline. The script
  then stopped cleanly instead.
  """
  @spec hog_session(keyword(), pos_integer()) :: ExBashkit.Session.t()
  def hog_session(opts, terms \\ 30_000) do
    session = ExBashkit.Session.new(opts)
    body = "[[ " <> Enum.join(List.duplicate("a", terms), " && ") <> " ]]"
    {:ok, %ExBashkit.Result{exit_code: 0}} = ExBashkit.Session.exec(session, "hog() { #{body}; }")
    session
  end

  @doc "The command that runs the never-yielding work of `hog_session/2`."
  @spec hog_command() :: String.t()
  def hog_command, do: "hog"

  @doc """
  A name that no other test makes, in this VM or in another one running the
  suite beside it: `prefix`, this VM's OS pid (`System.unique_integer/1`
  is unique within a VM only) and a unique integer. For what tests share
  with other VMs: files, tmux sockets.
  """
  @spec unique_name(String.t()) :: String.t()
  def unique_name(prefix), do: "#{prefix}_#{System.pid()}_#{System.unique_integer([:positive])}"

  @doc """
  Sets `config :ex_bashkit, key` to `value` until the test ends (or, from
  `setup_all`, the module), then puts back what was there.
  """
  @spec put_config(atom(), term()) :: :ok
  def put_config(key, value) do
    previous = Application.fetch_env(:ex_bashkit, key)
    Application.put_env(:ex_bashkit, key, value)

    ExUnit.Callbacks.on_exit(fn ->
      case previous do
        {:ok, previous} -> Application.put_env(:ex_bashkit, key, previous)
        :error -> Application.delete_env(:ex_bashkit, key)
      end
    end)

    :ok
  end

  @doc """
  Sends each of `events` to the calling process as `{:telemetry, event,
  measurements, metadata}` until the test ends, through the suite's
  stand-in for `:telemetry` (test/support/telemetry.ex).
  """
  @spec forward_telemetry([[atom()]]) :: :ok
  def forward_telemetry(events) do
    test = self()
    id = {:forward_telemetry, make_ref()}

    forward = fn event, measurements, metadata, _config ->
      send(test, {:telemetry, event, measurements, metadata})
    end

    :ok = :telemetry.attach_many(id, events, forward, nil)
    ExUnit.Callbacks.on_exit(fn -> :telemetry.detach(id) end)
  end

  @doc "A path under the system temp dir, named by `unique_name/1`."
  @spec tmp_path(String.t()) :: Path.t()
  def tmp_path(prefix), do: Path.join(System.tmp_dir!(), unique_name(prefix))

  @doc """
  A fresh directory on the host, removed when the test ends. It lives under
  the system temp dir: a checkout under /home would be a sensitive path.
  """
  @spec host_dir!(String.t()) :: Path.t()
  def host_dir!(prefix) do
    dir = tmp_path("ex_bashkit_" <> prefix)
    File.mkdir_p!(dir)
    ExUnit.Callbacks.on_exit(fn -> File.rm_rf!(dir) end)
    worker_may_write!(dir)
  end

  @doc """
  `dir`, handed to the user a worker process of a root VM becomes
  (`ExBashkit.isolation_info/0`'s `:worker_user`), as a deployment hands it
  the directories it mounts read-write.
  """
  @spec worker_may_write!(Path.t()) :: Path.t()
  def worker_may_write!(dir) do
    with %{worker_user: {uid, gid}} <- ExBashkit.isolation_info() do
      File.chown!(dir, uid)
      File.chgrp!(dir, gid)
    end

    dir
  end
end
