[
  inputs: [
    "{mix,.formatter,checksum-ex_bashkit}.exs",
    "native/mix/*.exs",
    "{config,lib,test,bench,examples}/**/*.{ex,exs}",
    "scripts/*.exs"
  ]
]
