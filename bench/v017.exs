# ex_bashkit 0.1.7 beside this library in one VM, for side-by-side figures:
# its own NIF (bashkit 0.13, built from its source with cargo) and its own
# Elixir modules, renamed `ExBashkit017.*` so both load at once.
#
#   EX_BASHKIT_017=/path/to/ex_bashkit-0.1.7 mix run bench/against_017.exs
#
# The path is a checkout of the 0.1.7 release (its `lib/` and
# `native/ex_bashkit/`). The build goes to `_build/v017/` (3 minutes the
# first time on 2 cores, reused after).

defmodule V017 do
  @moduledoc false

  @modules ~w(result.ex pool.ex virtual_fs.ex session.ex python.ex python/session_fs.ex)

  @doc "Builds and loads 0.1.7; `false` when `EX_BASHKIT_017` is not set."
  def load do
    case System.get_env("EX_BASHKIT_017") do
      nil -> false
      source -> load!(Path.expand(source))
    end
  end

  defp load!(source) do
    unless Code.ensure_loaded?(ExBashkit017.Session) do
      library = build_nif(source)
      compile_native(source, library)

      for file <- @modules do
        source |> Path.join("lib/ex_bashkit/#{file}") |> File.read!() |> renamed() |> compile()
      end
    end

    true
  end

  # The crate as released, registering its NIFs under the renamed module.
  defp build_nif(source) do
    work = Path.expand("../_build/v017", __DIR__)
    crate = Path.join(work, "crate")
    File.mkdir_p!(crate)
    {_, 0} = System.cmd("cp", ["-a", Path.join(source, "native/ex_bashkit/."), crate])
    lib = Path.join(crate, "src/lib.rs")

    lib
    |> File.read!()
    |> String.replace(
      ~s|rustler::init!("Elixir.ExBashkit.Native")|,
      ~s|rustler::init!("Elixir.ExBashkit017.Native")|
    )
    |> then(&File.write!(lib, &1))

    target = Path.join(work, "target")
    args = ["build", "--release", "--quiet", "--target-dir", target]
    {_, 0} = System.cmd("cargo", args, cd: crate, into: IO.stream(:stdio, :line))
    Path.join(target, "release/libex_bashkit")
  end

  # Its stubs, loading the library directly instead of through the
  # precompiled-download package.
  defp compile_native(source, library) do
    text = File.read!(Path.join(source, "lib/ex_bashkit/native.ex"))
    [head, rest] = String.split(text, "use RustlerPrecompiled,", parts: 2)
    [_options, stubs] = String.split(rest, ~r/force_build:[^\n]*\n/, parts: 2)

    loader = """
    @on_load :load_nif
    def load_nif, do: :erlang.load_nif(#{inspect(String.to_charlist(library))}, 0)
    """

    (head <> loader <> stubs) |> renamed() |> compile()
  end

  @plain_manifest """
  [package]
  name = "bashkit_013"
  version = "0.1.0"
  edition = "2021"

  [dependencies]
  bashkit = { version = "=0.13.0", default-features = false, features = ["realfs", "jq"] }
  tokio = { version = "1", features = ["rt-multi-thread", "time"] }
  """

  @plain_main ~S"""
  use std::path::Path;
  use std::time::Instant;

  async fn session() -> bashkit::Bash {
      let bash = bashkit::Bash::builder().build();
      let log: String = (1..=200)
          .map(|i| {
              let status = if i % 3 == 0 { "ok" } else { "fail" };
              format!("{i} user{} {} status={status}\n", i % 7, i * 37 % 101)
          })
          .collect();
      let fs = bash.fs();
      fs.mkdir(Path::new("/data"), true).await.unwrap();
      fs.write_file(Path::new("/data/log.txt"), log.as_bytes()).await.unwrap();
      bash
  }

  fn main() {
      let args: Vec<String> = std::env::args().collect();
      let runs: usize = args[2].parse().unwrap();
      let script = match args[1].as_str() {
          "exec" => "true".to_string(),
          _ => std::fs::read_to_string(&args[3]).unwrap(),
      };
      let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
      runtime.block_on(async {
          let mut bash = session().await;
          let mut samples = Vec::with_capacity(runs);
          for i in 0..runs + runs / 10 {
              if i % 900 == 899 {
                  bash = session().await;
              }
              let started = Instant::now();
              let result = bash.exec(&script).await.unwrap();
              assert_eq!(result.exit_code, 0);
              if i >= runs / 10 {
                  samples.push(started.elapsed().as_secs_f64() * 1e6);
              }
          }
          samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
          println!("{:.2}", samples[samples.len() / 2]);
      });
  }
  """

  @doc """
  bashkit 0.13, 0.1.7's interpreter, in a plain Rust program (the same
  build): `BINARY exec N` and `BINARY script N PATH` print the median µs of
  N runs, after a tenth as many, on a session with `/data/log.txt` (the log
  of `bench/hot_path.exs`). A new session every 900 runs: bashkit 0.13
  refuses the 1,001st `exec` of one.
  """
  def plain_binary do
    work = Path.expand("../_build/v017", __DIR__)
    crate = Path.join(work, "plain")
    File.mkdir_p!(Path.join(crate, "src"))
    File.cp!(Path.join(work, "crate/Cargo.lock"), Path.join(crate, "Cargo.lock"))
    File.write!(Path.join(crate, "Cargo.toml"), @plain_manifest)
    File.write!(Path.join(crate, "src/main.rs"), @plain_main)
    target = Path.join(work, "target")
    args = ["build", "--release", "--quiet", "--target-dir", target]
    {_, 0} = System.cmd("cargo", args, cd: crate, into: IO.stream(:stdio, :line))
    Path.join(target, "release/bashkit_013")
  end

  defp renamed(text), do: String.replace(text, ~r/\bExBashkit\b/, "ExBashkit017")

  defp compile(text) do
    Code.put_compiler_option(:ignore_module_conflict, true)
    Code.compile_string(text)
  end
end
