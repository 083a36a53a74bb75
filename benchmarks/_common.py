"""Helpers shared by the benchmark scripts (run them as `python benchmarks/<script>.py`)."""

import sys


def print_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).rjust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)))
    sys.stdout.flush()


# ---------------------------------------------------------------------- helpers added for the
# heavy-hitter, longitudinal, multi-attribute and numeric benchmarks

PEER_PYTHON = "/work/peers-venv/bin/python"


def timed(function, *args, **kwargs):
    """``(result, wall seconds, CPU seconds of this process)`` of one call.

    CPU time is less sensitive than wall-clock time to other jobs on a shared machine (it
    still grows with contention for caches and memory bandwidth); print both.
    """
    import time

    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def machine_note():
    """One line on the machine: cores, load average, numpy version."""
    import os

    import numpy as np

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return (f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / "
            f"{load[2]:.1f} (1 / 5 / 15 min), numpy {np.__version__}")


def run_peer(source, arrays, params, timeout=7200, python=PEER_PYTHON):
    """Run a peer library's benchmark code in its own virtual environment (never imported
    here) and return the JSON object of its last output line.

    ``source`` is a Python program that reads ``sys.argv[1]`` (an ``.npz`` file holding
    ``arrays``) and ``sys.argv[2]`` (``params`` as JSON) and prints one JSON line last. Returns
    ``{"error": message}`` if the peer fails (a missing environment, an exception, a timeout).
    """
    import json
    import os
    import subprocess
    import tempfile

    import numpy as np

    if not os.path.exists(python):
        return {"error": f"no peer environment at {python}"}
    with tempfile.TemporaryDirectory() as folder:
        data = os.path.join(folder, "data.npz")
        np.savez(data, **arrays)
        try:
            done = subprocess.run([python, "-c", source, data, json.dumps(params)],
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"exit {done.returncode}: {tail[0][:200]}"}
    return json.loads(lines[-1])


def fmt(value, digits=3):
    """A number for a table: ``digits`` significant digits, '-' for None or NaN."""
    import math

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:.{digits}g}"


def cached_peer(cache, key, compute):
    """``compute()``'s result, stored in the JSON file ``cache`` under ``key`` (None: no
    cache); a peer run takes minutes and depends only on the data and the peer, so a rerun of
    our side can reuse it. Errors are not cached."""
    import json
    import os

    if cache is None:
        return compute()
    stored = {}
    if os.path.exists(cache):
        with open(cache) as handle:
            stored = json.load(handle)
    if key not in stored:
        result = compute()
        if "error" in result:
            return result
        stored[key] = result
        with open(cache, "w") as handle:
            json.dump(stored, handle)
    return stored[key]
