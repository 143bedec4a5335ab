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
    packages = corpus() ++ @agent_packages
    # Kept between runs, where the sandbox's worker user can read it (a
    # checkout may sit in a private directory); the suite on Debian 13
    # (scripts/test_trixie.sh) sees the same directory.
    dir = Path.join([System.tmp_dir!(), "ex_bashkit_npm", "#{:erlang.phash2(packages)}"])
    installed = Path.join(dir, ".installed")

    unless File.exists?(installed) do
      npm =
        System.find_executable("npm") ||
          raise "real npm is needed to install the packages these tests load: apt-get install npm"

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
    {at, opts} = Keyword.pop(opts, :at, "/app")
    # Big packages (babel, typescript) need more than the default heap.
    defaults = [timeout_ms: 60_000, max_javascript_memory_bytes: 512_000_000]
    {limits, opts} = Keyword.pop(opts, :limits, [])

    Session.new(
      [
        javascript: true,
        isolation: :process,
        mounts: [{at, dir, :read_only}],
        limits: Keyword.merge(defaults, limits)
      ] ++ opts
    )
  end

  # What real Node prints on stdout for `file` (run in `dir`), and its exit status.
  defp real_node(node, dir, file) do
    {out, status} = System.cmd("sh", ["-c", "#{node} #{file} 2>/dev/null"], cd: dir)
    {out, status}
  end

  defp ours(session, file, at \\ "/app") do
    {:ok, result} = Session.exec(session, "cd #{at} && node #{file}")
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

      IO.puts("\nnpm packages: #{agreed} of 200 load as under Node 20\n#{report}")
      assert length(corpus()) == 200
      assert agreed * 100 >= 200 * 95, "#{agreed} of 200 agree:\n#{report}"
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

  describe "Node's module resolution, on packages written here" do
    @tree %{
      "node_modules/dual/package.json" =>
        ~s({"name": "dual", "exports": {".": {"import": "./esm.mjs", "require": "./cjs.js"}, "./nested": {"node": {"import": "./esm.mjs", "require": "./cjs.js"}, "default": "./browser.js"}, "./features/*.js": "./src/*.js", "./features/internal/*": null, "./package.json": "./package.json"}}),
      "node_modules/dual/esm.mjs" => "export const kind = 'esm';",
      "node_modules/dual/cjs.js" =>
        "exports.kind = 'cjs'; exports.other = 2; Object.defineProperty(exports, 'computed', { get() { return 1 + 1; } });",
      "node_modules/dual/browser.js" => "module.exports = 'browser';",
      "node_modules/dual/src/a.js" => "module.exports = { a: 'feature a' };",
      "node_modules/dual/src/internal/x.js" => "module.exports = 'hidden';",
      "node_modules/sugar/package.json" =>
        ~s({"name": "sugar", "exports": "./main.js", "module": "./esm.js"}),
      "node_modules/sugar/main.js" => "module.exports = 'sugar main';",
      "node_modules/sugar/esm.js" => "export default 'never: module is not a Node condition';",
      "node_modules/legacy/package.json" =>
        ~s({"name": "legacy", "main": "lib/entry", "module": "esm.js"}),
      "node_modules/legacy/lib/entry.js" => "module.exports = { legacy: true };",
      "node_modules/legacy/esm.js" => "export default 'never';",
      "node_modules/pure/package.json" =>
        ~s({"name": "pure", "type": "module", "exports": "./index.js"}),
      "node_modules/pure/index.js" => "export default 42; export const named = 'n';",
      "node_modules/tla/package.json" =>
        ~s({"name": "tla", "type": "module", "main": "index.js"}),
      "node_modules/tla/index.js" => "await 0; export const t = 1;",
      "app/package.json" =>
        ~s({"name": "app", "exports": {".": "./main.js", "./util": "./util.js"}, "imports": {"#dep": "./internal/dep.js", "#ext": "sugar", "#conf/*": "./conf/*.json", "#loop": "#loop", "#a": "#b", "#b": "#a"}}),
      "app/main.js" => "module.exports = 'app main';",
      "app/util.js" => "exports.util = 'app util';",
      "app/internal/dep.js" => "module.exports = 'internal dep';",
      "app/conf/site.json" => ~s({"site": "docs"}),
      "app/lib/index.js" => "module.exports = 'dir index';",
      "app/cjs.cjs" =>
        "module.exports = { alpha, beta: 2 }; function alpha() { return 'alpha'; } module.exports.gamma = 3;",
      "app/esm-dir/index.mjs" => "export default 1;"
    }

    @programs %{
      "app/require.js" => """
      const root = require('path').dirname(__dirname);
      const show = (f) => { try { console.log(JSON.stringify(f())); } catch (e) { console.log(e.code, e.message.split(root).join('<root>').split(String.fromCharCode(10))[0]); } };
      show(() => require('dual').kind);
      show(() => require('dual/nested').kind);
      show(() => require('dual/features/a.js').a);
      show(() => require('dual/features/internal/x'));
      show(() => require('dual/nope'));
      show(() => require('sugar'));
      show(() => require('legacy'));
      show(() => Object.keys(require('pure')));
      show(() => require('pure').default);
      // (Node's message goes on to name a flag of its own command line.)
      try { require('tla'); } catch (e) { console.log(e.code); }
      show(() => require('app'));
      show(() => require('app/util').util);
      show(() => require('#dep'));
      show(() => require('#ext'));
      show(() => require('#conf/site').site);
      show(() => require('#nope'));
      for (const name of ['#loop', '#a']) { try { require(name); } catch (e) { console.log(e.code); } }
      show(() => require('./lib'));
      show(() => require('./cjs.cjs').gamma);
      show(() => require.resolve('dual').split(root).join('<root>'));
      show(() => require('node:nope'));
      show(() => require('./missing'));
      show(() => require.main === module);
      """,
      "app/import.mjs" => """
      import { createRequire } from 'node:module';
      import * as all from 'dual';
      import { kind as nested } from 'dual/nested';
      import sugar from 'sugar';
      import legacy from 'legacy';
      import pure, { named } from 'pure';
      import cjs, { alpha, gamma } from './cjs.cjs';
      import dep from '#dep';
      const root = import.meta.dirname.slice(0, -4);
      console.log(JSON.stringify([Object.keys(all), nested, sugar, legacy, pure, named, typeof alpha, gamma, Object.keys(cjs), dep]));
      console.log(import.meta.url.split(root).join('<root>'), import.meta.filename.split(root).join('<root>'));
      const require = createRequire(import.meta.url);
      console.log(require('dual').kind);
      for (const specifier of ['dual/nope', './esm-dir', './nowhere.js', 'nowhere', '#nope', 'dual/features/internal/x']) {
        await import(specifier).then(() => console.log('loaded', specifier), (e) => console.log(e.code, e.message.split(root).join('<root>')));
      }
      const late = await import('dual/features/a.js');
      console.log(late.default.a, Object.keys(late));
      """
    }

    test "require and import find what Node 20 finds, or fail as it does", %{node: node} do
      dir = host_dir!("resolution")
      for {path, text} <- Map.merge(@tree, @programs), do: write!(Path.join(dir, path), text)
      # Mounted where no path names it twice (the programs print paths
      # from the tree's root on).
      session = session(dir, at: "/srv")

      for name <- Map.keys(@programs) do
        {expected, 0} = System.cmd(node, [name], cd: dir, stderr_to_stdout: true)
        assert {name, ours(session, "/srv/" <> name, "/srv")} == {name, {expected, 0}}
      end
    end
  end

  test "a module written after it was missing is found, as Node finds it", %{node: node} do
    dir = host_dir!("written")

    program = """
    const fs = require('fs');
    try { require('./gen'); } catch (e) { console.log('first', e.code); }
    fs.writeFileSync(__dirname + '/gen.js', 'module.exports = "made";');
    try { console.log('second', require('./gen')); } catch (e) { console.log('second', e.code); }
    require('child_process').execSync('echo "module.exports = 1" > ' + __dirname + '/shell.js');
    console.log('by a command', require('./shell'));
    """

    File.write!(Path.join(dir, "main.js"), program)
    {expected, 0} = System.cmd(node, ["main.js"], cd: dir)
    assert expected =~ "second made"

    session =
      Session.new(javascript: true, isolation: :process, files: %{"/w/main.js" => program})

    assert {:ok, %{stdout: ^expected}} = Session.exec(session, "node /w/main.js")
  end

  describe "the core modules packages touch" do
    test "zlib reads what Node's writes and writes what Node's reads", %{node: node} do
      dir = host_dir!("zlib")
      text = String.duplicate("the quick brown fox jumps over the lazy dog\n", 200)
      File.write!(Path.join(dir, "text.txt"), text)

      pack = """
      const zlib = require('zlib');
      const text = require('fs').readFileSync('text.txt');
      for (const [op, sync] of [['gzip', 'gzipSync'], ['deflate', 'deflateSync'], ['deflateRaw', 'deflateRawSync'], ['brotli', 'brotliCompressSync']]) {
        require('fs').writeFileSync(op + '.bin', zlib[sync](text));
      }
      """

      File.write!(Path.join(dir, "pack.js"), pack)
      {_, 0} = System.cmd(node, ["pack.js"], cd: dir)

      unpack = """
      const zlib = require('zlib');
      const fs = require('fs');
      const read = (op) => fs.readFileSync(op + '.bin');
      const out = [
        zlib.gunzipSync(read('gzip')), zlib.unzipSync(read('gzip')), zlib.inflateSync(read('deflate')),
        zlib.unzipSync(read('deflate')), zlib.inflateRawSync(read('deflateRaw')), zlib.brotliDecompressSync(read('brotli')),
      ].map((b) => b.toString() === fs.readFileSync('text.txt', 'utf8'));
      console.log(out.join(' '), zlib.crc32('hello'), zlib.crc32('lo', zlib.crc32('hel')));
      try { zlib.inflateSync(Buffer.from('not zlib')); } catch (e) { console.log(e.code, e.errno, e.message); }
      try { zlib.gunzipSync(read('gzip').subarray(0, 40)); } catch (e) { console.log(e.code, e.errno, e.message); }
      """

      File.write!(Path.join(dir, "unpack.js"), unpack)
      session = session(dir)
      expected = real_node(node, dir, "unpack.js")
      assert {"true true true true true true 907060870 907060870\n" <> _, 0} = expected
      assert ours(session, "/app/unpack.js") == expected

      # What the sandbox packs (sync, by callback, by stream), real Node unpacks.
      ours_packed = """
      const zlib = require('zlib');
      const text = require('fs').readFileSync('/app/text.txt');
      const stream = zlib.createGzip();
      const parts = [];
      stream.on('data', (part) => parts.push(part));
      stream.on('end', () => {
        zlib.deflate(text, { level: 9 }, (error, deflated) => {
          console.log(JSON.stringify({ gzip: zlib.gzipSync(text).toString('base64'), stream: Buffer.concat(parts).toString('base64'),
            deflate: deflated.toString('base64'), brotli: zlib.brotliCompressSync(text).toString('base64') }));
        });
      });
      stream.end(text);
      """

      {:ok, %{stdout: json, exit_code: 0}} = program(session, ours_packed)

      File.write!(Path.join(dir, "packed.json"), json)

      check = """
      const zlib = require('zlib');
      const packed = JSON.parse(require('fs').readFileSync('packed.json', 'utf8'));
      const text = require('fs').readFileSync('text.txt', 'utf8');
      const b = (k) => Buffer.from(packed[k], 'base64');
      console.log(zlib.gunzipSync(b('gzip')) == text, zlib.gunzipSync(b('stream')) == text, zlib.inflateSync(b('deflate')) == text, zlib.brotliDecompressSync(b('brotli')) == text);
      """

      File.write!(Path.join(dir, "check.js"), check)
      assert {"true true true true\n", 0} = System.cmd(node, ["check.js"], cd: dir)
    end

    test "a decompression bomb stops at the memory cap, the session alive" do
      session = session(host_dir!("bomb"), limits: [max_javascript_memory_bytes: 32_000_000])

      bomb = """
      const zlib = require('zlib');
      const bomb = zlib.gzipSync(Buffer.alloc(16 << 20));
      try { zlib.gunzipSync(Buffer.concat([bomb, bomb, bomb, bomb])); } catch (e) { console.log(e.code); }
      try { zlib.gunzipSync(bomb, { maxOutputLength: 1024 }); } catch (e) { console.log(e.code, e.message); }
      """

      assert {:ok, %{stdout: out}} = program(session, bomb)

      assert out ==
               "ERR_BUFFER_TOO_LARGE\nERR_BUFFER_TOO_LARGE Cannot create a Buffer larger than 1024 bytes\n"

      assert {:ok, %{stdout: "alive\n"}} =
               Session.exec(session, "node -e 'console.log(\"alive\")'")
    end

    test "process, tty, crypto's random bytes and Node's module list are Node's", %{node: node} do
      dir = host_dir!("core")

      program = """
      const crypto = require('crypto');
      const buffer = Buffer.alloc(8);
      crypto.randomFillSync(buffer, 2, 4);
      console.log(require('process') === process, require('node:process') === process, require('tty').isatty(1));
      console.log(buffer.subarray(0, 2).equals(Buffer.alloc(2)), buffer.subarray(6).equals(Buffer.alloc(2)));
      console.log(crypto.timingSafeEqual(Buffer.from('ab'), Buffer.from('ab')), typeof crypto.randomInt(10), typeof globalThis.crypto.randomUUID());
      console.log(JSON.stringify(require('module').builtinModules.filter((m) => !m.startsWith('_'))));
      console.log(require('worker_threads').isMainThread, require('cluster').isPrimary, require('net').isIP('::1'));
      console.log(Object.prototype.toString.call(process), typeof process.hrtime.bigint(), typeof require('util').debuglog('x'));
      process.on('exit', (code) => console.log('exit', code));
      """

      File.write!(Path.join(dir, "core.js"), program)
      assert {:ok, %{stdout: ours_out}} = Session.exec(session(dir), "node /app/core.js")
      {expected, 0} = System.cmd(node, ["core.js"], cd: dir)
      assert ours_out == expected

      refused = """
      for (const use of [() => require('net').createServer(), () => new (require('worker_threads').Worker)('x.js'),
        () => require('http').createServer(), () => require('dgram').createSocket('udp4')]) {
        try { use(); } catch (e) { console.log(e.code, e.message); }
      }
      """

      assert {:ok, %{stdout: out}} = program(session(dir), refused)

      assert out == """
             ERR_SANDBOX_UNAVAILABLE net.createServer is not available in the sandbox: node here has no sockets; use fetch or the http and https clients
             ERR_SANDBOX_UNAVAILABLE worker_threads.Worker is not available in the sandbox: node here runs one thread
             ERR_SANDBOX_UNAVAILABLE http.createServer is not available in the sandbox: node here has no sockets of its own; requests go through the session's HTTP client
             ERR_SANDBOX_UNAVAILABLE dgram.createSocket is not available in the sandbox: node here has no sockets; use fetch or the http and https clients
             """
    end
  end

  # Runs `source` as a program of the session's own.
  defp program(session, source) do
    :ok = Session.write_file(session, "/tmp/program.js", source)
    Session.exec(session, "node /tmp/program.js")
  end

  defp write!(path, text) do
    File.mkdir_p!(Path.dirname(path))
    File.write!(path, text)
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
        assert {name, ours(session, "/app/" <> name)} == {name, expected}
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
      FileServer.requests()

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
