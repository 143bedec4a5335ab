defmodule ExBashkit.JSON do
  @moduledoc false
  # JSON for the MCP server: OTP's `:json` where it exists (OTP 27 and
  # later), serde_json in our NIF before that (native/ex_bashkit/src/json.rs).
  # Both map alike: objects are maps with binary keys, arrays lists,
  # strings binaries, `null` nil; `nil` encodes as null, other atoms as
  # their names.

  # The NIF works on a normal scheduler up to this size (~20 µs of work),
  # on a dirty one past it (json.rs).
  @small_bytes 16_384

  @doc "Decodes one JSON text: `{:ok, term}` or `{:error, why}`."
  @spec decode(binary()) :: {:ok, term()} | {:error, String.t()}
  def decode(text) when is_binary(text) do
    cond do
      otp_json?() -> otp_decode(text)
      byte_size(text) <= @small_bytes -> ExBashkit.Native.json_decode(text)
      true -> ExBashkit.Native.json_decode_dirty(text)
    end
  end

  @doc "Encodes `term` as compact JSON (one line): `{:ok, binary}` or `{:error, why}`."
  @spec encode(term()) :: {:ok, binary()} | {:error, String.t()}
  def encode(term) do
    cond do
      otp_json?() -> otp_encode(term)
      :erlang.external_size(term) <= @small_bytes -> ExBashkit.Native.json_encode(term)
      true -> ExBashkit.Native.json_encode_dirty(term)
    end
  end

  @doc "`encode/1`, raising `ArgumentError` for a term JSON cannot express."
  @spec encode!(term()) :: binary()
  def encode!(term) do
    case encode(term) do
      {:ok, json} -> json
      {:error, why} -> raise ArgumentError, "cannot encode as JSON: #{why}"
    end
  end

  @doc false
  # Whether OTP's `:json` serves here (tests compare it with the NIF's).
  @spec otp_json?() :: boolean()
  def otp_json? do
    # Looking for a module that is not there asks the code server each time.
    case :persistent_term.get({__MODULE__, :otp_json?}, nil) do
      nil ->
        found = Code.ensure_loaded?(:json) and function_exported?(:json, :encode_value, 2)
        :persistent_term.put({__MODULE__, :otp_json?}, found)
        found

      found ->
        found
    end
  end

  # `:json` is named at run time, so that a VM without it (OTP 25 and 26)
  # compiles this module without an "undefined module" warning.
  defp json, do: :json

  @doc false
  @spec otp_decode(binary()) :: {:ok, term()} | {:error, String.t()}
  def otp_decode(text) do
    {term, :ok, rest} = json().decode(text, :ok, %{null: nil})

    if whitespace?(rest),
      do: {:ok, term},
      else: {:error, "unexpected bytes after the JSON value"}
  rescue
    error -> {:error, "invalid JSON: #{Exception.message(error)}"}
  catch
    kind, reason -> {:error, "invalid JSON: #{inspect({kind, reason})}"}
  end

  @doc false
  @spec otp_encode(term()) :: {:ok, binary()} | {:error, String.t()}
  def otp_encode(term) do
    {:ok, term |> json().encode(&otp_encode_value/2) |> IO.iodata_to_binary()}
  rescue
    error -> {:error, Exception.message(error)}
  catch
    kind, reason -> {:error, inspect({kind, reason})}
  end

  defp otp_encode_value(nil, _encoder), do: "null"
  defp otp_encode_value(value, encoder), do: json().encode_value(value, encoder)

  defp whitespace?(rest), do: rest =~ ~r/\A[ \t\r\n]*\z/
end
