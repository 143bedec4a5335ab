# ExBashkit.Code.run/2's Python driver (lib/ex_bashkit/code/languages.ex):
# runs /code/main.py's execute(input) on the JSON of stdin and prints one
# JSON envelope, {"result": value} or {"error": {name, message, line}},
# with what the code printed.
import io, json, sys, traceback
def _main():
    source = open("/code/main.py").read()
    data = sys.stdin.read()
    real = sys.stdout
    out, err = io.StringIO(), io.StringIO()
    def finish(outcome):
        outcome["stdout"] = out.getvalue()
        outcome["stderr"] = err.getvalue()
        real.write(json.dumps(outcome))
    try:
        code = compile(source, "/code/main.py", "exec")
    except SyntaxError as e:
        return finish({"error": {"name": "SyntaxError", "message": str(e.msg), "line": e.lineno}})
    if sys.argv[1:] == ["--check"]:
        return
    sys.stdout, sys.stderr = out, err
    try:
        scope = {"__name__": "__main__"}
        exec(code, scope)
        execute = scope.get("execute")
        if not callable(execute):
            raise NameError("the code defines no function execute(input)")
        value = json.dumps(execute(json.loads(data) if data.strip() else None))
    except BaseException as e:
        sys.stdout, sys.stderr = real, sys.__stderr__
        lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == "/code/main.py"]
        return finish({"error": {"name": type(e).__name__, "message": str(e), "line": lines[-1] if lines else None}})
    sys.stdout, sys.stderr = real, sys.__stderr__
    finish({"result": json.loads(value)})
_main()
