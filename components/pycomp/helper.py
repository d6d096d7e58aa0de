# wick's bridge to the user's TorchX (embedded in the wick binary; run by the user's
# python3). It resolves a component as `torchx run` does, and writes one JSON document
# to file descriptor 3, so that whatever the component prints on stdout or stderr
# cannot corrupt it.
#
#   argv: OP REQUEST_JSON
#   OP: "materialize" (name, argv, defaults), "describe" (name), "list", "file" (path),
#       "entrypoints" (group; needs no TorchX), "resource" (name)
#   out: {"component": {...}, "app": {...}} or {"components": [...]} or
#        {"entry_points": {...}, "watch": [...]} or {"resource": {...}} or
#        {"error": {"kind": ..., "message": ...}}
import inspect
import io
import json
import os
import sys
import traceback

_OUT = os.fdopen(3, "w")


def _emit(doc):
    _OUT.write(json.dumps(doc))
    _OUT.flush()


def _fail(kind, message, tb=""):
    _emit({"error": {"kind": kind, "message": message, "traceback": tb}})
    sys.exit(0)


def _where(exc, path):
    """file:line of the deepest frame of the user's code: the component file (TorchX
    execs it from a string), else the last frame outside TorchX and this helper."""
    import sysconfig

    torchx_dir = os.path.dirname(os.path.abspath(sys.modules["torchx"].__file__))
    stdlib = sysconfig.get_paths()["stdlib"] + os.sep
    best = ""
    for fs in traceback.extract_tb(exc.__traceback__):
        fn = fs.filename
        if fn == "<string>" and path:
            best = "%s:%d" % (path, fs.lineno)
        elif fn.startswith("<") or fn.startswith(torchx_dir + os.sep) or fn.startswith(stdlib):
            continue
        else:
            best = "%s:%d" % (fn, fs.lineno)
    return best


def _exc_line(exc, path):
    msg = "%s: %s" % (type(exc).__name__, " ".join(str(exc).split()))
    if isinstance(exc, SyntaxError):
        f = path if (exc.filename in (None, "<string>", "<unknown>")) else exc.filename
        return "%s:%s: SyntaxError: %s" % (f, exc.lineno, exc.msg)
    w = _where(exc, path)
    return ("%s: %s" % (w, msg)) if w else msg


def _type_name(annotation):
    from torchx.util.types import decode_optional, is_bool

    t = decode_optional(annotation)
    optional = t is not annotation
    if is_bool(t):
        return "bool", optional
    if t is int:
        return "int", optional
    if t is float:
        return "float", optional
    if t is str:
        return "str", optional
    origin = getattr(t, "__origin__", None)
    if origin in (list, tuple):
        return "list", optional
    if origin is dict:
        return "map", optional
    return "str", optional


def _default_text(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    if isinstance(v, dict):
        return ",".join("%s=%s" % (k, x) for k, x in v.items())
    return str(v)


def _describe(name, fn, file=""):
    from torchx.specs.file_linter import get_fn_docstring

    desc, args_desc = get_fn_docstring(fn)
    summary, long_help = desc, ""
    if fn.__doc__:
        import docstring_parser

        d = docstring_parser.parse(fn.__doc__)
        summary, long_help = d.short_description or desc, d.long_description or ""
    params, varargs, varargs_help = [], "", ""
    for pname, p in inspect.signature(fn).parameters.items():
        typ, optional = _type_name(p.annotation)
        help_ = " ".join(str(args_desc[pname]).split())
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            varargs, varargs_help = pname, help_
            continue
        entry = {"name": pname, "type": typ, "help": help_}
        if p.default is inspect.Parameter.empty:
            entry["required"] = True
        elif p.default is None:
            entry["optional"] = True
        else:
            entry["default"] = _default_text(p.default)
        params.append(entry)
    line = fn.__code__.co_firstlineno
    src = file
    if not src:
        try:
            src = inspect.getsourcefile(fn) or ""
        except TypeError:
            src = ""
    return {
        "name": name,
        "summary": " ".join(summary.split()),
        "help": long_help,
        "file": src,
        "line": line,
        "params": params,
        "varargs": varargs,
        "varargs_help": varargs_help,
    }


def _mount(m):
    from torchx.specs.api import BindMount, VolumeMount

    if isinstance(m, BindMount):
        return {"type": "bind", "src": m.src_path, "dst": m.dst_path, "readonly": m.read_only}
    if isinstance(m, VolumeMount):
        return {"type": "volume", "src": m.src, "dst": m.dst_path, "readonly": m.read_only}
    return {"type": "device", "src": m.src_path, "dst": m.dst_path, "permissions": m.permissions}


def _text(v):
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _app(app):
    roles = []
    for r in app.roles:
        res = r.resource
        roles.append({
            "name": r.name,
            "image": r.image,
            "entrypoint": r.entrypoint,
            "args": [str(a) for a in r.args],
            "env": {k: str(v) for k, v in r.env.items()},
            "num_replicas": r.num_replicas,
            "min_replicas": r.min_replicas or 0,
            "max_retries": r.max_retries,
            "retry_policy": getattr(r.retry_policy, "value", str(r.retry_policy)),
            "resource": {
                "cpu": res.cpu, "gpu": res.gpu, "memMB": res.memMB,
                "capabilities": {k: _text(v) for k, v in res.capabilities.items()},
                "devices": dict(res.devices),
            },
            "port_map": dict(r.port_map),
            "mounts": [_mount(m) for m in r.mounts],
            "metadata": {k: _text(v) for k, v in r.metadata.items()},
        })
    return {"name": app.name, "roles": roles, "metadata": {k: _text(v) for k, v in app.metadata.items()}}


def _find(name):
    from torchx.specs import finder

    path = ""
    if ":" in name:
        path = name.split(":")[0]
        if not os.path.isfile(path):
            _fail("notfound", "%s: no such file" % path)
    try:
        comp = finder.get_component(name)
    except finder.ComponentNotFoundException as e:
        _fail("notfound" if not path else "notcomponent", " ".join(str(e).split()))
    except finder.ComponentValidationException as e:
        _fail("notcomponent", " ".join(str(e).split()))
    except SystemExit:
        raise
    except SyntaxError as e:
        _fail("syntax", _exc_line(e, path))
    except BaseException as e:  # the component's module raised while loading
        _fail("raised", _exc_line(e, path), traceback.format_exc())
    return comp, path


def _file_components(path):
    """The components of a .py file: its functions that TorchX's linter accepts,
    loaded the way TorchX's finder loads a component file (exec of its source)."""
    import ast

    from torchx.specs.file_linter import validate

    try:
        with open(path) as f:
            src = f.read()
        tree = ast.parse(src)
    except SyntaxError as e:
        _fail("syntax", _exc_line(e, path))
    except OSError as e:
        _fail("notfound", "%s: %s" % (path, e.strerror))
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not validate(path, n.name)]
    if not names:
        return []
    ns = {"__file__": os.path.abspath(path), "__name__": "__torchx_component__"}
    try:
        exec(compile(src, "<string>", "exec"), ns)
    except BaseException as e:
        _fail("raised", _exc_line(e, path), traceback.format_exc())
    return [_describe(n, ns[n], os.path.abspath(path)) for n in names if callable(ns.get(n))]


def _entry_points(group):
    """The entry points of group as TorchX's load_group reads them
    (torchx/util/entrypoints.py: a later one of a name replaces an earlier), and the
    paths whose change could change them: the interpreter, sys.path's entries, the
    user site directory, each distribution's entry_points.txt."""
    import site
    from importlib import metadata

    eps = metadata.entry_points()
    found = eps.select(group=group) if hasattr(eps, "select") else eps.get(group, ())
    out = {}
    for ep in found:
        out[ep.name] = ep.value
    watch = [os.path.realpath(sys.executable)]
    watch += [os.path.abspath(p) for p in sys.path if p]
    try:
        watch.append(site.getusersitepackages())
    except Exception:
        pass
    for d in metadata.distributions():
        p = getattr(d, "_path", None)
        if p is not None:
            watch.append(os.path.join(os.path.abspath(str(p)), "entry_points.txt"))
    return out, watch


def _resource(name):
    """The named resource name, made by TorchX itself (specs.named_resources)."""
    from torchx.specs import Resource, named_resources

    try:
        r = named_resources[name]
    except BaseException as e:
        _fail("raised", _exc_line(e, ""), traceback.format_exc())
    if not isinstance(r, Resource):
        _fail("notresource", "it made a %s, not a torchx.specs.Resource" % type(r).__name__)
    return {
        "cpu": r.cpu, "gpu": r.gpu, "memMB": r.memMB,
        "capabilities": {k: _text(v) for k, v in r.capabilities.items()},
        "devices": dict(r.devices),
    }


def main():
    op, req = sys.argv[1], json.loads(sys.argv[2])
    if op == "entrypoints":
        eps, watch = _entry_points(req["group"])
        _emit({"entry_points": eps, "watch": watch})
        return
    try:
        import torchx.specs  # noqa: F401
        from torchx.specs import finder
        from torchx.specs.builders import materialize_appdef
    except ImportError as e:
        _fail("notorchx", "%s (%s)" % (" ".join(str(e).split()), sys.executable))
    if op == "list":
        out = []
        for cname, c in sorted(finder.get_components().items()):
            try:
                out.append(_describe(cname, c.fn))
            except Exception:  # a component we cannot describe is left out
                continue
        _emit({"components": out})
        return
    if op == "file":
        _emit({"components": _file_components(req["path"])})
        return
    if op == "resource":
        _emit({"resource": _resource(req["name"])})
        return
    name = req["name"]
    comp, path = _find(name)
    try:
        desc = _describe(name, comp.fn, os.path.abspath(path) if path else "")
    except Exception as e:
        _fail("notcomponent", "%s: %s" % (name, _exc_line(e, path)))
    if op == "describe":
        _emit({"component": desc})
        return
    err = io.StringIO()
    saved = sys.stderr
    sys.stderr = err
    try:
        app = materialize_appdef(comp.fn, req.get("argv") or [], req.get("defaults") or None)
    except SystemExit:
        # argparse printed usage and "PROG: error: MESSAGE" to stderr.
        sys.stderr = saved
        lines = [l for l in err.getvalue().splitlines() if l.strip()]
        msg = lines[-1] if lines else "invalid arguments"
        if ": error: " in msg:
            msg = msg.split(": error: ", 1)[1]
        _emit({"component": desc, "error": {"kind": "args", "message": msg}})
        return
    except BaseException as e:
        sys.stderr = saved
        _emit({"component": desc, "error": {"kind": "raised", "message": _exc_line(e, path), "traceback": traceback.format_exc()}})
        return
    sys.stderr = saved
    _emit({"component": desc, "app": _app(app)})


main()
