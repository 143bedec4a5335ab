defmodule ExBashkit.Precompiled do
  @moduledoc false
  # Precompiled NIF libraries: what this machine needs, where it comes
  # from, and whether it is the one the package vouches for. Built from
  # OTP alone (:httpc, :crypto, :erl_tar): Hex packages such as
  # rustler_precompiled cannot be assumed.
  #
  # An artifact is `libex_bashkit-v<version>-nif-<nif>-<target>.so.tar.gz`
  # holding `libex_bashkit.so`; its SHA-256 is listed in the checksum file
  # committed with the package (checksum-ex_bashkit.exs, a map of artifact
  # name => "sha256:<hex>"), which `mix ex_bashkit.package` writes.

  # The NIF version the crate is built against (rustler's nif_version_2_16
  # feature); VMs with a later NIF version load it too.
  @nif_version "2.16"
  @library "libex_bashkit.so"
  # The executables of `isolation: :process`: the worker, and the launcher
  # of workers forked by the zygote.
  @executables ["ex_bashkit_worker", "ex_bashkit_worker_stub"]

  @targets ~w(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl
              aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin)

  def targets, do: @targets
  def library, do: @library

  @doc "The Rust target triple of this machine, or the one configured."
  def target do
    case System.get_env("EX_BASHKIT_TARGET") || Application.get_env(:ex_bashkit, :target) do
      nil -> detect_target()
      target -> target
    end
  end

  defp detect_target do
    architecture = List.to_string(:erlang.system_info(:system_architecture))

    arch =
      cond do
        architecture =~ ~r/^(x86_64|amd64)/ -> "x86_64"
        architecture =~ ~r/^(aarch64|arm64)/ -> "aarch64"
        true -> hd(String.split(architecture, "-"))
      end

    os =
      cond do
        architecture =~ "darwin" -> "apple-darwin"
        architecture =~ "musl" or musl?() -> "unknown-linux-musl"
        architecture =~ "linux" -> "unknown-linux-gnu"
        true -> architecture |> String.split("-") |> Enum.drop(1) |> Enum.join("-")
      end

    "#{arch}-#{os}"
  end

  defp musl?, do: Path.wildcard("/lib/ld-musl-*") != []

  @doc "The artifact's file name for `version` and `target`."
  def artifact(version, target),
    do: "libex_bashkit-v#{version}-nif-#{@nif_version}-#{target}.so.tar.gz"

  @doc "The checksum file's entries: artifact name => \"sha256:<hex>\"."
  def checksums(path) do
    if File.exists?(path) do
      {checksums, _} = Code.eval_file(path)
      checksums
    else
      %{}
    end
  end

  @header """
  # SHA-256 of each precompiled NIF library this version may download, by
  # artifact name; written by `mix ex_bashkit.package` when a release is
  # built (one run per target).
  """

  @doc "Adds or replaces entries in the checksum file, sorted."
  def write_checksums(path, entries) do
    all = path |> checksums() |> Map.merge(entries) |> Enum.sort()

    map =
      "%{" <>
        Enum.map_join(all, ", ", fn {name, sum} -> "#{inspect(name)} => #{inspect(sum)}" end) <>
        "}"

    File.write!(path, [@header, Code.format_string!(map), "\n"])
  end

  def sha256(bytes), do: "sha256:" <> Base.encode16(:crypto.hash(:sha256, bytes), case: :lower)

  @doc """
  Packs the library at `path`, and the executables of `isolation: :process`
  found beside the worker executable at `worker` (if given), into an
  artifact's bytes.
  """
  def pack(path, worker \\ nil) do
    # Named by this OS process too: unique_integer/1 is unique in one VM
    # only, and two VMs packing at once removed each other's file.
    tmp =
      Path.join(
        System.tmp_dir!(),
        "ex_bashkit_pack_#{System.pid()}_#{System.unique_integer([:positive])}.tar.gz"
      )

    executables =
      for worker <- List.wrap(worker),
          name <- @executables,
          file = Path.join(Path.dirname(worker), name),
          File.exists?(file),
          do: {String.to_charlist(name), File.read!(file)}

    entries = [{String.to_charlist(@library), File.read!(path)} | executables]
    :ok = :erl_tar.create(String.to_charlist(tmp), entries, [:compressed])

    try do
      File.read!(tmp)
    after
      File.rm(tmp)
    end
  end

  @doc """
  The library inside an artifact's bytes, and the executables of
  `isolation: :process` it holds (a map of file name => bytes, empty for an
  artifact packed without them).
  """
  def unpack(bytes) do
    case :erl_tar.extract({:binary, bytes}, [:compressed, :memory]) do
      {:ok, files} ->
        executables =
          for {name, bytes} <- files,
              List.to_string(name) in @executables,
              into: %{},
              do: {List.to_string(name), bytes}

        case List.keyfind(files, String.to_charlist(@library), 0) do
          {_, library} -> {:ok, library, executables}
          nil -> {:error, "the archive holds no #{@library}"}
        end

      {:error, reason} ->
        {:error, "the archive cannot be read: #{inspect(reason)}"}
    end
  end

  @doc "Downloads `url`: `{:ok, bytes}` or `{:error, reason}`."
  def download(url) do
    with :ok <- start_otp_app(:inets), :ok <- start_otp_app(:ssl), do: get(url)
  end

  # Since Elixir 1.15 Mix prunes the code path while compiling: an OTP
  # application the project does not list (:inets, :ssl) is not loadable
  # until it is asked for. Where it is not installed at all, say what to
  # install instead of falling back to cargo silently.
  defp start_otp_app(app) do
    if function_exported?(Mix, :ensure_application!, 1), do: Mix.ensure_application!(app)

    case Application.ensure_all_started(app) do
      {:ok, _} -> :ok
      {:error, reason} -> {:error, missing_otp_app(app, reason)}
    end
  rescue
    exception -> {:error, missing_otp_app(app, Exception.message(exception))}
  end

  defp missing_otp_app(app, reason) do
    "the OTP application #{inspect(app)} cannot be started (#{inspect(reason)}); it downloads " <>
      "the precompiled library: install it (on Debian: apt-get install erlang-#{app})"
  end

  defp get(url) do
    http_options = [
      timeout: 120_000,
      connect_timeout: 10_000,
      ssl: [
        verify: :verify_peer,
        cacerts: :public_key.cacerts_get(),
        depth: 4,
        customize_hostname_check: [match_fun: :public_key.pkix_verify_hostname_match_fun(:https)]
      ]
    ]

    case :httpc.request(:get, {String.to_charlist(url), []}, http_options, body_format: :binary) do
      {:ok, {{_, 200, _}, _headers, body}} -> {:ok, body}
      {:ok, {{_, status, _}, _headers, _body}} -> {:error, "HTTP #{status}"}
      {:error, reason} -> {:error, inspect(reason)}
    end
  rescue
    # No CA certificates on this system, for one: a failed download.
    exception -> {:error, Exception.message(exception)}
  end
end
