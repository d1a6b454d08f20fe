// Preloaded into the gateway child by the soak (`node --expose-gc -r ./bench/soak/heap-probe.cjs …`), never in
// production. On SIGUSR2: two full GCs, then one line on stderr with the heap after them, for bench/soak.ts.
process.on("SIGUSR2", () => {
  if (typeof global.gc === "function") {
    global.gc();
    global.gc();
  }
  const m = process.memoryUsage();
  const sample = { heapUsed: m.heapUsed, heapTotal: m.heapTotal, rss: m.rss, external: m.external };
  process.stderr.write(`SOAK_HEAP ${JSON.stringify(sample)}\n`);
});
