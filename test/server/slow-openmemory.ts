/**
 * The slow backend of the shutdown suites (shutdown.test.ts, npm-start.test.ts): a fake OpenMemory whose
 * requests marked with `fail("slow", n)` take `slowMs`, holding one memory of user u-1 in session s-1.
 */
import { FakeOpenMemoryServer } from "../backends/fakes/openmemory-server";

export async function startSlowOpenMemory(slowMs: number): Promise<FakeOpenMemoryServer> {
  const fake = await FakeOpenMemoryServer.start({ slowMs });
  await fake.seed("u-1", [
    {
      id: "m1",
      content: "Ana drinks coffee with oat milk.",
      type: "fact",
      timestamp: "2026-01-01T00:00:00.000Z",
      sessionId: "s-1",
    },
  ]);
  return fake;
}
