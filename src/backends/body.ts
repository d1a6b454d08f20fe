/**
 * Reading an upstream's answer with a size bound. Shaped calls (the backends' searches, the compat routes'
 * upstream calls) read the whole answer before parsing it, so an answer without a bound — a misbehaving or
 * hostile upstream sending 200 MB, or bytes without end — would be held in memory whole. Over the bound the
 * read stops, the connection is released, and the caller answers with the backend's unavailable fallback.
 */

import { finished, Readable } from "node:stream";

/** The largest answer read from an upstream on a shaped call: far above any search answer (50 results). */
export const MAX_UPSTREAM_BODY_BYTES = 8 * 1024 * 1024;

export class BodyTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`upstream answer over ${limitBytes} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/**
 * The body's text (UTF-8), read chunk by chunk; throws `BodyTooLargeError` as soon as more than `limitBytes`
 * arrived, after calling `stop` (which must cancel the stream or destroy the socket).
 */
export async function readBoundedText(
  body: AsyncIterable<Uint8Array> | null | undefined,
  stop: () => void,
  limitBytes = MAX_UPSTREAM_BODY_BYTES,
): Promise<string> {
  if (body == null) return "";
  if (body instanceof Readable) return readStream(body, stop, limitBytes);
  // The bytes are kept and decoded once at the end (one `Buffer#toString`, where a streaming TextDecoder per chunk
  // cost several times as much on a search answer: issue 29); a sequence split between chunks decodes whole.
  const chunks: Uint8Array[] = [];
  let received = 0;
  for await (const chunk of body) {
    received += chunk.byteLength;
    if (received > limitBytes) {
      stop();
      throw new BodyTooLargeError(limitBytes);
    }
    chunks.push(chunk);
  }
  return textOf(chunks, received);
}

function textOf(chunks: readonly Uint8Array[], received: number): string {
  if (chunks.length === 1) {
    const only = chunks[0] as Uint8Array;
    return Buffer.from(only.buffer, only.byteOffset, only.byteLength).toString("utf8");
  }
  return Buffer.concat(chunks, received).toString("utf8");
}

/**
 * `readBoundedText` of a Node stream (undici's answer body, a decoder): its `data` events, not its async iterator
 * (a promise and an iterator result per chunk, and the iterator's own bookkeeping: issue 29). The same outcomes:
 * the text at the end, the stream's error, a premature close (`finished`), `BodyTooLargeError` after `stop`.
 */
function readStream(body: Readable, stop: () => void, limitBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let received = 0;
    let over = false;
    const onData = (chunk: Uint8Array) => {
      if (over) return;
      received += chunk.byteLength;
      if (received > limitBytes) {
        over = true;
        body.off("data", onData);
        stop();
        reject(new BodyTooLargeError(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    body.on("data", onData);
    finished(body, (err) => {
      if (over) return;
      body.off("data", onData);
      if (err) reject(err);
      else resolve(textOf(chunks, received));
    });
  });
}
