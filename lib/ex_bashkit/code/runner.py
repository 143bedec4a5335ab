# ExBashkit.Code.run/2's CPython driver (lib/ex_bashkit/code/languages.ex):
# runs /code/main.py's execute(input) on the JSON of stdin and leaves its
# outcome, {"value": json} or {"error": {name, message, line}}, in
# /code/.outcome.json, where the worker reads it (crates/worker/src/code.rs).
# What the code prints is its own stdout and stderr. With --check, only
# compiles, and prints a syntax error's outcome.
import json, sys, traceback
def _main():
    source = open("/code/main.py").read()
    def finish(outcome):
        with open("/code/.outcome.json", "w") as out:
            out.write(json.dumps(outcome))
    check = sys.argv[1:] == ["--check"]
    try:
        code = compile(source, "/code/main.py", "exec")
    except SyntaxError as e:
        error = {"error": {"name": "SyntaxError", "message": str(e.msg), "line": e.lineno}}
        return sys.stdout.write(json.dumps(error)) if check else finish(error)
    if check:
        return
    data = sys.stdin.read()
    try:
        scope = {"__name__": "__main__"}
        exec(code, scope)
        execute = scope.get("execute")
        if not callable(execute):
            raise NameError("the code defines no function execute(input)")
        value = json.dumps(execute(json.loads(data) if data.strip() else None))
    except BaseException as e:
        lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == "/code/main.py"]
        return finish({"error": {"name": type(e).__name__, "message": str(e), "line": lines[-1] if lines else None}})
    finish({"value": value})
_main()
