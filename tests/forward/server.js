// A Fluent Forward receiver for zpulse's Forward sink tests: the FluentServer of the npm
// package @fluent-org/logger, an implementation independent of ours.
//
//   node server.js [--port N] [--shared-key KEY] [--hostname NAME]
//                  [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]]
//
// Listens on 127.0.0.1 (port 0: any free port) and prints, one JSON line each on stdout:
//   {"listening": PORT}                                   once ready
//   {"tag", "time": [seconds, nanos], "record", "chunk", "message"}
//                                                         for every entry received
// where "message" counts the batches (transport messages) this server has received.
// With --tls-client-ca the server requires a client certificate signed by that CA.
// The server stops when its standard input closes (so it never outlives the test that
// started it), or on SIGTERM/SIGINT; the batch being handled is finished first, but an ack
// still queued for sending may be lost, as with a real receiver that stops.
"use strict";

const fs = require("fs");
const { FluentServer } = require("@fluent-org/logger");
// The server acks a batch and then emits its entries without the chunk id; wrapping the
// protocol's parser (which the server calls through the module object) lets us print the
// chunk of each entry, so the tests can tell a resent batch from a duplicated event.
const protocol = require("@fluent-org/logger/build/src/protocol");

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  const key = process.argv[i];
  const value = process.argv[i + 1];
  if (!key.startsWith("--") || value === undefined) {
    console.error(`usage: ${key} needs a value`);
    process.exit(2);
  }
  args[key.slice(2)] = value;
}

let currentChunk = null;
let messages = 0;
const parseTransport = protocol.parseTransport;
protocol.parseTransport = (message) => {
  const parsed = parseTransport(message);
  currentChunk = parsed.chunk || null;
  messages += 1;
  return parsed;
};
const checkPing = protocol.checkPing;
protocol.checkPing = (...a) => {
  try {
    return checkPing(...a);
  } catch (e) {
    console.error(`handshake refused: ${e.message}`);
    throw e;
  }
};

const options = { listenOptions: { host: "127.0.0.1", port: Number(args.port || 0) } };
if (args["shared-key"]) {
  options.security = {
    serverHostname: args.hostname || "fluent-test-server",
    sharedKey: args["shared-key"],
  };
}
if (args["tls-cert"]) {
  options.tlsOptions = {
    cert: fs.readFileSync(args["tls-cert"]),
    key: fs.readFileSync(args["tls-key"]),
  };
  if (args["tls-client-ca"]) {
    options.tlsOptions.ca = fs.readFileSync(args["tls-client-ca"]);
    options.tlsOptions.requestCert = true;
    options.tlsOptions.rejectUnauthorized = true;
  }
}

const server = new FluentServer(options);
server.on("entry", (tag, time, record) => {
  const t = typeof time === "number" ? [time, 0] : [time.epoch, time.nano];
  process.stdout.write(JSON.stringify({ tag, time: t, record, chunk: currentChunk, message: messages }) + "\n");
});
if (server.server && server.server.on) {
  server.server.on("tlsClientError", (e) => console.error(`TLS client error: ${e.message}`));
}
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => process.exit(0));
}
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
server.listen().then(() => {
  process.stdout.write(JSON.stringify({ listening: server.port }) + "\n");
});
