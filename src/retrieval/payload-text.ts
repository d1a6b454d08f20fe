/**
 * A cached payload as JSON text (issue 16: a cache hit writes its answer without serializing, and with Redis
 * without parsing, the whole payload). The text is `JSON.stringify(payload)` exactly, and it knows where its
 * `metadata` object is: a hit's answer is the text with that object replaced by the hit's own metadata (`cache`,
 * `queryTime`), so only the metadata (a few hundred bytes) is serialized per hit. The rest is parsed only when
 * something reads it: a drop-in door, the `cache` fallback, a single-flight result.
 */
import type { CachedPayload } from "../cache/types";
import type { RetrievalMetadata, RetrievalPayload } from "./payload";

/** What precedes the metadata object in a payload's text. */
const METADATA_KEY = ',"metadata":';

/** What a hit's metadata starts with: `queryTime` is a payload's first metadata field (./payload.ts `buildPayload`). */
const QUERY_TIME_KEY = '{"queryTime":';

/**
 * A stored metadata as a hit answers it: the object with `cache: "hit"` (frozen: every hit of the entry shares it),
 * and its JSON after the `queryTime` value (`,"totalResults":…,"cache":"hit",…}`), so that a hit's metadata JSON is
 * `{"queryTime":` + the hit's own time + `rest` (`hitJson`). `rest` is undefined for a metadata whose first field
 * is not `queryTime` (then the hit serializes its metadata).
 */
interface HitMetadata {
  metadata: RetrievalMetadata;
  rest: string | undefined;
}

/**
 * Stored metadata (parsed, frozen) and their hit metadata by the bytes of their metadata span (read as latin1: one
 * char per byte, nothing decoded): the entries of a Redis cache are read again on every hit (and checked by
 * src/cache/redis.ts, which reads their metadata), their metadata parsed once. Bounded: emptied when full.
 */
const metadataByBytes = new Map<string, { stored: RetrievalMetadata; hit: HitMetadata }>();
const MAX_STORED_METADATA = 1024;

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function hitMetadataOf(stored: RetrievalMetadata): HitMetadata {
  const metadata = deepFreeze({ ...structuredClone(stored), cache: "hit" as const });
  const json = JSON.stringify(metadata);
  const head = `${QUERY_TIME_KEY}${JSON.stringify(metadata.queryTime)},`;
  return { metadata, rest: json.startsWith(head) ? json.slice(head.length) : undefined };
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export class PayloadText {
  private parsed: CachedPayload | undefined;
  private meta: RetrievalMetadata | undefined;
  private before: string | undefined;
  private after: string | undefined;
  private hit: HitMetadata | undefined;

  /**
   * The text is `JSON.stringify` of a payload, held as a string or, as a Redis reply gave it, as its UTF-8 bytes
   * (`bytes`; then `text` is decoded only if something asks for it). Its `metadata` object is between
   * `metadataStart` and `metadataEnd`: UTF-16 code units of the string, or bytes of `bytes`.
   * `source`: the payload itself when the text was made from it (nothing to parse then).
   */
  private constructor(
    private decoded: string | undefined,
    readonly bytes: Buffer | undefined,
    readonly metadataStart: number,
    readonly metadataEnd: number,
    source: CachedPayload | undefined,
  ) {
    this.parsed = source;
  }

  /** The JSON text (decoded from `bytes` when first asked). */
  get text(): string {
    this.decoded ??= this.bytes?.toString("utf8") ?? "";
    return this.decoded;
  }

  /**
   * The text of a payload: `JSON.stringify(payload)`, made one top-level field at a time to note where
   * `metadata` is. A field whose value JSON leaves out (undefined) is left out, as `JSON.stringify` does.
   */
  static of(payload: CachedPayload): PayloadText {
    let text = "{";
    let start = -1;
    let end = -1;
    for (const key of Object.keys(payload)) {
      const json: string | undefined = JSON.stringify(payload[key as keyof CachedPayload]);
      if (json === undefined) continue;
      if (text.length > 1) text += ",";
      text += `${JSON.stringify(key)}:`;
      if (key === "metadata") start = text.length;
      text += json;
      if (key === "metadata") end = text.length;
    }
    text += "}";
    if (start < 0) throw new Error("a payload without metadata");
    return new PayloadText(text, undefined, start, end, payload);
  }

  /**
   * A text as stored (src/cache/redis.ts), or undefined when the metadata span does not delimit an object. The
   * rest of the text is not read here: it is parsed when something asks for the payload (`payload()`).
   */
  static stored(text: string, metadataStart: number, metadataEnd: number): PayloadText | undefined {
    if (!Number.isSafeInteger(metadataStart) || !Number.isSafeInteger(metadataEnd)) return undefined;
    if (metadataStart < 1 || metadataEnd > text.length - 1 || metadataEnd - metadataStart < 2)
      return undefined;
    if (text.charCodeAt(0) !== 0x7b || text.charCodeAt(text.length - 1) !== 0x7d) return undefined; // { … }
    if (text.charCodeAt(metadataStart) !== 0x7b || text.charCodeAt(metadataEnd - 1) !== 0x7d)
      return undefined;
    return new PayloadText(text, undefined, metadataStart, metadataEnd, undefined);
  }

  /**
   * A text as stored, in the UTF-8 bytes a Redis reply gave (`metadataStart`/`metadataEnd` in bytes), or undefined
   * as `stored`. A hit answers from these bytes: nothing is decoded but the metadata, nothing encoded again.
   */
  static storedBytes(bytes: Buffer, metadataStart: number, metadataEnd: number): PayloadText | undefined {
    if (!Number.isSafeInteger(metadataStart) || !Number.isSafeInteger(metadataEnd)) return undefined;
    if (metadataStart < 1 || metadataEnd > bytes.length - 1 || metadataEnd - metadataStart < 2)
      return undefined;
    if (bytes[0] !== 0x7b || bytes[bytes.length - 1] !== 0x7d) return undefined; // { … }
    if (bytes[metadataStart] !== 0x7b || bytes[metadataEnd - 1] !== 0x7d) return undefined;
    return new PayloadText(undefined, bytes, metadataStart, metadataEnd, undefined);
  }

  /**
   * The same text held as its UTF-8 bytes (the payload kept, nothing to parse): what a miss stored in Redis answers
   * from, so that the answer and the cache entry are one encoding of the text, not two (issue 29).
   */
  encoded(): PayloadText {
    if (this.bytes !== undefined) return this;
    const { bytes, metadataStart, metadataEnd } = this.utf8();
    return new PayloadText(undefined, bytes, metadataStart, metadataEnd, this.parsed);
  }

  /** The text's UTF-8 bytes and the metadata's span in them (encoded on each call from a string text: once per cache write). */
  utf8(): { bytes: Buffer; metadataStart: number; metadataEnd: number } {
    if (this.bytes !== undefined)
      return { bytes: this.bytes, metadataStart: this.metadataStart, metadataEnd: this.metadataEnd };
    const text = this.text;
    const bytes = Buffer.from(text, "utf8");
    const start = Buffer.byteLength(text.slice(0, this.metadataStart), "utf8");
    const end = start + Buffer.byteLength(text.slice(this.metadataStart, this.metadataEnd), "utf8");
    return { bytes, metadataStart: start, metadataEnd: end };
  }

  /**
   * The payload's metadata (parsed from its span once; from stored bytes once per distinct bytes in the process,
   * then frozen: shared by every text of those bytes); throws when the span is not an object.
   */
  metadata(): RetrievalMetadata {
    if (this.meta !== undefined) return this.meta;
    if (this.parsed !== undefined) return this.parsed.metadata;
    const bytes = this.bytes;
    if (bytes !== undefined) {
      const key = bytes.toString("latin1", this.metadataStart, this.metadataEnd);
      let known = metadataByBytes.get(key);
      if (known === undefined) {
        const value: unknown = JSON.parse(bytes.toString("utf8", this.metadataStart, this.metadataEnd));
        if (!isRecord(value)) throw new Error("the stored text's metadata is not an object");
        // Shared by every text of the same bytes: frozen.
        const stored = deepFreeze(value as unknown as RetrievalMetadata);
        known = { stored, hit: hitMetadataOf(stored) };
        if (metadataByBytes.size >= MAX_STORED_METADATA) metadataByBytes.clear();
        metadataByBytes.set(key, known);
      }
      this.meta = known.stored;
      this.hit = known.hit;
      return this.meta;
    }
    const span =
      this.bytes === undefined
        ? this.text.slice(this.metadataStart, this.metadataEnd)
        : this.bytes.toString("utf8", this.metadataStart, this.metadataEnd);
    const value: unknown = JSON.parse(span);
    if (!isRecord(value)) throw new Error("the stored text's metadata is not an object");
    this.meta = value as unknown as RetrievalMetadata;
    return this.meta;
  }

  /**
   * The metadata a hit on this text answers with: the stored one with `cache: "hit"`, frozen (shared by every hit
   * of the entry; a caller spreads it to change a field). Made once per text, and for stored bytes once per
   * distinct metadata in the process (a Redis hit reads the entry's bytes again each time); throws as `metadata()`.
   */
  hitMetadata(): RetrievalMetadata {
    return this.hitOf().metadata;
  }

  private hitOf(): HitMetadata {
    if (this.hit !== undefined) return this.hit;
    const metadata = this.metadata(); // from stored bytes, this also finds the hit metadata
    this.hit ??= hitMetadataOf(metadata);
    return this.hit;
  }

  /**
   * `json({ ...hitMetadata(), queryTime })`, the hit's answer, without serializing the metadata again: only the
   * hit's `queryTime` is written before the rest of the hit metadata's JSON (made once, `hitMetadata`).
   */
  hitJson(queryTime: number): string | Buffer {
    const { metadata, rest } = this.hitOf();
    if (rest === undefined) return this.json({ ...metadata, queryTime });
    const meta = `${QUERY_TIME_KEY}${Number.isFinite(queryTime) ? String(queryTime) : "null"},${rest}`;
    return this.spliced(meta);
  }

  /** The whole payload (parsed once); throws when the text is not a payload. */
  payload(): CachedPayload {
    if (this.parsed !== undefined) return this.parsed;
    const value: unknown = JSON.parse(this.text);
    if (!isRecord(value) || !Array.isArray(value.memories) || !isRecord(value.metadata))
      throw new Error("the stored text is not a payload");
    if (typeof value.systemPrompt !== "string") throw new Error("the stored text is not a payload");
    this.parsed = value as unknown as CachedPayload;
    return this.parsed;
  }

  /**
   * The payload with another metadata, as an answer: the object spread as ever when it is at hand, else one whose
   * `memories`, `citations` (when it has them) and `systemPrompt` are read from the text only when something reads
   * them (a /v1/retrieve entry has no other field: `native` is a drop-in door's, whose entries have keys of their
   * own).
   */
  answer(metadata: RetrievalMetadata): RetrievalPayload {
    if (this.parsed !== undefined) return { ...this.parsed, metadata };
    const answer = {} as RetrievalPayload;
    Object.defineProperty(answer, "memories", {
      enumerable: true,
      configurable: true,
      get: () => this.payload().memories,
      set: (v: RetrievalPayload["memories"]) => own(answer, "memories", v),
    });
    if (this.hasCitations()) {
      Object.defineProperty(answer, "citations", {
        enumerable: true,
        configurable: true,
        get: () => this.payload().citations,
        set: (v: RetrievalPayload["citations"]) => own(answer, "citations", v),
      });
    }
    own(answer, "metadata", metadata);
    Object.defineProperty(answer, "systemPrompt", {
      enumerable: true,
      configurable: true,
      get: () => this.payload().systemPrompt,
      set: (v: string) => own(answer, "systemPrompt", v),
    });
    return answer;
  }

  /**
   * Whether the payload has `citations` (policy `format.citations: on`), read off the text without parsing it: a
   * payload's fields come `memories` (an array), then `citations` (an object) when there are any, then `metadata`,
   * so what ends just before `,"metadata":` is `}` with citations and `]` without.
   */
  private hasCitations(): boolean {
    const before = this.metadataStart - METADATA_KEY.length - 1;
    if (this.bytes !== undefined)
      return (
        this.bytes.toString("latin1", before + 1, this.metadataStart) === METADATA_KEY &&
        this.bytes[before] === 0x7d
      );
    return this.text.startsWith(METADATA_KEY, before + 1) && this.text.charCodeAt(before) === 0x7d;
  }

  /**
   * `JSON.stringify` of `answer(metadata)`, from the text: only `metadata` is serialized. From stored bytes, the
   * answer's UTF-8 bytes (the stored ones around the new metadata's), never decoded and encoded again.
   */
  json(metadata: RetrievalMetadata): string | Buffer {
    return this.spliced(JSON.stringify(metadata));
  }

  /** The text with `meta` (JSON) in place of its metadata object: bytes from stored bytes, else a string. */
  private spliced(meta: string): string | Buffer {
    const bytes = this.bytes;
    if (bytes !== undefined) {
      const size = bytes.length - (this.metadataEnd - this.metadataStart) + Buffer.byteLength(meta, "utf8");
      const out = Buffer.allocUnsafe(size);
      let at = bytes.copy(out, 0, 0, this.metadataStart);
      at += out.write(meta, at, "utf8");
      bytes.copy(out, at, this.metadataEnd);
      return out;
    }
    if (this.before === undefined || this.after === undefined) {
      this.before = this.text.slice(0, this.metadataStart);
      this.after = this.text.slice(this.metadataEnd);
    }
    return this.before + meta + this.after;
  }
}

/** Replaces a lazy field by a plain one (a caller that assigns it), keeping its place among the keys. */
function own(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true });
}
