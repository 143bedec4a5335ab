# What one round trip through a Port costs on this machine before any of
# ex_bashkit's work, the floor under `exec` in a worker (issue 46), and
# what it costs when a thread of the VM reads the program's pipe instead:
#
#   mix run bench/port_floor.exs          (ROUNDS=3)
#
# A small C program (built here with `cc`) reads a 4-byte length and that
# many bytes from stdin and answers with a 5-byte frame, in two ways:
#   * sleeps in read: one thread, blocked in `read` between frames;
#   * keeps a core busy: the same reader hands each frame to a second
#     thread that spins waiting for it, and that thread answers.
# Each way is timed from an Elixir process, through two channels:
#   * a Port it owns (`Port.command/2`, then `receive` of the answer);
#   * the program started by a NIF built here (bench/channel_floor, never
#     part of ex_bashkit), whose thread reads the program's stdout, looks
#     for bytes without sleeping for 200 µs after each answer, and sends
#     them with `enif_send`; the process writes the request with a NIF call.
# ROUNDS rounds of 5,000 round trips each (after BenchSupport's 500 not
# counted), the channels alternating within a round: the median of the
# rounds' p50 and their range, in µs.
#
# The gap between the two programs is what waking a thread asleep in
# `read` costs here (a virtual machine: an idle vCPU is woken by its
# host); a worker's reader looks for the next frame without sleeping for
# a while after each one for that reason (crates/worker/src/frame.rs).

Code.require_file("support.exs", __DIR__)

defmodule ChannelFloor do
  @moduledoc false
  # bench/channel_floor's NIF (loaded by PortFloor.run/0).
  def load(path), do: :erlang.load_nif(String.to_charlist(path), 0)
  def open(_program, _mode, _to), do: :erlang.nif_error(:not_loaded)
  def send(_channel, _data), do: :erlang.nif_error(:not_loaded)
end

defmodule PortFloor do
  @rounds String.to_integer(System.get_env("ROUNDS", "3"))
  @calls 5_000
  @request <<40::32>> <> :binary.copy("x", 40)

  @source ~S"""
  #include <pthread.h>
  #include <stdint.h>
  #include <stdlib.h>
  #include <string.h>
  #include <unistd.h>

  static int pending;

  static void read_exactly(char *buffer, size_t bytes) {
    size_t got = 0;
    while (got < bytes) {
      ssize_t n = read(0, buffer + got, bytes - got);
      if (n <= 0) exit(0);
      got += (size_t)n;
    }
  }

  static void answer(void) {
    static const char frame[5] = {0, 0, 0, 1, 'd'};
    if (write(1, frame, sizeof frame) != sizeof frame) exit(0);
  }

  static void *spinner(void *unused) {
    (void)unused;
    for (;;) {
      while (!__atomic_load_n(&pending, __ATOMIC_ACQUIRE)) {}
      __atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
      answer();
    }
    return NULL;
  }

  int main(int argc, char **argv) {
    int busy = argc > 1 && strcmp(argv[1], "busy") == 0;
    static char payload[1 << 16];
    pthread_t thread;
    if (busy) pthread_create(&thread, NULL, spinner, NULL);
    for (;;) {
      unsigned char length[4];
      read_exactly((char *)length, 4);
      uint32_t bytes = (uint32_t)length[0] << 24 | length[1] << 16 | length[2] << 8 | length[3];
      if (bytes > sizeof payload) exit(1);
      read_exactly(payload, bytes);
      if (busy) __atomic_store_n(&pending, 1, __ATOMIC_RELEASE);
      else answer();
    }
  }
  """

  def run do
    program = build()
    load_channel()
    IO.puts("## a Port's round trip (#{@rounds} rounds of #{@calls})\n")
    IO.puts("| the program | through a Port | read by a thread of the VM |")
    IO.puts("|---|---|---|")

    for {label, mode} <- [{"sleeps in read", "sleep"}, {"keeps a core busy", "busy"}] do
      rounds =
        for _ <- 1..@rounds,
            do: {round_trip_p50(program, mode, :port), round_trip_p50(program, mode, :thread)}

      {port, thread} = Enum.unzip(rounds)
      IO.puts("| #{label} | #{BenchSupport.spread(port)} | #{BenchSupport.spread(thread)} |")
    end
  end

  defp build do
    dir = Path.join(System.tmp_dir!(), "ex_bashkit_port_floor")
    File.mkdir_p!(dir)
    source = Path.join(dir, "echo.c")
    program = Path.join(dir, "echo")
    File.write!(source, @source)
    {_, 0} = System.cmd("cc", ["-O2", "-pthread", "-o", program, source])
    program
  end

  # bench/channel_floor, built into the NIF workspace's target directory.
  defp load_channel do
    manifest = Path.expand("channel_floor/Cargo.toml", __DIR__)
    target = Path.expand("../native/ex_bashkit/target", __DIR__)

    {_, 0} =
      System.cmd("cargo", ["build", "--release", "--quiet", "--manifest-path", manifest],
        env: [{"CARGO_TARGET_DIR", target}]
      )

    :ok = ChannelFloor.load(Path.join(target, "release/libchannel_floor"))
  end

  defp round_trip_p50(program, mode, :port) do
    port = Port.open({:spawn_executable, program}, [:binary, :stream, :use_stdio, args: [mode]])
    p50 = p50(fn -> Port.command(port, @request) && receive_bytes(port, 5) end)
    Port.close(port)
    p50
  end

  defp round_trip_p50(program, mode, :thread) do
    channel = ChannelFloor.open(program, mode, self())
    p50(fn -> ChannelFloor.send(channel, @request) && receive_answer(5) end)
  end

  defp p50(round_trip) do
    samples = BenchSupport.sorted_samples_ns(@calls, round_trip)
    Float.round(Enum.at(samples, div(@calls, 2)) / 1000, 1)
  end

  defp receive_answer(left) when left <= 0, do: :ok

  defp receive_answer(left) do
    receive do
      {:answer, data} -> receive_answer(left - byte_size(data))
    end
  end

  defp receive_bytes(_port, left) when left <= 0, do: :ok

  defp receive_bytes(port, left) do
    receive do
      {^port, {:data, data}} -> receive_bytes(port, left - byte_size(data))
    end
  end
end

BenchSupport.publish(__ENV__.file, ["ROUNDS"], &PortFloor.run/0)
