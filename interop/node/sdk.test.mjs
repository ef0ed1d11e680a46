// Drives `harness sim serve` with the official OpenAI Node SDK, as a user
// of the sim would: node --test sdk.test.mjs, with SIM_BASE_URL the sim's
// base URL (http://127.0.0.1:PORT/v1). node_test.go starts the sim and
// runs this file; it fails when any test here does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

const baseURL = process.env.SIM_BASE_URL;
if (!baseURL) {
  throw new Error('SIM_BASE_URL is not set: run this file through node_test.go, or against `harness sim serve`');
}

// No retries: a failure must show as itself, not as a slow success.
const client = new OpenAI({ baseURL, apiKey: 'sk-unused', maxRetries: 0, timeout: 10_000 });

const ask = (task) => [{ role: 'user', content: task }];

const stringTool = (name, property) => ({
  type: 'function',
  function: {
    name,
    parameters: { type: 'object', properties: { [property]: { type: 'string' } }, required: [property] },
  },
});

const tools = [stringTool('search', 'query'), stringTool('fetch', 'url')];

const summary = (task) => `[sim] Summary of "${task}"\nEstablished: nothing.\nNot established: nothing.`;

// collect reads a stream of chunks into one message per choice index.
async function collect(stream) {
  const choices = [];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const m = (choices[c.index] ??= { content: '', finish: null, calls: [] });
      if (c.delta.content) m.content += c.delta.content;
      for (const tc of c.delta.tool_calls ?? []) {
        const call = (m.calls[tc.index] ??= { id: '', name: '', arguments: '' });
        if (tc.id) call.id = tc.id;
        if (tc.function?.name) call.name = tc.function.name;
        if (tc.function?.arguments) call.arguments += tc.function.arguments;
      }
      if (c.finish_reason) m.finish = c.finish_reason;
    }
  }
  return { choices, usage };
}

test('lists the one model', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['sim']);
  const m = await client.models.retrieve('sim');
  assert.equal(m.id, 'sim');
});

test('a plain completion', async () => {
  const res = await client.chat.completions.create({ model: 'sim', messages: ask('find cats') });
  assert.equal(res.object, 'chat.completion');
  assert.equal(res.model, 'sim');
  assert.equal(res.choices.length, 1);
  assert.equal(res.choices[0].message.content, summary('find cats'));
  assert.equal(res.choices[0].finish_reason, 'stop');
  assert.ok(res.usage.total_tokens > 0);
});

test('a streamed completion says what the plain one says', async () => {
  const stream = await client.chat.completions.create({
    model: 'sim', messages: ask('find cats'), stream: true, stream_options: { include_usage: true },
  });
  const { choices, usage } = await collect(stream);
  assert.equal(choices.length, 1);
  assert.equal(choices[0].content, summary('find cats'));
  assert.equal(choices[0].finish, 'stop');
  assert.ok(usage.total_tokens > 0);

  // The SDK's own stream helper accumulates the same message.
  const runner = client.chat.completions.stream({ model: 'sim', messages: ask('find cats') });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, summary('find cats'));
});

for (const stream of [false, true]) {
  test(`tool calls both ways (stream=${stream})`, async () => {
    const messages = ask('find cats');
    let msg;
    if (stream) {
      const { choices } = await collect(await client.chat.completions.create({ model: 'sim', messages, tools, stream }));
      assert.equal(choices[0].finish, 'tool_calls');
      msg = {
        role: 'assistant',
        content: null,
        tool_calls: choices[0].calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      };
    } else {
      const res = await client.chat.completions.create({ model: 'sim', messages, tools });
      assert.equal(res.choices[0].finish_reason, 'tool_calls');
      msg = res.choices[0].message;
    }
    assert.deepEqual(
      msg.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
      [['search', { query: 'find cats' }], ['fetch', { url: 'https://example.com/sim' }]],
    );
    messages.push(msg);
    messages.push({ role: 'tool', tool_call_id: msg.tool_calls[0].id, content: '3 cats' });
    messages.push({ role: 'tool', tool_call_id: msg.tool_calls[1].id, content: 'error: timeout' });
    const res = await client.chat.completions.create({ model: 'sim', messages, tools });
    assert.equal(res.choices[0].message.content, '[sim] Answer to "find cats": search returned 3 cats; fetch failed: error: timeout.');
    assert.equal(res.choices[0].finish_reason, 'stop');
  });
}

test('tool_choice: none, required, a named function, and one not offered', async () => {
  const none = await client.chat.completions.create({ model: 'sim', messages: ask('find cats'), tools, tool_choice: 'none' });
  assert.equal(none.choices[0].message.tool_calls, undefined);
  assert.equal(none.choices[0].message.content, '[sim] Answer to "find cats": no tool results.');

  const named = await client.chat.completions.create({
    model: 'sim', messages: ask('find cats'), tools, tool_choice: { type: 'function', function: { name: 'fetch' } },
  });
  assert.deepEqual(named.choices[0].message.tool_calls.map((c) => c.function.name), ['fetch']);

  await assert.rejects(
    client.chat.completions.create({
      model: 'sim', messages: ask('find cats'), tools, tool_choice: { type: 'function', function: { name: 'delete_all' } },
    }),
    (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.type, 'invalid_request_error');
      assert.equal(err.param, 'tool_choice');
      assert.match(err.message, /function 'delete_all' not found in 'tools'/);
      return true;
    },
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'sim', messages: ask('find cats'), tool_choice: 'required' }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'tool_choice',
  );
});

for (const stream of [false, true]) {
  test(`runTools calls the functions and returns the answer (stream=${stream})`, async () => {
    const seen = [];
    const runner = client.chat.completions.runTools({
      model: 'sim',
      messages: ask('find cats'),
      stream,
      tools: [
        {
          type: 'function',
          function: {
            name: 'search',
            description: 'Searches the web.',
            parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
            parse: JSON.parse,
            function: async ({ query }) => {
              seen.push(query);
              return `3 results for ${query}`;
            },
          },
        },
      ],
    });
    const content = await runner.finalContent();
    assert.deepEqual(seen, ['find cats']);
    assert.equal(content, '[sim] Answer to "find cats": search returned 3 results for find cats.');
  });
}

test('runTools with zodFunction and a forced tool', async () => {
  const Lookup = z.object({ sku: z.string(), count: z.number().int().min(2) });
  const runner = client.chat.completions.runTools({
    model: 'sim',
    messages: ask('restock'),
    tool_choice: { type: 'function', function: { name: 'lookup' } },
    tools: [zodFunction({ name: 'lookup', parameters: Lookup, function: ({ sku, count }) => `${count} of ${sku}` })],
  });
  const calls = [];
  runner.on('functionToolCallResult', (r) => calls.push(r));
  await runner.done();
  // A forced tool is called once, and the runner stops there.
  assert.equal(calls.length, 1);
  assert.match(calls[0], /^2 of sim-[0-9a-f]{8}$/);
});

const Report = z.object({
  answer: z.string(),
  count: z.number().int().min(3),
  found: z.boolean(),
  kind: z.enum(['tabby', 'siamese']),
  tags: z.array(z.string()).min(1),
  contact: z.email(),
  seen: z.iso.datetime(),
  id: z.uuid(),
  maybe: z.string().nullable(),
  home: z.object({ zip: z.string().regex(/^[0-9]{5}$/), city: z.string() }),
});

test('parse() with a zod schema', async () => {
  const res = await client.chat.completions.parse({
    model: 'sim', messages: ask('find cats'), response_format: zodResponseFormat(Report, 'report'),
  });
  const parsed = res.choices[0].message.parsed;
  assert.ok(parsed, 'no parsed answer');
  assert.equal(parsed.answer, summary('find cats'));
  assert.equal(parsed.count, 3);
  assert.equal(parsed.kind, 'tabby');
  assert.equal(parsed.home.zip, '00000');
  assert.deepEqual(Report.parse(JSON.parse(res.choices[0].message.content)), parsed);
});

test('parse() with strict tools, then the answer streamed', async () => {
  const messages = ask('find cats');
  const format = zodResponseFormat(z.object({ answer: z.string(), query: z.string() }), 'cats');
  const strictTools = [
    zodFunction({ name: 'search', parameters: z.object({ query: z.string() }) }),
    zodFunction({ name: 'fetch', parameters: z.object({ url: z.url() }) }),
  ];
  const first = await client.chat.completions.parse({ model: 'sim', messages, tools: strictTools, response_format: format });
  const msg = first.choices[0].message;
  assert.equal(msg.parsed, null);
  assert.deepEqual(
    msg.tool_calls.map((c) => c.function.parsed_arguments),
    [{ query: 'find cats' }, { url: 'https://example.com/sim' }],
  );
  messages.push(msg, ...msg.tool_calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: 'ok' })));
  const stream = client.chat.completions.stream({ model: 'sim', messages, tools: strictTools, response_format: format });
  const final = await stream.finalChatCompletion();
  assert.deepEqual(final.choices[0].message.parsed, {
    answer: '[sim] Answer to "find cats": search returned ok; fetch returned ok.',
    query: 'find cats',
  });
});

test('json_object mode', async () => {
  const res = await client.chat.completions.create({
    model: 'sim', messages: ask('find cats, as JSON'), response_format: { type: 'json_object' },
  });
  assert.deepEqual(JSON.parse(res.choices[0].message.content), { answer: summary('find cats, as JSON') });
  await assert.rejects(
    client.chat.completions.create({ model: 'sim', messages: ask('find cats'), response_format: { type: 'json_object' } }),
    (err) => err instanceof OpenAI.BadRequestError && /word 'json'/.test(err.message),
  );
});

test('n choices, streamed and not', async () => {
  const res = await client.chat.completions.create({ model: 'sim', messages: ask('find cats'), tools, n: 2 });
  assert.deepEqual(res.choices.map((c) => c.index), [0, 1]);
  const ids = res.choices.flatMap((c) => c.message.tool_calls.map((t) => t.id));
  assert.equal(new Set(ids).size, 4, 'each choice has tool call ids of its own');

  const { choices } = await collect(await client.chat.completions.create({ model: 'sim', messages: ask('find cats'), n: 3, stream: true }));
  assert.equal(choices.length, 3);
  for (const c of choices) {
    assert.equal(c.content, summary('find cats'));
    assert.equal(c.finish, 'stop');
  }
});

// The Responses API, POST /v1/responses: the same policy in its typed
// events. The faults come from a second sim (faults.yaml), by turn.
const faults = new OpenAI({ baseURL: process.env.SIM_FAULTS_BASE_URL, apiKey: 'sk-unused', maxRetries: 0, timeout: 10_000 });

const responseTools = [{
  type: 'function', name: 'search', strict: false,
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
}];

test('a streamed response calls a tool after its reasoning summary, and answers from the output', async () => {
  const stream = await client.responses.create({ model: 'sim', input: 'find cats', tools: responseTools, stream: true });
  const types = [];
  const summaries = [];
  let call;
  let completed;
  for await (const ev of stream) {
    assert.equal(ev.sequence_number, types.length);
    types.push(ev.type);
    if (ev.type === 'response.reasoning_summary_part.done') summaries.push(ev.part.text);
    if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') call = ev.item;
    if (ev.type === 'response.completed') completed = ev.response;
  }
  assert.deepEqual(types.slice(0, 4), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.reasoning_summary_part.added',
  ]);
  assert.ok(types.includes('response.function_call_arguments.delta'));
  assert.ok(types.includes('response.function_call_arguments.done'));
  assert.equal(types.at(-1), 'response.completed');
  assert.deepEqual(summaries, ['[sim] Next: call search.']);
  assert.equal(call.name, 'search');
  assert.deepEqual(JSON.parse(call.arguments), { query: 'find cats' });
  assert.equal(completed.status, 'completed');
  assert.deepEqual(completed.output.map((i) => i.type), ['reasoning', 'function_call']);
  assert.ok(completed.usage.total_tokens > 0);
  assert.ok(completed.usage.output_tokens_details.reasoning_tokens > 0);

  // The round trip: the output items go back as they came, then the
  // call's output; the stream helper gathers the answer.
  const input = [{ role: 'user', content: 'find cats' }, ...completed.output, { type: 'function_call_output', call_id: call.call_id, output: '3 cats' }];
  const answer = '[sim] Answer to "find cats": search returned 3 cats.';
  const final = await client.responses.stream({ model: 'sim', input, tools: responseTools }).finalResponse();
  assert.equal(final.output_text, answer);
  const second = await client.responses.create({ model: 'sim', input, tools: responseTools });
  assert.equal(second.object, 'response');
  assert.equal(second.status, 'completed');
  assert.equal(second.output_text, answer);
});

test('a response that is not streamed says what the stream says', async () => {
  const res = await client.responses.create({ model: 'sim', input: 'find cats', instructions: 'Be brief.' });
  assert.equal(res.model, 'sim');
  assert.deepEqual(res.output.map((i) => i.type), ['reasoning', 'message']);
  assert.equal(res.output_text, summary('find cats'));
  assert.ok(res.usage.input_tokens > 0);
});

test('the Responses API refuses what OpenAI refuses', async () => {
  const bad = [
    [{ model: 'sim', input: [{ role: 'user', content: 'x' }, { type: 'function_call_output', call_id: 'call_none', output: 'ok' }] },
      /No tool call found for function call output with call_id call_none/],
    [{ model: 'sim', input: [{ role: 'user', content: 'x' }, { type: 'function_call', call_id: 'call_1', name: 'search', arguments: '{}' }], tools: responseTools },
      /No tool output found for function call call_1/],
    [{ model: 'sim', input: 'x', tools: responseTools, tool_choice: { type: 'function', name: 'fetch' } },
      /function 'fetch' not found in 'tools'/],
  ];
  for (const [body, message] of bad) {
    await assert.rejects(client.responses.create(body), (err) => err instanceof OpenAI.BadRequestError && message.test(err.message));
  }
});

test('an error event in a Responses stream is an SDK error', async () => {
  const stream = await faults.responses.create({ model: 'sim', input: 'find cats', stream: true });
  const seen = [];
  await assert.rejects(
    async () => { for await (const ev of stream) seen.push(ev.type); },
    (err) => err instanceof OpenAI.APIError && err.code === 'rate_limit_exceeded',
  );
  assert.deepEqual(seen, ['response.created', 'response.in_progress', 'response.output_item.added']);
});

test('a failed response ends its stream with response.failed and its error', async () => {
  const input = [{ role: 'user', content: 'find cats' }, { role: 'assistant', content: 'Looking.' }, { role: 'user', content: 'go on' }];
  const stream = await faults.responses.create({ model: 'sim', input, stream: true });
  let last;
  for await (const ev of stream) last = ev;
  assert.equal(last.type, 'response.failed');
  assert.equal(last.response.status, 'failed');
  assert.equal(last.response.error.code, 'server_error');
});

test('a 429 before a response is the SDK RateLimitError', async () => {
  const input = [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' },
    { role: 'assistant', content: 'd' }, { role: 'user', content: 'e' }];
  await assert.rejects(faults.responses.create({ model: 'sim', input, stream: true }), (err) => err instanceof OpenAI.RateLimitError);
});

test('an answer cut at max_completion_tokens finishes for length, streamed and not', async () => {
  const cut = summary('hi there').slice(0, 20); // 5 tokens of four bytes
  const res = await client.chat.completions.create({ model: 'sim', messages: ask('hi there'), max_completion_tokens: 5 });
  assert.equal(res.choices[0].finish_reason, 'length');
  assert.equal(res.choices[0].message.content, cut);
  assert.equal(res.usage.completion_tokens, 5);
  const { choices } = await collect(await client.chat.completions.create({
    model: 'sim', messages: ask('hi there'), max_completion_tokens: 5, stream: true,
  }));
  assert.equal(choices[0].finish, 'length');
  assert.equal(choices[0].content, cut);
});

test('a response cut at max_output_tokens is incomplete, streamed and not', async () => {
  // The reasoning summary's 5 tokens are spent first; the answer gets 11.
  const cut = summary('hi there').slice(0, 44);
  const res = await client.responses.create({ model: 'sim', input: 'hi there', max_output_tokens: 16 });
  assert.equal(res.status, 'incomplete');
  assert.deepEqual(res.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(res.max_output_tokens, 16);
  assert.equal(res.output_text, cut);
  assert.equal(res.usage.output_tokens, 16);
  const stream = await client.responses.create({ model: 'sim', input: 'hi there', max_output_tokens: 16, stream: true });
  let last;
  for await (const ev of stream) last = ev;
  assert.equal(last.type, 'response.incomplete');
  const text = last.response.output.filter((i) => i.type === 'message').flatMap((i) => i.content).map((c) => c.text).join('');
  assert.equal(text, cut);
  assert.equal(last.response.output.at(-1).status, 'incomplete');
  await assert.rejects(client.responses.create({ model: 'sim', input: 'hi there', max_output_tokens: 8 }),
    (err) => err instanceof OpenAI.BadRequestError && /Expected a value >= 16, but got 8 instead/.test(err.message));
});
