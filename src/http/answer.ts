import type { OutgoingHttpHeaders } from 'node:http';

/**
 * An HTTP answer as data: every route computes one and the server sends it (src/http/outbox.ts), so
 * that no route ever writes to a socket itself.
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

/** A bug, not the client's doing. */
export function internalError(): HttpAnswer {
  return errorAnswer(500, 'internal error');
}

export function noContent(headers: OutgoingHttpHeaders = {}): HttpAnswer {
  return { status: 204, headers, payload: undefined };
}

/** A JSON document. */
export function jsonAnswer(status: number, body: unknown): HttpAnswer {
  return { status, headers: { 'content-type': JSON_TYPE }, payload: JSON.stringify(body) };
}
