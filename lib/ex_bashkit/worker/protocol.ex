defmodule ExBashkit.Worker.Protocol do
  @moduledoc false
  # The one place a worker's bytes become values. A worker is hostile: code
  # that took over its interpreter can write anything to its end of the
  # pipe. Every frame passes three checks before the owner acts on it:
  #
  #   1. framing (`feed/3`): a 4-byte length and a payload, the length
  #      checked against the largest frame the session may legitimately
  #      send *before* any of the payload is kept;
  #   2. decoding (`decode/1`): an uncompressed external term, every byte
  #      of it used, no atom the VM lacks, and for a large frame no more
  #      than 400,000 terms in it (so a frame cannot decode to many
  #      times its size);
  #   3. shape (`event/1`, `outcome/2`, `fs_result/2`): one of the events
  #      below, with the types each field must have. Whether its id names
  #      something pending is the owner's check (`ExBashkit.Worker.Owner`).
  #
  # Anything else is a violation: the owner kills the worker and answers
  # everything waiting on it; nothing of the frame reaches a caller. The
  # worker's side of the same protocol is native/ex_bashkit/crates/worker/src/
  # (`protocol.rs` names every request and event).
  #
  # Frames from the VM to the worker are the owner's own terms, framed by
  # `frame/1`.

  import Bitwise, only: [<<<: 2]

  @typedoc "An id the VM gave a job or a request."
  @type id :: pos_integer()

  @typedoc "What a worker may send, once decoded and checked."
  @type event ::
          {:new, {:ok, {[{atom(), :ok | {:missing, binary()}}], [binary()], pos_integer()}}}
          | {:new, :unfit}
          | {:new, {:error, binary()}}
          | {:started, id()}
          | {:chunk, id(), :stdout | :stderr, binary()}
          | {:call, pos_integer(), {:builtin, binary()} | {:fs, binary()} | {:policy, binary()},
             map()}
          | {:done, id(), term(), boolean()}
          | {:fs, id(), term()}
          | {:cancelled, id(), boolean()}
          | {:stats, id(), tuple()}
          | {:http, id(), map()}

  @typedoc "Bytes of a frame still arriving."
  @opaque inbox :: {:header, binary()} | {:body, non_neg_integer(), non_neg_integer(), iodata()}

  # Past this size a frame's terms are counted before it is decoded: a
  # smaller one cannot decode to more than a few MB whatever it holds.
  @walk_above 64 * 1024
  # The most terms a large frame may hold: a listing of the most entries
  # `list_dir/2` returns (100,000, three terms each), with room. Decoded,
  # that is ~12 MB at most beside the frame's own bytes.
  @max_nodes 400_000

  @doc "An inbox with nothing in it."
  @spec inbox() :: inbox()
  def inbox, do: {:header, <<>>}

  @doc "Frames `term` for the worker: a 4-byte length, then the term."
  @spec frame(term()) :: iodata()
  def frame(term) do
    payload = :erlang.term_to_binary(term)
    [<<byte_size(payload)::32>>, payload]
  end

  @doc """
  Adds `data` read from the worker's pipe to `inbox`: the whole frames it
  completes (their payloads, in order) and the inbox that remains, or a
  violation for a frame announced larger than `max` bytes.
  """
  @spec feed(inbox(), binary(), pos_integer()) ::
          {:ok, [binary()], inbox()} | {:violation, String.t()}
  # Most reads hold exactly one whole frame.
  def feed({:header, <<>>} = inbox, <<length::32, payload::binary-size(length)>>, max)
      when length <= max,
      do: {:ok, [payload], inbox}

  def feed({:header, <<>>}, data, max), do: split(data, max, [])
  def feed({:header, prefix}, data, max), do: split(prefix <> data, max, [])

  def feed({:body, length, got, parts}, data, max) do
    need = length - got

    case data do
      <<last::binary-size(need), rest::binary>> ->
        split(rest, max, [IO.iodata_to_binary([parts, last])])

      _ ->
        {:ok, [], {:body, length, got + byte_size(data), [parts, data]}}
    end
  end

  defp split(<<length::32, _::binary>>, max, _done) when length > max,
    do: {:violation, "a frame of #{length} bytes, past the #{max} this session may send"}

  defp split(<<length::32, payload::binary-size(length), rest::binary>>, max, done),
    do: split(rest, max, [payload | done])

  defp split(<<length::32, part::binary>>, _max, done),
    do: {:ok, Enum.reverse(done), {:body, length, byte_size(part), part}}

  defp split(short, _max, done), do: {:ok, Enum.reverse(done), {:header, short}}

  @doc "The event a frame's payload holds, or why it is none."
  @spec decode(binary()) :: {:ok, event()} | {:violation, String.t()}
  def decode(<<131, 80, _::binary>>), do: {:violation, "a compressed term"}

  def decode(<<131, _::binary>> = payload) do
    with :ok <- small_enough(payload),
         {:ok, term} <- term(payload) do
      case event(term) do
        {:ok, event} -> {:ok, event}
        :error -> {:violation, "an unknown event #{describe(term)}"}
      end
    end
  end

  def decode(_payload), do: {:violation, "a frame that is not an external term"}

  defp term(payload) do
    case :erlang.binary_to_term(payload, [:safe, :used]) do
      {term, used} when used == byte_size(payload) -> {:ok, term}
      {_term, _used} -> {:violation, "bytes after the frame's term"}
    end
  rescue
    ArgumentError -> {:violation, "a frame that does not decode (or names an unknown atom)"}
  end

  # What a violation says of a term: its head, never the whole of it.
  defp describe(term) when is_tuple(term) and tuple_size(term) > 0,
    do:
      "(a #{tuple_size(term)}-tuple tagged #{inspect(elem(term, 0), limit: 3, printable_limit: 40)})"

  defp describe(term), do: "(#{inspect(term, limit: 3, printable_limit: 40)})"

  # ---- events ------------------------------------------------------------

  defguardp id?(id) when is_integer(id) and id > 0 and id < 1 <<< 62

  @doc false
  @spec event(term()) :: {:ok, event()} | :error
  def event({:started, id} = event) when id?(id), do: {:ok, event}

  def event({:chunk, id, stream, data} = event)
      when id?(id) and stream in [:stdout, :stderr] and is_binary(data),
      do: {:ok, event}

  def event({:done, id, _outcome, usable} = event) when id?(id) and is_boolean(usable),
    do: {:ok, event}

  def event({:fs, id, _result} = event) when id?(id), do: {:ok, event}

  def event({:cancelled, id, cancelled} = event) when id?(id) and is_boolean(cancelled),
    do: {:ok, event}

  def event({:stats, id, _totals} = event) when id?(id), do: {:ok, event}

  def event({:call, id, target, request} = event) when id?(id) and is_map(request) do
    if call?(target, request), do: {:ok, event}, else: :error
  end

  def event({:http, id, request} = event) when id?(id) and is_map(request) do
    if http?(request), do: {:ok, event}, else: :error
  end

  def event({:new, :unfit} = event), do: {:ok, event}
  def event({:new, {:error, message}} = event) when is_binary(message), do: {:ok, event}

  def event({:new, {:ok, {layers, cgroups, os_pid}}} = event)
      when is_list(layers) and is_list(cgroups) and id?(os_pid) do
    if Enum.all?(layers, &layer?/1) and Enum.all?(cgroups, &is_binary/1),
      do: {:ok, event},
      else: :error
  end

  def event(_term), do: :error

  defp layer?({layer, :ok}), do: is_atom(layer)
  defp layer?({layer, {:missing, why}}), do: is_atom(layer) and is_binary(why)
  defp layer?(_), do: false

  defp call?({:builtin, name}, %{args: args, stdin: stdin, env: env, cwd: cwd} = request)
       when is_binary(name) and is_list(args) and is_binary(stdin) and is_map(env) and
              is_binary(cwd) and map_size(request) == 4,
       do: Enum.all?(args, &is_binary/1) and Enum.all?(env, &binary_pair?/1)

  defp call?({:fs, mount}, %{op: op, path: path} = request)
       when is_binary(mount) and is_binary(path) do
    case {op, Map.drop(request, [:op, :path])} do
      {op, extra} when op in [:read, :list, :stat] and map_size(extra) == 0 -> true
      {op, %{data: data} = extra} when op in [:write, :append] -> one?(extra, is_binary(data))
      {op, %{recursive: r} = extra} when op in [:mkdir, :remove] -> one?(extra, is_boolean(r))
      {:rename, %{to: to} = extra} -> one?(extra, is_binary(to))
      _ -> false
    end
  end

  defp call?({:policy, "command"}, %{name: name, args: args} = request)
       when is_binary(name) and is_list(args) and map_size(request) == 2,
       do: Enum.all?(args, &is_binary/1)

  defp call?(_target, _request), do: false

  defp one?(extra, valid?), do: valid? and map_size(extra) == 1

  defp binary_pair?({key, value}), do: is_binary(key) and is_binary(value)
  defp binary_pair?(_), do: false

  defp text_pair?({key, value}) when is_binary(key) and is_binary(value),
    do: String.valid?(key) and String.valid?(value)

  defp text_pair?(_), do: false

  defp http?(
         %{
           method: method,
           url: url,
           headers: headers,
           body: body,
           timeout_ms: timeout,
           max_bytes: max
         } = r
       )
       when is_binary(method) and is_binary(url) and is_list(headers) and
              (is_binary(body) or is_nil(body)) and is_integer(timeout) and timeout > 0 and
              timeout < 1 <<< 62 and is_integer(max) and max >= 0 and max < 1 <<< 64 and
              map_size(r) == 6,
       do: String.valid?(method) and String.valid?(url) and Enum.all?(headers, &text_pair?/1)

  defp http?(_request), do: false

  # ---- outcomes and results ----------------------------------------------

  @reasons [:timeout, :cancelled, :limit, :parse_error, :denied, :error]
  # What an engine may say of code it ran (`code.rs`).
  @code_reasons [:syntax, :exception, :memory, :timeout, :limit, :denied]
  # The most denials a script reports (policy.rs).
  @max_denials 100

  @doc """
  Whether `outcome` is what a job of `kind` can end with, within the
  `caps` on what it may carry (`{max_stdout_bytes, max_stderr_bytes}`).
  """
  @spec outcome(:exec | :run_code | :snapshot | :restore, term(), {pos_integer(), pos_integer()}) ::
          boolean()
  def outcome(:exec, {:ok, {out, err, code, truncated, denials, stats}}, {max_out, max_err})
      when is_binary(out) and is_binary(err) and is_integer(code) and is_boolean(truncated) and
             is_list(denials),
      do:
        byte_size(out) <= max_out and byte_size(err) <= max_err and code in -255..255 and
          denials?(denials, @max_denials) and ExBashkit.Result.Stats.valid?(stats)

  def outcome(:exec, {:error, {reason, limit, message, out, err}}, {max_out, max_err})
      when reason in @reasons and is_atom(limit) and is_binary(message) and is_binary(out) and
             is_binary(err),
      do:
        byte_size(out) <= max_out and byte_size(err) <= max_err and
          (limit in [nil, :memory_budget_bytes] or
             limit in ExBashkit.Session.Options.Limits.keys())

  def outcome(:run_code, {:ok, {:code, ran, code}}, caps),
    do: outcome(:exec, {:ok, ran}, caps) and code_outcome?(code, caps)

  def outcome(:run_code, {:error, {_, _, _, _, _}} = error, caps), do: outcome(:exec, error, caps)

  def outcome(:snapshot, {:ok, snapshot}, _caps), do: is_binary(snapshot)
  def outcome(:restore, {:ok, :ok}, _caps), do: true
  def outcome(_kind, {:error, message}, _caps), do: is_binary(message)
  def outcome(_kind, _outcome, _caps), do: false

  # What an engine says of `execute(input)`: the value's JSON (within
  # the stdout cap, as when it came on stdout), or its error.
  defp code_outcome?(nil, _caps), do: true

  defp code_outcome?({:value, json}, {max_out, _max_err}) when is_binary(json),
    do: byte_size(json) <= max_out

  defp code_outcome?(
         {:error, %{kind: kind, name: name, message: message, line: line}},
         {_max_out, max_err}
       )
       when kind in @code_reasons and is_binary(name) and is_binary(message) and
              (is_nil(line) or (is_integer(line) and line > 0)),
       do: byte_size(name) <= 256 and byte_size(message) <= max_err

  defp code_outcome?(_outcome, _caps), do: false

  @doc "Whether `result` is what the file operation `op` can answer."
  @spec fs_result(atom(), term()) :: boolean()
  def fs_result(_op, {:error, message}), do: is_binary(message)
  def fs_result(:read_file, {:ok, content}), do: is_binary(content)

  def fs_result(:stat, {:ok, {kind, size, mode, mtime}}),
    do: entry?({"", kind, size, mode, mtime})

  def fs_result(:list_dir, {:ok, entries}) when is_list(entries),
    do: Enum.all?(entries, &entry?/1)

  def fs_result(op, :ok), do: op in [:write_file, :mkdir, :remove, :rename, :chmod]
  def fs_result(_op, _result), do: false

  defp entry?({name, kind, size, mode, mtime}),
    do:
      is_binary(name) and kind?(kind) and is_integer(size) and size >= 0 and
        is_integer(mode) and mode in 0..0o7777 and is_integer(mtime)

  defp entry?(_), do: false

  defp kind?(kind), do: kind in [:file, :dir, :symlink, :fifo]

  # `[{name, reason}]`, at most `room` of them.
  defp denials?([], _room), do: true

  defp denials?([{name, reason} | rest], room)
       when room > 0 and is_binary(name) and is_binary(reason),
       do: denials?(rest, room - 1)

  defp denials?(_denials, _room), do: false

  # ---- counting a large frame's terms --------------------------------------

  defp small_enough(payload) when byte_size(payload) <= @walk_above, do: :ok

  defp small_enough(<<131, rest::binary>>) do
    case walk(rest, 1, @max_nodes) do
      :ok -> :ok
      :error -> {:violation, "a frame holding more terms than any event may"}
    end
  end

  # `pending` terms still to read from the bytes, at most `budget` more in
  # all. Binaries are skipped by their length, not read.
  defp walk(_bytes, 0, _budget), do: :ok
  defp walk(_bytes, _pending, budget) when budget <= 0, do: :error

  defp walk(<<tag, rest::binary>>, pending, budget) do
    case skip(tag, rest) do
      {inside, weight, rest} -> walk(rest, pending - 1 + inside, budget - 1 - weight)
      :error -> :error
    end
  end

  defp walk(_bytes, _pending, _budget), do: :error

  # `{terms inside it still to read, terms it decodes to besides itself,
  # the bytes after its header}`. Integers, floats, atoms, binaries and
  # bitstrings are leaves.
  defp skip(97, <<_, rest::binary>>), do: {0, 0, rest}
  defp skip(98, <<_::32, rest::binary>>), do: {0, 0, rest}
  defp skip(70, <<_::64, rest::binary>>), do: {0, 0, rest}

  defp skip(tag, <<n::16, _::binary-size(n), rest::binary>>) when tag in [100, 118],
    do: {0, 0, rest}

  defp skip(tag, <<n, _::binary-size(n), rest::binary>>) when tag in [115, 119], do: {0, 0, rest}
  defp skip(109, <<n::32, _::binary-size(n), rest::binary>>), do: {0, 0, rest}
  defp skip(77, <<n::32, _, _::binary-size(n), rest::binary>>), do: {0, 0, rest}
  defp skip(110, <<n, _, _::binary-size(n), rest::binary>>), do: {0, 0, rest}
  defp skip(111, <<n::32, _, _::binary-size(n), rest::binary>>), do: {0, 0, rest}
  defp skip(106, rest), do: {0, 0, rest}
  # A string is a list of small integers in memory: a term per byte.
  defp skip(107, <<n::16, _::binary-size(n), rest::binary>>), do: {0, n, rest}
  defp skip(104, <<arity, rest::binary>>), do: {arity, arity, rest}
  defp skip(105, <<arity::32, rest::binary>>), do: {arity, arity, rest}
  # A list's elements and its tail.
  defp skip(108, <<length::32, rest::binary>>), do: {length + 1, length + 1, rest}
  defp skip(116, <<arity::32, rest::binary>>), do: {2 * arity, 2 * arity, rest}
  defp skip(_tag, _rest), do: :error
end
