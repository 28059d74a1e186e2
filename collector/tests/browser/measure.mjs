// Loads one page in headless Chromium at a phone's viewport and reports, as JSON on
// stdout, where the browser laid out each finding's subject and summary and whether the
// page is wider than the viewport; writes a PNG screenshot. Driven over the DevTools
// protocol on a pipe (--remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4), since
// the page itself runs no scripts; plain Node, no packages.
//
//   node measure.mjs CHROMIUM URL WIDTH HEIGHT SCREENSHOT.png
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [chromium, url, width, height, shot] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "zpulse-chromium-"));
const browser = spawn(chromium, [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
  "--remote-debugging-pipe", `--user-data-dir=${profile}`, "about:blank",
], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let stderr = "";
browser.stderr.on("data", (d) => { stderr += d; });
const done = (code, what) => {
  if (what) console.error(what, stderr.slice(-2000));
  browser.kill("SIGKILL");
  try { rmSync(profile, { recursive: true, force: true }); } catch {}
  process.exit(code);
};
setTimeout(() => done(2, "timed out after 60 s"), 60_000).unref();
browser.on("exit", (c) => done(2, `chromium exited ${c}`));

const [toBrowser, fromBrowser] = [browser.stdio[3], browser.stdio[4]];
let next = 0;
const waiting = new Map();
const events = [];
let buffered = Buffer.alloc(0);
fromBrowser.on("data", (d) => {
  buffered = Buffer.concat([buffered, d]);
  for (let end; (end = buffered.indexOf(0)) >= 0; ) {
    const msg = JSON.parse(buffered.subarray(0, end).toString("utf8"));
    buffered = buffered.subarray(end + 1);
    if (msg.id !== undefined && waiting.has(msg.id)) {
      const { resolve, reject } = waiting.get(msg.id);
      waiting.delete(msg.id);
      msg.error ? reject(new Error(JSON.stringify(msg.error))) : resolve(msg.result);
    } else if (msg.method) {
      events.push(msg);
    }
  }
});
const send = (method, params = {}, sessionId) =>
  new Promise((resolve, reject) => {
    const id = ++next;
    waiting.set(id, { resolve, reject });
    toBrowser.write(JSON.stringify({ id, method, params, sessionId }) + "\0");
  });
const waitFor = async (method) => {
  for (;;) {
    const i = events.findIndex((e) => e.method === method);
    if (i >= 0) return events.splice(i, 1)[0];
    await new Promise((r) => setTimeout(r, 20));
  }
};

try {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  await send("Emulation.setDeviceMetricsOverride", {
    width: Number(width), height: Number(height), deviceScaleFactor: 1, mobile: true,
  }, sessionId);
  await send("Page.enable", {}, sessionId);
  await send("Page.navigate", { url }, sessionId);
  await waitFor("Page.loadEventFired");
  const measure = `JSON.stringify({
    innerWidth: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    findings: [...document.querySelectorAll("tr.finding")].map((tr) => {
      const box = (sel) => {
        const el = tr.querySelector(sel);
        if (!el) return null;
        const r = el.getBoundingClientRect();
        const style = getComputedStyle(el);
        return { text: el.textContent, left: r.left, right: r.right, width: r.width,
                 height: r.height, hidden: style.display === "none" || style.visibility === "hidden" };
      };
      return { id: tr.id, subject: box("td.subject"), summary: box("td.summary") };
    }),
  })`;
  const { result } = await send("Runtime.evaluate", { expression: measure, returnByValue: true }, sessionId);
  const { data } = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  writeFileSync(shot, Buffer.from(data, "base64"));
  browser.removeAllListeners("exit");
  process.stdout.write(result.value + "\n", () => done(0));
} catch (e) {
  done(2, String(e));
}
