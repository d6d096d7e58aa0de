# The TorchX side of the CLI's differential tests (torchxdiff_test.go): reads a JSON
# list of requests on stdin and answers each, in order, with TorchX's own code
# (../shared/vendor/python), one process for the whole batch:
#
#   {"kind": "config", "scheduler": S, "cfg": "-cfg string", "home": DIR, "work": DIR,
#    "torchxconfig": PATH or null}
#     -> the run options `torchx run -s S -cfg ...` resolves (torchx/cli/cmd_run.py:
#        runopts.cfg_from_str, then torchx/runner/config.py apply with dirs=[home,
#        work], then runopts.resolve), the keys set by -cfg or the files ("set"),
#        [cli:run] (get_configs), and utils.echo's AppDef args under the
#        [component:utils.echo] defaults (load_sections via get_configs +
#        materialize_appdef);
#   {"kind": "flags", "argv": [...]}
#     -> how `torchx run ARGV` parses: CmdRun's own argparse parser, then
#        _parse_component_name_and_args, then the component's AppDef.
#
# Each answer is {"error": "..."} when TorchX refuses.
import argparse
import contextlib
import io
import json
import os
import sys

from torchx.cli import argparse_util
from torchx.cli.cmd_run import CmdRun, _parse_component_name_and_args
from torchx.runner import config
from torchx.schedulers import get_default_scheduler_name, get_scheduler_factories
from torchx.specs import finder
from torchx.specs.builders import materialize_appdef

_opts = {}


def run_opts(name):
    if name not in _opts:
        _opts[name] = get_scheduler_factories()[name](session_name="diff").run_opts()
    return _opts[name]


def jsonable(v):
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v]
    if isinstance(v, dict):
        return {str(k): str(x) for k, x in v.items()}
    return v


def role_args(name, argv, defaults):
    app = materialize_appdef(finder.get_component(name).fn, argv, defaults or None)
    r = app.roles[0]
    return {"entrypoint": r.entrypoint, "args": [str(a) for a in r.args]}


def do_config(req):
    if req.get("torchxconfig") is not None:
        os.environ["TORCHXCONFIG"] = req["torchxconfig"]
    else:
        os.environ.pop("TORCHXCONFIG", None)
    dirs = [req["home"], req["work"]]
    # No -s: [cli:run]'s scheduler (cmd_run.py's torchxconfig_run action), else TorchX's
    # default.
    cli_run = config.get_configs(prefix="cli", name="run", dirs=dirs)
    sched = req["scheduler"] or cli_run.get("scheduler") or get_default_scheduler_name()
    default = not req["scheduler"] and not cli_run.get("scheduler")
    try:
        return do_config_on(req, dirs, sched, cli_run, default)
    except Exception as e:  # TorchX refuses; say on which scheduler
        return {"error": "%s: %s" % (type(e).__name__, " ".join(str(e).split())), "scheduler_default": default}


def do_config_on(req, dirs, sched, cli_run, default):
    opts = run_opts(sched)
    cfg = opts.cfg_from_str(req.get("cfg") or "")
    config.apply(scheduler=sched, cfg=cfg, dirs=dirs)
    set_keys = sorted(k for k, v in cfg.items() if k in opts._opts and v is not None)
    resolved = opts.resolve(cfg)
    defaults = config.get_configs(prefix="component", name="utils.echo", dirs=dirs)
    return {
        "cfg": {k: jsonable(v) for k, v in resolved.items() if v is not None},
        "set": set_keys,
        "cli_run": cli_run, "scheduler": sched,
        "scheduler_default": default, "opts": sorted(opts._opts),
        "role": role_args("utils.echo", [], defaults),
    }


def do_flags(req):
    # TorchX's actions remember the flags given in a class-level set (one process, one
    # command line): forget them between vectors.
    argparse_util.torchxconfig.called_args.clear()
    argparse_util.ArgOnceAction.called_args.clear()
    parser = argparse.ArgumentParser(prog="torchx run")
    CmdRun().add_arguments(parser)
    args = parser.parse_args(req["argv"])
    name, comp_args = _parse_component_name_and_args(args.component_name_and_args, parser)
    return {
        "scheduler": args.scheduler, "scheduler_args": args.scheduler_args,
        "dryrun": args.dryrun, "wait": args.wait, "log": args.log,
        "tee_logs": args.tee_logs, "stdin": args.stdin, "parent_run_id": args.parent_run_id,
        "component": name, "role": role_args(name, comp_args, None),
    }


def main():
    out = []
    for req in json.load(sys.stdin):
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
                out.append((do_config if req["kind"] == "config" else do_flags)(req))
        except SystemExit:
            lines = [l for l in err.getvalue().splitlines() if l.strip()]
            out.append({"error": (lines[-1] if lines else "invalid arguments").split(": error: ")[-1]})
        except BaseException as e:  # TorchX raised: it refuses the case
            out.append({"error": "%s: %s" % (type(e).__name__, " ".join(str(e).split()))})
    json.dump(out, sys.stdout)


main()
