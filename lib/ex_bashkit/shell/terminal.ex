defmodule ExBashkit.Shell.Terminal do
  @moduledoc false
  # The VM's own terminal, read key by key. `stty` puts it in non-canonical
  # mode without echo and without signals: Ctrl-C then arrives as a byte we
  # handle (interrupting a script) instead of the VM's BREAK menu. Output
  # processing stays on, so "\n" still starts a new line. The device is
  # named explicitly because commands the VM spawns have no controlling
  # terminal (`/dev/tty` fails for them).

  @enforce_keys [:device, :saved]
  defstruct [:device, :saved]

  @type t :: %__MODULE__{device: Path.t(), saved: String.t()}

  @doc "Takes the terminal on standard input, or `:error` when there is none."
  @spec open() :: {:ok, t()} | :error
  def open do
    with {:ok, device} <- device(),
         {saved, 0} <- stty(device, ["-g"]),
         {_, 0} <- stty(device, ~w(-icanon -echo -isig -ixon min 1 time 0)) do
      :io.setopts(:standard_io, binary: true, encoding: :unicode)
      {:ok, %__MODULE__{device: device, saved: String.trim(saved)}}
    else
      _ -> :error
    end
  end

  @doc "Gives the terminal back as it was."
  @spec close(t()) :: :ok
  def close(%__MODULE__{} = terminal) do
    stty(terminal.device, [terminal.saved])
    :ok
  end

  @doc """
  Starts a process that sends `{:shell_key, char}` to `owner` for each
  character typed, and `{:shell_key, :eof}` when input ends.
  """
  @spec start_reader(pid()) :: pid()
  def start_reader(owner) do
    spawn_link(fn -> read_keys(owner) end)
  end

  defp read_keys(owner) do
    case IO.read(:stdio, 1) do
      char when is_binary(char) ->
        send(owner, {:shell_key, char})
        read_keys(owner)

      _eof_or_error ->
        send(owner, {:shell_key, :eof})
    end
  end

  defp device do
    if File.dir?("/proc/self/fd") do
      case File.read_link("/proc/self/fd/0") do
        {:ok, "/dev/" <> _ = device} -> {:ok, device}
        _pipe_or_file -> :error
      end
    else
      device_from_ps()
    end
  end

  # Where /proc is missing (macOS, the BSDs): the terminal `ps` reports.
  defp device_from_ps do
    case System.cmd("ps", ["-o", "tty=", "-p", System.pid()], stderr_to_stdout: true) do
      {tty, 0} ->
        case String.trim(tty) do
          name when name in ["", "?", "??"] -> :error
          name -> {:ok, "/dev/" <> name}
        end

      _ ->
        :error
    end
  rescue
    _ -> :error
  end

  defp stty(device, args) do
    if File.exists?(device) and System.find_executable("stty") do
      command =
        Enum.map_join(["stty" | args], " ", &shell_quote/1) <> " < " <> shell_quote(device)

      System.cmd("sh", ["-c", command], stderr_to_stdout: true)
    else
      {"", 1}
    end
  end

  defp shell_quote(word), do: "'" <> String.replace(word, "'", ~S('\'')) <> "'"
end
