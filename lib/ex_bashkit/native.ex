defmodule ExBashkit.Native do
  @moduledoc false
  # NIF stubs. The library is built by the :ex_bashkit_native compiler in
  # mix.exs from native/ex_bashkit; see the modules there for each function.

  @on_load :load_nif

  def load_nif do
    path = :filename.join(:code.priv_dir(:ex_bashkit), ~c"native/libex_bashkit")
    # Scripts begin on callers' dirty CPU schedulers, leaving one free.
    :erlang.load_nif(path, :erlang.system_info(:dirty_cpu_schedulers_online))
  end

  def session_new(_options), do: err()
  def session_new_dirty(_options), do: err()
  def session_prepare(_generation, _options, _capacity), do: err()
  def session_take(_generation), do: err()
  def session_callback_server(_session, _pid), do: err()
  def session_callbacks_done(_session, _server), do: err()
  def session_id(_session), do: err()
  def session_built(_session), do: err()
  def session_stats(_session), do: err()
  def live_sessions, do: err()
  def stats, do: err()
  def features, do: err()
  def python_warm_up, do: err()
  def set_memory_budget(_bytes), do: err()
  def session_exec_inline(_session, _script, _pid, _tag, _callback_server, _options), do: err()
  def session_exec_resume(_handle), do: err()
  def session_exec_unpark(_handle), do: err()
  def session_cancel(_session), do: err()
  def session_close(_session), do: err()

  def egress_new(_allow_net, _block_private_ips, _credentials, _max_git_transfer_bytes, _cache),
    do: err()

  def egress_credentials(_egress, _credentials), do: err()
  def egress_request(_egress, _request, _to, _id), do: err()
  def egress_took(_egress, _id, _wanted), do: err()
  def callback_reply(_call, _reply), do: err()
  def exec_abandon(_handle), do: err()
  def exec_output_so_far(_handle), do: err()
  def session_snapshot(_session, _options, _key, _pid, _tag), do: err()
  def session_restore(_session, _snapshot, _key, _pid, _tag), do: err()
  def session_fork(_session, _count, _pid, _tag), do: err()
  def session_checkpoint(_session, _operation, _pid, _tag), do: err()
  def session_checkpoints(_session), do: err()
  def exec_once(_options, _generation, _script, _pid, _tag), do: err()
  def session_read_file(_session, _path), do: err()
  def session_write_file(_session, _path, _content), do: err()
  def session_list_dir(_session, _path), do: err()
  def session_mkdir(_session, _path, _parents), do: err()
  def session_remove(_session, _path, _recursive), do: err()
  def session_rename(_session, _from, _to, _overwrite), do: err()
  def session_stat(_session, _path), do: err()
  def session_chmod(_session, _path, _mode, _recursive), do: err()
  def set_panic_reporter(_pid), do: err()
  def worker_guard(_owner), do: err()
  def worker_guard_close(_guard), do: err()
  def worker_kill(_os_pid), do: err()
  def host_isolation, do: err()
  def worker_cgroup_bases, do: err()
  def script_analysis(_script, _pid, _tag), do: err()
  def json_decode(_text), do: err()
  def json_decode_dirty(_text), do: err()
  def json_encode(_term), do: err()
  def json_encode_dirty(_term), do: err()

  defp err, do: :erlang.nif_error(:nif_not_loaded)
end
