//! What `pip install` puts in the CPython guest's site-packages, made
//! importable. The guest is a snapshot taken before any package existed,
//! so its `sys.path` has no site-packages and its import system
//! remembers the directory as missing. Once the directory exists, each
//! `python3` call runs the program through a short prelude that adds it
//! (as `site` would at startup) and then runs the program as Python
//! would: `-c`, `-m`, a file or directory, or stdin, with the same
//! `sys.argv` and a traceback without the prelude's frames.

use ex_bashkit_packages::SITE_PACKAGES;

/// The prelude: `sys.argv[1:]` are the mode (`c`, `m`, `f`, `s` for
/// stdin), its target and the program's arguments.
const PRELUDE: &str = r#"import sys as _s
def _run():
    import importlib, os, runpy, traceback
    sys, site = _s, SITE
    if site not in sys.path:
        sys.path.append(site)
    importlib.invalidate_caches()
    mode, target, *rest = sys.argv[1:]
    main = sys.modules["__main__"].__dict__
    main.pop("_s", None)
    main.pop("_run", None)
    try:
        if mode == "m":
            sys.argv = [target, *rest]
            runpy._run_module_as_main(target)
        elif mode == "f":
            sys.argv = [target, *rest]
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
        else:
            if mode == "c":
                sys.argv = ["-c", *rest]
                code = compile(target, "<string>", "exec")
            else:
                sys.argv = [target, *rest] if target else [""]
                code = compile(sys.stdin.read(), "<stdin>", "exec")
            exec(code, main)
    except SystemExit:
        raise
    except BaseException as error:
        tb = error.__traceback__.tb_next
        while mode == "f" and tb is not None and tb.tb_frame.f_code.co_filename.startswith("<frozen runpy>"):
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb)
        raise SystemExit(1)
_run()
"#;

/// `python3`'s arguments, the program run through the prelude: the
/// interpreter's own options stay in front.
pub fn through_prelude(args: &[String]) -> Vec<String> {
    let mut options = Vec::new();
    let mut at = 0;
    let (mode, target) = loop {
        let Some(arg) = args.get(at) else {
            break ("s", String::new());
        };
        at += 1;
        match arg.as_str() {
            "-c" | "-m" => {
                let target = args.get(at).cloned().unwrap_or_default();
                at += 1;
                break (if arg == "-c" { "c" } else { "m" }, target);
            }
            "-" => break ("s", "-".to_string()),
            "-W" | "-X" => {
                options.push(arg.clone());
                if let Some(value) = args.get(at) {
                    options.push(value.clone());
                    at += 1;
                }
            }
            option if option.starts_with('-') => options.push(arg.clone()),
            _ => break ("f", arg.clone()),
        }
    };
    let prelude = PRELUDE.replace("SITE", &format!("{SITE_PACKAGES:?}"));
    options.extend(["-c".to_string(), prelude, mode.to_string(), target]);
    options.extend(args[at.min(args.len())..].iter().cloned());
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn the_program_and_its_options_keep_their_places() {
        let args = through_prelude(&words("-u -W ignore -c print(1) a b"));
        assert_eq!(args[..3], words("-u -W ignore"));
        assert_eq!(args[3], "-c");
        assert_eq!(args[5..], words("c print(1) a b"));
        let args = through_prelude(&words("script.py x"));
        assert_eq!(args[2..], words("f script.py x"));
        let args = through_prelude(&words("-m json.tool f"));
        assert_eq!(args[2..], words("m json.tool f"));
        let args = through_prelude(&[]);
        assert_eq!(args[2..], ["s".to_string(), String::new()]);
    }
}
