defmodule ExBashkit.Test.MapFs do
  @moduledoc false
  # A complete ExBashkit.VirtualFs backend over an Agent holding
  # %{path => content | :dir}, for the virtual_fs tests. The arg is the Agent.

  @behaviour ExBashkit.VirtualFs

  @spec start(%{String.t() => binary() | :dir}) :: pid()
  def start(entries \\ %{}) do
    {:ok, agent} = Agent.start_link(fn -> Map.put(entries, "/", :dir) end)
    agent
  end

  @spec dump(pid()) :: map()
  def dump(agent), do: Agent.get(agent, & &1)

  @impl true
  def read(agent, path) do
    case Agent.get(agent, &Map.fetch(&1, path)) do
      {:ok, :dir} -> {:error, :eisdir}
      {:ok, content} -> {:ok, content}
      :error -> {:error, :enoent}
    end
  end

  @impl true
  def write(agent, path, content), do: put_file(path, agent, fn _ -> content end)

  @impl true
  def append(agent, path, content), do: put_file(path, agent, &((&1 || "") <> content))

  @impl true
  def stat(agent, path) do
    case Agent.get(agent, &Map.fetch(&1, path)) do
      {:ok, :dir} -> {:ok, %{type: :dir, size: 0}}
      {:ok, content} -> {:ok, %{type: :file, size: byte_size(content)}}
      :error -> {:error, :enoent}
    end
  end

  @impl true
  def list(agent, path) do
    entries = dump(agent)

    case entries[path] do
      :dir -> {:ok, for({child, kind} <- children(entries, path), do: {child, kind})}
      nil -> {:error, :enoent}
      _file -> {:error, :enotdir}
    end
  end

  @impl true
  def mkdir(agent, path, parents) do
    Agent.get_and_update(agent, fn entries ->
      cond do
        Map.has_key?(entries, path) and parents -> {:ok, entries}
        Map.has_key?(entries, path) -> {{:error, :eexist}, entries}
        entries[Path.dirname(path)] == :dir -> {:ok, Map.put(entries, path, :dir)}
        parents -> {:ok, Enum.reduce(ancestors(path), entries, &Map.put_new(&2, &1, :dir))}
        true -> {{:error, :enoent}, entries}
      end
    end)
  end

  @impl true
  def remove(agent, path, recursive) do
    Agent.get_and_update(agent, fn entries ->
      nested = Enum.filter(Map.keys(entries), &String.starts_with?(&1, path <> "/"))

      cond do
        not Map.has_key?(entries, path) -> {{:error, :enoent}, entries}
        nested != [] and not recursive -> {{:error, :enotempty}, entries}
        true -> {:ok, Map.drop(entries, [path | nested])}
      end
    end)
  end

  @impl true
  def rename(agent, from, to) do
    Agent.get_and_update(agent, fn entries ->
      case Map.pop(entries, from) do
        {nil, _} -> {{:error, :enoent}, entries}
        {value, rest} -> {:ok, Map.put(rest, to, value)}
      end
    end)
  end

  defp put_file(path, agent, update) do
    Agent.get_and_update(agent, fn entries ->
      case {entries[path], entries[Path.dirname(path)]} do
        {:dir, _} -> {{:error, :eisdir}, entries}
        {_, :dir} -> {:ok, Map.put(entries, path, update.(entries[path]))}
        _ -> {{:error, :enoent}, entries}
      end
    end)
  end

  defp children(entries, dir) do
    prefix = if dir == "/", do: "/", else: dir <> "/"

    for {path, value} <- entries,
        path != dir,
        String.starts_with?(path, prefix),
        name = String.replace_prefix(path, prefix, ""),
        not String.contains?(name, "/"),
        do: {name, if(value == :dir, do: :dir, else: :file)}
  end

  defp ancestors(path) do
    path
    |> Path.split()
    |> Enum.scan(&Path.join(&2, &1))
  end
end
