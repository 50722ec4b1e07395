// Cancel a demo_slow call mid-way with an official TypeScript SDK client.
//
//   node cancel.mjs v1|v2 legacy|auto URL TOKEN [CANCEL_URL]
//
// Connects over streamable HTTP with the bearer token, starts demo_slow
// (30 s) and prints {"started": VERSION}. On the line "cancel" on stdin it
// aborts the call (the SDK sends notifications/cancelled on the 2025 wires
// and aborts the request on 2026-07-28) and prints {"aborted": MESSAGE}; on
// the line "echo" it calls demo_echo and prints {"echo": RESULT, "routed": N},
// then exits. With CANCEL_URL, every notifications/cancelled is POSTed
// there (another worker than the call's); N counts them.
import { createInterface } from "node:readline";

const [sdk, mode, url, token, cancelUrl] = process.argv.slice(2);
const requestInit = { headers: { Authorization: `Bearer ${token}` } };
const info = { name: "cancel", version: "1" };
let routed = 0;
const isCancel = (init) =>
  typeof init?.body === "string" && init.body.includes('"notifications/cancelled"');
const fetchRouted = (target, init) => {
  if (cancelUrl && isCancel(init)) {
    routed += 1;
    return fetch(cancelUrl, init);
  }
  return fetch(target, init);
};
const options = { requestInit, fetch: fetchRouted };

async function connect() {
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    const client = new Client(info);
    await client.connect(new StreamableHTTPClientTransport(new URL(url), options));
    const call = (params, signal) => client.callTool(params, undefined, { signal });
    return { client, call, version: () => "2025-11-25" };
  }
  const { Client, StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/client"
  );
  const client = new Client(info, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), options));
  const call = (params, signal) => client.callTool(params, { signal });
  return { client, call, version: () => client.getNegotiatedProtocolVersion() };
}

const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
const { client, call, version } = await connect();
const controller = new AbortController();
const slow = call({ name: "demo_slow", arguments: { seconds: 30 } }, controller.signal);
say({ started: version() });

for await (const line of createInterface({ input: process.stdin })) {
  if (line === "cancel") {
    controller.abort("user");
    try {
      await slow;
      say({ aborted: null });
    } catch (error) {
      say({ aborted: String(error?.message ?? error) });
    }
  } else if (line === "echo") {
    const echo = await call({ name: "demo_echo", arguments: { text: "after" } });
    say({ echo, routed });
    break;
  }
}
await client.close();
