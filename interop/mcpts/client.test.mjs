// The official TypeScript SDK client (@modelcontextprotocol/sdk, as
// package-lock.json pins it) against the kit's MCP handler, which
// mcpts_test.go serves at KIT_MCP_URL: list, progress, an abort, the
// budget in _meta, and no error on the client's side throughout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = process.env.KIT_MCP_URL;
const BUDGET = 'io.github.glidepath/budget-remaining-ms';

// Everything the client reports as an error: its onerror (the SDK's own
// complaints, such as "Received a response for an unknown message ID",
// go there) and console.error.
const errors = [];
const consoleError = console.error;
console.error = (...args) => {
  errors.push(args.map(String).join(' '));
  consoleError(...args);
};

function text(result) {
  assert.equal(result.content.length, 1, JSON.stringify(result));
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

test('the official TypeScript client drives the kit', async (t) => {
  assert.ok(url, 'KIT_MCP_URL is not set');
  const client = new Client({ name: 'glidepath-interop-mcpts', version: '1' });
  client.onerror = (err) => errors.push(`client.onerror: ${err}`);
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  // Closed whatever fails, or its open streams would keep node running.
  t.after(() => client.close());

  await t.test('tools/list offers the tools with their schemas and hints', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name).sort();
    assert.deepEqual(names, ['cancelled', 'lease', 'steps', 'wait']);
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, 'object', tool.name);
      assert.equal(tool.annotations?.readOnlyHint, true, tool.name);
    }
  });

  await t.test('a call reports progress that strictly increases, then its result', async () => {
    const heard = [];
    const result = await client.callTool({ name: 'steps', arguments: { n: 3 } }, undefined, {
      onprogress: (p) => heard.push(p.progress),
    });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, { done: 3 });
    assert.ok(heard.length >= 1, 'no progress was heard');
    for (let i = 1; i < heard.length; i++) {
      assert.ok(heard[i] > heard[i - 1], `progress ${heard} does not strictly increase`);
    }
    assert.ok(heard.at(-1) <= 3, `progress ${heard}`);
  });

  await t.test('an abort sends notifications/cancelled, the handler is cancelled, and no response comes', async () => {
    const ac = new AbortController();
    const call = client.callTool({ name: 'wait', arguments: {} }, undefined, {
      signal: ac.signal,
      // The handler reports progress once it runs, then waits: abort then.
      onprogress: () => ac.abort('the user aborted'),
    });
    await assert.rejects(call, (err) => String(err).includes('the user aborted'));
    // The kit's "cancelled" tool answers once the aborted handler has
    // ended and its request's stream is closed: what the kit would have
    // answered has been sent by then.
    const cause = await client.callTool({ name: 'cancelled', arguments: {} });
    assert.equal(text(cause), '"kit: call cancelled"');
  });

  await t.test('the budget in _meta is the handler\'s lease and deadline', async () => {
    const result = await client.callTool({ name: 'lease', arguments: {}, _meta: { [BUDGET]: 1500 } });
    const { lease_ms, deadline_ms } = result.structuredContent;
    assert.equal(lease_ms, 1500);
    assert.ok(deadline_ms > 0 && deadline_ms <= 1500, `deadline in ${deadline_ms}ms`);

    const started = Date.now();
    const cut = await client.callTool({ name: 'wait', arguments: {}, _meta: { [BUDGET]: 300 } });
    const took = Date.now() - started;
    assert.equal(cut.isError, true, JSON.stringify(cut));
    assert.match(text(cut), /deadline_exceeded/);
    assert.ok(took >= 300 && took < 5000, `a call of 300ms took ${took}ms`);
    const cause = await client.callTool({ name: 'cancelled', arguments: {} });
    assert.match(text(cause), /^"budget: /, 'the handler\'s context ended by its budget');

    const none = await client.callTool({ name: 'wait', arguments: {}, _meta: { [BUDGET]: 0 } });
    assert.equal(none.isError, true, JSON.stringify(none));
    assert.match(text(none), /deadline_exceeded/);
  });

  // One more round trip, so that anything the kit sent for the aborted
  // call has been read, then the errors, before closing: the client's
  // own close aborts its standalone stream, which it reports.
  await client.listTools();
  assert.deepEqual(errors, [], `the client logged errors:\n${errors.join('\n')}`);
});
