defmodule ExBashkit.MCP.JSONCodecTest do
  # The MCP server's JSON: the NIF's codec (serde_json) always, and OTP's
  # :json where this VM has it (OTP 27 and later), held to the same answers.
  use ExUnit.Case, async: true

  alias ExBashkit.JSON

  # The NIF's twice: on a normal scheduler (short texts) and a dirty one.
  @codecs [
            nif: {&ExBashkit.Native.json_decode/1, &ExBashkit.Native.json_encode/1},
            nif_dirty:
              {&ExBashkit.Native.json_decode_dirty/1, &ExBashkit.Native.json_encode_dirty/1}
          ] ++
            if(JSON.otp_json?(), do: [otp: {&JSON.otp_decode/1, &JSON.otp_encode/1}], else: [])

  @documents [
    {~s({"a":[1,-2,2.5,null,true,false,"é\\n\\u2028"],"b":{},"c":[]}),
     %{"a" => [1, -2, 2.5, nil, true, false, "é\n\u2028"], "b" => %{}, "c" => []}},
    {~s( [ "x" , {"k" : 1e3} ] ), ["x", %{"k" => 1.0e3}]},
    {~s("\\ud83d\\ude00"), "😀"},
    {"9223372036854775807", 9_223_372_036_854_775_807},
    {"0", 0},
    {"null", nil}
  ]

  for {name, {decode, encode}} <- @codecs do
    describe "#{name}" do
      test "decodes JSON texts" do
        for {text, term} <- @documents, do: assert(unquote(decode).(text) == {:ok, term}, text)
      end

      test "refuses what is not one JSON text" do
        for text <- [
              "",
              " ",
              "{",
              "[1,]",
              "nul",
              ~s({"a":1} 2),
              ~s({a:1}),
              "'x'",
              <<0xFF>>,
              ~s("\xC3\x28")
            ] do
          assert {:error, why} = unquote(decode).(text), inspect(text)
          assert is_binary(why)
        end
      end

      test "encodes as one line, and what it encodes decodes back" do
        term = %{
          "a" => [1, 2.5, nil, true, "tab\tnewline\nquote\"\u0001"],
          :b => %{"c" => :d},
          3 => []
        }

        assert {:ok, json} = unquote(encode).(term)
        refute json =~ "\n"

        assert unquote(decode).(json) ==
                 {:ok,
                  %{
                    "a" => [1, 2.5, nil, true, "tab\tnewline\nquote\"\u0001"],
                    "b" => %{"c" => "d"},
                    "3" => []
                  }}
      end

      test "refuses terms JSON cannot express" do
        for term <- [
              {1},
              self(),
              make_ref(),
              <<0xFF>>,
              %{<<0xFF>> => 1},
              [1 | 2],
              %{{1} => 2},
              <<1::3>>
            ] do
          assert {:error, why} = unquote(encode).(term), inspect(term)
          assert is_binary(why)
        end
      end

      test "random bytes never crash it" do
        :rand.seed(:exsss, {1, 2, 3})

        for _ <- 1..2_000 do
          bytes = :crypto.strong_rand_bytes(:rand.uniform(64))

          assert match?({:ok, _}, unquote(decode).(bytes)) or
                   match?({:error, _}, unquote(decode).(bytes))
        end
      end

      test "a large document" do
        text = String.duplicate("x", 8_000_000)
        assert {:ok, json} = unquote(encode).(%{"content" => text})
        assert unquote(decode).(json) == {:ok, %{"content" => text}}
      end
    end
  end

  test "nesting: the NIF refuses past 128 levels either way, without touching its stack's end" do
    deep = Enum.reduce(1..100_000, [], fn _, acc -> [acc] end)
    assert {:error, "nested deeper than 128 levels"} = ExBashkit.Native.json_encode(deep)
    text = String.duplicate("[", 100_000) <> String.duplicate("]", 100_000)
    assert {:error, "recursion limit exceeded" <> _} = ExBashkit.Native.json_decode(text)

    assert {:ok, _} =
             ExBashkit.Native.json_decode(
               String.duplicate("[", 100) <> String.duplicate("]", 100)
             )
  end

  test "decode/1 and encode/1 answer alike on either side of the dirty scheduler's threshold" do
    for size <- [10, 16_000, 17_000, 1_000_000] do
      term = %{"content" => String.duplicate("é", div(size, 2))}
      assert {:ok, json} = JSON.encode(term)
      assert JSON.decode(json) == {:ok, term}
    end
  end

  test "encode!/1 raises ArgumentError for a term JSON cannot express" do
    assert JSON.encode!(%{"a" => nil}) == ~s({"a":null})
    assert_raise ArgumentError, ~r/cannot encode as JSON/, fn -> JSON.encode!({:tuple}) end
  end
end
