defmodule ExBashkit.JSON do
  @moduledoc false
  # JSON for the MCP server: OTP's `:json` where it exists (OTP 27 and
  # later), serde_json in our NIF before that (native/ex_bashkit/src/json.rs).
  # Both map alike: objects are maps with binary keys, arrays lists,
  # strings binaries, `null` nil; `nil` encodes as null, other atoms as
  # their names.

  @doc "Decodes one JSON text: `{:ok, term}` or `{:error, why}`."
  @spec decode(binary()) :: {:ok, term()} | {:error, String.t()}
  def decode(text) when is_binary(text) do
    if otp_json?(), do: otp_decode(text), else: ExBashkit.Native.json_decode(text)
  end

  @doc "Encodes `term` as compact JSON (one line): `{:ok, binary}` or `{:error, why}`."
  @spec encode(term()) :: {:ok, binary()} | {:error, String.t()}
  def encode(term) do
    if otp_json?(), do: otp_encode(term), else: ExBashkit.Native.json_encode(term)
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
  def otp_json?, do: Code.ensure_loaded?(:json) and function_exported?(:json, :encode_value, 2)

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
