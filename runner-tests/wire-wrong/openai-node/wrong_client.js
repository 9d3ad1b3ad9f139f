// A client made wrong on purpose: a service's own retry wrapper around the
// openai npm SDK (maxRetries: 0) that backs off 0.5 s * 2^n on 429 and 5xx
// but never reads Retry-After. Its row must fail with a diff naming the
// call: wrong.yaml. Unchanged by the clock, like client.js.
'use strict';

const path = require('path');
const OpenAI = require(process.env.FM_OPENAI_MODULE || path.join(__dirname, '..', '..', '..', 'shims', 'node', 'sdk', 'node_modules', 'openai'));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const client = new OpenAI({ baseURL: process.env.FAULTMATRIX_URL_API + '/v1', apiKey: 'sk-test', maxRetries: 0 });
  for (let n = 0; ; n++) {
    try {
      const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] });
      return { outcome: 'success', output: r.choices[0].message.content };
    } catch (e) {
      const retryable = e instanceof OpenAI.APIError && (e.status === 429 || e.status >= 500);
      if (!retryable || n === 2) return { outcome: 'error', stop: 'status-error', code: `HTTP_${e.status}` };
      await sleep(500 * 2 ** n * (1 - 0.25 * Math.random())); // the bug: e.headers['retry-after'] is never read
    }
  }
}

main().then((r) => {
  process.stdout.write(JSON.stringify(r) + '\n');
  process.exitCode = r.outcome === 'success' ? 0 : 1;
});
