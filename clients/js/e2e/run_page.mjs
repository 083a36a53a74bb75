// Opens one page in headless Chromium and prints what the page reports (the browser end-to-end
// test, tests/test_browser_e2e.py). The page sets window.e2eResult (an object) when it is done,
// or window.e2eError (a string) when it fails.
//
//   node e2e/run_page.mjs <url> <user-data-dir> [<chromium executable>]
//
// Driven by playwright-core (a devDependency: `npm ci` in clients/js); the browser is the
// system's Chromium, never one playwright downloads.
import { chromium } from "playwright-core";

const [url, userDataDir, executablePath = "/usr/bin/chromium"] = process.argv.slice(2);
if (!url || !userDataDir) {
  console.error("usage: node e2e/run_page.mjs <url> <user-data-dir> [<chromium executable>]");
  process.exit(2);
}

// No sandbox (CI runs as root in a container), no GPU, and nothing the browser would fetch on
// its own (updates, sync, QUIC probes): the only traffic is the page's, on loopback.
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
  "--no-first-run", "--disable-background-networking", "--disable-component-update",
  "--disable-sync"];

const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath, headless: true, args: FLAGS, timeout: 60_000,
});
const problems = [];
try {
  const page = context.pages()[0] ?? await context.newPage();
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console error: ${message.text()}`);
  });
  await page.goto(url, { timeout: 60_000 });
  await page.waitForFunction(
    () => window.e2eResult !== undefined || window.e2eError !== undefined, null,
    { timeout: 120_000 });
  const { result, error } = await page.evaluate(
    () => ({ result: window.e2eResult ?? null, error: window.e2eError ?? null }));
  if (error !== null) problems.push(`the page failed: ${error}`);
  console.log(JSON.stringify({ result, problems }));
} finally {
  await context.close();
}
process.exitCode = problems.length ? 1 : 0;
