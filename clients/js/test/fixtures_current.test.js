// The committed fixtures are what the server writes now: make_fixtures.py --check, run with
// the Python on PATH (or LDP_PYTHON). Skipped where that Python cannot import sklearn_ldp.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const script = fileURLToPath(new URL("./make_fixtures.py", import.meta.url));
const python = process.env.LDP_PYTHON ?? "python";

test("the fixtures are the server's current laws, integers, hashes and messages", (t) => {
  const run = spawnSync(python, [script, "--check"], { encoding: "utf8", timeout: 120000 });
  if (run.error || /ModuleNotFoundError|ImportError/.test(run.stderr ?? "")) {
    t.skip(`no Python with sklearn_ldp (${run.error?.code ?? run.stderr.trim().split("\n").pop()})`);
    return;
  }
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
});
