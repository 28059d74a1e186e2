// An independent Forward client for the collector's interop tests (collector/tests/interop.rs):
// the FluentClient of the npm package @fluent-org/logger (installed in tests/forward).
//
//   node client.js --port N [--mode Message|Forward|PackedForward|CompressedPackedForward]
//                  [--count N] [--host NAME] [--shared-key KEY --hostname NAME] [--tls-ca PEM]
//
// Sends --count zpulse metrics events (tag zpulse.metrics, EventTime, acks on), waits for
// every ack, disconnects and prints {"sent": N} on stdout. Exits 1 on any error.
"use strict";

const fs = require("fs");
const path = require("path");
const { FluentClient, EventTime } = require(
  path.join(__dirname, "../forward/node_modules/@fluent-org/logger"),
);

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
}
const count = Number(args.count || 10);
const host = args.host || "node-client";
const socket = { host: "127.0.0.1", port: Number(args.port), timeout: 10000 };
if (args["tls-ca"]) {
  socket.tls = { ca: fs.readFileSync(args["tls-ca"]), servername: "localhost" };
}
const options = {
  eventMode: args.mode || "PackedForward",
  socket,
  ack: { ackTimeout: 10000 },
  flushInterval: 0,
};
if (args["shared-key"]) {
  options.security = { clientHostname: args.hostname || host, sharedKey: args["shared-key"] };
}

async function main() {
  const client = new FluentClient("zpulse", options);
  const sent = [];
  for (let i = 0; i < count; i++) {
    const record = {
      v: 1,
      kind: "metrics",
      host,
      check: "node-client",
      severity: "info",
      subject: options.eventMode,
      summary: `event ${i}`,
      data: { seq: i, busy_pct: i % 100 },
    };
    sent.push(client.emit("metrics", record, EventTime.now()));
  }
  await Promise.all(sent);
  await client.disconnect();
  process.stdout.write(JSON.stringify({ sent: count }) + "\n");
}

const timer = setTimeout(() => {
  console.error("timed out");
  process.exit(1);
}, 30000);
main().then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (e) => {
    console.error(`client error: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
