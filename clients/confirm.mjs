// Confirm (or decline) a demo_delete_note call through an official
// TypeScript SDK client's elicitation handler.
//
//   node confirm.mjs v1|v2 legacy|auto URL TOKEN NOTE_ID accept|decline
//
// Connects over streamable HTTP with the bearer token, declares form
// elicitation, answers every elicitation/create with ACTION (accept sends
// {confirm: true}), calls demo_delete_note {id: NOTE_ID} and prints
// {"version": VERSION, "asked": [MESSAGE, ...], "result": CallToolResult}.
// On 2025-11-25 the question arrives on the call's SSE stream and the
// answer is POSTed; on 2026-07-28 it is an input_required result the
// client fulfils and retries with.
const [sdk, mode, url, token, noteId, action] = process.argv.slice(2);
const transportOptions = { requestInit: { headers: { Authorization: `Bearer ${token}` } } };
const info = { name: "confirm", version: "1" };
const capabilities = { elicitation: { form: {} } };
const asked = [];
const answer = (message) => {
  asked.push(message);
  return action === "accept"
    ? { action: "accept", content: { confirm: true } }
    : { action: "decline" };
};

async function connect() {
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
    const client = new Client(info, { capabilities });
    client.setRequestHandler(ElicitRequestSchema, (request) =>
      answer(request.params.message),
    );
    const transport = new StreamableHTTPClientTransport(new URL(url), transportOptions);
    await client.connect(transport);
    return { client, version: () => "2025-11-25" };
  }
  const { Client, StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/client"
  );
  const client = new Client(info, { capabilities, versionNegotiation: { mode } });
  client.setRequestHandler("elicitation/create", (request) =>
    answer(request.params.message),
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url), transportOptions));
  return { client, version: () => client.getNegotiatedProtocolVersion() };
}

const { client, version } = await connect();
const result = await client.callTool({
  name: "demo_delete_note",
  arguments: { id: Number(noteId) },
});
process.stdout.write(`${JSON.stringify({ version: version(), asked, result })}\n`);
await client.close();
