defmodule ExBashkit.JavaScriptPackagesTest do
  # Real npm packages, installed by real npm into a host directory the
  # sandbox mounts read-only, loaded and run by the sandbox's `node` and
  # by Debian's Node 20 side by side: what each prints must agree. Also
  # Node's module resolution on packages written here, and the core
  # modules packages touch (zlib against real Node's, http and https
  # against a loopback server).
  use ExBashkit.Case, async: true

  alias ExBashkit.Session
  alias ExBashkit.Test.FileServer

  @moduletag timeout: 900_000

  @corpus Path.expand("../../fixtures/npm_packages.txt", __DIR__)
  # What the agent-style programs below use, beyond the corpus.
  @agent_packages ~w(yaml csv-parse marked papaparse handlebars mustache diff dayjs date-fns
                     uuid minimist commander chalk nanoid node-fetch axios)

  setup_all do
    node = System.find_executable("node") || raise "real Node is needed: apt-get install nodejs"
    npm = System.find_executable("npm") || raise "real npm is needed: apt-get install npm"
    packages = corpus() ++ @agent_packages
    dir = Path.join(System.tmp_dir!(), "ex_bashkit_npm_#{:erlang.phash2(packages)}")
    installed = Path.join(dir, ".installed")

    unless File.exists?(installed) do
      File.rm_rf!(dir)
      File.mkdir_p!(dir)
      File.write!(Path.join(dir, "package.json"), ~s({"name": "corpus", "private": true}))
      args = ~w(install --no-audit --no-fund --ignore-scripts --legacy-peer-deps) ++ packages
      {out, status} = System.cmd(npm, args, cd: dir, stderr_to_stdout: true)
      if status != 0, do: raise("npm install failed:\n#{out}")
      File.write!(installed, "")
    end

    %{node: node, npm_dir: dir}
  end

  defp corpus do
    @corpus
    |> File.read!()
    |> String.split("\n", trim: true)
    |> Enum.reject(&String.starts_with?(&1, "#"))
  end

  defp session(dir, opts \\ []) do
    Session.new(
      [
        javascript: true,
        isolation: :process,
        mounts: [{"/app", dir, :read_only}],
        limits: [timeout_ms: 60_000, max_javascript_memory_bytes: 512_000_000]
      ] ++ opts
    )
  end

  # What real Node prints on stdout for `file` (run in `dir`), and its exit status.
  defp real_node(node, dir, file) do
    {out, status} = System.cmd("sh", ["-c", "#{node} #{file} 2>/dev/null"], cd: dir)
    {out, status}
  end

  defp ours(session, file) do
    {:ok, result} = Session.exec(session, "cd /app && node #{file}")
    {result.stdout, result.exit_code}
  end

  describe "the 200 most downloaded npm packages" do
    test "load by require and by import as under Node 20, at least 95 % of them", %{
      node: node,
      npm_dir: dir
    } do
      smoke = Path.join(dir, "smoke")
      File.mkdir_p!(smoke)
      session = session(dir)

      differences =
        for package <- corpus(),
            file = Path.join(smoke, String.replace(package, ["/", "@"], "_") <> ".js"),
            :ok = File.write!(file, smoke_program(package)),
            expected = real_node(node, dir, file),
            got = ours(session, "/app/smoke/" <> Path.basename(file)),
            got != expected do
          {package, expected, got}
        end

      agreed = length(corpus()) - length(differences)

      report =
        Enum.map_join(differences, "\n", fn {package, {node_out, _}, {our_out, _}} ->
          "#{package}\n  node: #{inspect(node_out)}\n  ours: #{inspect(our_out)}"
        end)

      assert length(corpus()) == 200
      assert agreed * 100 >= 200 * 95, "#{agreed} of 200 agree:\n#{report}"
    end
  end

  defp flush_requests do
    receive do
      {:file_server, _} -> flush_requests()
    after
      0 -> :ok
    end
  end

  # Each package's shape (its type and names) by require and by import, as
  # a program using it sees it first.
  defp smoke_program(package) do
    """
    const P = #{inspect(package)};
    const shape = (m) => typeof m + " " + Object.keys(m).sort().slice(0, 40).join(",");
    try { console.log("require " + shape(require(P))); } catch (e) { console.log("require failed " + e.code); }
    import(P).then((m) => console.log("import " + shape(m)), (e) => console.log("import failed " + e.code));
    """
  end

  describe "agent-style programs print what Node prints" do
    setup %{npm_dir: dir} do
      files = Path.join(dir, "files")
      File.mkdir_p!(files)

      File.write!(Path.join(files, "config.yaml"), """
      service: billing
      replicas: 3
      owners: [ana, bo]
      limits: {cpu: 2, memory: 512Mi}
      """)

      File.write!(Path.join(files, "orders.csv"), """
      id,customer,amount
      1,acme,120.50
      2,globex,99.95
      3,acme,10
      """)

      File.write!(
        Path.join(files, "README.md"),
        "# Report\n\nTotals **by customer**:\n\n- acme\n- globex\n"
      )

      File.write!(
        Path.join(files, "data.json"),
        ~s({"users": [{"name": "ana", "age": 31}, {"name": "bo", "age": 17}]})
      )

      :ok
    end

    test "YAML, CSV and Markdown in one pipeline; schemas; dates; text", %{
      node: node,
      npm_dir: dir
    } do
      programs = %{
        "pipeline.js" => """
        const fs = require('fs');
        const YAML = require('yaml');
        const { parse } = require('csv-parse/sync');
        const { marked } = require('marked');
        const config = YAML.parse(fs.readFileSync('files/config.yaml', 'utf8'));
        const rows = parse(fs.readFileSync('files/orders.csv'), { columns: true, cast: true });
        const totals = {};
        for (const row of rows) totals[row.customer] = (totals[row.customer] || 0) + row.amount;
        console.log(config.service, config.replicas, config.owners, config.limits);
        console.log(totals);
        console.log(marked.parse(fs.readFileSync('files/README.md', 'utf8')));
        console.log(YAML.stringify({ totals, at: config.service }));
        """,
        "schemas.mjs" => """
        import Ajv from 'ajv';
        import { z } from 'zod';
        import { readFileSync } from 'node:fs';
        const data = JSON.parse(readFileSync('files/data.json', 'utf8'));
        const ajv = new Ajv({ allErrors: true });
        const validate = ajv.compile({ type: 'object', properties: { users: { type: 'array', items: {
          type: 'object', required: ['name', 'age'], properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 18 } } } } } });
        console.log(validate(data), validate.errors.map((e) => e.instancePath + ' ' + e.message));
        const User = z.object({ name: z.string(), age: z.number().int().min(18) });
        const result = z.array(User).safeParse(data.users);
        console.log(result.success, result.error.issues.map((i) => i.path.join('.') + ': ' + i.code));
        """,
        "text.js" => """
        const dayjs = require('dayjs');
        const { format, addDays } = require('date-fns');
        const Handlebars = require('handlebars');
        const Mustache = require('mustache');
        const Papa = require('papaparse');
        const Diff = require('diff');
        const minimist = require('minimist');
        const { Command } = require('commander');
        const semver = require('semver');
        const chalk = require('chalk').default;
        const lodash = require('lodash');
        const day = new Date(Date.UTC(2024, 1, 28, 12));
        console.log(dayjs(day).add(1, 'day').toISOString(), format(addDays(day, 2), 'yyyy-MM-dd'));
        console.log(Handlebars.compile('{{#each xs}}<{{this}}>{{/each}}')({ xs: [1, 2] }), Mustache.render('{{a}}-{{b}}', { a: 1, b: '<x>' }));
        console.log(Papa.parse('a,b\\n1,2', { header: true }).data, Diff.diffLines('a\\nb\\n', 'a\\nc\\n').map((p) => (p.added ? '+' : p.removed ? '-' : ' ') + p.value.trim()));
        const program = new Command().option('-n, --name <name>').parse(['node', 'x', '-n', 'ana']);
        console.log(minimist(['--x', '3', 'rest']), program.opts(), semver.satisfies('1.2.3', '^1.0.0'), chalk.red('plain'));
        console.log(lodash.groupBy([1.2, 1.8, 2.1], Math.floor), lodash.chunk([1, 2, 3, 4, 5], 2));
        """,
        "ids.mjs" => """
        import { v4, validate, v5 } from 'uuid';
        import { nanoid, customAlphabet } from 'nanoid';
        console.log(validate(v4()), v5('hello', v5.URL), nanoid().length, customAlphabet('ab', 5)().replace(/[ab]/g, '').length);
        """
      }

      session = session(dir)

      for {name, source} <- programs do
        File.write!(Path.join(dir, name), source)
        expected = real_node(node, dir, name)
        assert {_, 0} = expected, "real Node failed on #{name}"
        assert ours(session, "/app/" <> name) == expected, name
      end
    end

    test "HTTP client libraries reach a loopback server through the session's client", %{
      node: node,
      npm_dir: dir
    } do
      {_server, port} = FileServer.start(Path.join(dir, "files"))
      base = "http://127.0.0.1:#{port}"

      program = """
      const http = require('http');
      const axios = require('axios');
      const base = process.argv[2];
      (async () => {
        const { default: fetch } = await import('node-fetch');
        const a = await axios.get(base + '/data.json');
        console.log('axios', a.status, a.data.users.length, a.headers['content-type'] !== undefined);
        const f = await fetch(base + '/config.yaml');
        console.log('node-fetch', f.status, (await f.text()).split('\\n')[0]);
        await new Promise((done) => http.get(base + '/orders.csv', (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => { console.log('http', res.statusCode, body.split('\\n').length); done(); });
        }));
        const missing = await axios.get(base + '/nope').catch((e) => e.response.status);
        console.log('missing', missing);
      })();
      """

      File.write!(Path.join(dir, "client.js"), program)
      {expected, 0} = System.cmd(node, ["client.js", base], cd: dir)
      session = session(dir, allow_net: [base], block_private_ips: false)
      {:ok, result} = Session.exec(session, "cd /app && node client.js #{base}")
      assert result.stdout == expected
      assert_received {:file_server, "data.json"}
      flush_requests()

      # Not in :allow_net: refused before any request, with Node's code.
      denied = session(dir, allow_net: ["http://127.0.0.1:1"], block_private_ips: false)

      {:ok, refused} =
        Session.exec(
          denied,
          "cd /app && node -e 'require(\"axios\").get(\"#{base}/data.json\").catch((e) => console.log(e.code))'"
        )

      assert refused.stdout == "EACCES\n"
      refute_received {:file_server, _}
    end
  end
end
