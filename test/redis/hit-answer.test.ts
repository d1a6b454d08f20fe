/** A cache hit's answer on /v1/retrieve with the payload cache in Redis (test/helpers/hit-answer.ts). */
import type Redis from "ioredis";
import { hitAnswerSuite } from "../helpers/hit-answer";
import { deleteKeys, REDIS_URL, requireRedis, testPrefix, waitFor } from "./redis-helpers";

const PREFIX = testPrefix("hit-answer");

describe("POST /v1/retrieve — a cache hit's answer, with Redis", () => {
  let admin: Redis | undefined;
  beforeAll(async () => {
    admin = await requireRedis();
  });
  afterAll(() => admin?.disconnect());

  hitAnswerSuite({
    env: () => ({ REDIS_URL, MEMGATE_REDIS_PREFIX: PREFIX }),
    bytes: true,
    ready: (h) => waitFor("redis ready", () => h.services.redis?.ready() === true),
    cleanup: async () => {
      if (admin) await deleteKeys(admin, PREFIX);
    },
  });
});
