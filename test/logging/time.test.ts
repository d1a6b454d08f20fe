/** The log lines' time (src/logging/logger.ts `isoTime`): pino's isoTime, made once per millisecond. */
import pino from "pino";
import { isoTime } from "../../src/logging/logger";

describe("isoTime", () => {
  afterEach(() => jest.restoreAllMocks());

  test("is pino's isoTime at every millisecond, the same text within one", () => {
    const now = jest.spyOn(Date, "now");
    for (const ms of [0, 1_764_000_000_000, 1_764_000_000_000, 1_764_000_000_001, 1_764_000_060_999]) {
      now.mockReturnValue(ms);
      expect(isoTime()).toBe(pino.stdTimeFunctions.isoTime());
      expect(isoTime()).toBe(`,"time":"${new Date(ms).toISOString()}"`);
    }
  });
});
