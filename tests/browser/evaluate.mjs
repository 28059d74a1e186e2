// Lays out one page in headless Chromium at a given viewport, evaluates a JavaScript
// expression in it (the measurement: it must return a string), prints that string on stdout
// and writes a PNG screenshot. The page runs no scripts of its own, so the measuring is done
// from outside, over the DevTools protocol on a pipe (--remote-debugging-pipe: NUL-ended
// JSON messages, commands on fd 3, replies and events on fd 4); plain Node, no packages.
//
//   node evaluate.mjs CHROMIUM URL WIDTH HEIGHT SCREENSHOT.png EXPRESSION [print]
//
// With `print` the page is laid out for paper (CSS media `print`) at that width.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [chromium, url, width, height, screenshot, expression, media] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "zpulse-page-"));
const child = spawn(
  chromium,
  ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
   "--remote-debugging-pipe", `--user-data-dir=${profile}`, "about:blank"],
  // A process group of its own, so that its helpers (renderer, network, zygote) go with it.
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"], detached: true },
);
let log = "";
child.stderr.on("data", (chunk) => { log += chunk; });
// Chromium and its helpers are killed and gone before its profile is removed (they write
// there until then). The profile is a temporary directory: a helper still finishing a write
// as it goes is no failure of the page, so removing it is tried hard but never decides the
// status.
function finish(status, why) {
  if (why) process.stderr.write(`${why}\n${log.slice(-2000)}\n`);
  const leave = () => {
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
    } catch (e) {
      process.stderr.write(`left ${profile}: ${e.message}\n`);
    }
    process.exit(status);
  };
  child.removeAllListeners("exit");
  try { process.kill(-child.pid, "SIGKILL"); } catch {}
  if (child.exitCode !== null || child.signalCode !== null) leave();
  child.once("exit", leave);
  child.kill("SIGKILL");
}
setTimeout(() => finish(2, "no answer from chromium within 60 s"), 60_000).unref();
child.on("exit", (code) => finish(2, `chromium ended early (${code})`));

// Replies by id; events kept in arrival order until someone waits for them.
const pending = new Map();
const seen = [];
let input = Buffer.alloc(0);
child.stdio[4].on("data", (chunk) => {
  input = Buffer.concat([input, chunk]);
  let nul;
  while ((nul = input.indexOf(0)) !== -1) {
    const message = JSON.parse(input.subarray(0, nul).toString("utf8"));
    input = input.subarray(nul + 1);
    const reply = pending.get(message.id);
    if (reply) {
      pending.delete(message.id);
      if (message.error) reply.reject(new Error(JSON.stringify(message.error)));
      else reply.resolve(message.result);
    } else if (message.method) {
      seen.push(message.method);
    }
  }
});
let lastId = 0;
function call(method, params, sessionId) {
  return new Promise((resolve, reject) => {
    lastId += 1;
    pending.set(lastId, { resolve, reject });
    child.stdio[3].write(`${JSON.stringify({ id: lastId, method, params: params ?? {}, sessionId })}\0`);
  });
}
async function event(method) {
  while (!seen.includes(method)) await new Promise((r) => setTimeout(r, 20));
}

try {
  const { targetId } = await call("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await call("Target.attachToTarget", { targetId, flatten: true });
  await call("Emulation.setDeviceMetricsOverride",
    { width: Number(width), height: Number(height), deviceScaleFactor: 1, mobile: Number(width) < 600 },
    sessionId);
  if (media === "print") await call("Emulation.setEmulatedMedia", { media: "print" }, sessionId);
  await call("Page.enable", {}, sessionId);
  await call("Page.navigate", { url }, sessionId);
  await event("Page.loadEventFired");
  const { result, exceptionDetails } = await call("Runtime.evaluate",
    { expression, returnByValue: true }, sessionId);
  if (exceptionDetails) throw new Error(JSON.stringify(exceptionDetails));
  const { data } = await call("Page.captureScreenshot", { format: "png", captureBeyondViewport: false }, sessionId);
  writeFileSync(screenshot, Buffer.from(data, "base64"));
  process.stdout.write(`${result.value}\n`, () => finish(0));
} catch (error) {
  finish(2, String(error));
}
