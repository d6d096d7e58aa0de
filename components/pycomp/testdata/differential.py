# The TorchX side of the differential test (differential_test.go): reads a JSON list of
# {"name": COMPONENT, "argv": [...], "defaults": {...}} on stdin, builds each AppDef
# with TorchX's own finder and parser (materialize_appdef, as `torchx run` does), and
# writes a JSON list of {"app": {...}} or {"error": "..."} on stdout, in order. One
# process for the whole batch: importing TorchX is most of the cost.
import contextlib
import io
import json
import sys

from torchx.specs import finder
from torchx.specs.api import BindMount, VolumeMount
from torchx.specs.builders import materialize_appdef


def _mount(m):
    if isinstance(m, BindMount):
        return {"type": "bind", "src": m.src_path, "dst": m.dst_path, "readonly": m.read_only}
    if isinstance(m, VolumeMount):
        return {"type": "volume", "src": m.src, "dst": m.dst_path, "readonly": m.read_only}
    return {"type": "device", "src": m.src_path, "dst": m.dst_path, "permissions": m.permissions}


def _app(app):
    roles = []
    for r in app.roles:
        res = r.resource
        roles.append({
            "name": r.name, "image": r.image, "entrypoint": r.entrypoint,
            "args": [str(a) for a in r.args],
            "env": {k: str(v) for k, v in r.env.items()},
            "num_replicas": r.num_replicas, "min_replicas": r.min_replicas or 0,
            "max_retries": r.max_retries,
            "retry_policy": getattr(r.retry_policy, "value", str(r.retry_policy)),
            "resource": {"cpu": res.cpu, "gpu": res.gpu, "memMB": res.memMB,
                         "capabilities": {k: str(v) for k, v in res.capabilities.items()},
                         "devices": dict(res.devices)},
            "port_map": dict(r.port_map),
            "mounts": [_mount(m) for m in r.mounts],
        })
    return {"name": app.name, "roles": roles}


def main():
    reqs = json.load(sys.stdin)
    fns = {}
    out = []
    for req in reqs:
        name = req["name"]
        if name not in fns:
            fns[name] = finder.get_component(name).fn
        err = io.StringIO()
        try:
            # argparse writes its usage and error to stderr, and components may print.
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
                app = materialize_appdef(fns[name], req["argv"], req.get("defaults") or None)
            # What `torchx run` checks next (torchx/runner/api.py, Runner.dryrun):
            # "No entrypoint for role", "Non-positive replicas for role".
            bad = [r.name for r in app.roles if not r.entrypoint or r.num_replicas <= 0]
            if not app.roles or bad:
                out.append({"error": "ValueError: no roles, no entrypoint or non-positive replicas: %s" % bad})
                continue
            out.append({"app": _app(app)})
        except SystemExit:
            lines = [l for l in err.getvalue().splitlines() if l.strip()]
            out.append({"error": (lines[-1] if lines else "invalid arguments").split(": error: ")[-1]})
        except BaseException as e:  # the component raised: TorchX refuses the vector
            out.append({"error": "%s: %s" % (type(e).__name__, " ".join(str(e).split()))})
    json.dump(out, sys.stdout)


main()
