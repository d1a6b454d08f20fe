// Preloaded into the gateway by bench/gateway.bench.ts (`node --expose-gc -r ./bench/gateway/heap-probe.cjs
// bin/memgate.js serve`), never in production. On SIGUSR2: the heap as it is, then two full GCs and the heap
// that is still live, as one line on stderr.
process.on("SIGUSR2", () => {
  const before = process.memoryUsage();
  if (typeof global.gc === "function") {
    global.gc();
    global.gc();
  }
  const after = process.memoryUsage();
  const sample = {
    heapUsedBeforeGc: before.heapUsed,
    heapUsed: after.heapUsed,
    external: after.external,
    arrayBuffers: after.arrayBuffers,
    rss: after.rss,
  };
  process.stderr.write(`BENCH_HEAP ${JSON.stringify(sample)}\n`);
});
