"""A sitecustomize the clock shim chains to (it runs in a warm parent after
the shim's hello): the parent speaks on its stderr and dies before it is
ready. (A warm parent's environment is the system's `PYTHON*` variables, so
the two behaviours are two directories on PYTHONPATH.)"""

import os
import sys

if os.environ.get("FAULTMATRIX_WARM") == "1":
    sys.stderr.write("sabotage: the warm parent speaks on its stderr and exits\n")
    sys.stderr.flush()
    os._exit(3)
