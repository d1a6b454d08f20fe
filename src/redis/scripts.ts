import type { RedisClient } from "./connection";

/** A Lua script run by SHA (EVALSHA, falling back to EVAL once after a Redis restart: ioredis `defineCommand`). */
export type RedisScript = (
  keys: readonly string[],
  args: ReadonlyArray<string | number | Buffer>,
) => Promise<unknown>;

/**
 * Registers `lua` on the client under `name` and returns a caller. Scripts are sent by SHA, not as text on every
 * call (plain EVAL makes Redis hash the whole script each time). `replies: "buffers"`: the reply's bulk strings
 * come as Buffers, not decoded into strings (ioredis' `<name>Buffer` variant of the command).
 */
export function defineScript(
  client: RedisClient,
  name: string,
  numberOfKeys: number,
  lua: string,
  replies: "strings" | "buffers" = "strings",
): RedisScript {
  const commands = client as unknown as Record<string, unknown>;
  if (typeof commands[name] !== "function") client.defineCommand(name, { numberOfKeys, lua });
  const variant = replies === "buffers" ? `${name}Buffer` : name;
  const command = commands[variant] as (...args: Array<string | number | Buffer>) => Promise<unknown>;
  return (keys, args) => {
    if (keys.length !== numberOfKeys) throw new Error(`${name}: expects ${numberOfKeys} keys`);
    return command.call(client, ...keys, ...args);
  };
}
