import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/**
 * An HTTP answer as data: the hot routes (bid, notices) compute one, and send it either through
 * Fastify or straight on Node's response (the server in front of Fastify, src/app.ts).
 */
export interface HttpAnswer {
  status: number;
  headers: OutgoingHttpHeaders;
  payload: Buffer | string | undefined;
}

export const JSON_TYPE = 'application/json; charset=utf-8';

/** `{"error": reason}`, as the routes answer what they refuse. */
export function errorAnswer(status: number, reason: string, headers: OutgoingHttpHeaders = {}): HttpAnswer {
  headers['content-type'] = JSON_TYPE;
  return { status, headers, payload: JSON.stringify({ error: reason }) };
}

/** What Fastify answers for an exception in a handler, without the process dying. */
export function internalError(): HttpAnswer {
  return errorAnswer(500, 'internal error');
}

/** Sends on Node's response: one writeHead and one end, so headers and payload leave in one write. */
export function sendRaw(res: ServerResponse, a: HttpAnswer): void {
  const payload = a.payload;
  if (payload !== undefined) a.headers['content-length'] = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  res.writeHead(a.status, a.headers);
  res.end(payload);
}

/** Sends through Fastify's reply (its hooks and access log see it). */
export function sendFastify(reply: FastifyReply, a: HttpAnswer): void {
  void reply.code(a.status).headers(a.headers).send(a.payload);
}
