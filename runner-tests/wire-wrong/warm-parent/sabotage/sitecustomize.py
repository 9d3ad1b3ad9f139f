"""A sitecustomize the clock shim chains to (it runs in a warm parent after
the shim's hello): the parent speaks on its stderr."""

import os
import sys

if os.environ.get("FAULTMATRIX_WARM") == "1":
    sys.stderr.write("sabotage: the warm parent speaks on its stderr\n")
    sys.stderr.flush()
