// The outbox holds answers until the crash journal's commit of their event-loop turn, but never
// longer than its bound: a long turn sends what it holds once the oldest answer has waited that
// long. The clock and the journal are the test's; the replies are Fastify-shaped fakes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HttpAnswer } from '../../src/http/answer';
import type { FastifyReply } from 'fastify';
import { Outbox } from '../../src/http/outbox';
import { HttpStats } from '../../src/http/server';

function setup(holdMaxMs: number) {
  let now = 0;
  const sent: string[] = [];
  const journal = { commits: 0, pending: () => true, commit: () => void journal.commits++ };
  const outbox = new Outbox(new HttpStats(), { error: () => undefined }, holdMaxMs, () => now);
  outbox.setBarrier(journal);
  const reply = (name: string) => {
    const r = {
      sent: false,
      raw: { req: { url: '/openrtb2/bid' } },
      code: () => r,
      headers: () => r,
      send: () => {
        r.sent = true;
        sent.push(name);
      },
    };
    return r as unknown as FastifyReply;
  };
  const answer: HttpAnswer = { status: 204, headers: {}, payload: undefined };
  return {
    journal,
    sent,
    send: (name: string) => outbox.send(reply(name), answer),
    advance: (ms: number) => (now += ms),
  };
}

const checkPhase = () => new Promise((r) => setImmediate(r));

describe('Outbox', () => {
  it('holds the answers of a turn for one commit in its check phase', async () => {
    const o = setup(2);
    o.send('a');
    o.advance(1);
    o.send('b');
    assert.deepEqual(o.sent, [], 'nothing leaves before the journal holds its records');
    assert.equal(o.journal.commits, 0);
    await checkPhase();
    assert.deepEqual(o.sent, ['a', 'b']);
    assert.equal(o.journal.commits, 1, 'one write for the turn');
  });

  it('in a long turn, commits and sends once the oldest held answer has waited the bound', async () => {
    const o = setup(2);
    o.send('a');
    o.advance(1);
    o.send('b');
    o.advance(1.5);
    o.send('c'); // the turn goes on: a has waited 2.5 ms
    assert.deepEqual(o.sent, ['a', 'b', 'c'], 'sent within the turn, in order');
    assert.equal(o.journal.commits, 1, 'after their records were committed');
    o.send('d');
    o.advance(0.5);
    o.send('e');
    assert.deepEqual(o.sent, ['a', 'b', 'c'], 'the bound counts from the oldest answer still held');
    await checkPhase();
    assert.deepEqual(o.sent, ['a', 'b', 'c', 'd', 'e']);
    assert.equal(o.journal.commits, 2);
  });
});
