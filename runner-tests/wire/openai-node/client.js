// The system under test for the openai Node matrices on the virtual clock:
// the official `openai` npm package (6.49.0, shims/node/sdk/package.json),
// used as a service would use it, pointed at faultmatrix's fixture server.
// Unchanged by the clock: the shim is installed by the environment
// (NODE_OPTIONS=--require shims/node/preload.cjs, FAULTMATRIX_CLOCK).
//
// faultmatrix sets FAULTMATRIX_URL_API (the route `api`); the SDK is given it
// as baseURL. This file only reports how the call ended, as one JSON line.
//
// Settings (from the matrix's `system.env`):
//   OPENAI_MAX_RETRIES  unset: the SDK default (maxRetries = 2)
//   OPENAI_TIMEOUT_MS   per attempt (default 5000)
//   FM_STREAM           "1": stream: true and read the events
//   FM_OPENAI_MODULE    where the package is (default: shims/node/sdk/node_modules/openai)
'use strict';

const path = require('path');

let OpenAI;
try {
  OpenAI = require(process.env.FM_OPENAI_MODULE || path.join(__dirname, '..', '..', '..', 'shims', 'node', 'sdk', 'node_modules', 'openai'));
} catch (e) {
  process.stderr.write('openai is not installed: (cd shims/node/sdk && npm ci)\n');
  process.exit(3);
}

async function main() {
  const options = {
    baseURL: process.env.FAULTMATRIX_URL_API + '/v1',
    apiKey: 'sk-test-not-a-real-key',
    timeout: Number(process.env.OPENAI_TIMEOUT_MS || 5000),
  };
  if (process.env.OPENAI_MAX_RETRIES !== undefined) options.maxRetries = Number(process.env.OPENAI_MAX_RETRIES);
  const client = new OpenAI(options);
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] };
  const headers = { 'x-request-id': process.env.FAULTMATRIX_REQUEST_ID || '' };
  try {
    if (process.env.FM_STREAM === '1') {
      const stream = await client.chat.completions.create({ ...request, stream: true }, { headers });
      let out = '';
      for await (const chunk of stream) {
        for (const choice of chunk.choices) if (choice.delta && choice.delta.content) out += choice.delta.content;
      }
      return { outcome: 'success', output: out };
    }
    const r = await client.chat.completions.create(request, { headers });
    return { outcome: 'success', output: r.choices[0].message.content };
  } catch (e) {
    if (e instanceof OpenAI.APIConnectionTimeoutError) return { outcome: 'error', stop: 'timeout' };
    if (e instanceof OpenAI.APIConnectionError) return { outcome: 'error', stop: 'connection-error' };
    if (e instanceof OpenAI.APIError && e.status) return { outcome: 'error', stop: 'status-error', code: `HTTP_${e.status}` };
    return { outcome: 'error', stop: 'exception', detail: e && e.name };
  }
}

main().then((result) => {
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exitCode = result.outcome === 'success' ? 0 : 1;
});
