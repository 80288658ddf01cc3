"""componentize-py's bindings of the contract outside a component.

Inside a component componentize-py generates `wit_world` (and
`componentize_py_types`) at build time, and `reconciler_sdk` imports them.
A guest's tests run natively, where neither exists unless the guest wrote
them beside its code (`componentize-py -d <wit> -w guest bindings .`).
`install()` then writes them for this process: it runs `componentize-py
-d reconciler_sdk/wit -w guest bindings <a temporary directory>` (about
0.1 s; the directory is removed at exit) and appends that directory to
`sys.path`. So the types a test builds are the very dataclasses of the WIT
the SDK ships, never a copy that could drift from it; their facts
functions are stubs that raise NotImplementedError, and a test hands its
guest `reconciler_sdk.mock.MockFacts(...).facts()` instead.

componentize-py is found as `$COMPONENTIZE_PY`, else beside the running
interpreter (a venv's `bin/`), else on `PATH`. Its stubs import
`typing.Self`: Python 3.11 or later.
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

WIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wit")


def componentize_py() -> str:
    """The componentize-py executable, or ImportError saying where it was looked for."""
    given = os.environ.get("COMPONENTIZE_PY")
    if given:
        return given
    beside = os.path.join(os.path.dirname(sys.executable), "componentize-py")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("componentize-py")
    if found:
        return found
    raise ImportError(
        "reconciler_sdk: no wit_world (componentize-py's bindings of the contract) to import, "
        "and no componentize-py to generate them: install it (pip install componentize-py), "
        "set COMPONENTIZE_PY to its executable, or write them beside your code with "
        "`componentize-py -d <the SDK's wit> -w guest bindings .`"
    )


def install() -> None:
    """Generates the bindings of reconciler_sdk/wit for this process and puts them on sys.path."""
    tool = componentize_py()
    out = tempfile.mkdtemp(prefix="reconciler-sdk-bindings-")
    atexit.register(shutil.rmtree, out, True)
    done = subprocess.run(
        [tool, "-d", WIT, "-w", "guest", "bindings", out], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise ImportError(
            f"reconciler_sdk: `{tool} -d {WIT} -w guest bindings` failed "
            f"(exit {done.returncode}): {done.stderr.strip()}"
        )
    sys.path.append(out)
