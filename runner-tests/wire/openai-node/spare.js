// A program that reports what a spare process could have left behind for
// it to see (shims/node/preload.cjs, collectGarbage): the spare takes V8's
// `gc` function to collect its start-up garbage before its row, and the
// program, like one started fresh, must find no `gc` in its own globals nor
// in a context it makes. One request, so the row has a trace.
'use strict';

const vm = require('vm');

(async () => {
  const r = await fetch(process.env.FAULTMATRIX_URL_API + '/v1/ping', { method: 'POST', body: '{}' });
  await r.text();
  const seen = `gc ${typeof globalThis.gc}, in a new context ${vm.runInNewContext('typeof gc')}`;
  process.stdout.write(JSON.stringify({ outcome: 'success', output: seen }) + '\n');
})();
