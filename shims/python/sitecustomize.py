"""faultmatrix's virtual-clock shim for Python, installed by the environment only.

`PYTHONPATH=<repo>/shims/python` puts this file first on the path, so Python
imports it at start-up, before the program's own code. It does nothing
unless `FAULTMATRIX_CLOCK` is set (to the runner's control address,
`127.0.0.1:PORT`); then it routes the process's time, sleeps, socket waits,
asyncio event loops and random draws through the row's virtual clock (see
`faultmatrix_clock` beside this file and `shims/PROTOCOL.md`).

Whatever it does, it then runs the next `sitecustomize` on the path (a
virtual environment's or the distribution's), which this one would
otherwise hide.
"""

import os
import sys


def _chain_next_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    later = []
    seen_here = False
    for entry in sys.path:
        try:
            same = os.path.abspath(entry or os.curdir) == here
        except (TypeError, ValueError):
            continue
        if same:
            seen_here = True
            continue
        if seen_here:
            later.append(entry)
    if not later:
        return
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", later)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_faultmatrix_chained_sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # as site.py does for its own sitecustomize
        print(f"Error in chained sitecustomize {spec.origin}: {err!r}", file=sys.stderr)


if os.environ.get("FAULTMATRIX_CLOCK"):
    import faultmatrix_clock

    # The chained sitecustomize runs after the patches, so that what it
    # imports binds the virtual functions too (and, in warm mode, before the
    # parent forks, so that children inherit it).
    faultmatrix_clock.activate_from_environment(after_patches=_chain_next_sitecustomize)
else:
    _chain_next_sitecustomize()
del _chain_next_sitecustomize
