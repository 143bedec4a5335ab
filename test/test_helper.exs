# The interactive shell's end-to-end tests drive a real terminal through
# tmux; scripts/test.sh (and so CI) installs it.
unless System.find_executable("tmux") do
  IO.puts(:stderr, "tmux not found: skipping the tests tagged :tmux (install tmux to run them)")
  ExUnit.configure(exclude: [:tmux])
end

ExUnit.start()
