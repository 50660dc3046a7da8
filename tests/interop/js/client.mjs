// A client built only on @a2a-js/sdk that knows nothing but an agent's base URL.
//
//   node client.mjs --url http://127.0.0.1:8080 [--transport JSONRPC|HTTP+JSON] card|send|stream [TEXT]
//
// The SDK's ClientFactory resolves <url>/.well-known/agent-card.json with its
// DefaultAgentCardResolver and picks a transport from the card's supportedInterfaces
// (--transport only states a preference, as ClientFactoryOptions.preferredTransports).
// The message is plain text: no metadata, no skill. Each result is printed as one JSON
// line in the protocol's JSON form: {"event": "card"|"task"|"message"|<stream case>, ...};
// a failure prints {"error": {"type", "message", "code"?}} (the SDK error's name and, for
// JSON-RPC, the envelope's code) and exits with 1.

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import { AgentCard, Message, StreamResponse, Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { url: { type: 'string' }, transport: { type: 'string' } },
});
const [command, text = 'hello'] = positionals;

function print(line) {
  process.stdout.write(JSON.stringify(line) + '\n');
}

function factory() {
  const overrides = values.transport ? { preferredTransports: [values.transport] } : {};
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, overrides));
}

function request() {
  const message = Message.fromJSON({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] });
  return { message };
}

async function main() {
  if (!values.url || !['card', 'send', 'stream'].includes(command)) {
    throw new Error('usage: client.mjs --url URL [--transport NAME] card|send|stream [TEXT]');
  }
  const client = await factory().createFromUrl(values.url);
  print({ event: 'transport', protocol: client.transport.protocolName, version: client.protocolVersion });
  if (command === 'card') {
    print({ event: 'card', card: AgentCard.toJSON(await client.getAgentCard()) });
  } else if (command === 'send') {
    const result = await client.sendMessage(request());
    if ('status' in result) print({ event: 'task', task: Task.toJSON(result) });
    else print({ event: 'message', message: Message.toJSON(result) });
  } else {
    for await (const event of client.sendMessageStream(request())) {
      const json = StreamResponse.toJSON(event);
      const [kind] = Object.keys(json);
      print({ event: kind, ...json });
    }
  }
}

try {
  await main();
} catch (error) {
  const code = error?.envelopeCode ?? error?.code;
  print({ error: { type: error?.name ?? 'Error', message: String(error?.message ?? error), code } });
  process.exitCode = 1;
}
