import { waitFor } from "./redis-helpers";
import { replicaSuite } from "./replicas";
import { RedisSentinelServers } from "./servers";

/**
 * Redis Sentinel (a master, a replica and 3 sentinels, started here from redis-server): the multi-replica suite,
 * with the master killed under load, the replica promoted by the sentinels and the gateways following them to it.
 */
replicaSuite("Redis Sentinel (master, replica, 3 sentinels)", async () => {
  const set = await RedisSentinelServers.start();
  return {
    env: { REDIS_SENTINELS: set.seeds, REDIS_SENTINEL_MASTER: set.masterName },
    async killMasterOf() {
      // One master holds every key.
      const killed = set.master.port;
      await set.master.kill();
      await waitFor(
        "the sentinels to promote the replica",
        async () => (await set.currentMasterPort()) === set.replica.port,
        20_000,
      );
      return { killed, promoted: set.replica.port };
    },
    stop: () => set.stop(),
  };
});
